package collector

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
)

// coverageOf accounts for readings, the first turning the statistics on; on and off take them
// at milliseconds from coverageStart.
func coverageOf(readings ...statsReading) statsCoverage {
	c := statsCoverage{last: readings[0]}
	for _, r := range readings[1:] {
		c.add(r)
	}
	return c
}

var coverageStart = time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)

func on(ms int) statsReading {
	return statsReading{at: coverageStart.Add(time.Duration(ms) * time.Millisecond), on: true}
}
func off(ms int, runs uint64) statsReading {
	return statsReading{at: coverageStart.Add(time.Duration(ms) * time.Millisecond), runs: runs}
}

// The statistics count for the windows we held them on, unless our programs' runs grew while we
// held them off: another holder then kept them on, and they count for the whole capture.
func TestStatsCoverage(t *testing.T) {
	const capture = 2500 * time.Millisecond
	tests := []struct {
		name     string
		readings []statsReading
		want     time.Duration
	}{{
		name: "our windows only",
		// On at 0, off at 100 (the runs read after it), read again as it goes on at 1000, ...
		readings: []statsReading{on(0), off(100, 500), off(1000, 500), on(1000), off(1100, 900), off(2000, 900), on(2000), off(2100, 1300), off(2500, 1300)},
		want:     300 * time.Millisecond,
	}, {
		name: "stopped inside a window",
		// Stop turns them off at 2050 and reads no more.
		readings: []statsReading{on(0), off(100, 500), off(1000, 500), on(1000), off(1100, 900), off(2000, 900), on(2000), off(2050, 0)},
		want:     250 * time.Millisecond,
	}, {
		name:     "another holder",
		readings: []statsReading{on(0), off(100, 500), off(1000, 4200), on(1000), off(1100, 4600), off(2000, 8000), on(2000), off(2100, 8400), off(2500, 10_000)},
		want:     capture,
	}, {
		name: "another holder in the last period only",
		// Turned on after our last window: seen as the capture stops.
		readings: []statsReading{on(0), off(100, 500), off(1000, 500), on(1000), off(1100, 900), off(2000, 900), on(2000), off(2100, 1300), off(2500, 1700)},
		want:     capture,
	}, {
		name:     "a capture shorter than its window",
		readings: []statsReading{on(0), off(60, 0)},
		want:     60 * time.Millisecond,
	}}
	for _, tt := range tests {
		if got := coverageOf(tt.readings...).measured(capture); got != tt.want {
			t.Errorf("%s: measured %v of %v, want %v", tt.name, got, capture, tt.want)
		}
	}
}

// A round of Rounds is measured for the windows, or parts of windows, that fell in it, and
// for all of it only when another holder's statistics counted our runs during it.
func TestStatsCoverageOfRounds(t *testing.T) {
	// Rounds read the coverage as they begin and end, at 1050 and 2050, inside windows.
	ours := []statsReading{on(0), off(100, 500), off(1000, 500), on(1000), on(1050), off(1100, 900), off(2000, 900), on(2000), on(2050)}
	base, now := coverageOf(ours[:5]...), coverageOf(ours...)
	if got := now.since(base).measured(time.Second); got != 100*time.Millisecond {
		t.Errorf("a round from 1050 to 2050: measured %v, want the 50 ms left of one window and the 50 ms of the next", got)
	}
	// Another holder before the round, none during it.
	before := []statsReading{on(0), off(100, 500), off(1000, 3000), on(1000), on(1050), off(1100, 3400), off(2000, 3400), on(2000), on(2050)}
	base, now = coverageOf(before[:5]...), coverageOf(before...)
	if got := now.since(base).measured(time.Second); got != 100*time.Millisecond {
		t.Errorf("a round after another holder's statistics: measured %v, want 100 ms", got)
	}
	// Another holder during the round.
	during := []statsReading{on(0), off(100, 500), off(1000, 500), on(1000), on(1050), off(1100, 900), off(2000, 2000), on(2000), on(2050)}
	base, now = coverageOf(during[:5]...), coverageOf(during...)
	if got := now.since(base).measured(time.Second); got != time.Second {
		t.Errorf("a round during another holder's statistics: measured %v, want all of it", got)
	}
	c := cumulative{stats: now}
	if got := c.since(cumulative{stats: base}).stats; got != now.since(base) {
		t.Errorf("cumulative since: statistics coverage %+v, want %+v", got, now.since(base))
	}
}

// The capture says how long its programs' statistics counted; with run time not measured, no
// time either.
func TestAssembleProgramsMeasured(t *testing.T) {
	for _, off := range []bool{false, true} {
		f := newAssembleFixture(t, assembleKallsyms)
		f.in.runTimeOff = off
		f.in.programsMeasured = 200 * time.Millisecond
		f.snap.programs = []capture.ProgramStats{{Name: "btf_contention_begin", Begins: true, RunCount: 30, RunTimeNS: 9000}}
		m := f.assemble(t).Meta
		if want := map[bool]int64{false: 2e8, true: 0}[off]; m.ProgramsMeasuredNS != want {
			t.Errorf("run time off %v: programs measured for %d ns, want %d", off, m.ProgramsMeasuredNS, want)
		}
	}
}

