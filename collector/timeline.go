package collector

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cilium/ebpf"

	"github.com/klockstat/klockstat/capture"
)

// timelineBuckets is TIMELINE_BUCKETS in lockstat.h.
const timelineBuckets = 256

// The timeline's buckets are powers of two of nanoseconds wide. A window starts with buckets of
// 2^timelineFirstShift ns (256 of them hold 16.8 ms), which double whenever seven eighths are used: a
// window of any length (a command's, which ends when it exits, or one that -d or a signal ends) then
// fills more than 7/16 of them (112) once it is 7.3 ms long.
const timelineFirstShift = 16

// timeline reads the BPF timeline map and widens its buckets as the window grows. The programs write
// one generation of the map at the width that timeline_control says; to widen it, the control word
// switches them to the other generation at the new width, and the generation left, which no program
// writes any more, is read into history, zeroed, and folded with it into the wider buckets.
type timeline struct {
	m       *ebpf.Map
	control *ebpf.Variable
	types   int
	shift   uint
	gen     uint32
	history [][]lockstatTimelineCell // per type, what the generations left held, at the current width

	mu   sync.Mutex // held while widening
	stop chan struct{}
	done chan struct{}
	err  error // of a widening that failed
}

func newTimeline(m *ebpf.Map, control *ebpf.Variable, types int) *timeline {
	t := &timeline{m: m, control: control, types: types, shift: timelineFirstShift, history: make([][]lockstatTimelineCell, types)}
	for i := range t.history {
		t.history[i] = make([]lockstatTimelineCell, timelineBuckets)
	}
	return t
}

// grow widens the buckets whenever seven eighths of them are used, from start, until stopped. Where
// the widening falls behind the window (a slow machine, a loaded one), it widens them by as many
// doublings as put the window's end at most 200 buckets in.
func (t *timeline) grow(start time.Time) {
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(t.done)
		for {
			full := start.Add(time.Duration(uint64(7*timelineBuckets/8) << t.shift))
			timer := time.NewTimer(time.Until(full))
			select {
			case <-t.stop:
				timer.Stop()
				return
			case <-timer.C:
				elapsed := uint64(time.Since(start))
				shift := t.shift + 1
				// On time, one doubling leaves the window 112 buckets; late, the window still
				// fills more than 100.
				for uint64(200)<<shift < elapsed {
					shift++
				}
				if err := t.widen(shift); err != nil {
					t.err = err
					return
				}
			}
		}
	}()
}

// stopGrowing ends grow and returns the error of a widening that failed.
func (t *timeline) stopGrowing() error {
	if t.stop != nil {
		close(t.stop)
		<-t.done
		t.stop = nil
	}
	return t.err
}

// widen makes the buckets 1<<shift ns wide.
func (t *timeline) widen(shift uint) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	left := t.gen
	if err := t.control.Set(uint64(left^1)<<8 | uint64(shift)); err != nil {
		return fmt.Errorf("doubling the timeline's buckets: %w", err)
	}
	// A program that read the old control word before the switch is done with it within microseconds.
	time.Sleep(10 * time.Millisecond)
	cells, err := t.read(left)
	if err != nil {
		return err
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("clearing the timeline: %w", err)
	}
	keys := make([]uint32, t.types*timelineBuckets)
	for i := range keys {
		keys[i] = uint32(int(left)*t.types*timelineBuckets + i)
	}
	zero := make([]lockstatTimelineCell, len(keys)*cpus)
	if _, err := t.m.BatchUpdate(keys, zero, nil); errors.Is(err, ebpf.ErrNotSupported) {
		for _, k := range keys {
			if err := t.m.Update(k, zero[:cpus], ebpf.UpdateAny); err != nil {
				return fmt.Errorf("clearing the timeline: %w", err)
			}
		}
	} else if err != nil {
		return fmt.Errorf("clearing the timeline: %w", err)
	}
	per := 1 << (shift - t.shift) // old buckets per new one
	for typ, h := range t.history {
		for b := range h {
			h[b].Count += cells[typ][b].Count
			h[b].TotalNs += cells[typ][b].TotalNs
		}
		// New bucket b sums old buckets from b*per, which no new bucket before it wrote.
		kept := max(timelineBuckets/per, 1)
		for b := range kept {
			var sum lockstatTimelineCell
			for _, c := range h[b*per : min((b+1)*per, timelineBuckets)] {
				sum.Count += c.Count
				sum.TotalNs += c.TotalNs
			}
			h[b] = sum
		}
		clear(h[kept:])
	}
	t.shift = shift
	t.gen = left ^ 1
	return nil
}

