package report

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
)

// TestHTMLOwnerLinks links the rows of "Blocked by" and the waiters' rows both ways: an owner's row
// and a record's or a lock's share a key exactly when they name the same lock type and address, each
// key's control says how many threads waited or who owned the lock, and a waiter's row whose lock no
// owner was charged for has no key and says why.
func TestHTMLOwnerLinks(t *testing.T) {
	c := ownedCapture(t)
	d := dataOf(t, renderHTML(t, c, HTMLOptions{}, testKey))
	owners, threads, locks := d.view(t, "owners"), d.view(t, "threads"), d.view(t, "locks")
	if owners.Rows != len(c.Owners) {
		t.Fatalf("%d owner rows, want %d", owners.Rows, len(c.Owners))
	}

	keyOf := map[lockKey]int{} // the key of each lock, as the owners' rows have it
	for i, o := range c.Owners {
		k := d.linkKey(t, owners, "waiters", i)
		lock := lockKey{o.Type, o.Lock}
		if prev, ok := keyOf[lock]; ok && prev != k {
			t.Errorf("owner rows of %s %v have keys %d and %d", o.Type, o.Lock, prev, k)
		}
		keyOf[lock] = k
		waiters := map[uint32]bool{}
		for _, r := range c.Records {
			if r.Type == o.Type && r.Lock == o.Lock {
				waiters[r.TID] = true
			}
		}
		want := fmt.Sprintf("%d %s", len(waiters), plural(len(waiters), "thread", "threads"))
		if got := d.cell(t, owners, "waiters", i); got != want {
			t.Errorf("owner row %d (%s): waiters %q, want %q", i, ownerText(o), got, want)
		}
		title := d.text(int(d.linkTexts(t, owners, "waiters", i)[1]))
		if !strings.HasPrefix(title, "The waits on "+o.Type+" ") || strings.Contains(title, fmt.Sprintf("%x", uint64(o.Lock))) {
			t.Errorf("owner row %d's link is titled %q: want the waits on its lock, by hashed id", i, title)
		}
	}
	if len(keyOf) != 5 {
		t.Errorf("%d keys for the owners' 5 locks: %v", len(keyOf), keyOf)
	}

	// The owners each waiter's row leads to, by the names the capture gives them.
	ownersOf := func(lock lockKey) string {
		names := map[string]bool{}
		for _, o := range c.Owners {
			if (lockKey{o.Type, o.Lock}) == lock {
				names[visible(ownerText(o))] = true
			}
		}
		switch len(names) {
		case 0:
			return "none recorded"
		case 1:
			for name := range names {
				return name
			}
		}
		return fmt.Sprintf("%d owners", len(names))
	}
	check := func(v *testView, row int, lock lockKey) {
		t.Helper()
		want, ok := keyOf[lock]
		if !ok {
			want = -1
		}
		if got := d.linkKey(t, v, "blocked_by", row); got != want {
			t.Errorf("%s row %d (%s %v): key %d, want %d, the owners'", v.ID, row, lock.typ, lock.lock, got, want)
		}
		if got, name := d.cell(t, v, "blocked_by", row), ownersOf(lock); got != name {
			t.Errorf("%s row %d (%s %v): blocked by %q, want %q", v.ID, row, lock.typ, lock.lock, got, name)
		}
	}
	unowned := 0
	for i, r := range sortedRecords(c) {
		check(threads, i, lockKey{r.Type, r.Lock})
		if _, ok := keyOf[lockKey{r.Type, r.Lock}]; !ok {
			unowned++
			if title := d.text(int(d.linkTexts(t, threads, "blocked_by", i)[1])); !strings.Contains(title, "still open") {
				t.Errorf("a record without owners says %q", title)
			}
		}
	}
	if unowned != 2 {
		t.Errorf("%d records without owners, want those of the 2 hostile lock types", unowned)
	}
	for i, g := range capture.GroupBy(c.Records, capture.ByLock) {
		check(locks, i, lockKey{g.Type, g.Lock})
	}
	for _, v := range []*testView{d.view(t, "callers"), d.view(t, "cgroups")} {
		if keys := strings.Join(v.keys(), " "); strings.Contains(keys, "blocked_by") {
			t.Errorf("view %s, which merges locks, links to owners: %s", v.ID, keys)
		}
	}
}

// TestHTMLNoOwnerLinks leaves the views of a capture without owners as they were: no "Blocked by",
// no column leading to it.
func TestHTMLNoOwnerLinks(t *testing.T) {
	c, _ := knownCapture(t)
	d := dataOf(t, renderHTML(t, c, HTMLOptions{}, testKey))
	for _, v := range d.Views {
		if v.ID == "owners" || strings.Contains(strings.Join(v.keys(), " "), "blocked_by") {
			t.Errorf("a capture without owners has view %s with columns %q", v.ID, v.keys())
		}
	}
}

