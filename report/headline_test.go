package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
)

// renameDurationNS is the length of renameCapture.
const renameDurationNS = 4_000_000_000

// renameCapture is a capture of `stress-ng --rename 2` (processes 101 and 102, forked by 100) with
// scope, while another process (500) waits on its mmap_lock: the command's waits are on a rename
// mutex known by its struct field, the others' on the mmap_lock and a runqueue.
func renameCapture(t *testing.T, scope string) *capture.Capture {
	t.Helper()
	rename := func(pid uint32, caller string, waits ...uint64) capturetest.Record {
		r := capturetest.Rec("mutex", "&kmalloc-2k", caller, "stress-ng-renam", pid, pid, 0xffff888104c2a408, waits...)
		r.ObjectOffset, r.Field, r.FieldCandidates = "0x408", "super_block.s_vfs_rename_mutex", []string{"super_block.s_vfs_rename_mutex", "kvm_arch.lock"}
		return r
	}
	records := []capturetest.Record{
		rename(101, "do_renameat2+0x221", 100_000_000, 60_000_000),
		rename(102, "do_renameat2+0x221", 90_000_000),
		rename(102, "do_renameat2+0x3a0", 30_000_000),
		capturetest.Rec("rwsem:W", "mmap_lock", "madvise_lock+0x81", "madvise", 500, 501, 0xffff888104d2a0c8, 400_000_000, 200_000_000),
		capturetest.Rec("spinlock", "", "__schedule+0xad", "swapper/1", 0, 0, 0xffff88813bd2f1c0, 5_000),
	}
	c, _ := capturetest.Build(t, capture.Meta{
		Tool: "klockstat", CPUs: 2, DurationNS: renameDurationNS, Probe: "rawtp", StackDepth: 16,
		CommandLine: []string{"klockstat", "-d", "5s", "--json", "before.json", "--", "stress-ng", "--rename", "2", "-t", "4s"},
		Workload:    []string{"stress-ng", "--rename", "2", "-t", "4s"},
		Scope:       scope, CommandPIDs: []uint32{100, 101, 102},
		MapSizes: map[string]uint32{"aggregate": 65536, "stacks": 65536},
	}, records...)
	return c
}

// sumOf is the total wait of the records that keep says count.
func sumOf(records []capture.Record, keep func(capture.Record) bool) uint64 {
	var total uint64
	for _, r := range records {
		if keep(r) {
			total += r.TotalNS
		}
	}
	return total
}

func pct(part, whole uint64) string { return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole)) }

// firstLines is the first n lines of a summary.
func firstLines(out string, n int) []string {
	return strings.SplitN(out, "\n", n+1)[:n]
}

// TestHeadlineSystemScope: a capture of every process opens with the total wait, the threads waiting
// on average and the part of the command's threads' time they waited, then the top lock by its
// struct field and its caller; a second line splits the command's waits from the others'.
func TestHeadlineSystemScope(t *testing.T) {
	c := renameCapture(t, capture.ScopeSystem)
	isCommand := func(r capture.Record) bool { return r.PID >= 100 && r.PID <= 102 }
	all := sumOf(c.Records, func(capture.Record) bool { return true })
	mine := sumOf(c.Records, isCommand)
	theirs := all - mine
	mmap := sumOf(c.Records, func(r capture.Record) bool { return r.Name == "mmap_lock" })
	renameLock := "&kmalloc-2k+0x408 (super_block.s_vfs_rename_mutex?)"
	// The rename mutex's top caller, do_renameat2+0x221, holds 250 of its 280 ms.
	topCaller := sumOf(c.Records, func(r capture.Record) bool { return r.Caller == "do_renameat2+0x221" })
	if topCaller <= mine/2 {
		t.Fatal("the fixture's rename mutex has no top caller: the test proves nothing")
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, c, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("total wait %s in 4.00 s, %.2f threads waiting on average; the command's 2 threads that waited spent %.1f%% of their time waiting; top lock mmap_lock at madvise_lock+0x81, %s of the wait time",
			FormatDuration(float64(all)), float64(all)/renameDurationNS, 100*float64(mine)/(2*renameDurationNS), pct(mmap, all)),
		fmt.Sprintf("the command's wait %s (%s), top lock %s at do_renameat2+0x221, 100.0%% of it; the others' wait %s (%s), top lock mmap_lock at madvise_lock+0x81, %s of it",
			FormatDuration(float64(mine)), pct(mine, all), renameLock, FormatDuration(float64(theirs)), pct(theirs, all), pct(mmap, theirs)),
		"",
	}
	if got := firstLines(b.String(), 3); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("headline\n got %q\nwant %q", got, want)
	}
}

