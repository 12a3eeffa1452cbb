package capture

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxTypeNameLen is the longest lock type name, in bytes.
const MaxTypeNameLen = 64

// typeNameChars are the characters a lock type name may hold, and typeNameRule says so in errors.
const (
	typeNameChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.:+/"
	typeNameRule  = "want 1 to 64 of the ASCII characters A-Z a-z 0-9 _ - . : + /, e.g. \"rwsem:W\""
)

// CheckTypeName reports why name cannot be a lock type name. It is the one rule for them: lockspec
// refuses a locks.json whose names a capture could not carry, Validate a capture with such a name.
// A name is the first word of a group key, an element of the comma list --types takes, and a label
// in the report, so it is one word of at most MaxTypeNameLen bytes. Its characters are a set of
// ASCII ones: a name spelt with a dotless i, a Cyrillic letter or a zero-width joiner would show as
// a built-in one ("spinlock") while being another type.
func CheckTypeName(name string) error {
	if name == "" {
		return fmt.Errorf("empty lock type name (%s)", typeNameRule)
	}
	if len(name) > MaxTypeNameLen {
		return fmt.Errorf("lock type name %q is longer than %d bytes (%s)", name, MaxTypeNameLen, typeNameRule)
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return !strings.ContainsRune(typeNameChars, r) }); i >= 0 {
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
