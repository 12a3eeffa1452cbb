package collector

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The kernel's BPF run-time statistics (BPF_ENABLE_STATS, kernel.bpf_stats_enabled) are how a
// capture measures its own probes, and they cost every BPF program run on the machine, ours and
// anybody else's: two sched_clock reads and a per-CPU update per run. On a 2-vCPU Firecracker VM
// (kvm-clock) that was about 2.5% of all CPU under `stress-ng --flock 4`, and a fifth of what
// klockstat cost that workload (docs/cost.md). So a capture holds them on only for statsWindow of
// every statsPeriod, from its start: the machine pays a tenth of their cost, and the programs'
// run counts and run times are both those of the windows, which leaves the cost per run as it
// is. The share of CPU scales the lock events' programs' run time by the events the programs
// counted themselves, in the windows and in all, rather than by the windows' time: a workload
// whose lock paths the statistics lengthen contends more in the windows (docs/cost.md).
const (
	// statsWindow is 500 times the ~0.2 ms the kernel takes to turn the statistics on or off (it
	// patches the static key's branches on every CPU), so the uncertainty at a window's edges
	// stays under 0.1% of it, and long enough to take thousands of runs of a busy workload.
	statsWindow = 100 * time.Millisecond
	// statsPeriod gives a capture one window per second, the first at its start: a capture of
	// a fraction of a second is measured too, and one of a few seconds over several windows.
	// The first window holds the capture's start, where the programs meet cold caches and
	// walk each stack path for the first time: over a short capture the cost per event reads
	// somewhat higher than over all of it (docs/cost.md).
	statsPeriod = time.Second
	// statsSettle is how long after turning the statistics off the programs' runs are read: a
	// run already going when they went off still counts as it ends, and must not pass for the
	// run of another holder's statistics (runStats.turnOff).
	statsSettle = 5 * time.Millisecond
	// statsProbe is how often our programs' runs are read while we hold the statistics off: runs
	// counted between two readings mean another holder had them on then (the bench, another
	// capture in its own window), and that stretch counts as measured. Finer readings count
	// less of a stretch another holder covered only in part, at 50 reads of a few programs'
	// information a second.
	statsProbe = 20 * time.Millisecond
)

// runStats holds the kernel's BPF run-time statistics on for statsWindow of every statsPeriod of
// a capture, and accounts for how long they counted our programs' runs. The statistics are on
// while a descriptor from BPF_ENABLE_STATS is open, and the kernel counts its holders: closing
// ours turns them off unless another holder (the bench, `sysctl kernel.bpf_stats_enabled=1`)
// keeps them on, and a crash closes it.
type runStats struct {
	runs   func() (uint64, error) // our programs' runs so far, summed over them
	events func() (uint64, error) // the events our programs counted so far
	quit   chan struct{}          // closed by stop
	done   chan struct{}          // closed as the toggling goroutine returns

	mu       sync.Mutex
	held     io.Closer // our descriptor while we hold the statistics on; nil while off
	coverage statsCoverage
	stopped  bool
	err      error // the first failure to read the programs' runs
}

// startRunStats turns the run-time statistics on for the first window of a capture started at
// start, and keeps toggling them until stop. runs and events read our programs' runs and the
// events they counted; they are called from another goroutine. The error is the kernel's refusal
// to turn them on (an old kernel, no CAP_SYS_ADMIN).
func startRunStats(start time.Time, runs, events func() (uint64, error)) (*runStats, error) {
	// The events so far, which the first window's are counted from. A read that fails here
	// fails again at the capture's end, which says so (sofar).
	n, _ := events()
	held, at, err := enableStats()
	if err != nil {
		return nil, err
	}
	s := &runStats{
		runs:     runs,
		events:   events,
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		held:     held,
		coverage: statsCoverage{last: statsReading{at: at, on: true, activity: activity{events: n}}},
	}
	go s.toggle(start)
	return s, nil
}

// enableStats turns the statistics on and returns their descriptor and when they went on: the
// middle of the call, which takes a fraction of a millisecond.
func enableStats() (io.Closer, time.Time, error) {
	before := time.Now()
	held, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	return held, midpoint(before, time.Now()), err
}

