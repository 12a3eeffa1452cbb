package lockspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// jsonKind is the kind of a JSON value, named as messages name it.
type jsonKind int

const (
	jsonObject jsonKind = iota
	jsonList
	jsonString
	jsonNumber
	jsonBool
	jsonNull
)

func (k jsonKind) String() string {
	return [...]string{"object", "list", "string", "number", "boolean", "null"}[k]
}

// jsonNode is a JSON value with the byte offset of its first byte, so that
// every semantic error can point at the value it is about.
type jsonNode struct {
	kind    jsonKind
	off     int
	text    string       // value of a string, literal of a number or boolean
	members []jsonMember // object members in document order
	elems   []*jsonNode  // list elements
}

type jsonMember struct {
	key   string
	off   int // offset of the key's opening quote
	value *jsonNode
}

// offsetError is a problem at a byte offset of the input, before the
// offset is turned into line:column.
type offsetError struct {
	off int
	msg string
}

// readJSON parses data into a tree of positioned values. The syntax is
// checked first by encoding/json's scanner, whose offsets count every byte
// of the input; the token walk that follows then cannot fail on syntax.
func readJSON(data []byte) (*jsonNode, *offsetError) {
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var syntax *json.SyntaxError
		if !errors.As(err, &syntax) {
			return nil, &offsetError{0, fmt.Sprintf("reading JSON: %v", err)}
		}
		return nil, syntaxError(syntax, data)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := &treeWalker{data: data, dec: dec}
	return w.value()
}

// syntaxError locates a scanner error: the scanner reports how many bytes it
// had read including the offending one. At the end of the input it either
// says so or, inside a literal or number, complains about a space it made up.
func syntaxError(e *json.SyntaxError, data []byte) *offsetError {
	off := int(e.Offset)
	inventedSpace := off == len(data) && strings.HasPrefix(e.Error(), "invalid character ' '") &&
		(off == 0 || data[off-1] != ' ')
	switch {
	case strings.HasPrefix(e.Error(), "unexpected end") || inventedSpace:
		return &offsetError{min(off, len(data)), "syntax error: unexpected end of input (unclosed object, list or string?)"}
	case strings.HasSuffix(e.Error(), "after top-level value"):
		return &offsetError{max(off-1, 0), "trailing data after the top-level object (remove it: a catalogue is one JSON object)"}
	default:
		return &offsetError{max(off-1, 0), "syntax error: " + e.Error()}
	}
}

type treeWalker struct {
	data []byte
	dec  *json.Decoder
}

// next returns the next token and the offset of its first byte. The decoder's
// offset is the end of the previous token; separators and spaces follow it.
func (w *treeWalker) next() (json.Token, int, *offsetError) {
	off := int(w.dec.InputOffset())
	for off < len(w.data) && strings.IndexByte(" \t\r\n,:", w.data[off]) >= 0 {
		off++
	}
	tok, err := w.dec.Token()
	if err != nil {
		return nil, off, &offsetError{off, fmt.Sprintf("reading JSON: %v", err)}
	}
	return tok, off, nil
}

func (w *treeWalker) value() (*jsonNode, *offsetError) {
	tok, off, err := w.next()
	if err != nil {
		return nil, err
	}
	n := &jsonNode{off: off}
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '{' {
			n.kind = jsonObject
			for w.dec.More() {
				key, keyOff, err := w.next()
				if err != nil {
					return nil, err
				}
				v, err := w.value()
				if err != nil {
					return nil, err
				}
				n.members = append(n.members, jsonMember{key: key.(string), off: keyOff, value: v})
			}
		} else {
			n.kind = jsonList
			for w.dec.More() {
				v, err := w.value()
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, v)
			}
		}
		if _, _, err := w.next(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.kind, n.text = jsonString, tok
	case json.Number:
		n.kind, n.text = jsonNumber, tok.String()
	case bool:
		n.kind, n.text = jsonBool, strconv.FormatBool(tok)
	case nil:
		n.kind = jsonNull
	}
	return n, nil
}
