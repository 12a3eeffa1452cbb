// Package termsafe makes text that a process, a file or the kernel named safe
// to print on a terminal.
package termsafe

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// String replaces what could make a terminal do more than print: control characters (ESC starts
// escape sequences), bidirectional-text controls that reorder what is shown, and invalid UTF-8.
func String(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError {
			return '?'
		}
		return r
	}, s)
}
