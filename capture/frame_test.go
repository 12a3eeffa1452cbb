package capture_test

import (
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
)

func TestParseFrame(t *testing.T) {
	type parse struct {
		in       string
		want     capture.Frame
		wantFunc string
	}
	tests := []parse{
		// What kallsyms.Table.FormatFrame writes.
		{"vm_mmap_pgoff+0xe0", capture.Frame{Kind: capture.FrameSymbol, Function: "vm_mmap_pgoff", Offset: 0xe0}, "vm_mmap_pgoff"},
		{"__pfx_clear_bss+0x0", capture.Frame{Kind: capture.FrameSymbol, Function: "__pfx_clear_bss"}, "__pfx_clear_bss"},
		{"__mutex_lock.constprop.0+0x8e", capture.Frame{Kind: capture.FrameSymbol, Function: "__mutex_lock.constprop.0", Offset: 0x8e}, "__mutex_lock.constprop.0"},
		{"xfs_ilock+0x4c [xfs]", capture.Frame{Kind: capture.FrameSymbol, Function: "xfs_ilock", Offset: 0x4c, Module: "xfs"}, "xfs_ilock [xfs]"},
		{"bpf_prog_3b185187f1855c4c_x+0x4c [bpf]", capture.Frame{Kind: capture.FrameSymbol, Function: "bpf_prog_3b185187f1855c4c_x", Offset: 0x4c, Module: "bpf"}, "bpf_prog_3b185187f1855c4c_x [bpf]"},
		{"f+0xffffffffffffffff", capture.Frame{Kind: capture.FrameSymbol, Function: "f", Offset: 1<<64 - 1}, "f"},
		{"0xffffffffc0a81234", capture.Frame{Kind: capture.FrameAddress, Address: 0xffffffffc0a81234}, "0xffffffffc0a81234"},
		{"0x0", capture.Frame{Kind: capture.FrameAddress}, "0x0"},
		// What HashAddresses writes for an address.
		{"000000001a2b3c4d", capture.Frame{Kind: capture.FrameHashedID, Address: 0x1a2b3c4d}, "000000001a2b3c4d"},
		{"deadbeefdeadbeef", capture.Frame{Kind: capture.FrameHashedID, Address: 0xdeadbeefdeadbeef}, "deadbeefdeadbeef"},
		// A "+0x" in the name: the offset is the last one.
		{"f+0xzz+0x10", capture.Frame{Kind: capture.FrameSymbol, Function: "f+0xzz", Offset: 0x10}, "f+0xzz"},
		{"a+0x1+0x2 [m]", capture.Frame{Kind: capture.FrameSymbol, Function: "a+0x1", Offset: 2, Module: "m"}, "a+0x1 [m]"},
	}
	// What neither FormatFrame nor HashAddresses writes is text, kept whole (a hand-edited capture).
	for _, s := range []string{
		"", "[unknown]", "folio_unlock", "a+0xzz", "+0x10", "f+0x", "f+0x010", "f+0xE0",
		"f+0x10000000000000000", "f+0x10 [xfs", "f+0x10 []", "f+0x10 [a b]", "f+0x10 [a[b]",
		"f+0x10  [xfs]", "a b+0x10", "0x", "0xZZ", "0XFFFF", "0x1ffffffffffffffff", "0x12 [mod]",
		"000000001A2B3C4D", "00000001a2b3c4d",
	} {
		tests = append(tests, parse{s, capture.Frame{Kind: capture.FrameText, Function: s}, s})
	}
	for _, tc := range tests {
		got := capture.ParseFrame(tc.in)
		if got != tc.want {
			t.Errorf("ParseFrame(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if s := got.String(); s != tc.in {
			t.Errorf("ParseFrame(%q).String() = %q", tc.in, s)
		}
		if f := got.Func(); f != tc.wantFunc {
			t.Errorf("ParseFrame(%q).Func() = %q, want %q", tc.in, f, tc.wantFunc)
		}
		if u, want := got.Unsymbolized(), got.Kind == capture.FrameAddress || got.Kind == capture.FrameHashedID; u != want {
			t.Errorf("ParseFrame(%q).Unsymbolized() = %v", tc.in, u)
		}
	}
}

// TestParseFrameAddressLeadingZeros: a raw address is read as Addr reads it, leading zeros and all, so
// that HashAddresses hashes every address Addr accepts; it is written back without them.
func TestParseFrameAddressLeadingZeros(t *testing.T) {
	f := capture.ParseFrame("0x00000000c0a81234")
	if want := (capture.Frame{Kind: capture.FrameAddress, Address: 0xc0a81234}); f != want {
		t.Fatalf("ParseFrame = %+v, want %+v", f, want)
	}
	if s := f.String(); s != "0xc0a81234" {
		t.Errorf("String() = %q, want 0xc0a81234", s)
	}
}

// FuzzParseFrame: any text parses without a panic, into a frame that String writes back as it was;
// only a raw address with leading zeros comes back shorter, and reads back as the same frame.
func FuzzParseFrame(f *testing.F) {
	for _, s := range []string{
		"vm_mmap_pgoff+0xe0", "xfs_ilock+0x4c [xfs]", "0xffffffffc0a81234", "000000001a2b3c4d", "", "+0x",
		"a+0x1+0x2", "f+0x10 [a b]", "0x00ff", "[unknown]", "f+0x0 [m] [n]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fr := capture.ParseFrame(s)
		out := fr.String()
		switch fr.Kind {
		case capture.FrameText:
			if fr.Function != s || fr.Offset != 0 || fr.Module != "" || fr.Address != 0 {
				t.Fatalf("ParseFrame(%q) = %+v: text is not kept whole, alone", s, fr)
			}
		case capture.FrameSymbol:
			if fr.Function == "" || strings.ContainsAny(fr.Function, " \t") || strings.ContainsAny(fr.Module, "[] \t") || fr.Address != 0 {
				t.Fatalf("ParseFrame(%q) = %+v: not a function and module as kallsyms names them", s, fr)
			}
		}
		if out == s {
			return
		}
		if fr.Kind != capture.FrameAddress || !strings.HasPrefix(s, "0x0") {
			t.Fatalf("ParseFrame(%q) = %+v, written back as %q", s, fr, out)
		}
		if again := capture.ParseFrame(out); again != fr {
			t.Fatalf("ParseFrame(%q) = %+v, but its text %q reads as %+v", s, fr, out, again)
		}
	})
}
