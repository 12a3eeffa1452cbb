package capture

import (
	"strings"
	"testing"
)

func TestCheckTypeName(t *testing.T) {
	for _, good := range []string{"mutex", "rwsem:W", "rwlock-rt:R", "pcpu-sem:R", "mutex_v2.1", "мьютекс", strings.Repeat("x", MaxTypeNameLen)} {
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
		if !strings.Contains(err.Error(), "want one word") || strings.ContainsAny(err.Error(), "\n\t") {
			t.Errorf("CheckTypeName(%q) = %q, want one line saying what a name must be", bad, err)
		}
	}
}
