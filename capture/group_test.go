package capture

import (
	"math"
	"reflect"
	"slices"
	"testing"
)

func TestGroupByCaller(t *testing.T) {
	records := []Record{
		{Type: "spinlock", Lock: 0x10, Name: "a", Comm: "x", PID: 1, TID: 1, Count: 2, TotalNS: 300, SpinNS: 300, MinNS: 100, MaxNS: 200, Caller: "f+0x1", Stack: []string{"light"}},
		{Type: "mutex", Lock: 0x20, Name: "m", Comm: "y", PID: 2, TID: 2, Count: 1, TotalNS: 1000, MinNS: 1000, MaxNS: 1000, InProgress: 1, Caller: "g+0x2", Stack: []string{"g"}},
		{Type: "spinlock", Lock: 0x11, Name: "b", Comm: "x", PID: 1, TID: 3, Count: 3, TotalNS: 900, SpinNS: 700, MinNS: 50, MaxNS: 600, InProgress: 1, Caller: "f+0x1", Stack: []string{"heavy", "f+0x1"}},
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
		Mixed: FieldLock | FieldName,
		Count: a.Count + b.Count, TotalNS: a.TotalNS + b.TotalNS, SpinNS: a.SpinNS + b.SpinNS, MaxNS: max(a.MaxNS, b.MaxNS), MinNS: min(a.MinNS, b.MinNS),
		InProgress: a.InProgress + b.InProgress, Records: 2, Heaviest: 2, Stack: b.Stack,
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

// Different locks that share a name, as the mmap_lock of two processes do, merge into a group that
// keeps the name and says that the locks differ.
func TestGroupByMixedLocksSharingAName(t *testing.T) {
	records := []Record{
		{Type: "rwsem:W", Lock: 0x10, Name: "mmap_lock", Comm: "a", Count: 1, TotalNS: 5, MinNS: 5, MaxNS: 5, Caller: "vm_mmap_pgoff+0xe0"},
		{Type: "rwsem:W", Lock: 0x20, Name: "mmap_lock", Comm: "b", Count: 1, TotalNS: 7, MinNS: 7, MaxNS: 7, Caller: "vm_mmap_pgoff+0xe0"},
		{Type: "rwsem:W", Lock: 0x10, Name: "mmap_lock", Comm: "a", Count: 1, TotalNS: 1, MinNS: 1, MaxNS: 1, Caller: "vm_mmap_pgoff+0xe0"},
	}
	groups := GroupBy(records, ByCaller)
	if len(groups) != 1 {
		t.Fatalf("%d groups, want 1", len(groups))
	}
	g := groups[0]
	if g.Name != "mmap_lock" || g.Lock != 0 || g.Mixed != FieldLock|FieldComm || g.Heaviest != 1 {
		t.Errorf("name %q lock %v mixed %b heaviest %d, want mmap_lock, 0x0, lock and comm, 1", g.Name, g.Lock, g.Mixed, g.Heaviest)
	}
	// A third record equal to the first does not undo what the second made mixed.
	if byLock := GroupBy(records, ByLock); len(byLock) != 2 || byLock[1].Mixed != 0 || byLock[1].Lock != 0x10 {
		t.Errorf("ByLock groups %+v, want two, 0x10 with nothing mixed", byLock)
	}
}

// Sums that do not fit a uint64 stop at its maximum and say so, instead of wrapping around to a
// small and plausible number.
func TestGroupBySaturates(t *testing.T) {
	huge := Record{Type: "mutex", Caller: "f", Count: math.MaxUint64, TotalNS: math.MaxUint64 - 1, MinNS: 1, MaxNS: 1, HoldCount: 1}
	small := Record{Type: "mutex", Caller: "f", Count: 1970, TotalNS: 3, MinNS: 1, MaxNS: 2, HoldCount: 2}
	g := GroupBy([]Record{huge, small}, ByCaller)[0]
	if !g.Saturated || g.Count != math.MaxUint64 || g.TotalNS != math.MaxUint64 || g.HoldCount != 3 {
		t.Errorf("saturated %v count %d total %d holds %d, want true, MaxUint64, MaxUint64, 3", g.Saturated, g.Count, g.TotalNS, g.HoldCount)
	}
	if g := GroupBy([]Record{small, small}, ByCaller)[0]; g.Saturated || g.Count != 2*1970 {
		t.Errorf("sums that fit: saturated %v count %d", g.Saturated, g.Count)
	}
}
