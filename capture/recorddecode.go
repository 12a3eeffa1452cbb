package capture

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// The records are read as whole JSON values (jsontext.Decoder.ReadValue), which checks their syntax,
// their UTF-8 and that no member is named twice, then taken apart by the scanning below, which
// relies on that check: it never meets invalid JSON. Reading token by token through the decoder
// took twice as long, most of what reading a big capture takes.

// parseRecord reads a record from its JSON object v, field by field. A field added to Record must be
// added here (TestRoundTrip fails until it is). As for the other fields, names it does not know are
// skipped, null leaves a field as it is, and a number must be an integer in the field's range. A
// null record is the zero record.
func (in *interner) parseRecord(v []byte, r *Record) error {
	switch v[0] {
	case 'n':
		return nil
	case '{':
	default:
		return fmt.Errorf("%s, not an object", kindName(kindOf(v[0])))
	}
	i := skipSpace(v, 1)
	for v[i] != '}' {
		if v[i] == ',' {
			i = skipSpace(v, i+1)
		}
		nameEnd := stringEnd(v, i)
		name := v[i:nameEnd]
		i = skipSpace(v, skipSpace(v, nameEnd)+1) // past the colon
		end := valueEnd(v, i)
		value := v[i:end]
		i = skipSpace(v, end)
		if value[0] == 'n' {
			continue
		}
		if err := in.recordField(r, name, value); err != nil {
			field, _ := jsontext.AppendUnquote(nil, name)
			return fmt.Errorf("record field %q: %w", field, err)
		}
	}
	return nil
}

// recordField sets the field of r named by the JSON string name to the JSON value v, not null.
func (in *interner) recordField(r *Record, name, v []byte) error {
	raw := name[1 : len(name)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		var err error
		if raw, err = jsontext.AppendUnquote(nil, name); err != nil {
			return err
		}
	}
	var err error
	switch string(raw) {
	case "type":
		r.Type, err = in.fieldString(v)
	case "name":
		r.Name, err = in.fieldString(v)
	case "object_offset":
		r.ObjectOffset, err = in.fieldString(v)
	case "field":
		r.Field, err = in.fieldString(v)
	case "field_candidates":
		r.FieldCandidates, err = in.list(v, MaxFieldCandidates, "field candidates")
	case "static":
		r.Static, err = parseBool(v)
	case "comm":
		r.Comm, err = in.fieldString(v)
	case "caller":
		r.Caller, err = in.fieldString(v)
	case "stack":
		r.Stack, err = in.list(v, MaxStackDepth, "frames")
	case "lock":
		err = parseText(v, &r.Lock)
	case "pid":
		r.PID, err = parseUint32(v)
	case "tid":
		r.TID, err = parseUint32(v)
	case "count":
		r.Count, err = parseUint(v)
	case "total_ns":
		r.TotalNS, err = parseUint(v)
	case "min_ns":
		r.MinNS, err = parseUint(v)
	case "max_ns":
		r.MaxNS, err = parseUint(v)
	case "spin_ns":
		r.SpinNS, err = parseUint(v)
	case "in_progress":
		r.InProgress, err = parseUint(v)
	case "hold_count":
		r.HoldCount, err = parseUint(v)
	case "hold_total_ns":
		r.HoldTotalNS, err = parseUint(v)
	case "hold_min_ns":
		r.HoldMinNS, err = parseUint(v)
	case "hold_max_ns":
		r.HoldMaxNS, err = parseUint(v)
	case "cgroup_id":
		r.CgroupID, err = parseUint(v)
	case "cgroup":
		r.Cgroup, err = in.fieldString(v)
	}
	return err
}

// fieldString is the one copy of the JSON string v.
func (in *interner) fieldString(v []byte) (string, error) {
	if v[0] != '"' {
		return "", errNotStrings(v)
	}
	return in.string(v)
}

// errNotStrings says that the JSON value v is neither a string nor a list of strings, which is what a
// record's text fields hold.
func errNotStrings(v []byte) error {
	return fmt.Errorf("%s, not a string or a list of strings", kindName(kindOf(v[0])))
}

// kindOf is the kind of the JSON value that starts with b.
func kindOf(b byte) jsontext.Kind {
	if b == '-' || '0' <= b && b <= '9' {
		return '0'
	}
	return jsontext.Kind(b)
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

// parseUint reads the JSON value v as an integer in the range of a uint64.
func parseUint(v []byte) (uint64, error) {
	if kindOf(v[0]) != '0' {
		return 0, fmt.Errorf("%s, not a number", kindName(kindOf(v[0])))
	}
	if len(v) < 20 { // no more than 19 digits overflow
		n := uint64(0)
		for _, c := range v {
			if c < '0' || c > '9' {
				return 0, fmt.Errorf("%s, not a whole number from 0 up", v)
			}
			n = n*10 + uint64(c-'0')
		}
		return n, nil
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%.40s, not a whole number from 0 to %d", v, uint64(math.MaxUint64))
	}
	return n, nil
}

// parseUint32 reads the JSON value v as an integer in the range of a uint32.
func parseUint32(v []byte) (uint32, error) {
	u, err := parseUint(v)
	if err != nil {
		return 0, err
	}
	if u > math.MaxUint32 {
		return 0, fmt.Errorf("%d out of range", u)
	}
	return uint32(u), nil
}

// parseBool reads the JSON value v as a boolean.
func parseBool(v []byte) (bool, error) {
	if k := kindOf(v[0]); k != 't' && k != 'f' {
		return false, fmt.Errorf("%s, not a boolean", kindName(k))
	}
	return v[0] == 't', nil
}

// parseText reads the JSON string v into a value that decodes itself from text.
func parseText(v []byte, t interface{ UnmarshalText([]byte) error }) error {
	if v[0] != '"' {
		return fmt.Errorf("%s, not a string", kindName(kindOf(v[0])))
	}
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		var err error
		if raw, err = jsontext.AppendUnquote(nil, v); err != nil {
			return err
		}
	}
	return t.UnmarshalText(raw)
}

// skipSpace is the index of the first byte of b at or after i that is not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the JSON string that starts at b[i].
func stringEnd(b []byte, i int) int {
	i++
	for {
		q := bytes.IndexByte(b[i:], '"')
		esc := bytes.IndexByte(b[i:i+q], '\\')
		if esc < 0 {
			return i + q + 1
		}
		i += esc + 2 // past the escaped byte, which may be a quote
	}
}

// valueEnd is the index just past the JSON value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\t' && b[i] != '\r' {
		i++
	}
	return i
}
