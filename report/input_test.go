package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/inputfile"
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
	if normalized(t, fromJSON) != normalized(t, fromHTML) {
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
	const text = notCapture + "found text that starts with neither '{' (capture JSON) nor '<' (HTML report)"
	js := `{"version":1}`
	tests := []struct {
		name, input, want string
	}{
		{"empty", "", notCapture + "the input is empty"},
		{"blank", " \n\t", notCapture + "the input is empty"},
		{"text", "hello world\nsecond line", text},
		{"secret text", "root:$6$secretsecret:19000:0:99999:7:::\n", text},
		{"png", "\x89PNG\r\n\x1a\n", notCapture + "found binary data"},
		{"zeros", "\x00\x00\x00\x00", notCapture + "found binary data"},
		{"HTML without capture", "<html><body><script>x()</script><p>hi</p></body></html>", notCapture + `HTML without a <script id="klockstat-data"> element (a report's page data)`},
		{"unterminated tag", `<html><script id="klockstat-capture"`, notCapture + `HTML without a <script id="klockstat-data"> element (a report's page data)`},
		{"unterminated element", `<html><script type="application/json" id="klockstat-capture">{"version":1`, notCapture + `HTML whose <script id="klockstat-capture"> element never ends`},
		{"capture in a comment", `<html><!-- <script type="application/json" id="klockstat-capture">` + js + `</script> --></html>`, notCapture + `HTML without a <script id="klockstat-data"> element (a report's page data)`},
		{"capture in an attribute", `<p title='<script id="klockstat-capture">` + js + `</script>'></p>`, notCapture + `HTML without a <script id="klockstat-data"> element (a report's page data)`},
		{"capture in another script", `<script>var s = '<script id="klockstat-capture">` + js + `</script>`, notCapture + `HTML without a <script id="klockstat-data"> element (a report's page data)`},
		{"id on another element", `<div id="klockstat-capture"></div><script id="klockstat-capture">` + js + `</script>`, notCapture + `HTML whose element with id "klockstat-capture" is a <div>, not a <script>`},
		{"HTML with bad JSON", `<html><script type="application/json" id="klockstat-capture">{"version":1,</script>`, "the report's embedded capture: decoding capture: "},
		{"JSON without version", `{"meta":{}}`, `decoding capture: no "version" field`},
		{"JSON of another version", `{"version":2}`, "unsupported capture format version 2"},
		{"invalid capture", `{"version":1,"records":[{"type":"mutex","count":0}]}`, "invalid capture: record 0: count and hold_count are 0"},
		{"a sweep JSON", `{"sweep_version":1,"levels":[]}`, "this is a sweep of klockstat scale, not a capture: `klockstat report FILE` writes its scaling report, `klockstat report FILE --level N`"},
		{"a scaling report", `<html><script type="text/plain" id="` + sweepElementID + `">H4sI</script></html>`, "this is a sweep of klockstat scale"},
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
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q quotes the input", err)
			}
		})
	}
	if _, err := ReadInput(strings.NewReader(`{"version":2}`)); !errors.Is(err, capture.ErrUnsupportedVersion) {
		t.Errorf("error %v does not wrap capture.ErrUnsupportedVersion", err)
	}
}

// TestReadInputFindsTheElementABrowserFinds puts a decoy capture where a browser sees no element and
// checks that ReadInput reads the one the page shows.
func TestReadInputFindsTheElementABrowserFinds(t *testing.T) {
	c, _ := knownCapture(t)
	real, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	decoy := `{"version":1,"meta":{"hostname":"decoy"}}`
	for _, hide := range []string{
		`<!-- <script type="application/json" id="klockstat-capture">` + decoy + `</script> -->`,
		`<title><script id="klockstat-capture">` + decoy + `</script></title>`,
		`<p data-x='<script id="klockstat-capture">` + decoy + `</script>'></p>`,
		`<SCRIPT>var d = '<script id="klockstat-capture">` + decoy + `'</SCRIPT>`,
		// A template's contents are a fragment outside the document: getElementById does not see them.
		`<template><script type="application/json" id="klockstat-capture">` + decoy + `</script></template>`,
		`<TEMPLATE id="t"><template></template><div><script id="klockstat-capture">` + decoy + `</script></div></TEMPLATE>`,
	} {
		page := `<!DOCTYPE html><html><head>` + hide + `</head><body><script type="application/json" id="klockstat-capture">` + string(real) + `</script></body></html>`
		got, err := ReadInput(strings.NewReader(page))
		if err != nil {
			t.Fatalf("page hiding %s: %v", hide, err)
		}
		if got.Meta.Hostname != c.Meta.Hostname || len(got.Records) != len(c.Records) {
			t.Errorf("page hiding %s: read the decoy (hostname %q, %d records)", hide, got.Meta.Hostname, len(got.Records))
		}
	}
}

