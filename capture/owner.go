package capture

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Owner is the waits charged to one owner of one lock: the thread that held the lock when each of
// them began. With Reason set, it is instead the waits on the lock whose owner could not be known,
// and why.
type Owner struct {
	Type   string   `json:"type"` // the waits' lock type
	Lock   Addr     `json:"lock"`
	Name   string   `json:"name"`             // the lock's name, as its records have it
	Comm   string   `json:"comm"`             // the owner's thread name (untrusted); "" when unknown
	PID    uint32   `json:"pid"`              // the owner's process; 0 when unknown
	TID    uint32   `json:"tid"`              // the owner thread; 0 when unknown
	Reason string   `json:"reason,omitempty"` // why the owner is unknown; "" for a known owner
	Stack  []string `json:"stack"`            // the owner's kernel stack, innermost first; empty: not taken
	// StackReason says why a known owner's waits have no stack ("" when they have one, or stacks
	// were off); one of the OwnerStack* reasons.
	StackReason string `json:"stack_reason,omitempty"`
	// Where says where the owner was at Stack: OwnerStackOnCPU, sampled running in its critical
	// section, or OwnerStackOffCPU, leaving its CPU holding the lock; "" without a stack.
	Where string `json:"where,omitempty"`
	// Samples is how many samples of the owner on its CPU an OwnerStackOnCPU stack rests on: its
	// share of the wait is the wait charged to the owner while it ran, times Samples over the
	// owner's samples (SpreadOwnerSamples).
	Samples uint64 `json:"samples,omitempty"`
	// HolderState is what the owner did over this entry's share of the waits, one of HolderStates:
	// each wait charged to a known owner is split by the owner's time on its CPU, runnable and off
	// its CPU while it lasted, each share an entry of its own (a wait counts in each). "" for a
	// share not split: an unknown owner, a lost mark, or a capture from before the split.
	HolderState string `json:"holder_state,omitempty"`
	// Blocker says, for a thread charged the waits of a lock that records no owner (a percpu
	// rwsem, a semaphore) or of an rwsem held by readers, how it blocked them: one of the
	// Blocker* values, the thread that woke the waiters as it released the lock. "" for an owner
	// the lock recorded.
	Blocker string       `json:"blocker,omitempty"`
	Count   uint64       `json:"count"` // waits charged
	TotalNS uint64       `json:"total_ns"`
	States  []OwnerState `json:"states"` // a known owner's state when the waits began, largest first
}

// OwnerState is the waits that began while their lock's owner was in one state.
type OwnerState struct {
	State   string `json:"state"` // one of OwnerStates
	Count   uint64 `json:"count"`
	TotalNS uint64 `json:"total_ns"`
}

// The states of a lock's owner when a wait began.
const (
	OwnerOnCPU     = "on_cpu"     // running
	OwnerRunnable  = "runnable"   // runnable but not running: preempted, waiting for a CPU
	OwnerSleeping  = "sleeping"   // asleep, interruptible (TASK_INTERRUPTIBLE)
	OwnerDiskSleep = "disk_sleep" // asleep, uninterruptible (TASK_UNINTERRUPTIBLE, "D": I/O, another lock)
	OwnerOther     = "other"      // stopped, traced or exiting
)

// What a known owner did over a share of a wait charged to it: Owner.HolderState.
const (
	HolderOnCPU    = "on_cpu"   // on its CPU, in its critical section
	HolderRunnable = "runnable" // runnable but not running: preempted holding the lock (lock-holder preemption)
	HolderOffCPU   = "off_cpu"  // off its CPU and not runnable: asleep or blocked, or woken and not yet running
)

// HolderStates are the holder states, in the order the kernel side numbers them from 1.
var HolderStates = []string{HolderOnCPU, HolderRunnable, HolderOffCPU}

// HolderWords say what a holder did over a share of the waits (Owner.HolderState) in the words the
// views show, words a CSS class can name: td.status-preempted stands out.
var HolderWords = map[string]string{HolderOnCPU: "on-CPU", HolderRunnable: "preempted", HolderOffCPU: "off-CPU"}