// TestHTMLStackReasonAgreesWithState: an owner with no stack because it was never seen leaving a
// CPU holding the lock is only said not to have left its CPU when it was on one as the waits began;
// one that was runnable or asleep had left it already, and its row says so, in the report and the
// diff alike.
func TestHTMLStackReasonAgreesWithState(t *testing.T) {
	owner := func(tid uint32, reason string, states ...string) capture.Owner {
		o := capture.Owner{Type: "mutex", Lock: capture.Addr(0xffff888100000000 + uint64(tid)<<6), Comm: fmt.Sprintf("holder%d", tid), PID: 1, TID: tid, StackReason: reason}
		for _, s := range states {
			o.States = append(o.States, capture.OwnerState{State: s, Count: 1, TotalNS: 1_000})
			o.Count, o.TotalNS = o.Count+1, o.TotalNS+1_000
		}
		return o
	}
	c := capturetest.Of(t, 1e9, capturetest.Rec("mutex", "", "f+0x1", "waiter", 1, 2, 0xffff888100000040, 1_000))
	c.Owners = []capture.Owner{
		owner(1, capture.OwnerStackRan, capture.OwnerOnCPU),
		owner(2, capture.OwnerStackRan, capture.OwnerRunnable),
		owner(3, capture.OwnerStackRan, capture.OwnerDiskSleep, capture.OwnerSleeping),
		owner(4, capture.OwnerStackRan, capture.OwnerOnCPU, capture.OwnerRunnable),
		owner(5, capture.OwnerStackFailed, capture.OwnerRunnable),
	}
	capture.SortOwners(c.Owners)
	d := dataOf(t, renderHTML(t, c, HTMLOptions{}, testKey))
	owners := d.view(t, "owners")
	diff := dataOf(t, renderDiff(t, capture.Compare(c, c, capture.DiffOptions{}), HTMLOptions{}))
	changes := diff.view(t, "owner-changes")
	diffRowOf := func(comm string) int {
		for r := range changes.Rows {
			if diff.cell(t, changes, "owner", r) == comm {
				return r
			}
		}
		t.Fatalf("no diff row of owner %s", comm)
		return -1
	}
	for i, o := range c.Owners {
		var offCPU []string
		for _, s := range o.States {
			if s.State != capture.OwnerOnCPU {
				offCPU = append(offCPU, ownerStateLabels[s.State])
			}
		}
		for _, got := range []string{d.cell(t, owners, "stack_reason", i), diff.cell(t, changes, "stack_reason", diffRowOf(o.Comm))} {
			switch {
			case o.StackReason != capture.OwnerStackRan || len(offCPU) == 0:
				if got != o.StackReason {
					t.Errorf("owner %d (%v): reason %q, want the kernel's %q", o.TID, o.States, got, o.StackReason)
				}
			case got == capture.OwnerStackRan:
				t.Errorf("owner %d was %v as the waits began, yet its row says %q", o.TID, offCPU, got)
			default:
				for _, state := range offCPU {
					if !strings.Contains(got, state) {
						t.Errorf("owner %d: reason %q does not name the state %s it was in", o.TID, got, state)
					}
				}
			}
		}
	}
}

// An owner sampled at several stacks has a row per stack, each with its share of the owner's waits
// by its samples, not all of them repeated: its rows add up to its waits. A row of a stack taken as
// the owner left its CPU keeps its own count.
func TestOwnerRowsHaveTheirOwnWaits(t *testing.T) {
	stack := func(f string) []string { return []string{f} }
	hot := capture.Owner{Type: "rwsem", Lock: 1, Comm: "hog", PID: 5, TID: 7, Stack: stack("copy_page+0x1"), Where: capture.OwnerStackOnCPU, Samples: 30, Count: 1702, TotalNS: 90}
	cold := hot
	cold.Stack, cold.Samples, cold.TotalNS = stack("clear_page+0x1"), 10, 30
	rare := hot
	rare.Stack, rare.Samples, rare.TotalNS = stack("memcpy+0x1"), 1, 3
	left := capture.Owner{Type: "rwsem", Lock: 1, Comm: "hog", PID: 5, TID: 7, Stack: stack("schedule+0x1"), Where: capture.OwnerStackOffCPU, Count: 2, TotalNS: 50}
	other := hot // another owner of the same lock
	other.TID, other.Samples, other.Count = 8, 4, 9
	got := ownRowWaits([]capture.Owner{hot, left, cold, rare, other})
	// 1702 by 30:10:1 is 1245.36, 415.12, 41.51: the remainder, 1, to the most sampled.
	want := []uint64{1246, 2, 415, 41, 9}
	if !slices.Equal(got, want) {
		t.Errorf("waits per row %v, want %v", got, want)
	}
	// The terminal's owner table shows the same waits as the page: the model's, once.
	c := capturetest.Of(t, 1e9, capturetest.Rec("rwsem:W", "", "f+0x1", "waiter", 1, 2, 1, 1_000))
	c.Owners = []capture.Owner{hot, left, cold, rare, other}
	var b bytes.Buffer
	if err := WriteSummary(&b, c, SummaryOptions{By: OwnerView, RowsOnly: true}); err != nil {
		t.Fatal(err)
	}
	var shown []uint64
	for line := range strings.Lines(b.String()) {
		if n, err := strconv.ParseUint(strings.Fields(line)[0], 10, 64); err == nil {
			shown = append(shown, n)
		}
	}
	if !slices.Equal(shown, want) {
		t.Errorf("the summary by owner shows waits %v, want %v:\n%s", shown, want, b.String())
	}
}