// disableStats closes the statistics' descriptor and returns when they went off.
func disableStats(held io.Closer) time.Time {
	before := time.Now()
	held.Close()
	return midpoint(before, time.Now())
}

func midpoint(before, after time.Time) time.Time { return before.Add(after.Sub(before) / 2) }

// toggle turns the statistics off at the end of every window and on at the start of the next,
// until stop.
func (s *runStats) toggle(start time.Time) {
	defer close(s.done)
	for period := start; ; {
		if !s.sleepUntil(period.Add(statsWindow)) {
			return
		}
		s.turnOff()
		period = period.Add(statsPeriod)
		for next := time.Now().Add(statsProbe); next.Before(period); next = next.Add(statsProbe) {
			if !s.sleepUntil(next) {
				return
			}
			s.probe()
		}
		if !s.sleepUntil(period) {
			return
		}
		s.turnOn()
	}
}

// sleepUntil reports whether t came before stop.
func (s *runStats) sleepUntil(t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-s.quit:
		return false
	}
}

func (s *runStats) turnOff() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.held == nil {
		return
	}
	// The window's events are those counted up to here, not those of the settling.
	events, ok := s.readEvents()
	at := disableStats(s.held)
	s.held = nil
	time.Sleep(statsSettle)
	if a, read := s.read(); ok && read {
		s.coverage.closeWindow(at, events, a)
	}
}

// probe reads our programs' runs while we hold the statistics off.
func (s *runStats) probe() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped && s.held == nil {
		s.readOff(time.Now())
	}
}

// turnOn opens the next window. Should the kernel refuse (out of descriptors), the statistics
// stay off until the next one: the coverage counts only the windows they were on.
func (s *runStats) turnOn() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.held != nil {
		return
	}
	// Read before they go on: the runs of the period they were off, and the events the
	// window's are counted from.
	a, ok := s.readOff(time.Now())
	if !ok {
		return
	}
	held, at, err := enableStats()
	if err != nil {
		return
	}
	s.held = held
	s.coverage.add(statsReading{at: at, on: true, activity: a})
}

// read reads our programs' activity: their runs before and after their events. A run's
// statistics are counted as it returns, after its event: on a slow machine whose reads take
// milliseconds, events counted between two reads of the runs may have had their runs counted by
// either. It reports whether it could; a failure fails the capture (sofar).
func (s *runStats) read() (activity, bool) {
	var a activity
	var err error
	if a.runsBefore, err = s.runs(); err == nil {
		if a.events, err = s.events(); err == nil {
			a.runs, err = s.runs()
		}
	}
	return a, s.failed(err)
}

// readEvents reads the events our programs counted; it reports whether it could.
func (s *runStats) readEvents() (uint64, bool) {
	n, err := s.events()
	return n, s.failed(err)
}

// failed keeps the first failure to read our programs, and reports whether err is none.
func (s *runStats) failed(err error) bool {
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("reading the BPF programs' run statistics: %w", err)
	}
	return err == nil
}

// readOff adds a reading of our programs' activity at at, the statistics off from then, and
// returns it; it reports whether it could be read.
func (s *runStats) readOff(at time.Time) (activity, bool) {
	a, ok := s.read()
	if ok {
		s.coverage.add(statsReading{at: at, activity: a})
	}
	return a, ok
}

// sofar is the coverage from the first window up to now, or up to stop once stopped.
func (s *runStats) sofar() (statsCoverage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.stopped:
	case s.held != nil:
		if n, ok := s.readEvents(); ok {
			s.coverage.add(statsReading{at: time.Now(), on: true, activity: activity{events: n}})
		}
	default:
		s.readOff(time.Now())
	}
	return s.coverage, s.err
}

// stop ends the last window, with the capture's, and the toggling: the statistics are off (as
// far as we hold them) once it returns, and the coverage stays as it was then. Safe to call more
// than once, and on nil.
func (s *runStats) stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if !s.stopped {
		s.stopped = true
		close(s.quit)
		if s.held != nil {
			n, ok := s.readEvents()
			at := disableStats(s.held)
			s.held = nil
			if ok {
				s.coverage.add(statsReading{at: at, activity: activity{events: n}})
			}
		} else {
			s.readOff(time.Now())
		}
	}
	s.mu.Unlock()
	<-s.done
}

