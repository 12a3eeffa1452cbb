package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
)

// TestWriteSummaryCriticalSections: under the owners' table, one row per owner thread gives the wait
// charged to it over its stacks, the share with a stack, its top critical-section stack with where
// it was seen and its share, and the end of its wait chain; a hostile chain end cannot drive the
// terminal, and -q leaves the table out.
func TestWriteSummaryCriticalSections(t *testing.T) {
	c, _ := knownCapture(t)
	lock, other := capture.Addr(0xffff8881237e5a10), capture.Addr(0xffff8881237e6000)
	c.Owners = capture.SpreadOwnerSamples([]capture.Owner{
		{Type: "rwsem:W", Lock: lock, Comm: "hog", PID: 3150, TID: 3164, Count: 4, TotalNS: 6_000_000, StackReason: capture.OwnerStackRan,
			States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 4, TotalNS: 6_000_000}}},
		{Type: "rwsem:W", Lock: lock, Comm: "hog", PID: 3150, TID: 3164, Count: 1, TotalNS: 2_000_000,
			Stack:  []string{"__schedule+0x618", "__cond_resched+0x2c", "generic_perform_write+0x11d"},
			States: []capture.OwnerState{{State: capture.OwnerRunnable, Count: 1, TotalNS: 2_000_000}}},
	}, []capture.OwnerSample{
		{Type: "rwsem:W", Lock: lock, TID: 3164, Count: 20, Stack: []string{"copy_user_generic+0xa", "generic_perform_write+0x90", "vfs_write+0x26b", "ksys_write+0x1"}},
		{Type: "rwsem:W", Lock: lock, TID: 3164, Count: 10, Stack: []string{"clear_page_erms+0x7", "generic_perform_write+0x90"}},
	})
	c.OwnerChains = []capture.OwnerChain{{Type: "rwsem:W", Lock: lock, TID: 3164, Comm: "hog", EndType: "mutex", EndLock: other,
		EndName: "pipe", EndTID: 77, EndComm: "evil\x1b[2J", Depth: 1, Count: 1, TotalNS: 2_000_000}}
	b, rows := criticalSections(t, c)
	want := []string{"8.00 ms", "100%", "hog 3150/3164", "rwsem:W", "-",
		"on CPU (20 samples) 50%: copy_user_generic+0xa < generic_perform_write+0x90 < vfs_write+0x26b",
		"mutex pipe held by evil?[2J/77 (25%)"}
	if len(rows) < 2 || strings.Join(rows[1], "|") != strings.Join(want, "|") {
		t.Errorf("critical sections\n got %q\nwant %q\n%s", rows, want, b.String())
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Errorf("an escape reached the terminal:\n%q", b.String())
	}
	b.Reset()
	if err := WriteSummary(b, c, SummaryOptions{By: OwnerView, RowsOnly: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "critical-section") {
		t.Errorf("rows only, with the critical sections:\n%s", b.String())
	}
}

// TestCriticalSectionPreempted: an owner's top stack that it was preempted at, runnable over its
// share, is said "preempted", not "off CPU", which would read as asleep; a share it slept over
// stays "off CPU".
func TestCriticalSectionPreempted(t *testing.T) {
	c, _ := knownCapture(t)
	lock := capture.Addr(0xffff8881237e5a10)
	cond := []string{"__schedule+0x618", "__cond_resched+0x2c", "generic_perform_write+0x11d"}
	share := func(tid uint32, held string, ns uint64, stack []string, where string) capture.Owner {
		return capture.Owner{Type: "rwsem:W", Lock: lock, Comm: "hog", PID: 3150, TID: tid, Count: 1, TotalNS: ns, Stack: stack, Where: where, HolderState: held}
	}
	c.Owners = []capture.Owner{
		share(3164, capture.HolderRunnable, 6_000_000, cond, capture.OwnerStackOffCPU),
		share(3164, capture.HolderOnCPU, 2_000_000, nil, ""),
		share(3165, capture.HolderOffCPU, 1_000_000, []string{"__schedule+0x618", "io_schedule+0x46"}, capture.OwnerStackOffCPU),
	}
	c.Owners[1].StackReason = capture.OwnerStackRan
	capture.SortOwners(c.Owners)
	b, rows := criticalSections(t, c)
	stacks := map[string]string{}
	for _, row := range rows[1:] {
		if len(row) > 5 {
			stacks[row[2]] = row[5]
		}
	}
	if want := "preempted 75%: __cond_resched+0x2c < generic_perform_write+0x11d"; stacks["hog 3150/3164"] != want {
		t.Errorf("the preempted owner's top stack reads %q, want %q\n%s", stacks["hog 3150/3164"], want, b.String())
	}
	if want := "off CPU 100%: io_schedule+0x46"; stacks["hog 3150/3165"] != want {
		t.Errorf("the sleeping owner's top stack reads %q, want %q\n%s", stacks["hog 3150/3165"], want, b.String())
	}
}

// criticalSections writes the summary by owner of c and returns it with the cells of its table of
// critical sections, the header row first.
func criticalSections(t *testing.T, c *capture.Capture) (*bytes.Buffer, [][]string) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSummary(&b, c, SummaryOptions{By: OwnerView, Top: 5}); err != nil {
		t.Fatal(err)
	}
	at := strings.Index(b.String(), "wait charged   ")
	if at < 0 {
		t.Fatalf("no table of critical sections after the owners':\n%s", b.String())
	}
	return &b, tableCells(b.String()[at:])
}
