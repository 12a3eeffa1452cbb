package export

import (
	"os"
	"strings"
	"testing"
	"unicode"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/report"
)

// asCaptured is the analysis of c that shows its addresses as captured, as the exports of a run
// with --raw-addresses write them.
func asCaptured(c *capture.Capture) Analysis { return report.Analyze(c, true, nil) }

// realCapture is the capture the README shows: contend's four workloads on a 2-CPU VM.
func realCapture(t testing.TB) *capture.Capture {
	t.Helper()
	f, err := os.Open("../examples/contend-capture.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := capture.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Thread names a process can choose to break a format or attack the program that opens it: formulas
// for spreadsheets, the folded format's separators, line breaks, quotes, bidirectional controls and
// invalid UTF-8.
var hostileComms = []string{
	`=HYPERLINK("http://x","y")`, "+1+1", "-2", "@SUM(A1)", "\tx", "\rx", "a;b c", "line\nbreak", `"quoted",`,
	"\u202eevil", "bad\xffutf8", "esc\x1b]0;title\x07", "",
}

// checkPrintable fails unless out is in, as valid UTF-8, with each control character (ESC, BEL,
// line breaks) and bidirectional-text control replaced by one printable character and every other
// character kept in place.
func checkPrintable(t *testing.T, what, in, out string) {
	t.Helper()
	want := []rune(strings.ToValidUTF8(in, "\uFFFD"))
	got := []rune(out)
	if len(got) != len(want) {
		t.Errorf("%s %q from %q: %d characters, want %d, one for one", what, out, in, len(got), len(want))
		return
	}
	for i, r := range want {
		replaced := unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
		switch {
		case replaced && (unicode.IsControl(got[i]) || unicode.Is(unicode.Bidi_Control, got[i])):
			t.Errorf("%s %q from %q: control character %U at %d reaches the reader", what, out, in, got[i], i)
		case !replaced && got[i] != r:
			t.Errorf("%s %q from %q: printable %q at %d changed to %q", what, out, in, r, i, got[i])
		}
	}
}

// hostileCapture has one record per hostile thread name, stacks with unnamed frames, a record without
// a stack and one with holds only, whose histograms hold exactly the records' waits.
func hostileCapture(t testing.TB) *capture.Capture {
	t.Helper()
	c := &capture.Capture{Version: capture.FormatVersion, Meta: capture.Meta{Probe: "fentry", DurationNS: 1e9}}
	hists := map[string]*capture.Histogram{}
	stacks := [][]string{
		{"__mutex_lock.constprop.0+0x8e", "mutex_lock+0x3d", "anon_pipe_write+0x43", "vfs_write+0x26b"},
		{"queued_spin_lock_slowpath+0x5e", "0xffffffffc0a81234", "0xffffffffc0a85678"},
		{},
	}
	for i, comm := range hostileComms {
		typ := []string{"mutex", "spinlock", "rwsem:W"}[i%3]
		r := capture.Record{
			Type: typ, Lock: capture.Addr(0xffff888100000000 + uint64(i)*64), Name: comm, Comm: comm,
			PID: 100, TID: uint32(100 + i), Caller: comm, Stack: stacks[i%len(stacks)],
			CgroupID: uint64(4000 + i), Cgroup: "/ctr/" + comm,
		}
		if hists[typ] == nil {
			hists[typ] = &capture.Histogram{Type: typ}
		}
		for _, ns := range []uint64{uint64(1000 + i), uint64(70_000 * (i + 1))} {
			if r.Count == 0 {
				r.MinNS = ns
			}
			r.Count++
			r.TotalNS += ns
			r.MinNS, r.MaxNS = min(r.MinNS, ns), max(r.MaxNS, ns)
			hists[typ].Add(ns)
		}
		c.Records = append(c.Records, r)
	}
	c.Records = append(c.Records, capture.Record{Type: "mutex", Comm: "holds-only", HoldCount: 3, HoldTotalNS: 900, HoldMinNS: 100, HoldMaxNS: 500})
	c.HoldHistograms = []capture.Histogram{{Type: "mutex"}}
	for _, ns := range []uint64{100, 300, 500} {
		c.HoldHistograms[0].Add(ns)
	}
	for _, typ := range []string{"mutex", "spinlock", "rwsem:W"} {
		c.Histograms = append(c.Histograms, *hists[typ])
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("hostile capture: %v", err)
	}
	return c
}

// moduleCapture waits in a module function at two offsets (the same call site moved, or two call
// sites), in a vmlinux function of the same name, and below a module address kallsyms could not name.
func moduleCapture(t testing.TB) *capture.Capture {
	t.Helper()
	c := &capture.Capture{Version: capture.FormatVersion, Meta: capture.Meta{Probe: "tp_btf", DurationNS: 1e9}}
	h := capture.Histogram{Type: "mutex"}
	for _, r := range []struct {
		comm  string
		ns    uint64
		stack []string
	}{
		{"kworker/0:1", 300, []string{"mutex_lock+0x3c", "xfs_ilock+0x4c [xfs]", "xfs_file_write_iter+0x2e [xfs]", "vfs_write+0x26b"}},
		{"kworker/0:1", 200, []string{"mutex_lock+0x3c", "xfs_ilock+0x80 [xfs]", "xfs_file_write_iter+0x2e [xfs]", "vfs_write+0x26b"}},
		{"ext4", 50, []string{"mutex_lock+0x3c", "xfs_ilock+0x10", "vfs_write+0x26b"}},
		{"kworker/0:1", 7, []string{"mutex_lock+0x3c", "0xffffffffc0a81234", "vfs_write+0x26b"}},
	} {
		c.Records = append(c.Records, capture.Record{
			Type: "mutex", Lock: capture.Addr(0xffff888100000000 + uint64(len(c.Records))*64), Comm: r.comm, PID: 7, TID: 7,
			Caller: r.stack[1], Stack: r.stack, Count: 1, TotalNS: r.ns, MinNS: r.ns, MaxNS: r.ns,
		})
		h.Add(r.ns)
	}
	c.Histograms = []capture.Histogram{h}
	if err := c.Validate(); err != nil {
		t.Fatalf("module capture: %v", err)
	}
	return c
}

// fixtures are the captures every export is checked on.
func fixtures(t testing.TB) map[string]*capture.Capture {
	return map[string]*capture.Capture{"real": realCapture(t), "hostile": hostileCapture(t), "modules": moduleCapture(t)}
}

// waitTotals are the capture's count and total of waits as its histograms have them, which the
// collector counts apart from the records.
func waitTotals(c *capture.Capture) (count, totalNS uint64) {
	for _, h := range c.Histograms {
		count += h.Count
		totalNS += h.TotalNS
	}
	return count, totalNS
}