// lookupEach reads every cell with a lookup of its own, where the kernel
// has no batch lookup.
func (t *timeline) lookupEach(keys []uint32, values []lockstatTimelineCell, cpus int) error {
	for i := range keys {
		keys[i] = uint32(i)
		if err := t.m.Lookup(keys[i], values[i*cpus:(i+1)*cpus]); err != nil {
			return fmt.Errorf("reading the timeline: %w", err)
		}
	}
	return nil
}

// read sums the cells of a generation over the CPUs, per type. One batch reads the whole map: a
// widening must be quick, and a lookup per cell takes thousands of system calls.
func (t *timeline) read(gen uint32) ([][]lockstatTimelineCell, error) {
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("reading the timeline: %w", err)
	}
	n := int(t.m.MaxEntries())
	keys := make([]uint32, n)
	values := make([]lockstatTimelineCell, n*cpus)
	var cursor ebpf.MapBatchCursor
	got := 0
	for got < n {
		k, err := t.m.BatchLookup(&cursor, keys[got:], values[got*cpus:], nil)
		got += k
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			break
		}
		if errors.Is(err, ebpf.ErrNotSupported) && got == 0 {
			// Kernels before 5.13 have no batch operations on
			// per-CPU arrays: a lookup per cell.
			if err := t.lookupEach(keys, values, cpus); err != nil {
				return nil, err
			}
			got = n
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the timeline: %w", err)
		}
	}
	cells := make([][]lockstatTimelineCell, t.types)
	for typ := range cells {
		cells[typ] = make([]lockstatTimelineCell, timelineBuckets)
	}
	first := int(gen) * t.types * timelineBuckets
	for i, key := range keys[:got] {
		at := int(key) - first
		if at < 0 || at >= t.types*timelineBuckets {
			continue
		}
		for _, c := range values[i*cpus : (i+1)*cpus] {
			cells[at/timelineBuckets][at%timelineBuckets].Count += c.Count
			cells[at/timelineBuckets][at%timelineBuckets].TotalNs += c.TotalNs
		}
	}
	return cells, nil
}

// capture reads the timeline of a window of duration: the buckets it used, one series per type of
// names with waits.
func (t *timeline) capture(names []string, duration time.Duration) (*capture.Timeline, error) {
	if err := t.stopGrowing(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cells, err := t.read(t.gen)
	if err != nil {
		return nil, err
	}
	width := uint64(1) << t.shift
	n := min(int((uint64(duration)+width-1)/width), timelineBuckets)
	tl := &capture.Timeline{BucketNS: width}
	for typ, name := range names {
		s := capture.TimelineSeries{Type: name, Count: make([]uint64, timelineBuckets), TotalNS: make([]uint64, timelineBuckets)}
		var waits uint64
		for b := range timelineBuckets {
			s.Count[b] = cells[typ][b].Count + t.history[typ][b].Count
			s.TotalNS[b] = cells[typ][b].TotalNs + t.history[typ][b].TotalNs
			if s.Count[b] > 0 {
				waits += s.Count[b]
				n = max(n, b+1)
			}
		}
		if waits > 0 {
			tl.Series = append(tl.Series, s)
		}
	}
	for i := range tl.Series {
		tl.Series[i].Count, tl.Series[i].TotalNS = tl.Series[i].Count[:n], tl.Series[i].TotalNS[:n]
	}
	return tl, nil
}
