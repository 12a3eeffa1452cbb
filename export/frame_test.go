package export

import (
	"strings"
	"testing"
)

func TestParseFrame(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want frame
	}{
		{"vm_mmap_pgoff+0xe0", frame{function: "vm_mmap_pgoff", offset: 0xe0}},
		{"__pfx_clear_bss+0x0", frame{function: "__pfx_clear_bss"}},
		{"__mutex_lock.constprop.0+0x8e", frame{function: "__mutex_lock.constprop.0", offset: 0x8e}},
		{"folio_unlock", frame{function: "folio_unlock"}},
		{"0xffffffffc0a81234", frame{function: "0xffffffffc0a81234", address: 0xffffffffc0a81234}},
		{"000000001a2b3c4d", frame{function: "000000001a2b3c4d"}}, // a hashed id: no address to give
		{"a+0xzz", frame{function: "a+0xzz"}},
		{"+0x10", frame{function: "+0x10"}},
		{"0x", frame{function: "0x"}},
	} {
		if got := parseFrame(tc.in); got != tc.want {
			t.Errorf("parseFrame(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// FuzzParseFrame: a frame from a capture file, whatever it holds, names a function that it starts
// with, and an offset only when it is the rest of the frame.
func FuzzParseFrame(f *testing.F) {
	for _, s := range []string{"vm_mmap_pgoff+0xe0", "0xffffffffc0a81234", "", "+0x", "a+0x1+0x2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fr := parseFrame(s)
		if !strings.HasPrefix(s, fr.function) || fr.function == "" && s != "" {
			t.Fatalf("parseFrame(%q) = %+v: the function is not the frame's start", s, fr)
		}
		if fr.function != s && !strings.HasPrefix(s[len(fr.function):], "+0x") {
			t.Fatalf("parseFrame(%q) = %+v: cut the frame elsewhere than at +0x", s, fr)
		}
	})
}
