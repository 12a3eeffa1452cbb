package capture

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Group is an aggregate of records sharing a key.
//
// Type, Caller, Name, Lock, Comm and the cgroup hold the value all merged records share, or the zero
// value where they differ, which Mixed says (a ByCaller group spanning several locks has no single Lock; the locks
// may still share a Name, as the mmap_lock of two processes do).
type Group struct {
	Key        string `json:"key"`
	Type       string `json:"type"`
	Caller     string `json:"caller"`
	Name       string `json:"name"`
	Lock       Addr   `json:"lock"`
	Comm       string `json:"comm"`
	CgroupID   uint64 `json:"cgroup_id"`
	Cgroup     string `json:"cgroup"`
	Mixed      Fields `json:"mixed"` // the fields the merged records differ in
	Count      uint64 `json:"count"`
	TotalNS    uint64 `json:"total_ns"`
	SpinNS     uint64 `json:"spin_ns"` // part of TotalNS spent spinning
	MaxNS      uint64 `json:"max_ns"`
	MinNS      uint64 `json:"min_ns"`
	InProgress uint64 `json:"in_progress"`
	// Hold times, summed like the waits; zero unless a function-probe backend timed holds.
	HoldCount   uint64 `json:"hold_count,omitempty"`
	HoldTotalNS uint64 `json:"hold_total_ns,omitempty"`
	HoldMinNS   uint64 `json:"hold_min_ns,omitempty"`
	HoldMaxNS   uint64 `json:"hold_max_ns,omitempty"`
	// Saturated is set when a sum (Count, TotalNS, SpinNS, InProgress, HoldCount, HoldTotalNS) exceeded what
	// a uint64 holds and stopped at math.MaxUint64: only a corrupt or forged capture gets there, and
	// a wrapped sum would show a small, plausible and wrong number instead.
	Saturated bool     `json:"saturated,omitempty"`
	Records   int      `json:"records"`  // how many records merged
	Heaviest  int      `json:"heaviest"` // index of the record with the largest TotalNS, by the order of Sort
	Stack     []string `json:"stack"`    // that record's stack (shared with it, not copied); never nil
}

// Fields is a set of a record's identifying fields.
type Fields uint8

// The fields of Fields.
const (
	FieldType Fields = 1 << iota
	FieldLock
	FieldName
	FieldComm
	FieldCaller
	FieldCgroup // the cgroup id, and with it the path
)

// Has reports whether f holds every field of g.
func (f Fields) Has(g Fields) bool { return f&g == g }

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
	index := make(map[string]int)
	for ri, r := range records {
		k := key(r)
		i, ok := index[k]
		if !ok {
			index[k] = len(groups)
			groups = append(groups, Group{
				Key: k, Type: r.Type, Caller: r.Caller, Name: r.Name, Lock: r.Lock, Comm: r.Comm, CgroupID: r.CgroupID, Cgroup: r.Cgroup,
				Count: r.Count, TotalNS: r.TotalNS, SpinNS: r.SpinNS, MaxNS: r.MaxNS, MinNS: r.MinNS, InProgress: r.InProgress,
				HoldCount: r.HoldCount, HoldTotalNS: r.HoldTotalNS, HoldMinNS: r.HoldMinNS, HoldMaxNS: r.HoldMaxNS,
				Records: 1, Heaviest: ri,
			})
			continue
		}
		g := &groups[i]
		g.Type = g.shared(FieldType, g.Type, r.Type)
		g.Caller = g.shared(FieldCaller, g.Caller, r.Caller)
		g.Name = g.shared(FieldName, g.Name, r.Name)
		g.Comm = g.shared(FieldComm, g.Comm, r.Comm)
		if g.Lock != r.Lock || g.Mixed.Has(FieldLock) {
			g.Lock, g.Mixed = 0, g.Mixed|FieldLock
		}
		if g.CgroupID != r.CgroupID || g.Mixed.Has(FieldCgroup) {
			g.CgroupID, g.Cgroup, g.Mixed = 0, "", g.Mixed|FieldCgroup
		}
		hadWaits, hadHolds := g.Count > 0, g.HoldCount > 0
		g.Count = g.add(g.Count, r.Count)
		g.TotalNS = g.add(g.TotalNS, r.TotalNS)
		g.SpinNS = g.add(g.SpinNS, r.SpinNS)
		g.MaxNS = max(g.MaxNS, r.MaxNS)
		// A record without waits has no minimum wait to contribute.
		switch {
		case !hadWaits:
			g.MinNS = r.MinNS
		case r.Count > 0:
			g.MinNS = min(g.MinNS, r.MinNS)
		}
		g.InProgress = g.add(g.InProgress, r.InProgress)
		g.HoldCount = g.add(g.HoldCount, r.HoldCount)
		switch {
		case !hadHolds:
			g.HoldMinNS = r.HoldMinNS
		case r.HoldCount > 0:
			g.HoldMinNS = min(g.HoldMinNS, r.HoldMinNS)
		}
		g.HoldTotalNS = g.add(g.HoldTotalNS, r.HoldTotalNS)
		g.HoldMaxNS = max(g.HoldMaxNS, r.HoldMaxNS)
		g.Records++
		if compareRecords(&r, &records[g.Heaviest]) < 0 {
			g.Heaviest = ri
		}
	}
	for i := range groups {
		groups[i].Stack = nonNil(records[groups[i].Heaviest].Stack)
	}
	slices.SortFunc(groups, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.TotalNS, a.TotalNS), cmp.Compare(b.Count, a.Count), strings.Compare(a.Key, b.Key))
	})
	return groups
}