// statsReading is whether we held the statistics on from one time, and our programs' activity
// then: the events they counted, and their runs when off (unread while on, and as they stop).
type statsReading struct {
	at time.Time
	on bool
	activity
}

// activity is what our programs did so far: their runs the statistics counted, summed over them,
// read before and after the events the programs counted themselves, which they do whether the
// statistics are on or not.
type activity struct {
	runsBefore, events, runs uint64
}

// statsCoverage is how long the statistics counted our programs' runs, from the readings taken as
// they were turned on and off, every statsProbe while off, and when a round of Rounds begins or
// ends.
type statsCoverage struct {
	held time.Duration // while we held them on
	// others is the time between two readings taken while we held them off in which our runs were
	// counted all the same: another holder had them on for at least part of it; quiet, that in
	// which they were not.
	others, quiet time.Duration
	// events is how many events our programs counted while we held the statistics on and in the
	// stretches of others.
	events uint64
	last   statsReading
}

// add accounts for the time from the last reading to r. The runs grown while off are those
// between two readings taken off: the statistics go on only after such a reading (turnOn). Runs
// counted between the two reads of a reading may be of events read before or after: a stretch
// is another holder's when runs grew between its readings' nearest reads, and quiet when its
// events grew and its runs did not between their farthest.
func (c *statsCoverage) add(r statsReading) {
	switch {
	case c.last.on:
		c.held += r.at.Sub(c.last.at)
		c.events += r.events - c.last.events
	case r.on:
		// Turned on just after a reading: too short a stretch to tell.
	case r.runsBefore > c.last.runs:
		c.others += r.at.Sub(c.last.at)
		c.events += r.events - c.last.events
	case r.events > c.last.events+1 && r.runs == c.last.runsBefore:
		// Events without a run counted: nobody had the statistics on. A stretch without
		// events says nothing (a workload at rest, or a slow one between two of its events);
		// nor does one with a single event, whose run the statistics may count just after
		// the reading that saw its event.
		c.quiet += r.at.Sub(c.last.at)
	}
	c.last = r
}

// closeWindow accounts for a window of ours that closed at at, events counted by then, and takes
// a, read once the statistics settled, as the reading the next stretch starts from: the events
// counted while they settled had their runs counted before a's first read of the runs, and must
// not make a stretch without runs after it read quiet.
func (c *statsCoverage) closeWindow(at time.Time, events uint64, a activity) {
	c.add(statsReading{at: at, activity: activity{events: events}})
	c.last.activity = a
}

// since is the coverage from base, an earlier reading of the same runStats, to c.
func (c statsCoverage) since(base statsCoverage) statsCoverage {
	return statsCoverage{held: c.held - base.held, others: c.others - base.others, quiet: c.quiet - base.quiet,
		events: c.events - base.events, last: c.last}
}

// measured is how long of a window (a capture's or a round's) the statistics counted our
// programs' runs in: the time we held them on, and the stretches between readings in which
// another holder's counted them (the whole window under the bench, which holds them on
// throughout, whose runs leave no stretch quiet). A stretch another holder covered in part
// counts whole: at most statsProbe more per change of its, so a CPU share reads low by as much.
func (c statsCoverage) measured(window time.Duration) time.Duration {
	if c.heldByOthers() {
		return window
	}
	return min(c.held+c.others, window)
}

// measuredEvents is how many of a window's events, total of them, our programs counted while
// the statistics counted their runs: all of them where measured gives the whole window.
func (c statsCoverage) measuredEvents(total uint64) uint64 {
	if c.heldByOthers() {
		return total
	}
	return min(c.events, total)
}

// heldByOthers reports whether another holder kept the statistics on throughout: our runs were
// counted in every stretch we read while off.
func (c statsCoverage) heldByOthers() bool { return c.others > 0 && c.quiet == 0 }
