package capture

import "slices"

// OwnerFlameGraph builds the flame graph of the owners' critical sections: the wait charged to each
// known owner with a stack, on the path root → the owner's thread name → what it did over that
// share of the waits (HolderFrame) → its stack's frames, as FlameGraphs lays out the waiters'. A
// share not split by holder state has no such frame. ok is false when no owner has a stack.
func OwnerFlameGraph(owners []Owner, sources *Sources, maxNodes int) (tree FlameTree, ok bool) {
	var sections []Record
	for _, o := range owners {
		if len(o.Stack) == 0 || o.Reason != "" {
			continue
		}
		stack := o.Stack
		if o.HolderState != "" {
			// The outermost frame comes last: the state sits between the thread and its frames.
			stack = append(slices.Clip(o.Stack), HolderFrame(o.HolderState))
		}
		sections = append(sections, Record{Type: o.Type, Lock: o.Lock, Comm: o.Comm, PID: o.PID, TID: o.TID,
			Stack: stack, Count: o.Count, TotalNS: o.TotalNS})
	}
	trees := FlameGraphs(sections, sources, maxNodes)
	if len(trees) == 0 {
		return FlameTree{}, false
	}
	return trees[0], true // all the lock types
}