// HolderFrame is the frame the flame graph and the folded stacks of the owners' critical sections
// put between an owner's thread and its frames: what it did over the share of the waits above it,
// "[holder preempted]", so that a holder's preempted time is one box apart from its time running.
func HolderFrame(state string) string {
	return "[holder " + HolderWords[state] + "]"
}

// OwnerStates are the owner states, in the order the kernel side numbers them.
var OwnerStates = []string{OwnerOnCPU, OwnerRunnable, OwnerSleeping, OwnerDiskSleep, OwnerOther}

// The reasons a wait's owner is unknown.
const (
	OwnerNoField = "the lock records no owner"  // spinlocks, rwlocks, semaphores, percpu rwsems
	OwnerReaders = "held by readers"            // an rwsem held for reading names no reader for sure
	OwnerNone    = "no owner as the wait began" // released, or being handed over, as the probe looked
	// OwnerNeverSlept is a wait of a lock that records no owner, or of an rwsem held by readers,
	// in which the waiter never slept: nothing woke it, so no thread is charged. The lock came free
	// as it queued, or its CPU was taken from it (by a hypervisor, or an interrupt) as it waited.
	OwnerNeverSlept = "the waiter never slept: no thread woke it"
	// OwnerPassed is the part of a wait after its owner's tenure was seen to end (the owner leaving
	// its CPU without the lock, or another wait ending with the lock taken): the waiter slept on, not
	// woken for it (a mutex or an rwsem wakes its first waiter only), while the lock went to other
	// threads first, unread. Not the owner's doing.
	OwnerPassed = "the owner let the lock go: it went to other waiters first"
)

// How a thread was found to block the waiters of a lock that records no owner: Owner.Blocker. The
// thread that wakes such a waiter is the one that released the lock to it.
const (
	// BlockerWriter is a writer of the lock: one seen waiting to take it, or the one that woke a
	// percpu rwsem's readers (percpu_up_write alone wakes them).
	BlockerWriter = "writer"
	// BlockerReader is a reader seen waiting for the lock, which woke the waiter as it left it: for
	// a writer waiting on readers, the last reader it saw leave.
	BlockerReader = "reader"
	// BlockerReleaser is the thread that released the lock and woke the waiter, not seen waiting for
	// it: the kernel does not say whether it read or wrote.
	BlockerReleaser = "releaser"
)

// Blockers are the Owner.Blocker values.
var Blockers = []string{BlockerWriter, BlockerReader, BlockerReleaser}

// The reasons a known owner's waits carry no owner stack. The owner's stack is taken as it leaves a
// CPU holding the lock, once per tenure: where it blocked or was preempted while others waited.
const (
	OwnerStackRan    = "the owner did not leave its CPU holding the lock" // it ran, or slept without leaving it again, until the waits ended
	OwnerStackFailed = "the stack walk failed, or the stack map was full"
	OwnerStackLost   = "the owner's mark was gone (map full, or it went on to hold another contended lock)"
	OwnerStackExited = "the owner exited before the wait ended, not seen leaving its CPU holding the lock"
	// OwnerStackBefore is a share runnable or off CPU whose stack was not seen: the owner left its
	// CPU so before it was marked (a lock-holder preempted before its waiters came), not since.
	OwnerStackBefore = "the owner left its CPU before its waiters came, not seen leaving it since"
)

// OwnerStackReasons are the reasons a known owner's waits have no stack.
var OwnerStackReasons = []string{OwnerStackRan, OwnerStackFailed, OwnerStackLost, OwnerStackExited, OwnerStackBefore}