// shared returns the value the group's records agree on so far, or "" once one differs, which it
// records in Mixed.
func (g *Group) shared(f Fields, have, next string) string {
	if have != next || g.Mixed.Has(f) {
		g.Mixed |= f
		return ""
	}
	return have
}

// add is a + b, or math.MaxUint64 with Saturated set where that does not fit.
func (g *Group) add(a, b uint64) uint64 {
	sum, saturated := AddSaturating(a, b)
	g.Saturated = g.Saturated || saturated
	return sum
}

// AddSaturating is a + b, or math.MaxUint64 and true where that does not fit.
func AddSaturating(a, b uint64) (uint64, bool) {
	if a > math.MaxUint64-b {
		return math.MaxUint64, true
	}
	return a + b, false
}

// Totals are the sums of a capture's waits.
type Totals struct {
	Count, TotalNS uint64
	// Saturated is set when a sum exceeded what a uint64 holds and stopped at math.MaxUint64, as
	// Group.Saturated.
	Saturated bool
}

// Totals sums the waits of all records.
func (c *Capture) Totals() Totals { return TotalsOf(c.Records) }

// TotalsOf sums the waits of records, saturating: the one sum of the waits every output shows.
func TotalsOf(records []Record) Totals {
	var t Totals
	for _, r := range records {
		var count, total bool
		t.Count, count = AddSaturating(t.Count, r.Count)
		t.TotalNS, total = AddSaturating(t.TotalNS, r.TotalNS)
		t.Saturated = t.Saturated || count || total
	}
	return t
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

// ByCgroup groups by the waiter's cgroup id, whatever the lock, type, thread and caller (perf lock
// contention --lock-cgroup). Its keys are the ids in decimal, only compared with each other.
func ByCgroup(r Record) string { return strconv.FormatUint(r.CgroupID, 10) }

// CgroupName is how a cgroup is shown: its path, or its id where the path is unknown (a cgroup that
// came and went during the capture), or "unknown" in captures taken before klockstat knew cgroups.
func CgroupName(id uint64, path string) string {
	switch {
	case path != "":
		return path
	case id == 0:
		return "unknown"
	}
	return fmt.Sprintf("cgroup id %d", id)
}

// ByTask groups by process and thread, whatever the lock, type and caller (perf lock contention -t).
// Its keys are "PID TID": they do not start with a type, as they are only compared with each other.
func ByTask(r Record) string { return fmt.Sprintf("%d %d", r.PID, r.TID) }
