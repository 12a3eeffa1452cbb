package collector

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
)

// knownOwner is an owners map entry of thread tid, a known owner of lock, with a stack or a reason
// for none.
func (f *assembleFixture) knownOwner(lock, stack uint64, tid uint32, reason lockstatOwnerStackReason, count, total uint64) {
	v := lockstatOwnerStats{Count: count, TotalNs: total, Pid: 70}
	v.StateCount[lockstatOwnerStateOWNER_ON_CPU], v.StateNs[lockstatOwnerStateOWNER_ON_CPU] = count, total
	copy(v.Comm[:], []int8{'h', 'o', 'g'})
	f.snap.owners = append(f.snap.owners, ownerEntry{
		key: lockstatOwnerKey{Lock: lock, Stack: stack, Tid: tid, Type: f.types["mutex"],
			Reason: uint32(lockstatOwnerReasonOWNER_KNOWN), StackReason: uint32(reason)},
		value: v,
	})
}

// TestAssembleOwnerSamples spreads the wait of an owner that never left its CPU over the stacks it
// was sampled at, 2 to 1, keeps the stack it left its CPU at, and says at what rate it sampled.
func TestAssembleOwnerSamples(t *testing.T) {
	f := newAssembleFixture(t, assembleKallsyms)
	f.in.cfg.Owners = true
	f.in.ownerSampleHz = DefaultOwnerSampleHz
	f.knownOwner(lockHeap, 0, 77, lockstatOwnerStackReasonOWNER_STACK_RAN, 3, 9000)
	f.knownOwner(lockHeap, stackOwner, 77, lockstatOwnerStackReasonOWNER_STACK_TAKEN, 1, 1000)
	key := func(stack uint64) lockstatOwnerSampleKey {
		return lockstatOwnerSampleKey{Lock: lockHeap, Stack: stack, Tid: 77, Type: f.types["mutex"]}
	}
	f.snap.ownerSamples = []ownerSampleEntry{{key: key(stackPipe), value: 2}, {key: key(stackXfs), value: 1}, {key: key(0), value: 4}}
	cp := f.assemble(t)

	if cp.Meta.OwnerSampleHz != DefaultOwnerSampleHz {
		t.Errorf("owner sample rate %d, want %d", cp.Meta.OwnerSampleHz, DefaultOwnerSampleHz)
	}
	at := func(frame string) capture.Owner {
		t.Helper()
		i := slices.IndexFunc(cp.Owners, func(o capture.Owner) bool { return slices.Contains(o.Stack, frame) })
		if i < 0 {
			t.Fatalf("no owner stack with %s among %+v", frame, cp.Owners)
		}
		return cp.Owners[i]
	}
	pipe, xfs := at("pipe_write+0x40"), at("xfs_file_write_iter+0x10 [xfs]")
	if pipe.Where != capture.OwnerStackOnCPU || pipe.Samples != 2 || pipe.TotalNS != 6000 || pipe.Comm != "hog" {
		t.Errorf("mutex_lock < pipe_write: %+v, want on CPU, 2 samples, 6000 ns of hog", pipe)
	}
	if xfs.Where != capture.OwnerStackOnCPU || xfs.Samples != 1 || xfs.TotalNS != 3000 {
		t.Errorf("xfs stack: %+v, want on CPU, 1 sample, 3000 ns", xfs)
	}
	if slices.ContainsFunc(cp.Owners, func(o capture.Owner) bool { return o.StackReason == capture.OwnerStackRan }) {
		t.Errorf("a stack-less owner entry is left though the owner was sampled: %+v", cp.Owners)
	}
	var off int
	for _, o := range cp.Owners {
		if o.Where == capture.OwnerStackOffCPU {
			off++
			if o.TotalNS != 1000 || len(o.Stack) != 1 {
				t.Errorf("switch-out stack %+v, want its own 1000 ns at pipe_write", o)
			}
		}
	}
	if off != 1 || len(cp.Owners) != 3 {
		t.Errorf("%d switch-out stacks of %d owner entries, want 1 of 3", off, len(cp.Owners))
	}
}