// SortOwners orders owners by the wait charged to them, largest first (ties: waits, then type,
// lock and thread), and each owner's states likewise.
func SortOwners(owners []Owner) {
	for i := range owners {
		slices.SortStableFunc(owners[i].States, func(a, b OwnerState) int {
			return cmp.Or(cmp.Compare(b.TotalNS, a.TotalNS), cmp.Compare(b.Count, a.Count))
		})
	}
	slices.SortStableFunc(owners, func(a, b Owner) int {
		return cmp.Or(cmp.Compare(b.TotalNS, a.TotalNS), cmp.Compare(b.Count, a.Count),
			cmp.Compare(a.Type, b.Type), cmp.Compare(a.Lock, b.Lock), cmp.Compare(a.TID, b.TID), cmp.Compare(a.Reason, b.Reason),
			slices.Compare(a.Stack, b.Stack), cmp.Compare(a.StackReason, b.StackReason), cmp.Compare(a.Where, b.Where),
			cmp.Compare(a.HolderState, b.HolderState))
	})
}

// MarshalJSON implements json.Marshaler.
func (o Owner) MarshalJSON() ([]byte, error) {
	type plain Owner
	o.Stack = nonNil(o.Stack)
	o.States = nonNil(o.States)
	return json.Marshal(plain(o))
}

func (o Owner) validate() error {
	if err := CheckTypeName(o.Type); err != nil {
		return err
	}
	switch {
	case o.Count == 0:
		return errors.New("count is 0")
	case o.Reason == "" && o.TID == 0:
		return errors.New("neither an owner thread nor a reason")
	case o.Reason != "" && (o.TID != 0 || len(o.States) > 0 || len(o.Stack) > 0 || o.StackReason != "" || o.HolderState != ""):
		return fmt.Errorf("owner thread %d, states or stack, but unknown: %s", o.TID, o.Reason)
	case o.HolderState != "" && !slices.Contains(HolderStates, o.HolderState):
		return fmt.Errorf("unknown holder state %q", o.HolderState)
	case o.StackReason != "" && !slices.Contains(OwnerStackReasons, o.StackReason):
		return fmt.Errorf("unknown owner stack reason %q", o.StackReason)
	case o.StackReason != "" && len(o.Stack) > 0:
		return fmt.Errorf("an owner stack, and a reason for none: %s", o.StackReason)
	case o.Blocker != "" && !slices.Contains(Blockers, o.Blocker):
		return fmt.Errorf("unknown blocker %q", o.Blocker)
	case o.Blocker != "" && (o.Reason != "" || o.HolderState != "" || len(o.States) > 0):
		return fmt.Errorf("a %s blocker with a reason, a holder state or states", o.Blocker)
	case o.Where != "" && !slices.Contains(ownerStackPlaces, o.Where):
		return fmt.Errorf("unknown owner stack place %q", o.Where)
	case (o.Where == BlockerStackAcquire || o.Where == BlockerStackWake) != (o.Blocker != "" && o.Where != ""):
		return fmt.Errorf("an owner stack place %q for a blocker %q", o.Where, o.Blocker)
	case o.Where != "" && len(o.Stack) == 0:
		return fmt.Errorf("an owner stack place %q without a stack", o.Where)
	case (o.Samples > 0) != (o.Where == OwnerStackOnCPU):
		return fmt.Errorf("%d samples for an owner stack %q", o.Samples, o.Where)
	}
	var count, total uint64
	for _, s := range o.States {
		if !slices.Contains(OwnerStates, s.State) {
			return fmt.Errorf("unknown owner state %q", s.State)
		}
		count += s.Count
		total += s.TotalNS
	}
	if count > o.Count || total > o.TotalNS {
		return fmt.Errorf("states count %d waits and %d ns, more than the owner's %d and %d", count, total, o.Count, o.TotalNS)
	}
	return nil
}

