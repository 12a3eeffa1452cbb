package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
)

func TestReadInputJSONAndHTML(t *testing.T) {
	c, _ := knownCapture(t)
	var js bytes.Buffer
	if err := c.Write(&js); err != nil {
		t.Fatal(err)
	}
	fromJSON, err := ReadInput(bytes.NewReader(js.Bytes()))
	if err != nil {
		t.Fatalf("reading the capture JSON: %v", err)
	}
	page := renderHTML(t, c, HTMLOptions{RawAddresses: true}, testKey)
	fromHTML, err := ReadInput(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("reading the HTML report: %v", err)
	}
	if !reflect.DeepEqual(fromJSON, fromHTML) {
		t.Errorf("the JSON and the HTML report read differently:\nJSON %+v\nHTML %+v", fromJSON, fromHTML)
	}
	if normalized(t, fromJSON) != normalized(t, c) {
		t.Errorf("read %+v, want %+v", fromJSON, c)
	}

	// A byte-order mark and blank lines before the JSON are fine.
	withBOM := append([]byte("\ufeff\n  "), js.Bytes()...)
	if _, err := ReadInput(bytes.NewReader(withBOM)); err != nil {
		t.Errorf("JSON after a BOM: %v", err)
	}

	// A report rendered from a report keeps the ids of the first.
	first := renderHTML(t, c, HTMLOptions{}, testKey)
	hashedOnce, err := ReadInput(bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	again, err := ReadInput(bytes.NewReader(renderHTML(t, hashedOnce, HTMLOptions{}, []byte("another key"))))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, hashedOnce) {
		t.Error("re-rendering a hashed report changed its capture")
	}
}

func TestReadInputErrors(t *testing.T) {
	const notCapture = "not a klockstat capture JSON or HTML report: "
	tests := []struct {
		name, input, want string
	}{
		{"empty", "", notCapture + "the input is empty"},
		{"blank", " \n\t", notCapture + "the input is empty"},
		{"text", "hello world\nsecond line", notCapture + `starts with "hello world\nseco"`},
		{"png", "\x89PNG\r\n\x1a\n", notCapture + `starts with "\x89PNG\r\n\x1a\n"`},
		{"HTML without capture", "<html><body><script>x()</script><p>hi</p></body></html>", notCapture + `HTML without a <script id="klockstat-capture"> element`},
		{"unterminated tag", `<html><script id="klockstat-capture"`, notCapture + "HTML with an unterminated <script> tag"},
		{"unterminated element", `<html><script type="application/json" id="klockstat-capture">{"version":1`, notCapture + `HTML whose <script id="klockstat-capture"> element never ends`},
		{"HTML with bad JSON", `<html><script type="application/json" id="klockstat-capture">{"version":1,</script>`, "the report's embedded capture: decoding capture: "},
		{"JSON without version", `{"meta":{}}`, `decoding capture: no "version" field`},
		{"JSON of another version", `{"version":2}`, "unsupported capture format version 2"},
		{"invalid capture", `{"version":1,"records":[{"type":"mutex","count":0}]}`, "invalid capture: record 0: count and hold_count are 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ReadInput(strings.NewReader(tc.input))
			if err == nil {
				t.Fatalf("read %+v, want an error", c)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("error %q spans lines", err)
			}
		})
	}
	if _, err := ReadInput(strings.NewReader(`{"version":2}`)); !errors.Is(err, capture.ErrUnsupportedVersion) {
		t.Errorf("error %v does not wrap capture.ErrUnsupportedVersion", err)
	}
}

func FuzzReadInput(f *testing.F) {
	c, _ := knownCapture(f)
	js, err := json.Marshal(c)
	if err != nil {
		f.Fatal(err)
	}
	// The seeds are small: a real report inlines a megabyte of ECharts that ReadInput only skips.
	f.Add(js)
	f.Add([]byte(`<!DOCTYPE html><html><head><script>var x = "<\/script>";</script></head><body>` +
		`<script type="application/json" id="klockstat-capture">` + string(js) + `</script></body></html>`))
	f.Add([]byte(`<script id="klockstat-capture">{"version":1}</SCRIPT>`))
	f.Add([]byte(`{"version":1,"records":null,"histograms":[]}`))
	f.Add([]byte("<"))
	f.Add([]byte("\ufeff{"))
	f.Fuzz(func(t *testing.T, input []byte) {
		c, err := ReadInput(bytes.NewReader(input))
		if err != nil {
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("error %q spans lines", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ReadInput returned an invalid capture: %v", err)
		}
		// What was read can be written as a report and read back unchanged.
		var page bytes.Buffer
		if err := writeHTML(&page, c, HTMLOptions{RawAddresses: true}, testKey); err != nil {
			t.Fatalf("rendering what ReadInput read: %v", err)
		}
		back, err := ReadInput(&page)
		if err != nil {
			t.Fatalf("reading back the report: %v", err)
		}
		if !reflect.DeepEqual(normalized(t, back), normalized(t, c)) {
			t.Fatalf("report of the input reads back differently:\n got %+v\nwant %+v", back, c)
		}
	})
}

// normalized is c as its JSON encodes it, so that nil and empty lists compare equal.
func normalized(t testing.TB, c *capture.Capture) string {
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

func TestOneLineErr(t *testing.T) {
	inner := errors.New("thread \"a\nb\" in\r\nrecord 3")
	err := oneLineErr(fmt.Errorf("reading: %w", inner))
	if got, want := err.Error(), `reading: thread "a b" in record 3`; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	if !errors.Is(err, inner) {
		t.Error("the one-line error does not unwrap to the original")
	}
	if plain := errors.New("one line"); oneLineErr(plain) != plain {
		t.Error("an error of one line was wrapped")
	}
}
