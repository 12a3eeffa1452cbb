package typename

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, good := range []string{"mutex", "rwsem:W", "rwlock-rt:R", "pcpu-sem:R", "mutex_v2.1", "мьютекс", strings.Repeat("x", MaxLen)} {
		if err := Check(good); err != nil {
			t.Errorf("Check(%q) = %v, want nil", good, err)
		}
	}
	for _, bad := range []string{"", "spin lock", " mutex", "mutex\n", "a\tb", "a,b", "a\u00a0b", "a\x00b", "\xff", strings.Repeat("x", MaxLen+1)} {
		err := Check(bad)
		if err == nil {
			t.Errorf("Check(%q) = nil, want an error", bad)
			continue
		}
		if !strings.Contains(err.Error(), "want one word") || strings.ContainsAny(err.Error(), "\n\t") {
			t.Errorf("Check(%q) = %q, want one line saying what a name must be", bad, err)
		}
	}
}