// OwnerTotal is the entries of one owner of one lock merged, or those of one reason a lock's owner
// was unknown: the owner's stacks, on and off its CPU, with their shares of its charged wait.
type OwnerTotal struct {
	Type    string
	Lock    Addr
	TID     uint32 // 0 for an unknown owner
	Reason  string // why the owner is unknown; "" for a known one
	TotalNS uint64 // the wait charged to the owner, over all its entries
	// StackNS is the part of TotalNS charged to a stack of the owner's, on or off its CPU.
	StackNS uint64
	// Holder is TotalNS split by what the owner did over the waits.
	Holder HolderSplit
	// Entries index the owner's entries in the owners given to OwnerTotals, largest first: the
	// first with a stack is its top critical-section stack.
	Entries []int
}

// OwnerTotals merges the entries of each owner of sorted owners (SortOwners), largest total first.
func OwnerTotals(owners []Owner) []OwnerTotal {
	index := map[string]int{}
	var out []OwnerTotal
	for i, o := range owners {
		k := o.Key()
		j, ok := index[k]
		if !ok {
			j = len(out)
			index[k] = j
			out = append(out, OwnerTotal{Type: o.Type, Lock: o.Lock, TID: o.TID, Reason: o.Reason})
		}
		t := &out[j]
		t.TotalNS += o.TotalNS
		if len(o.Stack) > 0 {
			t.StackNS += o.TotalNS
		}
		t.Holder.add(o)
		t.Entries = append(t.Entries, i)
	}
	slices.SortStableFunc(out, func(a, b OwnerTotal) int { return cmp.Compare(b.TotalNS, a.TotalNS) })
	return out
}

// Key is what OwnerTotals merges an owner's entries by, the owner's identity: an entry's share of
// its owner's wait is its TotalNS over the OwnerTotal of the same Key.
func (o Owner) Key() string {
	return fmt.Sprintf("%s\x00%d\x00%d\x00%s", o.Type, o.Lock, o.TID, o.Reason)
}

// Key is the Key of the owner's entries.
func (t OwnerTotal) Key() string {
	return Owner{Type: t.Type, Lock: t.Lock, TID: t.TID, Reason: t.Reason}.Key()
}

// HolderSplit is wait charged to known owners split by what they did over it (Owner.HolderState).
type HolderSplit struct {
	OnCPUNS, RunnableNS, OffCPUNS uint64
	// UnsplitNS is the wait charged to known owners and not split: a lost mark, or a capture from
	// before the split.
	UnsplitNS uint64
}

// SplitByHolder adds up the wait charged to the known owners of owners by what they did over it.
func SplitByHolder(owners []Owner) HolderSplit {
	var h HolderSplit
	for _, o := range owners {
		h.add(o)
	}
	return h
}

func (h *HolderSplit) add(o Owner) {
	if o.Reason != "" || o.Blocker != "" {
		return
	}
	switch o.HolderState {
	case HolderOnCPU:
		h.OnCPUNS += o.TotalNS
	case HolderRunnable:
		h.RunnableNS += o.TotalNS
	case HolderOffCPU:
		h.OffCPUNS += o.TotalNS
	default:
		h.UnsplitNS += o.TotalNS
	}
}

// SplitNS is the wait split: on CPU, runnable and off CPU.
func (h HolderSplit) SplitNS() uint64 { return h.OnCPUNS + h.RunnableNS + h.OffCPUNS }

// RunnableShare is the share of the split wait the owners spent preempted, runnable but not running;
// 0 when none was split.
func (h HolderSplit) RunnableShare() float64 {
	if h.SplitNS() == 0 {
		return 0
	}
	return float64(h.RunnableNS) / float64(h.SplitNS())
}

// OwnerStacks are the entries of c's owners with a stack: the wait charged to an owner while it ran
// its critical section (sampled on its CPU) or after it left its CPU holding the lock. The exports
// write them beside the waiters' records, apart: a sample type of their own in pprof, a root frame
// of their own in folded stacks, rows of their own kind in CSV.
func OwnerStacks(c *Capture) []Owner {
	var out []Owner
	for _, o := range c.Owners {
		if len(o.Stack) > 0 && o.Reason == "" && o.TotalNS > 0 {
			out = append(out, o)
		}
	}
	return out
}
