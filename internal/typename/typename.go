// Package typename holds the one rule for lock type names, which locks.json defines and captures
// carry: lockspec refuses a catalogue whose names a capture could not hold, and capture refuses a
// capture with such a name.
package typename

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLen is the longest type name, in bytes.
const MaxLen = 64

// Check reports why name cannot be a lock type name: a name is the first word of a group key, an
// element of the comma list --types takes, and a label in the report, so it is one word of at most
// MaxLen bytes of UTF-8 without spaces, commas or control characters.
func Check(name string) error {
	const want = "want one word of at most 64 bytes, without spaces, commas or control characters, e.g. \"rwsem:W\""
	switch {
	case name == "":
		return fmt.Errorf("empty lock type name (%s)", want)
	case len(name) > MaxLen || !utf8.ValidString(name):
		return fmt.Errorf("lock type name %q is not a short UTF-8 word (%s)", name, want)
	case strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == ',' }):
		return fmt.Errorf("bad lock type name %q (%s)", name, want)
	}
	return nil
}
