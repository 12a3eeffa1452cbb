package termsafe

import "testing"

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"mmap_lock (stress-ng)", "mmap_lock (stress-ng)"},
		{"evil\x1b[2J", "evil?[2J"},
		{"a\u202eb", "a?b"},
		{"bad\xffutf8", "bad?utf8"},
		{"tab\tnewline\n", "tab?newline?"},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
