package capture

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTypeNameLen is the longest lock type name, in bytes.
const MaxTypeNameLen = 64

// CheckTypeName reports why name cannot be a lock type name. It is the one rule for them: lockspec
// refuses a locks.json whose names a capture could not carry, Validate a capture with such a name.
// A name is the first word of a group key, an element of the comma list --types takes, and a label
// in the report, so it is one word of at most MaxTypeNameLen bytes of UTF-8 without spaces, commas or
// control characters.
func CheckTypeName(name string) error {
	const want = "want one word of at most 64 bytes, without spaces, commas or control characters, e.g. \"rwsem:W\""
	switch {
	case name == "":
		return fmt.Errorf("empty lock type name (%s)", want)
	case len(name) > MaxTypeNameLen || !utf8.ValidString(name):
		return fmt.Errorf("lock type name %q is not a short UTF-8 word (%s)", name, want)
	case strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == ',' }):
		return fmt.Errorf("bad lock type name %q (%s)", name, want)
	}
	return nil
}
