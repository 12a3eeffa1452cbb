package capture_test

import (
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
)

// TestCompareOwnerStacksWhere matches an owner's sampled stack across captures by its functions,
// whatever their offsets, and keeps apart the same functions seen on and off the owner's CPU.
func TestCompareOwnerStacksWhere(t *testing.T) {
	owner := func(where string, samples uint64, stack ...string) capture.Owner {
		return capture.Owner{Type: "rwsem:W", Lock: 0x10, Name: "&ext4_inode_cache", Comm: "fio", PID: 1, TID: 2, Stack: stack,
			Where: where, Samples: samples, Count: 1, TotalNS: 1000}
	}
	b := capturetest.Of(t, 1e9, capturetest.Rec("rwsem:W", "&ext4_inode_cache", "ext4_buffered_write_iter+0x68", "fio", 1, 3, 0x10, 500))
	a := capturetest.Of(t, 1e9, capturetest.Rec("rwsem:W", "&ext4_inode_cache", "ext4_buffered_write_iter+0x6c", "fio", 1, 3, 0x10, 500))
	b.Owners = []capture.Owner{owner(capture.OwnerStackOnCPU, 5, "copy_folio_from_iter_atomic+0xcd", "generic_perform_write+0x114")}
	a.Owners = []capture.Owner{
		owner(capture.OwnerStackOnCPU, 9, "copy_folio_from_iter_atomic+0xd1", "generic_perform_write+0x118"),
		owner(capture.OwnerStackOffCPU, 0, "copy_folio_from_iter_atomic+0xd1", "generic_perform_write+0x118"),
	}
	d := capture.Compare(b, a, capture.DiffOptions{})
	var matched, added int
	for _, o := range d.Owners {
		switch {
		case o.Status == capture.Matched && o.Where == capture.OwnerStackOnCPU && o.Stack[0] == "copy_folio_from_iter_atomic":
			matched++
		case o.Status == capture.New && o.Where == capture.OwnerStackOffCPU:
			added++
		}
	}
	if matched != 1 || added != 1 || len(d.Owners) != 2 {
		t.Errorf("owners %+v: want the sampled stack matched by its functions, the one off CPU new", d.Owners)
	}
}

// TestCompareOwnersByHolderAndBlocker keeps apart the shares of an owner's wait by what it did over
// them, so that a holder preempted less after a fix shows as its runnable share shrinking, not as
// one merged row; and carries how a waker blocked the waiters.
func TestCompareOwnersByHolderAndBlocker(t *testing.T) {
	share := func(holder string, ns uint64) capture.Owner {
		return capture.Owner{Type: "mutex", Lock: 0x10, Comm: "renamer", PID: 1, TID: 2, HolderState: holder,
			Stack: []string{"__cond_resched+0x35", "dput+0xe7"}, Count: 1, TotalNS: ns}
	}
	writer := capture.Owner{Type: "pcpu-sem:R", Lock: 0x20, Comm: "reader", PID: 3, TID: 4, Blocker: capture.BlockerWriter,
		Where: capture.BlockerStackAcquire, Stack: []string{"percpu_down_write+0x127", "locks_start+0x25"}, Count: 1, TotalNS: 500}
	b := capturetest.Of(t, 1e9, capturetest.Rec("mutex", "", "do_renameat2+0x2c2", "renamer", 1, 5, 0x10, 4000))
	a := capturetest.Of(t, 1e9, capturetest.Rec("mutex", "", "do_renameat2+0x2c2", "renamer", 1, 5, 0x10, 1000))
	b.Owners = []capture.Owner{share(capture.HolderRunnable, 3000), share(capture.HolderOnCPU, 1000), writer}
	a.Owners = []capture.Owner{share(capture.HolderOnCPU, 1000), writer}
	d := capture.Compare(b, a, capture.DiffOptions{Absolute: true})
	got := map[string]capture.OwnerDiff{}
	for _, o := range d.Owners {
		got[o.HolderState+"/"+o.Blocker] = o
	}
	if o := got[capture.HolderRunnable+"/"]; o.Status != capture.Gone || o.Before.TotalNS != 3000 {
		t.Errorf("the runnable share %+v, want gone, 3000 ns before", o)
	}
	if o := got[capture.HolderOnCPU+"/"]; o.Status != capture.Matched || o.Before.TotalNS != 1000 || o.After.TotalNS != 1000 {
		t.Errorf("the on-CPU share %+v, want matched, 1000 ns on both sides", o)
	}
	if o := got["/"+capture.BlockerWriter]; o.Status != capture.Matched || o.Comm != "reader" {
		t.Errorf("the blocker %+v, want matched, a writer", o)
	}
	if len(d.Owners) != 3 {
		t.Errorf("%d owners compared, want 3: %+v", len(d.Owners), d.Owners)
	}
}