// TestHeadlineCommandScope: a capture of the command's processes only says the waits are the
// command's, and the part of its threads' time they took.
func TestHeadlineCommandScope(t *testing.T) {
	c := renameCapture(t, capture.ScopeCommand)
	c.Records = c.Records[:3] // the command's
	all := sumOf(c.Records, func(capture.Record) bool { return true })
	var b bytes.Buffer
	if err := WriteSummary(&b, c, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("the command's waits: total wait %s in 4.00 s, %.2f threads waiting on average; its 2 threads that waited spent %.1f%% of their time waiting; top lock &kmalloc-2k+0x408 (super_block.s_vfs_rename_mutex?) at do_renameat2+0x221, 100.0%% of the wait time",
		FormatDuration(float64(all)), float64(all)/renameDurationNS, 100*float64(all)/(2*renameDurationNS))
	if got := firstLines(b.String(), 2); got[0] != want || got[1] != "" {
		t.Errorf("headline\n got %q\nwant %q and a blank line", got, want)
	}
}

// TestHeadlineWithoutSplit: a capture of a workload that does not tell its processes apart (before
// scopes) says its waits are every process's; one without a workload says nothing of a command.
// Locks without a name are named by their id, as the summary by lock shows them, and names from the
// capture cannot drive the terminal.
func TestHeadlineWithoutSplit(t *testing.T) {
	c := renameCapture(t, "")
	c.Meta.CommandPIDs = nil
	c.Records = c.Records[len(c.Records)-1:] // the runqueue's, without a name
	c.Records[0].Caller = "\x1b[2J__schedule+0xad"
	key := []byte("the key of one capture's outputs")
	id := capture.NewAddressHasher(key).ID(c.Records[0].Lock).HashedString()
	for _, tc := range []struct {
		workload []string
		whose    string
	}{
		{c.Meta.Workload, " (every process's: this capture does not tell the command's apart)"},
		{nil, ""},
	} {
		c.Meta.Workload = tc.workload
		var b bytes.Buffer
		if err := WriteSummary(&b, c, SummaryOptions{AddressKey: key}); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("total wait 5.00 us in 4.00 s, <0.01 threads waiting on average%s; top lock %s (no name) at ?[2J__schedule+0xad, 100.0%% of the wait time", tc.whose, id)
		if got := firstLines(b.String(), 1)[0]; got != want {
			t.Errorf("workload %q: headline\n got %q\nwant %q", tc.workload, got, want)
		}
	}
}

// TestHeadlineFilteredAndAcquires: with filters the headline is of the waits they keep, and says so;
// the function-probe backends' records are acquire times, and it says that.
func TestHeadlineFilteredAndAcquires(t *testing.T) {
	c := renameCapture(t, capture.ScopeSystem)
	c.Meta.Acquire = &capture.Acquire{ThresholdNS: 2_900}
	mmap := sumOf(c.Records, func(r capture.Record) bool { return r.Name == "mmap_lock" })
	var b bytes.Buffer
	if err := WriteSummary(&b, c, SummaryOptions{Types: []string{"rwsem"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("waits the filters keep: total acquire %s in 4.00 s, %.2f threads acquiring on average; the command's threads did not wait; top lock mmap_lock at madvise_lock+0x81, 100.0%% of the acquire time",
			FormatDuration(float64(mmap)), float64(mmap)/renameDurationNS),
		fmt.Sprintf("the command's acquire 0 ns (0.0%%); the others' acquire %s (100.0%%), top lock mmap_lock at madvise_lock+0x81, 100.0%% of it", FormatDuration(float64(mmap))),
	}
	if got := firstLines(b.String(), 2); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("headline\n got %q\nwant %q", got, want)
	}
}

// TestHeadlineLeftOutOfMachineOutput: the headline and the next steps are for people: -q's rows and
// -x's separated values are as they were without them, and a capture without waits has none.
func TestHeadlineLeftOutOfMachineOutput(t *testing.T) {
	c := renameCapture(t, capture.ScopeSystem)
	for _, o := range []SummaryOptions{{RowsOnly: true}, {Separator: ","}, {Separator: ",", RowsOnly: true}, {By: "lock", RowsOnly: true}} {
		var b bytes.Buffer
		if err := WriteSummary(&b, c, o); err != nil {
			t.Fatal(err)
		}
		for _, people := range []string{"top lock", "next steps", "klockstat "} {
			if strings.Contains(b.String(), people) {
				t.Errorf("%+v: %q in\n%s", o, people, b.String())
			}
		}
		if o.Separator != "" && !o.RowsOnly && !strings.HasPrefix(b.String(), "# output: ") {
			t.Errorf("%+v: separated values start with %q, not perf's header", o, firstLines(b.String(), 1)[0])
		}
	}
	var b bytes.Buffer
	empty := renameCapture(t, capture.ScopeSystem)
	empty.Records = nil
	if err := WriteSummary(&b, empty, SummaryOptions{Saved: "before.json"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "no lock contention recorded\n") || strings.Contains(b.String(), "top lock") || strings.Contains(b.String(), "next steps") {
		t.Errorf("a capture without waits:\n%s", b.String())
	}
}

// TestSummarySourceLines: with the frames' source lines, the headline's caller and the aligned
// table's callers carry them; separated values keep perf's caller column as it was.
func TestSummarySourceLines(t *testing.T) {
	c := renameCapture(t, capture.ScopeSystem)
	c.Sources = &capture.Sources{BuildID: "ab12", Frames: map[string]capture.SourceFrame{
		"do_renameat2+0x221": {Lines: []capture.SourceLine{{Function: "lock_rename", File: "fs/namei.c", Line: 3089}, {Function: "do_renameat2", File: "fs/namei.c", Line: 4969}}},
	}}
	source := capture.SourceText(c.Sources.Lines("do_renameat2+0x221"))
	var b bytes.Buffer
	if err := WriteSummary(&b, c, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	// The command's top lock, on the headline's second line, is the rename mutex.
	headline := strings.Join(firstLines(b.String(), 2), "\n")
	if !strings.Contains(headline, "at do_renameat2+0x221"+source+",") {
		t.Errorf("the headline's caller lacks %q:\n%s", source, headline)
	}
	rows := 0
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, "   mutex   do_renameat2+0x221"+source+" ") {
			rows++
		}
	}
	if rows != 1 {
		t.Errorf("%d rows of the table end with the caller and its source, want 1:\n%s", rows, b.String())
	}
	b.Reset()
	if err := WriteSummary(&b, c, SummaryOptions{Separator: ","}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "lock_rename") || !strings.Contains(b.String(), ", do_renameat2+0x221, ") {
		t.Errorf("separated values changed the caller column:\n%s", b.String())
	}
}

// TestHeadlinePreemptedHolders: when lock owners spent at least a fifth of the wait charged to them
// runnable but not running, the headline ends with a line that says so, with the other shares; not
// when they spent less, nor when the waits were not split by what their owners did.
func TestHeadlinePreemptedHolders(t *testing.T) {
	c := renameCapture(t, capture.ScopeCommand)
	c.Records = c.Records[:3]
	owner := func(holder string, ns uint64) capture.Owner {
		return capture.Owner{Type: "mutex", Lock: c.Records[0].Lock, Comm: "stress-ng-renam", PID: 101, TID: 101,
			StackReason: capture.OwnerStackBefore, HolderState: holder, Count: 3, TotalNS: ns}
	}
	for _, tc := range []struct {
		name   string
		owners []capture.Owner
		want   string
	}{
		{"preempted", []capture.Owner{owner(capture.HolderRunnable, 62_000_000), owner(capture.HolderOnCPU, 20_000_000), owner(capture.HolderOffCPU, 18_000_000),
			{Type: "mutex", Lock: c.Records[0].Lock, Reason: capture.OwnerNone, Count: 1, TotalNS: 500_000_000}},
			"holders were preempted for 62% of the wait: lock-holder preemption (on CPU 20.0%, off CPU 18.0% of the 100.00 ms charged to lock owners)"},
		{"seldom preempted", []capture.Owner{owner(capture.HolderRunnable, 19_000_000), owner(capture.HolderOnCPU, 81_000_000)}, ""},
		{"not split", []capture.Owner{owner("", 100_000_000)}, ""},
	} {
		c.Owners = tc.owners
		var b bytes.Buffer
		if err := WriteSummary(&b, c, SummaryOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := firstLines(b.String(), 2)[1]; got != tc.want {
			t.Errorf("%s: second line\n got %q\nwant %q (empty: none)", tc.name, got, tc.want)
		}
	}
}

// TestHeadlineBlockers: when waits on a lock that records no owner were charged to the threads that
// woke them, the headline names the top one, how it blocked them and where, below the wakeup's and
// the lock's own frames: its path to the lock for a writer seen waiting for it, where it released
// the lock otherwise; with its share of the lock's waits and that of all its blockers, the lock's
// address hashed. None when no wait was charged to a blocker.
func TestHeadlineBlockers(t *testing.T) {
	c := renameCapture(t, capture.ScopeCommand)
	c.Records = c.Records[:3]
	const lock = capture.Addr(0xffffffff83a0c1e0)
	blocker := func(tid uint32, where string, stack []string, ns uint64) capture.Owner {
		return capture.Owner{Type: "pcpu-sem:R", Lock: lock, Comm: "stress-ng-flock", PID: 100, TID: tid, Blocker: capture.BlockerWriter,
			Where: where, Stack: stack, Count: 2, TotalNS: ns}
	}
	acquire := []string{"percpu_down_write+0x127", "locks_start+0x25", "seq_read_iter+0x108"}
	release := []string{"try_to_wake_up+0x3b6", "percpu_rwsem_wake_function+0x9a", "__wake_up_common+0x72", "__wake_up+0x36",
		"percpu_up_write+0x26", "seq_read_iter+0x3e6"}
	noField := capture.Owner{Type: "pcpu-sem:R", Lock: lock, Reason: capture.OwnerNoField, Count: 1, TotalNS: 10_000_000}
	for _, tc := range []struct {
		name   string
		owners []capture.Owner
		want   string
	}{
		{"taking it", []capture.Owner{blocker(12, capture.BlockerStackAcquire, acquire, 60_000_000), blocker(12, capture.BlockerStackWake, release, 20_000_000),
			blocker(14, capture.BlockerStackWake, release, 10_000_000), noField},
			"blocked by the writer stress-ng-flock 100/12 at locks_start, its path to the lock: 80.0% of the 100.00 ms of waits on pcpu-sem:R LOCK, 90.0% by the 2 threads that woke them"},
		{"releasing it", []capture.Owner{blocker(14, capture.BlockerStackWake, release, 30_000_000), noField},
			"blocked by the writer stress-ng-flock 100/14 at seq_read_iter, releasing the lock: 75.0% of the 40.00 ms of waits on pcpu-sem:R LOCK, 75.0% by the 1 thread that woke them"},
		{"no blocker", []capture.Owner{noField}, ""},
	} {
		c.Owners = tc.owners
		var b bytes.Buffer
		if err := WriteSummary(&b, c, SummaryOptions{}); err != nil {
			t.Fatal(err)
		}
		got := firstLines(b.String(), 2)[1]
		if tc.want == "" {
			if got != "" {
				t.Errorf("%s: second line %q, want none", tc.name, got)
			}
			continue
		}
		before, after, _ := strings.Cut(tc.want, "LOCK")
		id := strings.TrimSuffix(strings.TrimPrefix(got, before), after)
		if !strings.HasPrefix(got, before) || !strings.HasSuffix(got, after) || len(id) != 16 || strings.Contains(got, lock.String()) {
			t.Errorf("%s: second line\n got %q\nwant %q, LOCK the lock's hashed id (empty: none)", tc.name, got, tc.want)
		}
	}
}
