package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"golang.org/x/net/html"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/inputfile"
)

// captureElementID is the id of the script element in which reports before the page data (embed.go)
// held their capture as JSON.
const captureElementID = "klockstat-capture"

// MaxInputSize is the most ReadInput reads. A capture JSON takes about 1 KB a record at the default
// --stack-depth of 16, so a capture of a million records fits with room to spare; a larger input
// is refused rather than read into memory.
const MaxInputSize = 2 << 30

// sniffSize is how much of an input ReadInput looks at before deciding whether to read the rest,
// so that a stream of something else (stdin from /dev/zero) is refused without being read.
const sniffSize = 64 << 10

// ReadInputFile reads the capture at path, or at stdin for "-". Anything but a regular file or
// stdin is refused, as is a file over MaxInputSize; errors start with the path. A sweep is ErrSweep.
func ReadInputFile(path string, stdin io.Reader) (*capture.Capture, error) {
	in, err := ReadAnyInputFile(path, stdin)
	if err != nil {
		return nil, err
	}
	if in.Sweep != nil {
		return nil, fmt.Errorf("%s: %w", inputfile.Name(path), ErrSweep)
	}
	return in.Capture, nil
}

// Input is what klockstat report reads: a capture, or a sweep of klockstat scale; one of the two is
// set.
type Input struct {
	Capture *capture.Capture
	Sweep   *capture.Sweep
}

// ReadAnyInputFile reads the capture or sweep at path, or at stdin for "-", once: its kind is told
// from its first bytes (sweepKind). Anything but a regular file or stdin is refused, as is a file
// over MaxInputSize; errors start with the path.
func ReadAnyInputFile(path string, stdin io.Reader) (Input, error) {
	f, err := inputfile.Open(path, stdin, MaxInputSize)
	if err != nil {
		return Input{}, err
	}
	defer f.Close()
	in, err := readAnyInput(f, MaxInputSize)
	if err != nil {
		return Input{}, fmt.Errorf("%s: %w", inputfile.Name(path), err)
	}
	return in, nil
}

// ReadInput reads what klockstat writes: a capture JSON, or an HTML report, whose embedded capture it
// returns. The capture is validated as capture.Read does; anything else is an error of one line saying
// what was found, without quoting it (the input may be a file the user may not see). At most
// MaxInputSize bytes are read.
func ReadInput(r io.Reader) (*capture.Capture, error) {
	return readInput(r, MaxInputSize)
}

// readInput is ReadInput reading at most limit bytes.
func readInput(r io.Reader, limit int64) (*capture.Capture, error) {
	in, err := readInputOf(r, limit, false)
	return in.Capture, err
}

// readAnyInput is ReadAnyInputFile of a reader, reading at most limit bytes.
func readAnyInput(r io.Reader, limit int64) (Input, error) {
	return readInputOf(r, limit, true)
}

// readInputOf reads a capture or, when sweeps, a sweep, from at most limit bytes of r. A look at the
// first bytes refuses what is neither JSON nor HTML without reading the rest, and tells a capture
// JSON as klockstat writes it, which is decoded as it is read (capture.Decode); anything else is read
// whole, into a buffer of its size when it is a file.
func readInputOf(r io.Reader, limit int64, sweeps bool) (Input, error) {
	head, err := io.ReadAll(io.LimitReader(r, sniffSize))
	if err != nil {
		return Input{}, fmt.Errorf("reading input: %w", err)
	}
	text := trimLeading(head)
	if len(text) > 0 && text[0] != '{' && text[0] != '<' {
		return Input{}, notCapture(describe(text))
	}
	size := int64(0)
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			size = st.Size()
		}
	}
	if firstMember(text) == "version" {
		all := io.MultiReader(bytes.NewReader(text), r) // without the BOM and blank space trimmed
		if size > 0 {
			limitMemory(streamLimit(size))
		}
		bounded := &io.LimitedReader{R: all, N: limit + 1}
		c, err := capture.Decode(bounded, size)
		if bounded.N <= 0 {
			return Input{}, fmt.Errorf("reading input: %w", &inputfile.TooLargeError{Limit: limit, Size: -1})
		}
		if size == 0 { // a stream: its size is known now, for the rendering
			limitMemory(streamLimit(limit + 1 - bounded.N))
		}
		c, err = oneLine(c, err)
		return Input{Capture: c}, err
	}
	data, err := inputfile.ReadAll(io.MultiReader(bytes.NewReader(head), r), limit, size)
	if err != nil {
		return Input{}, fmt.Errorf("reading input: %w", err)
	}
	limitMemory(wholeLimit(int64(len(data))))
	if sweeps && sweepKind(data) {
		s, _, err := readSweep(data, limit)
		return Input{Sweep: s}, err
	}
	c, err := parseInput(data, limit)
	return Input{Capture: c}, err
}

