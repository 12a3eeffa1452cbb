package collector

import (
	"reflect"
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
)

// Rounds cut a running capture while waits keep ending: every round must be
// a valid capture whose histograms hold at least the waits of its records
// (a wait ending at a round's boundary may be in its histogram and dropped
// from its records, never the reverse).
func TestRoundsKeepHistogramsWithTheirRecords(t *testing.T) {
	testenv.RequireRoot(t)
	c, err := Start(defaultConfig(t))
	if err != nil {
		t.Fatalf("starting the collector: %v", err)
	}
	defer c.Close()
	rounds, err := c.Rounds()
	if err != nil {
		t.Fatal(err)
	}
	// Under emulation one CPU runs at a time, and the 6.1 PREEMPT_RT guest once saw no wait of
	// contend in any round of a run: a run without one is made again, up to three.
	var waits uint64
	for run := 1; run <= 3 && waits == 0; run++ {
		waits = roundsOfContend(t, rounds)
	}
	if waits == 0 {
		t.Fatal("no waits in any round of three runs of contend")
	}
	t.Logf("%d waits in the rounds", waits)
}

// roundsOfContend cuts rounds while contend contends mmap_lock, checking each as
// TestRoundsKeepHistogramsWithTheirRecords says, and returns the waits its records hold.
func roundsOfContend(t *testing.T, rounds *Rounds) uint64 {
	t.Helper()
	cmd := startContend(t, "-lock", "mmap", "-threads", "4", "-duration", "4s")
	var waits uint64
	for i := 0; i < 100 && cmd.ProcessState == nil; i++ {
		if err := rounds.Begin(); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		time.Sleep(10 * time.Millisecond)
		cp, err := rounds.End()
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if err := cp.Validate(); err != nil {
			t.Fatalf("round %d does not validate: %v", i, err)
		}
		inRecords := map[string]uint64{}
		for _, r := range cp.Records {
			inRecords[r.Type] += r.Count
			waits += r.Count
		}
		for _, h := range cp.Histograms {
			if h.Count < inRecords[h.Type] {
				t.Errorf("round %d: the histogram of %s counts %d waits, its records %d", i, h.Type, h.Count, inRecords[h.Type])
			}
		}
	}
	waitContend(t, cmd)
	return waits
}

// A round's counters, histograms and run statistics are what they gained since its start; a
// tracepoint backend's missing hold histogram stays missing.
func TestCumulativeSince(t *testing.T) {
	base := cumulative{
		histogram: [][]uint64{{1, 2}, {0, 5}},
		programs:  []capture.ProgramStats{{Name: "contention_begin", RunCount: 10, RunTimeNS: 1000, RecursionMisses: 1, Begins: true}},
	}
	base.counters[lockstatCounterCNT_STACK_FAILED] = 3
	now := cumulative{
		histogram: [][]uint64{{4, 2}, {1, 9}},
		programs:  []capture.ProgramStats{{Name: "contention_begin", RunCount: 25, RunTimeNS: 4000, RecursionMisses: 1, Begins: true}},
	}
	now.counters[lockstatCounterCNT_STACK_FAILED] = 7
	got := now.since(base)
	want := cumulative{
		histogram: [][]uint64{{3, 0}, {1, 4}},
		programs:  []capture.ProgramStats{{Name: "contention_begin", RunCount: 15, RunTimeNS: 3000, Begins: true}},
	}
	want.counters[lockstatCounterCNT_STACK_FAILED] = 4
	if !reflect.DeepEqual(got, want) {
		t.Errorf("since\n got %+v\nwant %+v", got, want)
	}
}
