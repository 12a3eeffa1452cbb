package capture

import (
	"cmp"
	"slices"
	"strings"
)

// Where an owner's stack was seen: Owner.Where.
const (
	// OwnerStackOnCPU is a stack sampled while the owner ran holding the lock others waited for: its
	// critical section on its CPU.
	OwnerStackOnCPU = "on_cpu"
	// OwnerStackOffCPU is the stack the owner had as it left its CPU holding the lock: where it blocked
	// or was preempted.
	OwnerStackOffCPU = "off_cpu"
	// BlockerStackAcquire is a blocker's stack as it waited to take the lock (Owner.Blocker): its
	// path to the lock.
	BlockerStackAcquire = "acquire"
	// BlockerStackWake is a blocker's stack as it woke the waiter, releasing the lock.
	BlockerStackWake = "wake"
)

var ownerStackPlaces = []string{OwnerStackOnCPU, OwnerStackOffCPU, BlockerStackAcquire, BlockerStackWake}

// OwnerSample is how often one owner of one lock was sampled on its CPU at one kernel stack while it
// held the lock and others waited for it.
type OwnerSample struct {
	Type  string
	Lock  Addr
	TID   uint32
	Stack []string // innermost first; empty: the walk failed
	Count uint64
}

// ownerThread is one owner thread of one lock.
type ownerThread struct {
	typ  string
	lock Addr
	tid  uint32
}

// SpreadOwnerSamples spreads the wait charged to owners that were not seen leaving their CPU holding
// the lock (OwnerStackRan) or that exited first (OwnerStackExited) over the stacks they were
// sampled at, in proportion to the samples, and returns the owners: such a wait went by while its
// owner ran, and the samples say where. Each of those entries is replaced by one per sampled stack,
// Where OwnerStackOnCPU, with its share of the wait and of the states, the owner's waits it came
// from as Count (a wait spread over several stacks counts in each), and the samples it rests on.
// An owner with no samples keeps its entry, and entries with a stack taken as the owner left its
// CPU are marked OwnerStackOffCPU. A share of the waits the owner spent runnable or off its CPU
// (HolderState) is never spread over where it ran: it keeps its reason. Owners are then sorted by
// SortOwners.
func SpreadOwnerSamples(owners []Owner, samples []OwnerSample) []Owner {
	byOwner := map[ownerThread][]OwnerSample{}
	for _, s := range samples {
		if s.Count > 0 && len(s.Stack) > 0 {
			k := ownerThread{s.Type, s.Lock, s.TID}
			byOwner[k] = append(byOwner[k], s)
		}
	}
	out := make([]Owner, 0, len(owners))
	for _, o := range owners {
		if len(o.Stack) > 0 && o.StackReason == "" && o.Reason == "" && o.Blocker == "" {
			o.Where = OwnerStackOffCPU
		}
		sampled := byOwner[ownerThread{o.Type, o.Lock, o.TID}]
		if o.Reason != "" || (o.StackReason != OwnerStackRan && o.StackReason != OwnerStackExited) || len(sampled) == 0 ||
			(o.HolderState != "" && o.HolderState != HolderOnCPU) {
			out = append(out, o)
			continue
		}
		out = append(out, spread(o, sampled)...)
	}
	SortOwners(out)
	return mergeOwnerStacks(out)
}

// spread is o's wait over its sampled stacks, the remainder of the integer shares going to the most
// sampled one.
func spread(o Owner, sampled []OwnerSample) []Owner {
	slices.SortFunc(sampled, func(a, b OwnerSample) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), slices.Compare(a.Stack, b.Stack))
	})
	var n uint64
	for _, s := range sampled {
		n += s.Count
	}
	parts := make([]Owner, len(sampled))
	var given uint64
	for i, s := range sampled {
		p := o
		p.Stack, p.StackReason, p.Where, p.Samples = s.Stack, "", OwnerStackOnCPU, s.Count
		p.TotalNS = share(o.TotalNS, s.Count, n)
		given += p.TotalNS
		p.States = make([]OwnerState, len(o.States))
		for j, st := range o.States {
			p.States[j] = OwnerState{State: st.State, Count: st.Count, TotalNS: share(st.TotalNS, s.Count, n)}
		}
		parts[i] = p
	}
	parts[0].TotalNS += o.TotalNS - given
	return parts
}

// share is total*part/whole, rounded down, without overflow for any wait a capture holds.
func share(total, part, whole uint64) uint64 {
	return uint64(float64(total) * float64(part) / float64(whole))
}

// mergeOwnerStacks merges the sorted owners' entries that agree in type, lock, thread, stack, where,
// holder state, blocker and reasons: a stack seen both spread from waits with no stack and from waits that
// exited.
func mergeOwnerStacks(owners []Owner) []Owner {
	type key struct {
		ownerThread
		reason, stackReason, where, holder, blocker, stack string
	}
	index := map[key]int{}
	out := owners[:0]
	for _, o := range owners {
		k := key{ownerThread{o.Type, o.Lock, o.TID}, o.Reason, o.StackReason, o.Where, o.HolderState, o.Blocker, strings.Join(o.Stack, "\n")}
		i, ok := index[k]
		if !ok {
			index[k] = len(out)
			out = append(out, o)
			continue
		}
		m := &out[i]
		m.Count += o.Count
		m.TotalNS += o.TotalNS
		m.Samples = max(m.Samples, o.Samples) // the same samples, spread twice
		for _, st := range o.States {
			j := slices.IndexFunc(m.States, func(s OwnerState) bool { return s.State == st.State })
			if j < 0 {
				m.States = append(m.States, st)
				continue
			}
			m.States[j].Count += st.Count
			m.States[j].TotalNS += st.TotalNS
		}
	}
	SortOwners(out)
	return out
}
