package capture

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"slices"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ErrUnsupportedVersion is returned by Read for a capture written in another format version.
var ErrUnsupportedVersion = errors.New("unsupported capture format version")

// Write encodes c as indented JSON with a trailing newline. It does not validate c; nil slices are
// written as [].
func (c *Capture) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("encoding capture: %w", err)
	}
	return nil
}

// Read decodes and validates a capture written by Write, as Parse does.
func Read(r io.Reader) (*Capture, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading capture: %w", err)
	}
	return Parse(data)
}

// Decode is Parse of a stream, decoded as it is read: no copy of the JSON is held beside the
// capture, which halves the memory a large capture takes to read. A failure is reported as Parse
// reports it: an input that fails within its first headBytes is parsed again from them, and a larger
// one of another version says so.
func Decode(r io.Reader) (*Capture, error) {
	head := &prefixWriter{max: headBytes}
	var c Capture
	err := jsonv2.UnmarshalRead(io.TeeReader(r, head), &c, jsonv2.WithUnmarshalers(newInterner().unmarshalers()))
	if err == nil && c.Version == FormatVersion && c.Records != nil {
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("invalid capture: %w", err)
		}
		return &c, nil
	}
	if !head.cut {
		return Parse(head.b)
	}
	if v, ok := leadingVersion(head.b); ok && v != FormatVersion {
		return nil, fmt.Errorf("%w %d: this klockstat reads version %d", ErrUnsupportedVersion, v, FormatVersion)
	}
	switch {
	case err != nil:
		return nil, decodeError(err)
	case c.Version != FormatVersion:
		return nil, errNoVersion
	}
	return nil, errNoRecords
}

// Decode's and Parse's errors for JSON that is no capture.
var (
	errNoVersion = errors.New(`decoding capture: no "version" field, not a klockstat capture`)
	errNoRecords = errors.New(`decoding capture: no "records" field, not a klockstat capture`)
)

// decodeError wraps a decoding error; JSON that ends early is said to be cut short, which is what
// a user needs to know (a copy or a download interrupted, klockstat killed while writing).
func decodeError(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("decoding capture: the JSON ends early, the file is truncated (a copy cut short, or its writer killed?): %w", err)
	}
	return fmt.Errorf("decoding capture: %w", err)
}

// headBytes is how much of a stream Decode keeps to report a failure as Parse would.
const headBytes = 64 << 10

// prefixWriter keeps the first max bytes written to it; cut says that more were written.
type prefixWriter struct {
	b   []byte
	max int
	cut bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	n := min(len(b), p.max-len(p.b))
	p.b = append(p.b, b[:n]...)
	p.cut = p.cut || n < len(b)
	return len(b), nil
}

// leadingVersion is the "version" of a capture JSON when it is the first member, as Write writes it.
func leadingVersion(data []byte) (int, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return 0, false
	}
	if name, err := dec.ReadToken(); err != nil || name.String() != "version" {
		return 0, false
	}
	v, err := dec.ReadToken()
	if err != nil || v.Kind() != '0' {
		return 0, false
	}
	n, err := strconv.Atoi(v.String())
	return n, err == nil
}

