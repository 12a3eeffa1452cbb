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

// on is a reading taken as the statistics go on, of a workload steady at 10 events a millisecond.
func on(ms int) statsReading {
	return onWith(ms, 10*uint64(ms))
}

func onWith(ms int, events uint64) statsReading {
	return statsReading{at: coverageStart.Add(time.Duration(ms) * time.Millisecond), on: true, activity: activity{events: events}}
}

// off is a reading taken off, of a workload steady at 10 events a millisecond.
func off(ms int, runs uint64) statsReading {
	return offWith(ms, runs, 10*uint64(ms))
}

func offWith(ms int, runs, events uint64) statsReading {
	return offRead(ms, runs, events, runs)
}

// offRead is a reading taken off whose runs grew between its two reads of them, around its events.
func offRead(ms int, runsBefore, events, runs uint64) statsReading {
	return statsReading{at: coverageStart.Add(time.Duration(ms) * time.Millisecond), activity: activity{runsBefore: runsBefore, events: events, runs: runs}}
}

// The statistics count for the windows we held them on, and for the stretches between readings
// taken while we held them off in which our programs' runs grew all the same: another holder had
// them on then; and so do the events counted meanwhile.
func TestStatsCoverage(t *testing.T) {
	const capture = 2500 * time.Millisecond
	const events = 25_000 // in the capture, at 10 a millisecond
	tests := []struct {
		name       string
		readings   []statsReading
		want       time.Duration
		wantEvents uint64
	}{{
		name: "our windows only",
		// On at 0, off at 100 (the runs read after it), read again as it goes on at 1000, ...
		readings:   []statsReading{on(0), off(100, 500), off(1000, 500), on(1000), off(1100, 900), off(2000, 900), on(2000), off(2100, 1300), off(2500, 1300)},
		want:       300 * time.Millisecond,
		wantEvents: 3000,
	}, {
		name: "stopped inside a window",
		// Stop turns them off at 2050 and reads no more.
		readings:   []statsReading{on(0), off(100, 500), off(1000, 500), on(1000), off(1100, 900), off(2000, 900), on(2000), off(2050, 0)},
		want:       250 * time.Millisecond,
		wantEvents: 2500,
	}, {
		name:       "another holder",
		readings:   []statsReading{on(0), off(100, 500), off(1000, 4200), on(1000), off(1100, 4600), off(2000, 8000), on(2000), off(2100, 8400), off(2500, 10_000)},
		want:       capture,
		wantEvents: events,
	}, {
		name: "another holder in the last period only",
		// Turned on after our last window: seen as the capture stops.
		readings:   []statsReading{on(0), off(100, 500), off(1000, 500), on(1000), off(1100, 900), off(2000, 900), on(2000), off(2100, 1300), off(2500, 1700)},
		want:       700 * time.Millisecond,
		wantEvents: 7000,
	}, {
		name: "another capture's window between two of our readings",
		// Read every 20 ms while off: runs grew between 400 and 420, and 420 and 440 only.
		readings:   []statsReading{on(0), off(100, 500), off(400, 500), off(420, 560), off(440, 600), off(1000, 600), on(1000), off(1100, 900), off(2000, 900)},
		want:       240 * time.Millisecond,
		wantEvents: 2400,
	}, {
		name:       "another holder, and a stretch without events before our window",
		readings:   []statsReading{on(0), off(100, 500), off(995, 4000), offWith(1000, 4000, 9950), on(1000), off(1100, 4600), off(2000, 8000), on(2000), off(2100, 8400), off(2500, 10_000)},
		want:       capture,
		wantEvents: events,
	}, {
		name: "another holder, a slow workload",
		// One event now and then: stretches with one event or none say nothing.
		readings:   []statsReading{on(0), offWith(100, 5, 5), offWith(120, 5, 5), offWith(140, 6, 6), offWith(160, 6, 7), offWith(1000, 9, 10), onWith(1000, 10), offWith(1100, 12, 13), offWith(2500, 20, 21)},
		want:       capture,
		wantEvents: events,
	}, {
		name: "another holder, a slow workload's events between a reading's reads",
		// Two events counted just after the events were read at 120, their runs before the
		// runs were: the stretch to 140 has their events and none of their runs, and says
		// nothing; the next, whose runs grew, is another holder's.
		readings:   []statsReading{on(0), offWith(100, 5, 5), offRead(120, 5, 5, 7), offRead(140, 7, 7, 7), offRead(160, 8, 8, 8), offWith(1000, 8, 8), onWith(1000, 8), offWith(1100, 12, 13), offWith(2500, 20, 21)},
		want:       capture,
		wantEvents: events,
	}, {
		name:       "nobody else, a slow workload",
		readings:   []statsReading{on(0), offWith(100, 5, 5), offWith(120, 5, 5), offWith(140, 5, 6), offWith(1000, 5, 9), onWith(1000, 9), offWith(1100, 8, 12), offWith(2500, 8, 20)},
		want:       200 * time.Millisecond,
		wantEvents: 8,
	}, {
		name:       "a capture shorter than its window",
		readings:   []statsReading{on(0), off(60, 0)},
		want:       60 * time.Millisecond,
		wantEvents: 600,
	}}
	for _, tt := range tests {
		c := coverageOf(tt.readings...)
		if got := c.measured(capture); got != tt.want {
			t.Errorf("%s: measured %v of %v, want %v", tt.name, got, capture, tt.want)
		}
		if got := c.measuredEvents(events); got != tt.wantEvents {
			t.Errorf("%s: %d events measured of %d, want %d", tt.name, got, events, tt.wantEvents)
		}
	}
}

