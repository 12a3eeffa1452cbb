package capture

import (
	"strings"
	"testing"
)

// allowedTypeChars is how an error about a type name lists the characters it may hold.
const allowedTypeChars = "printable ASCII characters, U+0021 to U+007E but ','"

func TestCheckTypeName(t *testing.T) {
	for _, good := range []string{"mutex", "rwsem:W", "rwlock-rt:R", "pcpu-sem:R", "mutex_v2.1", "my+lock/2", "</script>", strings.Repeat("x", MaxTypeNameLen)} {
		if err := CheckTypeName(good); err != nil {
			t.Errorf("CheckTypeName(%q) = %v, want nil", good, err)
		}
	}
	for _, bad := range []string{"", "spin lock", " mutex", "mutex\n", "a\tb", "a,b", "a\u00a0b", "a\x00b", "\xff", strings.Repeat("x", MaxTypeNameLen+1)} {
		err := CheckTypeName(bad)
		if err == nil {
			t.Errorf("CheckTypeName(%q) = nil, want an error", bad)
			continue
		}
		if !strings.Contains(err.Error(), allowedTypeChars) || strings.ContainsAny(err.Error(), "\n\t") {
			t.Errorf("CheckTypeName(%q) = %q, want one line saying what a name must be", bad, err)
		}
	}
}

// TestCheckTypeNameRefusesLookalikes checks that a name drawn like a built-in one but spelt with
// other characters is refused, and that the error names the character by its code point: the
// character itself may not show.
func TestCheckTypeNameRefusesLookalikes(t *testing.T) {
	for _, tc := range []struct{ name, char string }{
		{"spın_lock", "U+0131"},      // dotless i
		{"mut\u0435x", "U+0435"},     // Cyrillic e
		{"spin\u200dlock", "U+200D"}, // zero-width joiner
		{"spinlock\u200b", "U+200B"}, // zero-width space
		{"rwsem\uff1aW", "U+FF1A"},   // fullwidth colon
		{"мьютекс", "U+043C"},        // a whole name in another script
		{"mutex\u0301", "U+0301"},    // combining accent
		{"\u202emutex", "U+202E"},    // bidirectional override
		{"mutex\u007f", "U+007F"},    // ASCII, but not printable
	} {
		err := CheckTypeName(tc.name)
		if err == nil {
			t.Errorf("CheckTypeName(%q) = nil, want an error", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.char) || !strings.Contains(err.Error(), allowedTypeChars) {
			t.Errorf("CheckTypeName(%q) = %q, want it to name %s and the allowed characters", tc.name, err, tc.char)
		}
		if strings.ContainsAny(err.Error(), "\u200b\u200d\u202e") {
			t.Errorf("CheckTypeName(%q) = %q, which holds an invisible character", tc.name, err)
		}
	}
}