// Parse decodes and validates a capture written by Write. It rejects other format versions (the error
// wraps ErrUnsupportedVersion) and captures that fail Validate; fields it does not know are ignored.
//
// The records are decoded with github.com/go-json-experiment/json, three times as fast as
// encoding/json on a capture of 100,000 records, which is most of what `klockstat report` takes. It is
// also stricter: a field named twice, a name in another case, or invalid UTF-8 are errors, none of
// which Write produces. Records of the same stack share one slice of frames, and equal strings one
// copy.
func Parse(data []byte) (*Capture, error) {
	var c Capture
	err := jsonv2.Unmarshal(data, &c, jsonv2.WithUnmarshalers(newInterner().unmarshalers()))
	if err != nil || c.Version != FormatVersion || c.Records == nil {
		// The version decides how to read the rest: a capture of another version is refused as such,
		// even where it failed to decode into today's types.
		if err := checkHeader(data); err != nil {
			return nil, err
		}
		if err != nil {
			return nil, decodeError(err)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("invalid capture: %w", err)
	}
	return &c, nil
}

// checkHeader says why data, which did not decode into a capture of this version, is not one: not
// JSON, no version, another version, or no records.
func checkHeader(data []byte) error {
	var header struct {
		Version *int          `json:"version"`
		Records *presentValue `json:"records"`
	}
	if err := jsonv2.Unmarshal(data, &header); err != nil {
		return decodeError(err)
	}
	if header.Version == nil {
		return errNoVersion
	}
	if *header.Version != FormatVersion {
		return fmt.Errorf("%w %d: this klockstat reads version %d", ErrUnsupportedVersion, *header.Version, FormatVersion)
	}
	// Other JSON files have a version too (locks.json does).
	if header.Records == nil {
		return errNoRecords
	}
	return nil
}

// presentValue is a JSON value that is only noted as present, not kept: checkHeader skips the records.
type presentValue struct{}

// UnmarshalJSONFrom implements jsonv2.UnmarshalerFrom.
func (*presentValue) UnmarshalJSONFrom(dec *jsontext.Decoder) error { return dec.SkipValue() }

// interner decodes JSON strings into one copy of each distinct string, and lists of strings (stacks)
// into one slice for each distinct list. A capture repeats its strings over and over (every record
// names its type and thread, and most stacks are taken by many records): one copy each takes a third
// less memory than the decoder's copy per occurrence, and the report interns a shared stack once.
type interner struct {
	strings map[string]string
	lists   map[uint64][]string // by the hash of their JSON text
	seed    maphash.Seed
	text    []byte  // scratch: the JSON text of the list being read
	ends    []int32 // scratch: where each of its strings ends in text
}

func newInterner() *interner {
	return &interner{strings: map[string]string{}, lists: map[uint64][]string{}, seed: maphash.MakeSeed()}
}

func (in *interner) unmarshalers() *jsonv2.Unmarshalers {
	return jsonv2.JoinUnmarshalers(jsonv2.UnmarshalFromFunc(in.unmarshalRecords), jsonv2.UnmarshalFromFunc(in.unmarshalRecord),
		jsonv2.UnmarshalFromFunc(in.unmarshalString), jsonv2.UnmarshalFromFunc(in.unmarshalList))
}

// recordChunk is how many records unmarshalRecords decodes into one chunk at most.
const recordChunk = 1 << 14

// unmarshalRecords reads a list of records into chunks, then copies them once into a slice of their
// number: a slice grown record by record copies itself at every growth, most of the time decoding a
// large capture took. Anything but a list is left to the default (null leaves the records nil).
func (in *interner) unmarshalRecords(dec *jsontext.Decoder, records *[]Record) error {
	if dec.PeekKind() != '[' {
		return jsonv2.SkipFunc
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	var chunks [][]Record
	chunk := make([]Record, 0, 64)
	for dec.PeekKind() != ']' {
		if len(chunk) == cap(chunk) {
			chunks = append(chunks, chunk)
			chunk = make([]Record, 0, min(2*cap(chunk), recordChunk))
		}
		chunk = append(chunk, Record{})
		if err := jsonv2.UnmarshalDecode(dec, &chunk[len(chunk)-1]); err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	*records = slices.Concat(append(chunks, chunk)...)
	if *records == nil {
		*records = []Record{} // an empty list, which a capture must have, is not a missing one
	}
	return nil
}

// unmarshalRecord reads a record field by field without reflection, most of what decoding a big
// capture takes. A field added to Record must be added here (TestRoundTrip fails until it is). As for the other fields, names it does not know are skipped, a name twice is an error
// (the decoder's), null leaves a field as it is, and a number must be an integer in the field's range.
func (in *interner) unmarshalRecord(dec *jsontext.Decoder, r *Record) error {
	if dec.PeekKind() != '{' {
		return jsonv2.SkipFunc
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		field := name.String()
		if dec.PeekKind() == 'n' {
			if _, err := dec.ReadToken(); err != nil {
				return err
			}
			continue
		}
		switch field {
		case "type":
			err = in.unmarshalString(dec, &r.Type)
		case "name":
			err = in.unmarshalString(dec, &r.Name)
		case "object_offset":
			err = in.unmarshalString(dec, &r.ObjectOffset)
		case "field":
			err = in.unmarshalString(dec, &r.Field)
		case "field_candidates":
			err = in.readList(dec, &r.FieldCandidates, MaxFieldCandidates, "field candidates")
		case "static":
			err = readBool(dec, &r.Static)
		case "comm":
			err = in.unmarshalString(dec, &r.Comm)
		case "caller":
			err = in.unmarshalString(dec, &r.Caller)
		case "stack":
			err = in.readList(dec, &r.Stack, MaxStackDepth, "frames")
		case "lock":
			err = readText(dec, &r.Lock)
		case "pid":
			err = readUint32(dec, &r.PID)
		case "tid":
			err = readUint32(dec, &r.TID)
		case "count":
			err = readUint(dec, &r.Count)
		case "total_ns":
			err = readUint(dec, &r.TotalNS)
		case "min_ns":
			err = readUint(dec, &r.MinNS)
		case "max_ns":
			err = readUint(dec, &r.MaxNS)
		case "spin_ns":
			err = readUint(dec, &r.SpinNS)
		case "in_progress":
			err = readUint(dec, &r.InProgress)
		case "hold_count":
			err = readUint(dec, &r.HoldCount)
		case "hold_total_ns":
			err = readUint(dec, &r.HoldTotalNS)
		case "hold_min_ns":
			err = readUint(dec, &r.HoldMinNS)
		case "hold_max_ns":
			err = readUint(dec, &r.HoldMaxNS)
		case "cgroup_id":
			err = readUint(dec, &r.CgroupID)
		case "cgroup":
			err = in.unmarshalString(dec, &r.Cgroup)
		default:
			err = dec.SkipValue()
		}
		if errors.Is(err, jsonv2.SkipFunc) {
			err = fmt.Errorf("%s, not a string or a list of strings", kindName(dec.PeekKind()))
		}
		if err != nil {
			return fmt.Errorf("record field %q: %w", field, err)
		}
	}
	_, err := dec.ReadToken()
	return err
}

// kindName names a kind of JSON value for a message.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '[':
		return "a list"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	}
	return "nothing"
}

// readUint reads a JSON number that is an integer in the range of a uint64.
func readUint(dec *jsontext.Decoder, n *uint64) error {
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if v.Kind() != '0' {
		return fmt.Errorf("%s, not a number", kindName(v.Kind()))
	}
	*n, err = strconv.ParseUint(string(v), 10, 64)
	return err
}

// readBool reads a JSON boolean.
func readBool(dec *jsontext.Decoder, b *bool) error {
	t, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if k := t.Kind(); k != 't' && k != 'f' {
		return fmt.Errorf("%s, not a boolean", kindName(k))
	}
	*b = t.Bool()
	return nil
}

// readUint32 reads a JSON number that is an integer in the range of a uint32.
func readUint32(dec *jsontext.Decoder, n *uint32) error {
	var u uint64
	if err := readUint(dec, &u); err != nil {
		return err
	}
	if u > math.MaxUint32 {
		return fmt.Errorf("%d out of range", u)
	}
	*n = uint32(u)
	return nil
}

// readText reads a JSON string into a value that decodes itself from text.
func readText(dec *jsontext.Decoder, t encoding.TextUnmarshaler) error {
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if v.Kind() != '"' {
		return fmt.Errorf("%s, not a string", kindName(v.Kind()))
	}
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		if raw, err = jsontext.AppendUnquote(nil, v); err != nil {
			return err
		}
	}
	return t.UnmarshalText(raw)
}

