package capture

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Group is an aggregate of records sharing a key.
//
// Type, Caller, Name, Lock and Comm hold the value all merged records share, or the zero value where
// they differ (a ByCaller group spanning several locks has no single Lock or Name).
type Group struct {
	Key        string `json:"key"`
	Type       string `json:"type"`
	Caller     string `json:"caller"`
	Name       string `json:"name"`
	Lock       Addr   `json:"lock"`
	Comm       string `json:"comm"`
	Count      uint64 `json:"count"`
	TotalNS    uint64 `json:"total_ns"`
	MaxNS      uint64 `json:"max_ns"`
	MinNS      uint64 `json:"min_ns"`
	InProgress uint64 `json:"in_progress"`
	// Hold times, summed like the waits; zero unless a function-probe backend timed holds.
	HoldCount   uint64   `json:"hold_count,omitempty"`
	HoldTotalNS uint64   `json:"hold_total_ns,omitempty"`
	HoldMinNS   uint64   `json:"hold_min_ns,omitempty"`
	HoldMaxNS   uint64   `json:"hold_max_ns,omitempty"`
	Records     int      `json:"records"` // how many records merged
	Stack       []string `json:"stack"`   // stack of the record with the largest TotalNS in the group; never nil
}

// MeanNS is the average wait; 0 for an empty group.
func (g Group) MeanNS() float64 {
	if g.Count == 0 {
		return 0
	}
	return float64(g.TotalNS) / float64(g.Count)
}

// HoldMeanNS is the average hold; 0 when no hold was timed.
func (g Group) HoldMeanNS() float64 {
	if g.HoldCount == 0 {
		return 0
	}
	return float64(g.HoldTotalNS) / float64(g.HoldCount)
}

// GroupBy merges records by a key function and returns groups sorted by TotalNS descending (ties:
// Count descending, Key ascending).
func GroupBy(records []Record, key func(Record) string) []Group {
	groups := []Group{}
	heaviest := []Record{} // heaviest[i] gives groups[i] its Stack
	index := make(map[string]int)
	for _, r := range records {
		k := key(r)
		i, ok := index[k]
		if !ok {
			index[k] = len(groups)
			groups = append(groups, Group{
				Key: k, Type: r.Type, Caller: r.Caller, Name: r.Name, Lock: r.Lock, Comm: r.Comm,
				Count: r.Count, TotalNS: r.TotalNS, MaxNS: r.MaxNS, MinNS: r.MinNS, InProgress: r.InProgress,
				HoldCount: r.HoldCount, HoldTotalNS: r.HoldTotalNS, HoldMinNS: r.HoldMinNS, HoldMaxNS: r.HoldMaxNS,
				Records: 1,
			})
			heaviest = append(heaviest, r)
			continue
		}
		g := &groups[i]
		g.Type = shared(g.Type, r.Type)
		g.Caller = shared(g.Caller, r.Caller)
		g.Name = shared(g.Name, r.Name)
		g.Lock = shared(g.Lock, r.Lock)
		g.Comm = shared(g.Comm, r.Comm)
		g.Count += r.Count
		g.TotalNS += r.TotalNS
		g.MaxNS = max(g.MaxNS, r.MaxNS)
		// A record without waits has no minimum wait to contribute.
		switch {
		case g.Count == r.Count: // the group had no waits before this record
			g.MinNS = r.MinNS
		case r.Count > 0:
			g.MinNS = min(g.MinNS, r.MinNS)
		}
		g.InProgress += r.InProgress
		g.HoldCount += r.HoldCount
		switch {
		case g.HoldCount == r.HoldCount:
			g.HoldMinNS = r.HoldMinNS
		case r.HoldCount > 0:
			g.HoldMinNS = min(g.HoldMinNS, r.HoldMinNS)
		}
		g.HoldTotalNS += r.HoldTotalNS
		g.HoldMaxNS = max(g.HoldMaxNS, r.HoldMaxNS)
		g.Records++
		if compareRecords(r, heaviest[i]) < 0 {
			heaviest[i] = r
		}
	}
	for i := range groups {
		groups[i].Stack = append([]string{}, heaviest[i].Stack...)
	}
	slices.SortFunc(groups, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.TotalNS, a.TotalNS), cmp.Compare(b.Count, a.Count), strings.Compare(a.Key, b.Key))
	})
	return groups
}

// shared returns the value two records agree on, or the zero value.
func shared[T comparable](a, b T) T {
	if a != b {
		var zero T
		return zero
	}
	return a
}

// Group keys start with the lock type, which has no spaces, and end with the free-form caller, so two
// different field combinations cannot produce the same key.

// ByCaller groups by type and caller (perf lock contention's default view).
func ByCaller(r Record) string { return r.Type + " " + r.Caller }

// ByLock groups by type and lock address.
func ByLock(r Record) string { return r.Type + " " + r.Lock.String() }

// ByThread keeps every record apart: type, lock, pid, tid and caller.
func ByThread(r Record) string {
	return fmt.Sprintf("%s %s %d %d %s", r.Type, r.Lock, r.PID, r.TID, r.Caller)
}

// ByTask groups by process and thread, whatever the lock, type and caller (perf lock contention -t).
// Its keys are "PID TID": they do not start with a type, as they are only compared with each other.
func ByTask(r Record) string { return fmt.Sprintf("%d %d", r.PID, r.TID) }