// TestReadInputLimit checks that an input over the limit is refused, whether it streams past it or
// is a file known to be larger, and that a stream of something else is refused after a glance.
func TestReadInputLimit(t *testing.T) {
	const limit = 1 << 20
	endless := io.MultiReader(strings.NewReader(`{"version":1,"records":[`), repeatReader(' '))
	_, err := readInput(endless, limit)
	var tooLarge *inputfile.TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != limit {
		t.Errorf("endless JSON: error %v, want a *TooLargeError at %d bytes", err, limit)
	}
	zeros := &countingReader{r: repeatReader(0)}
	if _, err := ReadInput(zeros); err == nil || !strings.Contains(err.Error(), "found binary data") {
		t.Errorf("endless zeros: error %v, want binary data refused", err)
	}
	if zeros.n > sniffSize {
		t.Errorf("read %d bytes of zeros before refusing them, want at most %d", zeros.n, sniffSize)
	}

	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxInputSize+1); err != nil { // sparse: costs no disk
		t.Fatal(err)
	}
	if _, err := ReadInputFile(big, nil); !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), big+": 2.0 GiB, more than the 2 GiB klockstat reads") {
		t.Errorf("file over MaxInputSize: error %v, want it refused by size", err)
	}
}

// TestReadInputFile checks what ReadInputFile accepts besides a regular file: stdin for "-", and
// nothing that could block or never end.
func TestReadInputFile(t *testing.T) {
	c, _ := knownCapture(t)
	var js bytes.Buffer
	if err := c.Write(&js); err != nil {
		t.Fatal(err)
	}
	got, err := ReadInputFile("-", &js)
	if err != nil {
		t.Fatalf("reading stdin: %v", err)
	}
	if normalized(t, got) != normalized(t, c) {
		t.Errorf("read from stdin %+v, want %+v", got, c)
	}
	if _, err := ReadInputFile("-", strings.NewReader("nope")); err == nil || !strings.HasPrefix(err.Error(), "stdin: not a klockstat capture") {
		t.Errorf("stdin of text: error %v, want one starting with stdin:", err)
	}

	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, fifo + ": a named pipe (FIFO), not a regular file"},
		{"/dev/zero", "/dev/zero: a character device, not a regular file"},
		{dir, dir + ": a directory, not a regular file"},
		{filepath.Join(dir, "missing.json"), "no such file or directory"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadInputFile(tc.path, nil)
			done <- err
		}()
		err := <-done // a FIFO without a writer would block here before the fix
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadInputFile(%s): error %v, want one containing %q", tc.path, err, tc.want)
		}
	}
}

// repeatReader is an endless stream of one byte.
type repeatReader byte