// TestHTMLHolderColumn: the Blocked-by view says what the owner did over each row's share of the
// waits, the preempted share named apart (and coloured by its status class), nothing for a share
// not split; an on-CPU share that was not sampled says so, not what the states as the waits began
// would suggest.
func TestHTMLHolderColumn(t *testing.T) {
	c := capturetest.Of(t, 1e9, capturetest.Rec("mutex", "", "f+0x1", "waiter", 1, 2, 0xffff888100000040, 1_000))
	share := func(holder, reason string, stack []string, ns uint64) capture.Owner {
		return capture.Owner{Type: "mutex", Lock: 0xffff888100000040, Comm: "holder", PID: 1, TID: 7, HolderState: holder,
			StackReason: reason, Stack: stack, Count: 1, TotalNS: ns,
			States: []capture.OwnerState{{State: capture.OwnerRunnable, Count: 1, TotalNS: ns}}}
	}
	c.Owners = []capture.Owner{
		share(capture.HolderRunnable, "", []string{"__cond_resched+0x35", "generic_perform_write+0x151"}, 6_000),
		share(capture.HolderOnCPU, capture.OwnerStackRan, nil, 3_000),
		share(capture.HolderOffCPU, capture.OwnerStackBefore, nil, 2_000),
		share("", capture.OwnerStackLost, nil, 1_000),
	}
	c.Owners[0].Where = capture.OwnerStackOffCPU
	page := renderHTML(t, c, HTMLOptions{}, testKey)
	d := dataOf(t, page)
	owners := d.view(t, "owners")
	for i, want := range []struct{ holder, reason string }{
		{"preempted", ""},
		{"on-CPU", "the owner ran on its CPU over this share, and was not sampled there (a critical section shorter than the sampling period, or sampling off)"},
		{"off-CPU", capture.OwnerStackBefore},
		{"", capture.OwnerStackLost},
	} {
		if got := d.cell(t, owners, "holder", i); got != want.holder {
			t.Errorf("row %d (%s): holder %q, want %q", i, c.Owners[i].HolderState, got, want.holder)
		}
		if got := d.cell(t, owners, "stack_reason", i); got != want.reason {
			t.Errorf("row %d (%s): why no stack %q, want %q", i, c.Owners[i].HolderState, got, want.reason)
		}
	}
	if !strings.Contains(string(page), "td.status-preempted {") {
		t.Error("no colour of its own for a preempted share: td.status-preempted is not in the page's style")
	}
}

// TestHTMLBlockerRows: the Blocked-by view names a blocker of a lock that records no owner by how it
// blocked the waits, and says which of its stacks a row is: its path to the lock, or where it woke
// the waiters; the waits no waker was seen for keep their reason.
func TestHTMLBlockerRows(t *testing.T) {
	const lock = 0xffffffff83a0c1e0
	c := capturetest.Of(t, 1e9, capturetest.Rec("pcpu-sem:R", "", "flock_lock_inode+0x39e", "reader", 1, 2, lock, 10_000))
	blocker := func(kind, where string, stack []string, ns uint64) capture.Owner {
		return capture.Owner{Type: "pcpu-sem:R", Lock: lock, Comm: "locks-reader", PID: 1, TID: 7, Blocker: kind, Where: where,
			Stack: stack, Count: 1, TotalNS: ns}
	}
	c.Owners = []capture.Owner{
		blocker(capture.BlockerWriter, capture.BlockerStackAcquire, []string{"percpu_down_write+0x127", "locks_start+0x25"}, 6_000),
		blocker(capture.BlockerReleaser, capture.BlockerStackWake, []string{"try_to_wake_up+0x3b6", "percpu_up_write+0x26"}, 3_000),
		{Type: "pcpu-sem:R", Lock: lock, Reason: capture.OwnerNoField, Count: 1, TotalNS: 1_000},
	}
	d := dataOf(t, renderHTML(t, c, HTMLOptions{}, testKey))
	owners := d.view(t, "owners")
	for i, want := range []struct{ owner, where string }{
		{"writer locks-reader 1/7", "taking the lock (its path to it)"},
		{"releaser locks-reader 1/7", "waking the waiter (releasing the lock)"},
		{"unknown: " + capture.OwnerNoField, ""},
	} {
		if got := d.cell(t, owners, "owner", i); got != want.owner {
			t.Errorf("row %d: owner %q, want %q", i, got, want.owner)
		}
		if got := d.cell(t, owners, "where", i); got != want.where {
			t.Errorf("row %d: where %q, want %q", i, got, want.where)
		}
	}
}
