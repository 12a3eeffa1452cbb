package capture

import (
	"cmp"
	"slices"
	"strings"
)

// GroupStat is one number of a group that perf lock contention shows and sorts by, named as its -k
// and -F keys name it.
type GroupStat string

// The stats, in the order perf lock contention shows them.
const (
	StatContended GroupStat = "contended"  // waits (Count)
	StatWaitTotal GroupStat = "wait_total" // total wait (TotalNS)
	StatWaitMax   GroupStat = "wait_max"   // longest wait (MaxNS)
	StatWaitMin   GroupStat = "wait_min"   // shortest wait (MinNS)
	StatAvgWait   GroupStat = "avg_wait"   // average wait (MeanNS)
	// StatSpinTotal is klockstat's own: the part of the total wait spent spinning (SpinNS).
	StatSpinTotal GroupStat = "spin_total"
)

// GroupStats are all the group stats, in the order perf lock contention shows them, then klockstat's.
var GroupStats = []GroupStat{StatContended, StatWaitTotal, StatWaitMax, StatWaitMin, StatAvgWait, StatSpinTotal}

// Of returns the stat of g.
func (s GroupStat) Of(g Group) float64 {
	switch s {
	case StatContended:
		return float64(g.Count)
	case StatWaitTotal:
		return float64(g.TotalNS)
	case StatWaitMax:
		return float64(g.MaxNS)
	case StatWaitMin:
		return float64(g.MinNS)
	case StatAvgWait:
		return g.MeanNS()
	case StatSpinTotal:
		return float64(g.SpinNS)
	}
	panic("capture: unknown stat " + string(s))
}

// SortGroups orders groups by the stat s, largest first, as perf lock contention -k does for every
// key (wait_min too); ties keep GroupBy's order: total wait, waits, key.
func SortGroups(groups []Group, s GroupStat) {
	slices.SortStableFunc(groups, func(a, b Group) int {
		return cmp.Or(cmp.Compare(s.Of(b), s.Of(a)),
			cmp.Compare(b.TotalNS, a.TotalNS), cmp.Compare(b.Count, a.Count), strings.Compare(a.Key, b.Key))
	})
}
