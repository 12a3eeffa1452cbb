package capture

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxTypeNameLen is the longest lock type name, in bytes.
const MaxTypeNameLen = 64

// typeNameRule says in errors what a lock type name may be.
const typeNameRule = "want 1 to 64 printable ASCII characters, U+0021 to U+007E but ',', e.g. \"rwsem:W\""

// typeNameChar reports whether r may be a character of a lock type name: printable ASCII, without
// the space and the comma that separate names in group keys and in the list --types takes.
func typeNameChar(r rune) bool { return r > ' ' && r <= '~' && r != ',' }

// CheckTypeName reports why name cannot be a lock type name. It is the one rule for them: lockspec
// refuses a locks.json whose names a capture could not carry, Validate a capture with such a name.
// A name is the first word of a group key, an element of the comma list --types takes, and a label
// in the report, so it is one word of at most MaxTypeNameLen bytes. Its characters are printable
// ASCII: a name spelt with a dotless i, a Cyrillic letter or a zero-width joiner would show as a
// built-in one ("spinlock") while being another type.
func CheckTypeName(name string) error {
	if name == "" {
		return fmt.Errorf("empty lock type name (%s)", typeNameRule)
	}
	if len(name) > MaxTypeNameLen {
		return fmt.Errorf("lock type name %q is longer than %d bytes (%s)", name, MaxTypeNameLen, typeNameRule)
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return !typeNameChar(r) }); i >= 0 {
		// %+q escapes every non-ASCII character, so an invisible one cannot hide in the message.
		r, size := utf8.DecodeRuneInString(name[i:])
		what := fmt.Sprintf("U+%04X", r)
		if r == utf8.RuneError && size == 1 {
			what = fmt.Sprintf("byte 0x%02X, not UTF-8", name[i])
		}
		return fmt.Errorf("bad lock type name %+q: %s at byte %d (%s)", name, what, i, typeNameRule)
	}
	return nil
}
