package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// captureElementID is the id of the script element of an HTML report that holds its capture as JSON.
const captureElementID = "klockstat-capture"

// ReadInput reads what klockstat writes: a capture JSON, or an HTML report, whose embedded capture it
// returns. The capture is validated as capture.Read does; anything else is an error of one line saying
// what was found.
func ReadInput(r io.Reader) (*capture.Capture, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading input: %w", err)
	}
	text := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\ufeff")), " \t\r\n")
	switch {
	case len(text) == 0:
		return nil, notCapture("the input is empty")
	case text[0] == '{':
		return oneLine(capture.Read(bytes.NewReader(text)))
	case text[0] == '<':
		js, err := embeddedCapture(text)
		if err != nil {
			return nil, notCapture(err.Error())
		}
		c, err := capture.Read(bytes.NewReader(js))
		if err != nil {
			return nil, oneLineErr(fmt.Errorf("the report's embedded capture: %w", err))
		}
		return c, nil
	}
	return nil, notCapture(fmt.Sprintf("starts with %.16q", text))
}

func notCapture(why string) error {
	return oneLineErr(fmt.Errorf("not a klockstat capture JSON or HTML report: %s", why))
}

// embeddedCapture returns the content of the report's <script ... id="klockstat-capture"> element.
// WriteHTML's JSON escapes every '<', so the element ends at the first "</script" after it.
func embeddedCapture(html []byte) ([]byte, error) {
	lower := asciiLower(html)
	for from := 0; ; {
		i := bytes.Index(lower[from:], []byte("<script"))
		if i < 0 {
			return nil, fmt.Errorf("HTML without a <script id=%q> element", captureElementID)
		}
		start := from + i
		end := bytes.IndexByte(html[start:], '>')
		if end < 0 {
			return nil, errors.New("HTML with an unterminated <script> tag")
		}
		tag := html[start : start+end]
		content := start + end + 1
		from = content
		if !bytes.Contains(tag, []byte(`id="`+captureElementID+`"`)) {
			continue
		}
		n := bytes.Index(lower[content:], []byte("</script"))
		if n < 0 {
			return nil, fmt.Errorf("HTML whose <script id=%q> element never ends", captureElementID)
		}
		return html[content : content+n], nil
	}
}

// asciiLower lowers ASCII letters only, so indexes into the result are indexes into s: bytes.ToLower
// would turn invalid UTF-8 into longer replacement characters.
func asciiLower(s []byte) []byte {
	lower := make([]byte, len(s))
	for i, c := range s {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	return lower
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