// sweepKind reports whether data is a sweep: a JSON document whose first member is klockstat's
// "sweep_version" (a capture's is "version"; a document in another order is asked whole), or a page
// with the sweep's element, the scaling report.
func sweepKind(data []byte) bool {
	text := trimLeading(data)
	if len(text) == 0 || text[0] != '{' {
		return bytes.Contains(text, []byte(`id="`+sweepElementID+`"`))
	}
	switch firstMember(text) {
	case "sweep_version":
		return true
	case "version":
		return false
	}
	return capture.IsSweep(text)
}

// firstMember is the name of the first member of the JSON object text starts with, "" if none.
func firstMember(text []byte) string {
	if len(text) == 0 || text[0] != '{' {
		return ""
	}
	dec := jsontext.NewDecoder(bytes.NewReader(text[:min(len(text), sniffSize)]))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return ""
	}
	if name, err := dec.ReadToken(); err == nil && name.Kind() == '"' {
		return name.String()
	}
	return ""
}

// limitMemory asks the garbage collector to keep the heap within limit bytes, about what decoding
// and rendering an input keep alive at the most (streamLimit, wholeLimit): left to itself, the heap
// grows to twice its size at the last collection, which for a big capture is twice what it needs.
// The limit is soft: a bigger live heap makes the collector run often, never fail. GOMEMLIMIT, when
// set, stays the limit.
func limitMemory(limit int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if debug.SetMemoryLimit(-1) < limit { // a lower limit is set already: keep it
		return
	}
	debug.SetMemoryLimit(limit)
}

// streamLimit is the heap limit for a capture JSON of size bytes decoded as it is read: what stays
// alive at the most, the capture and the page being built from it, came to 1.1 times the JSON of a
// synthetic 100,000-record capture (98 MB of 92 MB); three quarters more leave the collector room
// to run seldom (at 1.5 times it took a fifth more CPU time). The room is at most 256 MiB: of a
// synthetic 1,000,000-record capture (882 MiB) 1,004 MiB stayed alive at the most, and a limit of
// 1,100 MiB took the peak from 1,563 MiB to 1,211 MiB for the same CPU time.
func streamLimit(size int64) int64 { return max(128<<20, min(size*7/4, size+256<<20)) }

// wholeLimit is the heap limit for an input of size bytes read whole: its bytes and the capture
// decoded from them are alive together, and a page's compressed data inflates to many times its size.
func wholeLimit(size int64) int64 { return max(256<<20, 3*size) }

// parseInput decodes a capture JSON or an HTML page, whose data it inflates to at most limit bytes.
func parseInput(data []byte, limit int64) (*capture.Capture, error) {
	text := trimLeading(data)
	switch {
	case len(text) == 0:
		return nil, notCapture("the input is empty")
	case text[0] == '{':
		c, err := capture.Parse(text)
		if err != nil && capture.IsSweep(text) {
			return nil, ErrSweep
		}
		return oneLine(c, err)
	}
	content, err := embeddedElement(text, dataElementID)
	switch {
	case err == nil:
		c, err := decodePageData(content, limit)
		if errors.Is(err, errNoCapture) {
			return nil, notCapture(err.Error())
		}
		return oneLine(c, err)
	case errors.Is(err, errUnended):
		return nil, truncated("the page ends inside its <script id=\"" + dataElementID + "\"> element")
	case !errors.Is(err, errNoElement):
		return nil, notCapture(err.Error())
	}
	if _, err := embeddedElement(text, sweepElementID); !errors.Is(err, errNoElement) {
		return nil, ErrSweep
	}
	js, err := embeddedElement(text, captureElementID)
	if errors.Is(err, errNoElement) { // nor a report of an earlier version: name today's element
		return nil, notCapture(fmt.Sprintf("HTML without a <script id=%q> element (a report's page data)", dataElementID))
	}
	if err != nil {
		return nil, notCapture(err.Error())
	}
	c, err := capture.Parse(js)
	if err != nil {
		return nil, oneLineErr(fmt.Errorf("the report's embedded capture: %w", err))
	}
	return c, nil
}