// chainFixture is an assembly with owners of thread 77, a known owner of lockHeap charged n waits
// of total ns, and of thread 88, named end.
func chainFixture(t *testing.T, n, total uint64, end string) *assembleFixture {
	f := newAssembleFixture(t, assembleKallsyms)
	f.in.cfg.Owners = true
	f.knownOwner(lockHeap, 0, 77, lockstatOwnerStackReasonOWNER_STACK_RAN, n, total)
	f.snap.threadNames[88] = end
	return f
}

// ownedWait is a wait of key k begun at ts, still open at the stop, charged to thread owner since
// from.
func ownedWait(k lockstatWaitKey, ts, from uint64, owner uint32) lockstatWaitSlot {
	s := openWait(k, ts)
	s.OwnerReason, s.OwnerTid, s.OwnerFrom = uint8(lockstatOwnerReasonOWNER_KNOWN), owner, from
	return s
}

// TestAssembleOwnerChains builds the chains of ended waits and of a wait still open at the stop, a
// cycle, naming the owners after their owner entries and the chain's end after its open wait. The
// owner had entries under its process's name before it named itself: it is named after the entry
// with the most wait.
func TestAssembleOwnerChains(t *testing.T) {
	f := chainFixture(t, 2, 5000, "<b>end</b>")
	early := f.snap.owners[0]
	early.key.Lock, early.value.Count, early.value.TotalNs, early.value.Comm = lockHeapOther, 1, 400, [16]int8{}
	early.value.StateCount[lockstatOwnerStateOWNER_ON_CPU], early.value.StateNs[lockstatOwnerStateOWNER_ON_CPU] = 1, 400
	copy(early.value.Comm[:], []int8{'c', 'o', 'n', 't', 'e', 'n', 'd'})
	f.snap.owners = append(f.snap.owners, early)
	mutex := f.types["mutex"]
	ended := lockstatChainKey{Lock: lockHeap, EndLock: lockHeapOther, Tid: 77, EndTid: 88, Type: mutex, EndType: uint16(mutex), Depth: 1}
	f.snap.ownerChains = []chainEntry{{key: ended, value: lockstatChainStats{Count: 2, TotalNs: 5000}}}
	k := f.wait("mutex", lockHeap, stackPipe, 55, 1, 100, 100, 100)
	open := ownedWait(k, stopNS-4000, stopNS-3000, 77)
	open.ChainLock, open.ChainTid, open.ChainType, open.ChainDepth, open.ChainCycle = lockHeap, 55, uint8(mutex), 2, 1
	f.snap.threadWaits = []lockstatWaitSlot{open}
	f.namer.names = map[uint64]string{lockHeap: "pipe", lockHeapOther: "i_rwsem"}
	f.wait("mutex", lockHeapOther, stackXfs, 77, 1, 100, 100, 100)
	cp := f.assemble(t)

	if len(cp.OwnerChains) != 2 {
		t.Fatalf("%d chains, want 2: %+v", len(cp.OwnerChains), cp.OwnerChains)
	}
	first, cycle := cp.OwnerChains[0], cp.OwnerChains[1]
	if first.TotalNS != 5000 || first.Count != 2 || first.InProgress != 0 || first.Comm != "hog" || first.EndComm != "<b>end</b>" ||
		first.Name != "pipe" || first.EndName != "i_rwsem" || first.Cycle {
		t.Errorf("ended chain %+v, want 2 waits of 5000 ns of pipe through hog to <b>end</b> on i_rwsem", first)
	}
	if !cycle.Cycle || cycle.InProgress != 1 || cycle.TotalNS != 3000 || cycle.Depth != 2 || cycle.EndTID != 55 {
		t.Errorf("open chain %+v, want a cycle of depth 2 back to thread 55, in progress, 3000 ns since the owner was read", cycle)
	}
}

