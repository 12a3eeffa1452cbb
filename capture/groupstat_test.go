package capture

import (
	"os"
	"slices"
	"testing"
)

// realCapture is the capture the README shows, of contend on a 2-CPU VM.
func realCapture(t *testing.T) *Capture {
	t.Helper()
	f, err := os.Open("../examples/contend-capture.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGroupStatOf(t *testing.T) {
	g := Group{Count: 4, TotalNS: 1000, MaxNS: 600, MinNS: 50}
	want := map[GroupStat]float64{
		StatContended: float64(g.Count), StatWaitTotal: float64(g.TotalNS), StatWaitMax: float64(g.MaxNS),
		StatWaitMin: float64(g.MinNS), StatAvgWait: float64(g.TotalNS) / float64(g.Count),
	}
	for _, s := range GroupStats {
		if got := s.Of(g); got != want[s] {
			t.Errorf("%s.Of = %v, want %v", s, got, want[s])
		}
	}
}

// TestSortGroups sorts the real capture's groups by every stat: largest first, and ties in the
// order GroupBy gives.
func TestSortGroups(t *testing.T) {
	records := realCapture(t).Records
	for _, key := range []func(Record) string{ByCaller, ByLock, ByTask} {
		for _, s := range GroupStats {
			byTotal := GroupBy(records, key)
			groups := slices.Clone(byTotal)
			SortGroups(groups, s)
			for i := 1; i < len(groups); i++ {
				a, b := groups[i-1], groups[i]
				if s.Of(a) < s.Of(b) {
					t.Fatalf("by %s: group %d (%s = %v) before group %d (%v)", s, i-1, s, s.Of(a), i, s.Of(b))
				}
				if s.Of(a) == s.Of(b) && slices.IndexFunc(byTotal, func(g Group) bool { return g.Key == a.Key }) >
					slices.IndexFunc(byTotal, func(g Group) bool { return g.Key == b.Key }) {
					t.Errorf("by %s: tied groups %q and %q out of GroupBy's order", s, a.Key, b.Key)
				}
			}
			if len(groups) != len(byTotal) {
				t.Fatalf("by %s: %d groups of %d", s, len(groups), len(byTotal))
			}
		}
	}
}

func TestByTask(t *testing.T) {
	records := realCapture(t).Records
	threads := map[[2]uint32]uint64{}
	for _, r := range records {
		threads[[2]uint32{r.PID, r.TID}] += r.TotalNS
	}
	groups := GroupBy(records, ByTask)
	if len(groups) != len(threads) {
		t.Fatalf("%d groups for %d threads", len(groups), len(threads))
	}
	for _, g := range groups {
		var pid, tid uint32
		for _, r := range records {
			if ByTask(r) == g.Key {
				pid, tid = r.PID, r.TID
				break
			}
		}
		if g.TotalNS != threads[[2]uint32{pid, tid}] {
			t.Errorf("thread %s: total %d, its records %d", g.Key, g.TotalNS, threads[[2]uint32{pid, tid}])
		}
	}
}