// ErrSweep is the error of ReadInput for a sweep of klockstat scale (its JSON or its scaling report),
// which holds a capture per run, not one.
var ErrSweep = errors.New("this is a sweep of klockstat scale, not a capture: `klockstat report FILE` writes its scaling report, `klockstat report FILE --level N` the report of level N")

// trimLeading drops a UTF-8 byte-order mark and the blank space before a JSON document or a page.
func trimLeading(data []byte) []byte {
	return bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\ufeff")), " \t\r\n")
}

// describe says what kind of data text is, for an input that is neither JSON nor HTML.
func describe(text []byte) string {
	if !utf8.Valid(text) || bytes.ContainsFunc(text, func(r rune) bool {
		return r != '\t' && r != '\n' && r != '\r' && unicode.IsControl(r)
	}) {
		return "found binary data"
	}
	return "found text that starts with neither '{' (capture JSON) nor '<' (HTML report)"
}

// truncated is the error for a report whose page data ends early, as where a download or a copy was
// cut short.
func truncated(how string) error {
	return fmt.Errorf("the report's page data is truncated: %s (a download or copy cut short?); read the whole page, or the capture JSON", how)
}

func notCapture(why string) error {
	return oneLineErr(fmt.Errorf("not a klockstat capture JSON or HTML report: %s", why))
}

// errNoElement and errUnended are the errors of embeddedElement for a page without the element, and
// for a page that ends inside it.
var (
	errNoElement = errors.New("no such element")
	errUnended   = errors.New("element never ends")
)

// embeddedElement returns the content of the page's element with the given id, found as a browser's
// getElementById finds it: the first such start tag in document order, outside comments, attribute
// values, the raw text of other scripts, styles or titles, and the contents of templates, which a
// browser parses into a fragment outside the document. It must be a script element.
func embeddedElement(page []byte, id string) ([]byte, error) {
	z := html.NewTokenizer(bytes.NewReader(page))
	templates := 0 // templates open around the current token
	for {
		switch z.Next() {
		case html.ErrorToken:
			return nil, errNoElement
		case html.EndTagToken:
			if name, _ := z.TagName(); string(name) == "template" && templates > 0 {
				templates--
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			// A browser ignores the self-closing mark of a non-void element: <template/> opens one.
			name, hasAttr := z.TagName()
			if templates > 0 || !hasAttr || !hasID(z, id) {
				if string(name) == "template" {
					templates++
				}
				continue
			}
			if string(name) != "script" {
				return nil, fmt.Errorf("HTML whose element with id %q is a <%s>, not a <script>", id, name)
			}
			// A script's content is raw text up to its end tag: one text token, none if empty.
			switch z.Next() {
			case html.TextToken:
				content := z.Text()
				if z.Next() != html.EndTagToken {
					return nil, fmt.Errorf("HTML whose <script id=%q> %w", id, errUnended)
				}
				return content, nil
			case html.EndTagToken:
				return nil, nil
			}
			return nil, fmt.Errorf("HTML whose <script id=%q> %w", id, errUnended)
		}
	}
}

// hasID reports whether the current tag of z has the given id. Like a browser, it takes the first of
// repeated attributes.
func hasID(z *html.Tokenizer, id string) bool {
	for more := true; more; {
		var key, val []byte
		key, val, more = z.TagAttr()
		if string(key) == "id" {
			return string(val) == id
		}
	}
	return false
}

// oneLine and oneLineErr keep errors on one line: they end up in a terminal and in bug tickets, and a
// capture's strings, which some errors quote, come from the kernel and from processes.
func oneLine(c *capture.Capture, err error) (*capture.Capture, error) {
	if err != nil {
		return nil, oneLineErr(err)
	}
	return c, nil
}

func oneLineErr(err error) error {
	if !strings.ContainsAny(err.Error(), "\r\n") {
		return err
	}
	return &singleLineError{err}
}

// singleLineError shows its error with line breaks replaced by spaces, and still unwraps to it.
type singleLineError struct{ err error }

func (e *singleLineError) Error() string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(e.err.Error())
}

func (e *singleLineError) Unwrap() error { return e.err }