// TestAssembleOwnerChainFollowedAgain charges a wait still open at the stop to the chain its owner
// was found waiting in when the owner, unchanged, was read again: from then on, not from when the
// wait began to be charged to the owner, which was not waiting yet.
func TestAssembleOwnerChainFollowedAgain(t *testing.T) {
	f := chainFixture(t, 1, 1000, "end")
	mutex := f.types["mutex"]
	k := f.wait("mutex", lockHeap, stackPipe, 55, 1, 100, 100, 100)
	ownerFrom, chainFrom := uint64(stopNS-5000), uint64(stopNS-1000)
	open := ownedWait(k, ownerFrom, ownerFrom, 77)
	open.ChainLock, open.ChainTid, open.ChainType, open.ChainDepth, open.ChainFrom = lockHeapOther, 88, uint8(mutex), 1, chainFrom
	f.snap.threadWaits = []lockstatWaitSlot{open}
	cp := f.assemble(t)

	if len(cp.OwnerChains) != 1 {
		t.Fatalf("%d chains, want 1: %+v", len(cp.OwnerChains), cp.OwnerChains)
	}
	if c := cp.OwnerChains[0]; c.TotalNS != stopNS-chainFrom || c.InProgress != 1 || c.TID != 77 || c.EndTID != 88 || c.EndComm != "end" {
		t.Errorf("chain %+v, want the open wait through 77 to 88 for the %d ns since the chain was seen", c, stopNS-chainFrom)
	}
}

// TestWaitSlotOwnerFieldsLast keeps the owner fields of a wait slot behind the fields every wait
// uses, and those within one 64-byte cache line: a wait of a capture without --owners touches none
// of the owner fields.
func TestWaitSlotOwnerFieldsLast(t *testing.T) {
	const cacheLine = 64
	slot := reflect.TypeFor[lockstatWaitSlot]()
	var common, owner []reflect.StructField
	for f := range slot.Fields() {
		switch {
		case f.Name == "Pad" || f.Name == "Pad2":
		case strings.HasPrefix(f.Name, "Owner") || strings.HasPrefix(f.Name, "Chain") || strings.HasPrefix(f.Name, "Waker") || f.Name == "LastLock":
			owner = append(owner, f)
		default:
			common = append(common, f)
		}
	}
	if len(owner) == 0 || len(common) == 0 {
		t.Fatalf("wait slot fields %v: no owner fields, or nothing else", slot)
	}
	for _, c := range common {
		if end := c.Offset + c.Type.Size(); end > cacheLine || end > owner[0].Offset {
			t.Errorf("%s ends at byte %d of the wait slot, past its first %d bytes or its first owner field %s at %d",
				c.Name, end, cacheLine, owner[0].Name, owner[0].Offset)
		}
	}
}

