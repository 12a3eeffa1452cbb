package capture

import (
	"bytes"
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
// one of another version says so. size is r's length in bytes, or 0 when unknown: with it the records
// are decoded into a slice of about their number, without copying them.
func Decode(r io.Reader, size int64) (*Capture, error) {
	head := &prefixWriter{max: headBytes}
	var c Capture
	in := newInterner(size)
	tee := io.TeeReader(r, head)
	err := in.firstError(jsonv2.UnmarshalRead(tee, &c, jsonv2.WithUnmarshalers(in.unmarshalers())))
	if err == nil && c.Version == FormatVersion && c.Records != nil {
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("invalid capture: %w", err)
		}
		return &c, nil
	}
	// The decoder stops at the first error, which may come before the input's end: the head is the
	// whole input only if the input ends within it.
	if _, err := io.Copy(io.Discard, io.LimitReader(tee, headBytes)); err != nil {
		return nil, fmt.Errorf("reading capture: %w", err)
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
	in := newInterner(int64(len(data)))
	err := in.firstError(jsonv2.Unmarshal(data, &c, jsonv2.WithUnmarshalers(in.unmarshalers())))
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
	size    int64   // the input's size in bytes, 0 when unknown: how many records to make room for
	err     error   // the first record that failed to decode, what a failure is reported as
}

func newInterner(size int64) *interner {
	return &interner{strings: map[string]string{}, lists: map[uint64][]string{}, seed: maphash.MakeSeed(), size: size}
}

// firstError is the error to report of a decoding that ended in err: the record that failed first,
// rather than what the decoder met after it, in the middle of the record that failed.
func (in *interner) firstError(err error) error {
	if err != nil && in.err != nil {
		return in.err
	}
	return err
}

func (in *interner) unmarshalers() *jsonv2.Unmarshalers {
	return jsonv2.JoinUnmarshalers(jsonv2.UnmarshalFromFunc(in.unmarshalRecords),
		jsonv2.UnmarshalFromFunc(in.unmarshalString), jsonv2.UnmarshalFromFunc(in.unmarshalList))
}

// unmarshalRecords reads a list of records into one slice, grown to about their number (interner.more)
// rather than record by record: each growth copies the records read so far. Anything but a list is
// left to the default (null leaves the records nil). The first record that fails is in.err.
func (in *interner) unmarshalRecords(dec *jsontext.Decoder, records *[]Record) error {
	if dec.PeekKind() != '[' {
		return jsonv2.SkipFunc
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	start := dec.InputOffset()
	list := make([]Record, 0, 64) // an empty list, which a capture must have, is not a missing one
	for dec.PeekKind() != ']' {
		at := dec.InputOffset()
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		if len(list) == cap(list) {
			list = slices.Grow(list, in.more(len(list), at-start, at))
		}
		list = append(list, Record{})
		if err := in.parseRecord(v, &list[len(list)-1]); err != nil {
			in.err = fmt.Errorf("record %d (at byte %d): %w", len(list)-1, at, err)
			return in.err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	*records = list
	return nil
}

// more is how many records to make room for beside the n read from the first read bytes of the
// list, the next one at offset. With the input's size, the rest of it is about size-offset bytes of
// records of the size seen so far, and an eighth more; the records are copied once or twice (a
// slice grown record by record copied itself at every growth, and records decoded into chunks
// copied once at the end were alive twice at the peak). It never more than multiplies the records
// by 17, so that a few small records followed by a large one cannot reserve memory for many records
// that never come. Without a size the slice doubles.
func (in *interner) more(n int, read, offset int64) int {
	if in.size <= offset || read <= 0 {
		return n
	}
	rest := int((in.size - offset) / max(read/int64(n), 1))
	return min(max(rest+rest/8, n/4), 16*n)
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

// unmarshalList reads a list of strings other than a record's (a command line, the types), bounded by
// the input's size only.
func (in *interner) unmarshalList(dec *jsontext.Decoder, list *[]string) error {
	if dec.PeekKind() != '[' {
		return jsonv2.SkipFunc
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	*list, err = in.list(v, math.MaxInt, "strings")
	return err
}

// list reads the JSON value v as a list of at most maxLen strings, looking it up whole by its text
// before its strings one by one: a shared stack costs one lookup, not one a frame. A longer list is
// refused before its strings take memory: maxLen is MaxStackDepth for a stack, what names its strings
// in the error.
func (in *interner) list(v []byte, maxLen int, what string) ([]string, error) {
	if v[0] != '[' {
		return nil, errNotStrings(v)
	}
	in.text, in.ends = in.text[:0], in.ends[:0]
	for i := skipSpace(v, 1); v[i] != ']'; i = skipSpace(v, i) {
		if v[i] == ',' {
			i = skipSpace(v, i+1)
		}
		if v[i] != '"' {
			return nil, fmt.Errorf("a list of strings holds a %v", kindOf(v[i]))
		}
		if len(in.ends) == maxLen {
			return nil, fmt.Errorf("more than the %d %s klockstat takes", maxLen, what)
		}
		end := stringEnd(v, i)
		in.text = append(in.text, v[i:end]...)
		in.ends = append(in.ends, int32(len(in.text)))
		i = end
	}
	key := maphash.Bytes(in.seed, in.text)
	if l, ok := in.lists[key]; ok && in.same(l) {
		return l, nil
	}
	l := make([]string, len(in.ends))
	start := int32(0)
	for i, end := range in.ends {
		var err error
		if l[i], err = in.string(in.text[start:end]); err != nil {
			return nil, err
		}
		start = end
	}
	if _, taken := in.lists[key]; !taken { // a collision keeps the first list
		in.lists[key] = l
	}
	return l, nil
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