// captureContention captures about 2.5 s of mmap_lock contention of examples/contend.
func captureContention(t *testing.T) *capture.Capture {
	t.Helper()
	testenv.Build(t, "./examples/contend") // before the capture, which then has contention throughout
	return capture1(t, defaultConfig(t), func() {
		waitContend(t, startContend(t, "-lock", "mmap", "-threads", "4", "-duration", "2500ms"))
	})
}

// beginRuns are the measured runs of the programs that run once per event.
func beginRuns(m capture.Meta) uint64 {
	var runs uint64
	for _, p := range m.Programs {
		if p.Begins {
			runs += p.RunCount
		}
	}
	return runs
}

// TestRunStatsSampled captures real contention: the programs' statistics count in windows of the
// capture only, a sample of its events, over which the cost per event is still given.
func TestRunStatsSampled(t *testing.T) {
	testenv.RequireRoot(t)
	cp := captureContention(t)
	m := cp.Meta
	m.CPUs = runtime.NumCPU() // the caller's to fill, as the host's
	runs, share := beginRuns(m), float64(m.ProgramsMeasuredNS)/float64(m.DurationNS)
	t.Logf("measured %v of %v (%.0f%%); %d begin runs of %d events; %.0f ns/event, %.3f%% CPU",
		m.ProgramsMeasured(), m.Duration(), 100*share, runs, m.Events.Begin, m.ProbeNSPerEvent(), 100*m.ProbeCPUShare())
	if m.ProgramsMeasuredNS == m.DurationNS {
		t.Fatal("the statistics counted for the whole capture: another process held BPF run-time statistics on (a bench, or sysctl kernel.bpf_stats_enabled=1)")
	}
	if share < 0.05 || share > 0.4 {
		t.Errorf("programs measured for %v of %v, want 5%% to 40%%", m.ProgramsMeasured(), m.Duration())
	}
	if !m.ProgramsSampled() {
		t.Errorf("a capture measured for %v of %v is not sampled", m.ProgramsMeasured(), m.Duration())
	}
	if runs == 0 || runs > m.Events.Begin/2 {
		t.Errorf("%d begin runs measured of %d events, want a sample: more than none, under half", runs, m.Events.Begin)
	}
	if m.ProbeNSPerEvent() <= 0 || m.ProbeCPUShare() <= 0 {
		t.Errorf("probe cost %v ns/event, %v of the CPU: not measured (%+v)", m.ProbeNSPerEvent(), m.ProbeCPUShare(), m.Programs)
	}
}

// TestRunStatsHeldByAnother holds the statistics on through a capture, as the bench does: they
// then count for the whole capture, every event's run.
func TestRunStatsHeldByAnother(t *testing.T) {
	testenv.RequireRoot(t)
	held, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		t.Fatalf("enabling BPF run-time statistics: %v", err)
	}
	defer held.Close()
	cp := captureContention(t)
	m := cp.Meta
	runs := beginRuns(m)
	t.Logf("measured %v of %v; %d begin runs of %d events; %.0f ns/event", m.ProgramsMeasured(), m.Duration(), runs, m.Events.Begin, m.ProbeNSPerEvent())
	if m.ProgramsMeasuredNS != m.DurationNS || m.ProgramsSampled() {
		t.Errorf("programs measured for %d ns of %d, want all of it", m.ProgramsMeasuredNS, m.DurationNS)
	}
	if runs < m.Events.Begin || m.Events.Begin == 0 {
		t.Errorf("%d begin runs measured of %d events, want every event's", runs, m.Events.Begin)
	}
	if m.ProbeNSPerEvent() <= 0 {
		t.Errorf("probe cost not measured: %+v", m.Programs)
	}
}

// TestRunStatsWindows: a collector holds the statistics' descriptor in the first window of each
// second of its capture, not between, and none once stopped or closed, whether it stopped inside a
// window or not.
func TestRunStatsWindows(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tt := range []struct {
		after time.Duration
		held  int
	}{{20 * time.Millisecond, 1}, {400 * time.Millisecond, 0}, {1030 * time.Millisecond, 1}} {
		c, err := Start(defaultConfig(t))
		if err != nil {
			t.Fatalf("starting the collector: %v", err)
		}
		time.Sleep(time.Until(c.start.Add(tt.after)))
		if got := statsDescriptors(t); got != tt.held {
			t.Errorf("%v into the capture: %d descriptors of BPF statistics open, want %d", tt.after, got, tt.held)
		}
		if _, err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		if got := statsDescriptors(t); got != 0 {
			t.Errorf("stopped %v into the capture: %d descriptors of BPF statistics still open", tt.after, got)
		}
		c.Close()
	}
	// Closed without a stop, as on an error.
	c, err := Start(defaultConfig(t))
	if err != nil {
		t.Fatalf("starting the collector: %v", err)
	}
	c.Close()
	if got := statsDescriptors(t); got != 0 {
		t.Errorf("closed in a window: %d descriptors of BPF statistics still open", got)
	}
}

// statsDescriptors counts this process's descriptors from BPF_ENABLE_STATS.
func statsDescriptors(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, _ := os.Readlink("/proc/self/fd/" + fd.Name()); target == "anon_inode:bpf-stats" {
			n++
		}
	}
	return n
}