// TestAssembleHolderSplit assembles the waits charged to one owner split by what it did over them,
// as the kernel side charges each share to a key of its own: 3000 ns on its CPU, spread over its
// samples; 5000 ns runnable at the stack it was preempted at, and 1000 ns runnable from before its
// waiters came, with no stack; 1000 ns off its CPU at the stack it blocked at; and 500 ns whose
// mark was lost, not split. No share goes to another state's stacks, not even where the owner was
// sampled at the stack it was preempted at. The 4000 ns of the same waits after the owner let the
// lock go, which went on behind other threads, are no share of its: an unknown owner's.
func TestAssembleHolderSplit(t *testing.T) {
	f := newAssembleFixture(t, assembleKallsyms)
	f.in.cfg.Owners = true
	f.in.ownerSampleHz = DefaultOwnerSampleHz
	share := func(stack uint64, reason lockstatOwnerStackReason, held lockstatOwnerHeld, count, total uint64) {
		f.knownOwner(lockHeap, stack, 77, reason, count, total)
		f.snap.owners[len(f.snap.owners)-1].key.Held = uint32(held)
	}
	share(0, lockstatOwnerStackReasonOWNER_STACK_RAN, lockstatOwnerHeldOWNER_HELD_ON_CPU, 2, 3000)
	share(stackPipe, lockstatOwnerStackReasonOWNER_STACK_TAKEN, lockstatOwnerHeldOWNER_HELD_RUNNABLE, 2, 5000)
	share(0, lockstatOwnerStackReasonOWNER_STACK_BEFORE, lockstatOwnerHeldOWNER_HELD_RUNNABLE, 1, 1000)
	share(stackXfs, lockstatOwnerStackReasonOWNER_STACK_TAKEN, lockstatOwnerHeldOWNER_HELD_OFF_CPU, 1, 1000)
	share(0, lockstatOwnerStackReasonOWNER_STACK_LOST, lockstatOwnerHeldOWNER_HELD_UNSPLIT, 1, 500)
	f.snap.owners = append(f.snap.owners, ownerEntry{
		key:   lockstatOwnerKey{Lock: lockHeap, Type: f.types["mutex"], Reason: uint32(lockstatOwnerReasonOWNER_PASSED)},
		value: lockstatOwnerStats{Count: 2, TotalNs: 4000},
	})
	key := func(stack uint64) lockstatOwnerSampleKey {
		return lockstatOwnerSampleKey{Lock: lockHeap, Stack: stack, Tid: 77, Type: f.types["mutex"]}
	}
	f.snap.ownerSamples = []ownerSampleEntry{{key: key(stackPipe), value: 1}, {key: key(stackOwner), value: 2}}
	cp := f.assemble(t)

	type entry struct {
		holder, where, reason, top string
		total                      uint64
	}
	var got []entry
	var passed []capture.Owner
	for _, o := range cp.Owners {
		if o.Reason != "" {
			passed = append(passed, o)
			continue
		}
		e := entry{holder: o.HolderState, where: o.Where, reason: o.StackReason, total: o.TotalNS}
		if len(o.Stack) > 0 {
			e.top = o.Stack[0]
		}
		got = append(got, e)
	}
	want := []entry{
		{capture.HolderRunnable, capture.OwnerStackOffCPU, "", "mutex_lock+0x5", 5000},
		{capture.HolderOnCPU, capture.OwnerStackOnCPU, "", "pipe_write+0x40", 2000},
		// Ties: the on-CPU share counts both waits spread over it.
		{capture.HolderOnCPU, capture.OwnerStackOnCPU, "", "mutex_lock+0x5", 1000},
		{capture.HolderRunnable, "", capture.OwnerStackBefore, "", 1000},
		{capture.HolderOffCPU, capture.OwnerStackOffCPU, "", "down_write+0x20", 1000},
		{"", "", capture.OwnerStackLost, "", 500},
	}
	if !slices.Equal(got, want) {
		t.Errorf("owner entries\n%+v\nwant\n%+v", got, want)
	}
	if len(passed) != 1 || passed[0].Reason != capture.OwnerPassed || passed[0].TID != 0 || passed[0].TotalNS != 4000 || passed[0].HolderState != "" {
		t.Errorf("the waits' part after the owner let the lock go: %+v, want one entry of 4000 ns charged to %q", passed, capture.OwnerPassed)
	}
	split := capture.SplitByHolder(cp.Owners)
	if wantSplit := (capture.HolderSplit{OnCPUNS: 3000, RunnableNS: 6000, OffCPUNS: 1000, UnsplitNS: 500}); split != wantSplit {
		t.Errorf("split %+v, want %+v", split, wantSplit)
	}
	if share := split.RunnableShare(); share != 0.6 {
		t.Errorf("runnable share %v, want 0.6 (6000 of the 10000 ns split)", share)
	}
	totals := capture.OwnerTotals(cp.Owners)
	if len(totals) != 2 || totals[0].Holder != split || totals[0].TotalNS != 10500 || totals[1].Reason != capture.OwnerPassed {
		t.Errorf("owner totals %+v, want one of 10500 ns split as %+v, then the 4000 ns passed on", totals, split)
	}
}