func (in *interner) unmarshalString(dec *jsontext.Decoder, s *string) error {
	if dec.PeekKind() != '"' {
		return jsonv2.SkipFunc // null, or an error the decoder reports
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	*s, err = in.string(v)
	return err
}

// string returns the one copy of the JSON string v.
func (in *interner) string(v []byte) (string, error) {
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		var err error
		if raw, err = jsontext.AppendUnquote(nil, v); err != nil {
			return "", err
		}
	}
	if str, ok := in.strings[string(raw)]; ok {
		return str, nil
	}
	str := string(raw)
	in.strings[str] = str
	return str, nil
}

// unmarshalList reads a list of strings other than a record's stack (a command line, the types),
// bounded by the input's size only.
func (in *interner) unmarshalList(dec *jsontext.Decoder, list *[]string) error {
	return in.readList(dec, list, math.MaxInt, "strings")
}

// readList reads a list of at most maxLen strings, looking it up whole by its text before its strings
// one by one: a shared stack costs one lookup, not one a frame. A longer list is refused as it is
// read, before its strings take memory: maxLen is MaxStackDepth for a stack, what names its strings
// in the error.
func (in *interner) readList(dec *jsontext.Decoder, list *[]string, maxLen int, what string) error {
	if dec.PeekKind() != '[' {
		return jsonv2.SkipFunc
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	in.text, in.ends = in.text[:0], in.ends[:0]
	for dec.PeekKind() != ']' {
		if dec.PeekKind() != '"' {
			return fmt.Errorf("a list of strings holds a %v", dec.PeekKind())
		}
		if len(in.ends) == maxLen {
			return fmt.Errorf("more than the %d %s klockstat takes", maxLen, what)
		}
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		in.text = append(in.text, v...)
		in.ends = append(in.ends, int32(len(in.text)))
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	key := maphash.Bytes(in.seed, in.text)
	if l, ok := in.lists[key]; ok && in.same(l) {
		*list = l
		return nil
	}
	l := make([]string, len(in.ends))
	start := int32(0)
	for i, end := range in.ends {
		var err error
		if l[i], err = in.string(in.text[start:end]); err != nil {
			return err
		}
		start = end
	}
	if _, taken := in.lists[key]; !taken { // a collision keeps the first list
		in.lists[key] = l
	}
	*list = l
	return nil
}

// same says whether l is the list whose JSON text is in in.text.
func (in *interner) same(l []string) bool {
	if len(l) != len(in.ends) {
		return false
	}
	start := int32(0)
	for i, end := range in.ends {
		v := in.text[start:end]
		raw := v[1 : len(v)-1]
		if bytes.IndexByte(raw, '\\') >= 0 {
			var err error
			if raw, err = jsontext.AppendUnquote(nil, v); err != nil {
				return false
			}
		}
		if string(raw) != l[i] {
			return false
		}
		start = end
	}
	return true
}