// Events counted while the statistics settle after our window have their runs counted before the
// reading that ends the settling: under another holder, a stretch after it in which the workload
// rests (no event, no run) is still the holder's, not quiet, and the capture is measured whole.
func TestStatsCoverageAfterSettle(t *testing.T) {
	const capture = 2500 * time.Millisecond
	at := func(ms int) time.Time { return coverageStart.Add(time.Duration(ms) * time.Millisecond) }
	c := coverageOf(on(0), off(100, 1000), off(1000, 10_000), on(1000))
	// Our window closes at 1100 with 11,000 events; two more come as the statistics settle.
	c.closeWindow(at(1100), 11_000, activity{runsBefore: 11_002, events: 11_002, runs: 11_002})
	for _, r := range []statsReading{offWith(1120, 11_002, 11_002), offWith(2000, 20_000, 20_000), offWith(2500, 25_000, 25_000)} {
		c.add(r)
	}
	if got := c.measured(capture); got != capture {
		t.Errorf("measured %v of %v (quiet %v), want all of it", got, capture, c.quiet)
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
	if got := now.since(base).measuredEvents(10_000); got != 1000 {
		t.Errorf("a round from 1050 to 2050: %d events measured, want the 1000 of its 100 ms in windows", got)
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
		f.in.coverage = statsCoverage{held: 200 * time.Millisecond, events: 61}
		f.snap.programs = []capture.ProgramStats{{Name: "btf_contention_begin", Begins: true, RunCount: 30, RunTimeNS: 9000}}
		f.snap.counters[lockstatCounterCNT_BEGIN], f.snap.counters[lockstatCounterCNT_FILTERED] = 100, 50
		f.snap.counters[lockstatCounterCNT_END], f.snap.counters[lockstatCounterCNT_NESTED] = 100, 7
		m := f.assemble(t).Meta
		if want := map[bool]int64{false: 2e8, true: 0}[off]; m.ProgramsMeasuredNS != want {
			t.Errorf("run time off %v: programs measured for %d ns, want %d", off, m.ProgramsMeasuredNS, want)
		}
		// Begins, filtered ones included, and ends; not the nested, counted among the begins.
		if want := map[bool][2]uint64{false: {250, 61}, true: {}}[off]; m.ProgramsEvents != want[0] || m.ProgramsMeasuredEvents != want[1] {
			t.Errorf("run time off %v: %d of %d events measured, want %d of %d", off, m.ProgramsMeasuredEvents, m.ProgramsEvents, want[1], want[0])
		}
	}
}

// captureContention captures d of mmap_lock contention of examples/contend.
func captureContention(t *testing.T, d time.Duration) *capture.Capture {
	t.Helper()
	testenv.Build(t, "./examples/contend") // before the capture, which then has contention throughout
	return capture1(t, defaultConfig(t), func() {
		waitContend(t, startContend(t, "-lock", "mmap", "-threads", "4", "-duration", d.String()))
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
// capture, and the time the capture says they counted is that of the runs they counted, a steady
// workload's runs being spread evenly over it. Which windows that is depends on who else holds
// them on (a capture in another test package, with windows of its own): ours alone give the
// sample TestRunStatsWindows checks, a holder's throughout all of it; either way the share of
// the time, the share of the events' runs and the share of the events the programs counted in
// it agree, which is what the CPU share rests on.
func TestRunStatsSampled(t *testing.T) {
	testenv.RequireRoot(t)
	// A guest without KVM sees a few hundred events in a capture, a few dozen when the host is
	// busy (20 in 3 s on 6.1 beside a load of 13): captured again, twice as long each time, up
	// to three times, until there are enough to compare.
	var m capture.Meta
	var runs uint64
	for d := 2500 * time.Millisecond; d == 2500*time.Millisecond || d <= 10*time.Second && (m.Events.Begin < 200 || runs < 10); d *= 2 {
		m = captureContention(t, d).Meta
		runs = beginRuns(m)
	}
	m.CPUs = runtime.NumCPU() // the caller's to fill, as the host's
	timeShare := float64(m.ProgramsMeasured()) / float64(m.Duration())
	runShare := float64(runs) / float64(m.Events.Begin)
	eventShare := float64(m.ProgramsMeasuredEvents) / float64(m.ProgramsEvents)
	t.Logf("measured %v of %v (%.0f%%); %d begin runs of %d events (%.0f%%); %d of %d events counted (%.0f%%); %.0f ns/event, %.3f%% CPU",
		m.ProgramsMeasured(), m.Duration(), 100*timeShare, runs, m.Events.Begin, 100*runShare,
		m.ProgramsMeasuredEvents, m.ProgramsEvents, 100*eventShare, m.ProbeNSPerEvent(), 100*m.ProbeCPUShare())
	if m.Events.Begin < 200 || runs < 10 {
		t.Fatalf("%d events, %d of their runs measured: too few to compare", m.Events.Begin, runs)
	}
	// Our windows, which a slow machine turns on a little late.
	if timeShare < 0.03 {
		t.Errorf("programs measured for %v of %v, less than our own windows", m.ProgramsMeasured(), m.Duration())
	}
	// A run per event is the tracepoints' (the function probes run at every acquire); readings
	// every 20 ms while off count a stretch another holder covered in part whole.
	if tracepoints := m.Probe != "fentry" && m.Probe != "kprobe"; tracepoints && (timeShare < runShare/2 || timeShare > 2*runShare+0.05) {
		t.Errorf("programs measured for %.0f%% of the capture, but %.0f%% of its events' runs counted", 100*timeShare, 100*runShare)
	}
	// Both counted in the same stretches; a run ends after its counter.
	if tracepoints := m.Probe != "fentry" && m.Probe != "kprobe"; tracepoints && (eventShare < runShare/2 || eventShare > 2*runShare+0.05) {
		t.Errorf("%.0f%% of the events the programs counted measured, but %.0f%% of their begin runs", 100*eventShare, 100*runShare)
	}
	if m.ProgramsEvents < m.Events.Begin+m.Events.End {
		t.Errorf("the programs counted %d events, fewer than %d begins and %d ends", m.ProgramsEvents, m.Events.Begin, m.Events.End)
	}
	if m.ProgramsSampled() != (timeShare < 1) {
		t.Errorf("sampled: %v, for programs measured over %.0f%% of the capture", m.ProgramsSampled(), 100*timeShare)
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
	cp := captureContention(t, 2500*time.Millisecond)
	m := cp.Meta
	runs := beginRuns(m)
	t.Logf("measured %v of %v; %d begin runs of %d events; %.0f ns/event", m.ProgramsMeasured(), m.Duration(), runs, m.Events.Begin, m.ProbeNSPerEvent())
	// Every stretch with runs counts. In a guest without KVM, whose workload makes a few hundred
	// events in the time, neither events between a reading's reads (TestStatsCoverage) nor those
	// counted as the statistics settle after our window (TestStatsCoverageAfterSettle) make a
	// stretch read quiet any more; the latter made 6.1 measure 84% of a capture in the CI matrix
	// (two guests at a time). Three quarters stays the bound: one stretch taken for quiet loses
	// every stretch without events, and a loaded emulated guest has many.
	if m.ProgramsMeasuredNS < m.DurationNS*3/4 {
		t.Errorf("programs measured for %d ns of %d, want all of it", m.ProgramsMeasuredNS, m.DurationNS)
	}
	if runs < m.Events.Begin || m.Events.Begin == 0 {
		t.Errorf("%d begin runs measured of %d events, want every event's", runs, m.Events.Begin)
	}
	if m.ProgramsMeasuredEvents < m.ProgramsEvents*3/4 {
		t.Errorf("%d of the %d events the programs counted measured, want all of them", m.ProgramsMeasuredEvents, m.ProgramsEvents)
	}
	if m.ProbeNSPerEvent() <= 0 {
		t.Errorf("probe cost not measured: %+v", m.Programs)
	}
}

// TestRunStatsWindows: a collector holds the statistics' descriptor while it says it holds them
// on and not otherwise, does both within a few periods (its windows), and holds none once stopped
// or closed, whether it stopped inside a window or not. The descriptors are read under the
// collector's lock, where the windows open and close: when they do depends on how late a loaded
// machine wakes the toggling goroutine.
func TestRunStatsWindows(t *testing.T) {
	testenv.RequireRoot(t)
	for _, stopHeld := range []bool{true, false} {
		c, err := Start(defaultConfig(t))
		if err != nil {
			t.Fatalf("starting the collector: %v", err)
		}
		if c.stats == nil {
			t.Fatalf("no run-time statistics: %v", c.warnings)
		}
		seen := map[bool]bool{}
		for deadline := time.Now().Add(5 * statsPeriod); ; time.Sleep(5 * time.Millisecond) {
			c.stats.mu.Lock()
			held := c.stats.held != nil
			n := statsDescriptors(t)
			c.stats.mu.Unlock()
			if want := map[bool]int{false: 0, true: 1}[held]; n != want {
				t.Errorf("%d descriptors of BPF statistics open while held %v, want %d", n, held, want)
			}
			seen[held] = true
			if seen[true] && seen[false] && held == stopHeld {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("held on %v, off %v in %v: no window opened and closed", seen[true], seen[false], 5*statsPeriod)
			}
		}
		if _, err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		if got := statsDescriptors(t); got != 0 {
			t.Errorf("stopped (inside a window: %v): %d descriptors of BPF statistics still open", stopHeld, got)
		}
		c.Close()
	}
	// Closed without a stop, as on an error: most likely inside the first window.
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
