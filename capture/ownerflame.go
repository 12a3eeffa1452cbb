package capture

// OwnerFlameGraph builds the flame graph of the owners' critical sections: the wait charged to each
// known owner with a stack, on the path root → the owner's thread name → its stack's frames, as
// FlameGraphs lays out the waiters'. ok is false when no owner has a stack.
func OwnerFlameGraph(owners []Owner, sources *Sources, maxNodes int) (tree FlameTree, ok bool) {
	var sections []Record
	for _, o := range owners {
		if len(o.Stack) == 0 || o.Reason != "" {
			continue
		}
		sections = append(sections, Record{Type: o.Type, Lock: o.Lock, Comm: o.Comm, PID: o.PID, TID: o.TID,
			Stack: o.Stack, Count: o.Count, TotalNS: o.TotalNS})
	}
	trees := FlameGraphs(sections, sources, maxNodes)
	if len(trees) == 0 {
		return FlameTree{}, false
	}
	return trees[0], true // all the lock types
}