func (b repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// FuzzReadInput fuzzes the parser: every input either fails with one line or gives a valid capture,
// which is then embedded the way the report embeds it and read back unchanged. Only what parses is
// encoded, and no page is rendered around it: the rendering tests cover the page. The seeds are
// small, because the fuzzer spends its time minimising what grows from them.
func FuzzReadInput(f *testing.F) {
	js, err := json.Marshal(smallCapture(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(js)
	f.Add([]byte(`<!DOCTYPE html><script>var x = "<\/script>";</script><!-- <script id="klockstat-capture">{}</script> -->` +
		`<script type="application/json" id="klockstat-capture">` + string(js) + `</script>`))
	f.Add([]byte(`<script id="klockstat-capture">{"version":1}</SCRIPT>`))
	f.Add([]byte(`{"version":1,"records":null,"histograms":[]}`))
	f.Add([]byte("<"))
	f.Add([]byte("\ufeff{"))
	f.Fuzz(func(t *testing.T, input []byte) {
		c, err := ReadInput(bytes.NewReader(input))
		if !readOrRefused(t, c, err) {
			return
		}
		// What was read reads back the same from a page's data, and from a report of the format
		// before it, which embedded the capture's JSON. Only the data element is written: a whole page
		// inlines a megabyte of ECharts.
		element := dataElement(t, c)
		old, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("encoding what ReadInput read: %v", err)
		}
		for _, page := range []string{
			`<!DOCTYPE html>` + element,
			`<!DOCTYPE html><script type="application/json" id="klockstat-capture">` + string(old) + `</script>`,
		} {
			back, err := ReadInput(strings.NewReader(page))
			if err != nil {
				t.Fatalf("reading back the embedded capture: %v", err)
			}
			if !reflect.DeepEqual(normalized(t, back), normalized(t, c)) {
				t.Fatalf("the embedded capture reads back differently:\n got %+v\nwant %+v", back, c)
			}
		}
	})
}

// readOrRefused fails t unless what ReadInput returned is a valid capture or an error of one line,
// and says whether it is a capture.
func readOrRefused(t *testing.T, c *capture.Capture, err error) bool {
	t.Helper()
	if err != nil {
		if strings.ContainsAny(err.Error(), "\r\n") {
			t.Fatalf("error %q spans lines", err)
		}
		return false
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("ReadInput returned an invalid capture: %v", err)
	}
	return true
}

// dataElement is the page data element of a report of c, without the rest of the page.
func dataElement(t testing.TB, c *capture.Capture) string {
	t.Helper()
	tab := newStrtab(nil)
	rest := *c
	rest.Records = nil
	data := pageData{tab: tab, capture: &rest, records: newRecordFields(c.Records, capture.Order(c.Records), tab)}
	element, err := data.encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(element)
}

// TestReadInputSkipsTemplates checks that a page data element inside a <template>, which a browser
// keeps out of the document, is not the one read.
func TestReadInputSkipsTemplates(t *testing.T) {
	c, _ := knownCapture(t)
	decoy := *c
	decoy.Meta.Hostname = "decoy"
	page := `<!DOCTYPE html><template>` + dataElement(t, &decoy) + `</template>` + dataElement(t, c)
	got, err := ReadInput(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if got.Meta.Hostname != c.Meta.Hostname {
		t.Errorf("read the page data inside a <template> (hostname %q)", got.Meta.Hostname)
	}
	if _, err := ReadInput(strings.NewReader(`<template>` + dataElement(t, c) + `</template>`)); err == nil || !strings.Contains(err.Error(), `HTML without a <script id="klockstat-data"> element`) {
		t.Errorf("a page whose only data is in a <template>: error %v, want none found", err)
	}
}

// TestReadInputTruncatedPage checks that a page cut short inside its data says so, rather than that
// it has no data.
func TestReadInputTruncatedPage(t *testing.T) {
	c, _ := knownCapture(t)
	element := dataElement(t, c)
	start := strings.Index(element, ">") + 1
	for _, cut := range []int{start, start + 1, (start + len(element)) / 2, len(element) - len("</script>") - 1, len(element) - 2} {
		page := "<!DOCTYPE html><body>" + element[:cut]
		_, err := ReadInput(strings.NewReader(page))
		if err == nil || !strings.Contains(err.Error(), "the report's page data is truncated") {
			t.Errorf("page cut %d bytes into its data element: error %v, want it to say the data is truncated", cut, err)
		}
	}
	// The element whole, its compressed data cut short.
	b64 := element[start : len(element)-len("</script>")]
	page := "<!DOCTYPE html>" + element[:start] + b64[:len(b64)/2/4*4] + "</script>"
	if _, err := ReadInput(strings.NewReader(page)); err == nil || !strings.Contains(err.Error(), "the report's page data is truncated") {
		t.Errorf("page data cut short: error %v, want it to say the data is truncated", err)
	}
}

// normalized is c as its JSON encodes it, so that nil and empty lists compare equal, with its records
// in the order of capture.Sort, in which a report holds them.
func normalized(t testing.TB, c *capture.Capture) string {
	sorted := *c
	sorted.Records = slices.Clone(c.Records)
	sorted.Sort()
	js, err := json.Marshal(&sorted)
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
