package capture

import (
	"reflect"
	"slices"
	"testing"
)

func TestGroupByCaller(t *testing.T) {
	records := []Record{
		{Type: "spinlock", Lock: 0x10, Name: "a", Comm: "x", PID: 1, TID: 1, Count: 2, TotalNS: 300, MinNS: 100, MaxNS: 200, Caller: "f+0x1", Stack: []string{"light"}},
		{Type: "mutex", Lock: 0x20, Name: "m", Comm: "y", PID: 2, TID: 2, Count: 1, TotalNS: 1000, MinNS: 1000, MaxNS: 1000, InProgress: 1, Caller: "g+0x2", Stack: []string{"g"}},
		{Type: "spinlock", Lock: 0x11, Name: "b", Comm: "x", PID: 1, TID: 3, Count: 3, TotalNS: 900, MinNS: 50, MaxNS: 600, InProgress: 1, Caller: "f+0x1", Stack: []string{"heavy", "f+0x1"}},
		// Same caller, other type: a group of its own.
		{Type: "rwsem", Lock: 0x10, Name: "a", Comm: "x", PID: 1, TID: 1, Count: 5, TotalNS: 500, MinNS: 100, MaxNS: 100, Caller: "f+0x1"},
		// Ties with the rwsem group on TotalNS but has fewer waits.
		{Type: "spinlock", Lock: 0x30, Comm: "z", PID: 4, TID: 4, Count: 1, TotalNS: 500, MinNS: 500, MaxNS: 500, Caller: ""},
	}
	groups := GroupBy(records, ByCaller)

	wantKeys := []string{"spinlock f+0x1", "mutex g+0x2", "rwsem f+0x1", "spinlock "}
	var keys []string
	for _, g := range groups {
		keys = append(keys, g.Key)
	}
	if !slices.Equal(keys, wantKeys) {
		t.Fatalf("group keys %q, want %q", keys, wantKeys)
	}

	got := groups[0]
	a, b := records[0], records[2]
	want := Group{
		Key: "spinlock f+0x1", Type: "spinlock", Caller: "f+0x1", Comm: "x", // Name and Lock differ: left empty
		Count: a.Count + b.Count, TotalNS: a.TotalNS + b.TotalNS, MaxNS: max(a.MaxNS, b.MaxNS), MinNS: min(a.MinNS, b.MinNS),
		InProgress: a.InProgress + b.InProgress, Records: 2, Stack: b.Stack,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged group\n got %+v\nwant %+v", got, want)
	}
	if got.MeanNS() != float64(want.TotalNS)/float64(want.Count) {
		t.Errorf("MeanNS = %v", got.MeanNS())
	}
	if groups[2].Stack == nil {
		t.Error("group of a record without stack has a nil Stack")
	}
}

func TestGroupByTiesByKey(t *testing.T) {
	records := []Record{
		{Type: "spinlock", Caller: "b", Count: 1, TotalNS: 10, MinNS: 10, MaxNS: 10},
		{Type: "spinlock", Caller: "a", Count: 1, TotalNS: 10, MinNS: 10, MaxNS: 10},
	}
	groups := GroupBy(records, ByCaller)
	if groups[0].Caller != "a" || groups[1].Caller != "b" {
		t.Errorf("equal groups not ordered by key: %q, %q", groups[0].Key, groups[1].Key)
	}
}

func TestGroupByLockAndThread(t *testing.T) {
	records := []Record{
		{Type: "spinlock", Lock: 0x10, Name: "l", PID: 1, TID: 1, Count: 1, TotalNS: 1, MinNS: 1, MaxNS: 1, Caller: "f"},
		{Type: "spinlock", Lock: 0x10, Name: "l", PID: 1, TID: 2, Count: 1, TotalNS: 2, MinNS: 2, MaxNS: 2, Caller: "g"},
		{Type: "spinlock", Lock: 0x20, PID: 1, TID: 1, Count: 1, TotalNS: 3, MinNS: 3, MaxNS: 3, Caller: "f"},
	}
	byLock := GroupBy(records, ByLock)
	if len(byLock) != 2 || byLock[0].Lock != 0x10 || byLock[0].Records != 2 || byLock[0].Name != "l" || byLock[0].Caller != "" {
		t.Errorf("ByLock groups: %+v", byLock)
	}
	if byThread := GroupBy(records, ByThread); len(byThread) != len(records) {
		t.Errorf("ByThread merged distinct records: %d groups of %d records", len(byThread), len(records))
	}
	if len(GroupBy(nil, ByCaller)) != 0 {
		t.Error("groups of no records")
	}
}

func TestSort(t *testing.T) {
	records := []Record{
		{Type: "spinlock", Caller: "b", Lock: 2, TotalNS: 5},
		{Type: "mutex", Caller: "z", TotalNS: 5},
		{Type: "spinlock", Caller: "a", Lock: 2, TotalNS: 5, PID: 1, TID: 2},
		{Type: "spinlock", Caller: "a", Lock: 2, TotalNS: 5, PID: 1, TID: 1},
		{Type: "spinlock", Caller: "a", Lock: 1, TotalNS: 5, PID: 9},
		{Type: "spinlock", Caller: "c", TotalNS: 50},
	}
	want := []Record{records[5], records[1], records[4], records[3], records[2], records[0]}
	c := Capture{Records: records}
	c.Sort()
	if !reflect.DeepEqual(c.Records, want) {
		t.Errorf("sorted\n got %+v\nwant %+v", c.Records, want)
	}
}

func TestGroupByHolds(t *testing.T) {
	records := []Record{
		// Holds only: an acquire that never waited.
		{Type: "mutex", Caller: "f", HoldCount: 3, HoldTotalNS: 600, HoldMinNS: 50, HoldMaxNS: 400},
		{Type: "mutex", Caller: "f", Count: 2, TotalNS: 90, MinNS: 40, MaxNS: 50, HoldCount: 1, HoldTotalNS: 1000, HoldMinNS: 1000, HoldMaxNS: 1000},
		{Type: "mutex", Caller: "f", Count: 1, TotalNS: 70, MinNS: 70, MaxNS: 70},
	}
	groups := GroupBy(records, ByCaller)
	if len(groups) != 1 {
		t.Fatalf("%d groups, want 1", len(groups))
	}
	g := groups[0]
	if g.Count != 3 || g.TotalNS != 160 || g.MinNS != 40 || g.MaxNS != 70 {
		t.Errorf("waits: count %d total %d min %d max %d, want 3, 160, 40 (a record without waits has no minimum), 70", g.Count, g.TotalNS, g.MinNS, g.MaxNS)
	}
	if g.HoldCount != 4 || g.HoldTotalNS != 1600 || g.HoldMinNS != 50 || g.HoldMaxNS != 1000 || g.HoldMeanNS() != 400 {
		t.Errorf("holds: count %d total %d min %d max %d mean %v, want 4, 1600, 50, 1000, 400", g.HoldCount, g.HoldTotalNS, g.HoldMinNS, g.HoldMaxNS, g.HoldMeanNS())
	}
}
