package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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

// Parse decodes and validates a capture written by Write. It rejects other format versions (the error
// wraps ErrUnsupportedVersion) and captures that fail Validate; fields it does not know are ignored.
//
// The records are decoded with github.com/go-json-experiment/json, three times as fast as
// encoding/json on a capture of 100,000 records, which is most of what `klockstat report` takes. It is
// also stricter: a field named twice, a name in another case, or invalid UTF-8 are errors, none of
// which Write produces.
func Parse(data []byte) (*Capture, error) {
	// The version decides how to read the rest, so look at it first: a future layout may not even
	// decode into today's types.
	var header struct {
		Version *int          `json:"version"`
		Records *presentValue `json:"records"`
	}
	if err := jsonv2.Unmarshal(data, &header); err != nil {
		return nil, fmt.Errorf("decoding capture: %w", err)
	}
	if header.Version == nil {
		return nil, errors.New(`decoding capture: no "version" field, not a klockstat capture`)
	}
	if *header.Version != FormatVersion {
		return nil, fmt.Errorf("%w %d: this klockstat reads version %d", ErrUnsupportedVersion, *header.Version, FormatVersion)
	}
	// Other JSON files have a version too (locks.json does).
	if header.Records == nil {
		return nil, errors.New(`decoding capture: no "records" field, not a klockstat capture`)
	}
	var c Capture
	if err := jsonv2.Unmarshal(data, &c, jsonv2.WithUnmarshalers(jsonv2.UnmarshalFromFunc(interner{}.unmarshal))); err != nil {
		return nil, fmt.Errorf("decoding capture: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("invalid capture: %w", err)
	}
	return &c, nil
}

// presentValue is a JSON value that is only noted as present, not kept: Parse's first look at a
// capture skips its records.
type presentValue struct{}

// UnmarshalJSONFrom implements jsonv2.UnmarshalerFrom.
func (*presentValue) UnmarshalJSONFrom(dec *jsontext.Decoder) error { return dec.SkipValue() }

// interner decodes JSON strings into one copy of each distinct string. A capture repeats its strings
// over and over (every record names its type and thread, and its stack's frames are shared by many
// records), and one copy each takes a third less memory than the decoder's copy per occurrence.
type interner map[string]string

func (in interner) unmarshal(dec *jsontext.Decoder, s *string) error {
	if dec.PeekKind() != '"' {
		return jsonv2.SkipFunc // null, or an error the decoder reports
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		if raw, err = jsontext.AppendUnquote(nil, v); err != nil {
			return err
		}
	}
	if str, ok := in[string(raw)]; ok {
		*s = str
		return nil
	}
	str := string(raw)
	in[str] = str
	*s = str
	return nil
}
