package capture

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"
)

func TestMetaInCommand(t *testing.T) {
	m := Meta{Scope: ScopeSystem, CommandPIDs: []uint32{3, 40, 41, 900}}
	for pid, want := range map[uint32]bool{3: true, 41: true, 900: true, 1: false, 42: false, 901: false} {
		if got := m.InCommand(pid); got != want {
			t.Errorf("InCommand(%d) = %v, want %v", pid, got, want)
		}
	}
	if (Meta{}).InCommand(3) {
		t.Error("a capture without a workload holds a command's process")
	}
}

// A capture whose programs were measured in windows divides their run time by the windows' time,
// or scales it by the events counted in them where it gives those, and one that does not say
// (older captures) by its duration; the cost per event is the run time per measured run either
// way.
func TestProbeCPUShareOverTheMeasuredTime(t *testing.T) {
	whole := Meta{
		CPUs: 2, DurationNS: 4_000_000_000,
		Events: Events{Begin: 50_000},
		Programs: []ProgramStats{
			{Name: "begin", RunCount: 5000, RunTimeNS: 3_000_000, Begins: true},
			{Name: "end", RunCount: 5000, RunTimeNS: 1_000_000},
		},
	}
	sampled := whole
	sampled.ProgramsMeasuredNS = 400_000_000
	for _, c := range []struct {
		name      string
		m         Meta
		share     float64
		measured  time.Duration
		isSampled bool
	}{
		{"whole duration", whole, 4e6 / (4e9 * 2), 4 * time.Second, false},
		{"sampled windows", sampled, 4e6 / (4e8 * 2), 400 * time.Millisecond, true},
	} {
		if got := c.m.ProbeCPUShare(); got != c.share {
			t.Errorf("%s: ProbeCPUShare() = %v, want %v", c.name, got, c.share)
		}
		if got := c.m.ProgramsMeasured(); got != c.measured {
			t.Errorf("%s: ProgramsMeasured() = %v, want %v", c.name, got, c.measured)
		}
		if got := c.m.ProgramsSampled(); got != c.isSampled {
			t.Errorf("%s: ProgramsSampled() = %v, want %v", c.name, got, c.isSampled)
		}
		if got := c.m.ProbeNSPerEvent(); got != 800 {
			t.Errorf("%s: ProbeNSPerEvent() = %v, want 4 ms over the 5000 measured runs", c.name, got)
		}
	}
	// The windows held 20% of the events in 10% of the time: the lock events' programs' run time
	// is scaled to the capture by events, the bookkeeping programs' by time.
	byEvents := sampled
	byEvents.ProgramsEvents, byEvents.ProgramsMeasuredEvents = 100_000, 20_000
	byEvents.Programs = append(slices.Clone(sampled.Programs), ProgramStats{Name: "switch", Hook: "sched_switch", RunCount: 900, RunTimeNS: 400_000})
	if got, want := byEvents.ProbeCPUShare(), (4e6*5/4e9+4e5/4e8)/2; math.Abs(got-want) > want*1e-12 {
		t.Errorf("sampled, scaled by events: ProbeCPUShare() = %v, want %v", got, want)
	}
	// Another holder kept the statistics on throughout: measured for the whole duration.
	held := whole
	held.ProgramsMeasuredNS = held.DurationNS
	if held.ProgramsSampled() || held.ProbeCPUShare() != whole.ProbeCPUShare() {
		t.Errorf("measured for the whole duration: sampled %v, share %v, want %v", held.ProgramsSampled(), held.ProbeCPUShare(), whole.ProbeCPUShare())
	}
	b, err := json.Marshal(whole)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("programs_measured_ns")) {
		t.Errorf("a capture without a measured time writes one: %s", b)
	}
}

// The events a cost is spread over are the measured runs of the begin programs: none in a
// sampled capture whose windows saw no event, Events.Begin only where no program is marked.
func TestProbeEventsMeasured(t *testing.T) {
	unmarked := Meta{Events: Events{Begin: 70}, Programs: []ProgramStats{{Name: "begin", RunTimeNS: 100}}}
	if got := unmarked.ProbeEventsMeasured(); got != 70 {
		t.Errorf("without a begin program marked: %d events measured, want Events.Begin 70", got)
	}
	noRuns := Meta{Events: Events{Begin: 70}, ProgramsMeasuredNS: 1e8, DurationNS: 1e9,
		Programs: []ProgramStats{{Name: "begin", Begins: true}, {Name: "free", RunCount: 3, RunTimeNS: 900, Hook: "sched_process_free"}}}
	if got, cost := noRuns.ProbeEventsMeasured(), noRuns.ProbeNSPerEventWithHooks(); got != 0 || cost != 0 {
		t.Errorf("no begin run in the windows: %d events measured, %v ns/event, want 0 and 0", got, cost)
	}
}
