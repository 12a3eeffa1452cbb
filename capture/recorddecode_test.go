package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
)

// FuzzParseRecord holds the scanning record decoder to the reflection decoder of the same JSON
// library: what the scanner accepts, the library accepts as the same record. The scanner refuses
// more (null in a list of strings, a stack deeper than MaxStackDepth).
func FuzzParseRecord(f *testing.F) {
	for _, r := range testCapture(f).Records {
		data, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		`null`, `{}`, `7`, `[]`,
		`{"t\u0069d": 7, "comm": "a\"b\\", "stack": ["x+0x1" , "y"], "pid": null}`,
		`{"unknown": {"a": ["]", "}", "\"{"], "b": [[{}]]}, "count": 18446744073709551615}`,
		` { "lock" : "0xffff888100a3c2d8" , "static" : true , "field_candidates" : [ ] } `,
		`{"count": 18446744073709551616}`, `{"count": -0}`, `{"count": 1e3}`, `{"count": 1.0}`,
		`{"tid": 4294967296}`, `{"name": 7}`, `{"stack": "x"}`, `{"stack": [null]}`, `{"static": "yes"}`,
		`{"caller": "a", "caller": "b"}`, `{"Caller": "a"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := reflectRecord(data)
		got, err := scanRecord(data)
		if err != nil {
			return
		}
		if wantErr != nil {
			t.Fatalf("the scanner read %s as %+v, the library refuses it: %v", data, got, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nscanned   %+v\nreflected %+v", data, got, want)
		}
	})
}

// reflectRecord decodes one record with the JSON library's reflection, the decoder's defaults.
func reflectRecord(data []byte) (Record, error) {
	var r Record
	err := jsonv2.Unmarshal(data, &r)
	return r, err
}

// scanRecord decodes one record as Parse decodes each of the records: checked by the decoder, taken
// apart by parseRecord.
func scanRecord(data []byte) (Record, error) {
	var list []Record
	in := newInterner(0)
	err := in.firstError(jsonv2.Unmarshal(append(append([]byte(`[`), data...), ']'), &list, jsonv2.WithUnmarshalers(in.unmarshalers())))
	if err != nil {
		return Record{}, err
	}
	if len(list) != 1 {
		return Record{}, fmt.Errorf("%d records, not one", len(list))
	}
	return list[0], nil
}

// TestParseRecordErrors: a record field the decoder cannot take is named, with the record and what is
// wrong with its value.
func TestParseRecordErrors(t *testing.T) {
	for _, tc := range []struct{ record, want string }{
		{`{"pid": -1}`, `record 0 (at byte 1): record field "pid": -1, not a whole number from 0 up`},
		{`{"count": 4.5}`, `record field "count": 4.5, not a whole number from 0 up`},
		{`{"count": 18446744073709551616}`, `record field "count": 18446744073709551616, not a whole number from 0 to 18446744073709551615`},
		{`{"tid": 4294967296}`, `record field "tid": 4294967296 out of range`},
		{`{"count": "4"}`, `record field "count": a string, not a number`},
		{`{"static": 1}`, `record field "static": a number, not a boolean`},
		{`{"lock": 1}`, `record field "lock": a number, not a string`},
		{`{"comm": ["a"]}`, `record field "comm": a list, not a string or a list of strings`},
		{`{"stack": {}}`, `record field "stack": an object, not a string or a list of strings`},
		{`{"stack": ["a", 1]}`, `record field "stack": a list of strings holds a number`},
		{`{"st\u0061ck": [true]}`, `record field "stack": a list of strings holds a t`},
		{`{"stack": [` + strings.Repeat(`"f",`, MaxStackDepth) + `"f"]}`, `record field "stack": more than the 127 frames klockstat takes`},
		{`"a record"`, `record 0 (at byte 1): a string, not an object`},
	} {
		_, err := scanRecord([]byte(tc.record))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.40s: error %v, want %q", tc.record, err, tc.want)
		}
	}
}

// TestDecodeNamesTheFailingRecord: a record that fails past the head Decode keeps, or within it in a
// capture larger than the head, is reported as Parse reports it, not as whatever the decoder met
// after it.
func TestDecodeNamesTheFailingRecord(t *testing.T) {
	c := testCapture(t)
	for len(c.Records) < 2000 {
		c.Records = append(c.Records, c.Records...)
	}
	data := encode(t, c)
	if len(data) <= headBytes {
		t.Fatalf("the capture takes %d bytes, no more than the head", len(data))
	}
	pid42 := []byte(`"pid": 42,`)
	for _, pid := range []int{bytes.Index(data, pid42), bytes.LastIndex(data, pid42)} {
		bad := bytes.Clone(data)
		copy(bad[pid:], `"pid": -1,`)
		for name, read := range map[string]func() (*Capture, error){
			"Parse":  func() (*Capture, error) { return Parse(bad) },
			"Decode": func() (*Capture, error) { return Decode(bytes.NewReader(bad), int64(len(bad))) },
			"Decode of a stream": func() (*Capture, error) {
				return Decode(bytes.NewReader(bad), 0)
			},
		} {
			if _, err := read(); err == nil || !strings.Contains(err.Error(), `record field "pid": -1, not a whole number`) {
				t.Errorf("%s of a capture with a bad pid at byte %d: %v", name, pid, err)
			}
		}
	}
}
