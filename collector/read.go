package collector

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/capture"
)

// Stop detaches the probes and reads everything they aggregated into a
// capture. Waits still open at this point are charged up to now and marked
// in progress. Host, command-line and tool fields of the metadata are left
// to the caller.
func (c *Collector) Stop() (*capture.Capture, error) {
	snap, err := c.detach()
	if err != nil {
		return nil, err
	}
	stats, err := c.read(&snap, nil)
	if err != nil {
		return nil, err
	}
	return assemble(snap, c.assembly(c.start, stats))
}

// assembly is what assemble needs of the collector besides the snapshot, for a window that began
// at start, the whole capture's (Stop) or one round's (Rounds.End), whose programs' run
// statistics counted as coverage says.
func (c *Collector) assembly(start time.Time, coverage statsCoverage) assembly {
	return assembly{
		cfg:        c.cfg,
		probe:      c.backend.Name(),
		start:      start,
		acquire:    c.att.acquire,
		warnings:   c.warnings,
		symbols:    c.symbols,
		staticFrom: c.staticFrom,
		locks:      c.obj.kernel,
		cgroups:    c.cgroups,
		unseen:     c.unseen,
		// The rate the owners were sampled at, if they were.
		ownerSampleHz: c.att.sampler.rate(),
		// Turned on by Start, or not at all.
		runTimeOff: c.stats == nil,
		coverage:   coverage,
	}
}

// detach detaches the probes, and returns the snapshot's stop and window.
func (c *Collector) detach() (snapshot, error) {
	// The function probes stop first, all at once (stopFunctionProbes).
	// Otherwise no wait begins after stopNS; those in progress then may
	// still end and be recorded, until the end programs are detached too.
	stopNS, err := c.stopFunctionProbes()
	if err != nil {
		return snapshot{}, err
	}
	c.att.detachBegins()
	if c.att.acquire == nil {
		stopNS, err = monotonicNow()
	}
	duration := time.Since(c.start)
	// The statistics' last window ends with the capture's: the runs of the end programs until
	// they are detached are not timed (unless another holder keeps the statistics on).
	c.stats.stop()
	// The window has ended: its timeline's buckets stop widening before
	// the links close, which took long enough on Linux 5.10 under TCG
	// for a widening past the window (87 buckets of a 1.4 s window); a
	// wait that ends meanwhile counts in the last bucket.
	growErr := c.timeline.stopGrowing()
	closeLinks(c.att.links)
	c.att.links = nil
	if err != nil {
		return snapshot{}, err
	}
	if growErr != nil {
		return snapshot{}, growErr
	}
	return snapshot{stopNS: stopNS, duration: duration}, nil
}

// cumulative is what the sources the probes only ever add to held at one time: the per-CPU
// counters and histograms, which cannot be cleared without losing concurrent increments, and the
// programs' run statistics, with how long these counted. A round of Rounds is their difference
// from its start's.
type cumulative struct {
	counters      [lockstatCounterCNT_MAX]uint64 // summed over the CPUs
	histogram     [][]uint64                     // per lock type
	holdHistogram [][]uint64                     // nil for tracepoint backends
	programs      []capture.ProgramStats         // one per attached program, in attach order
	stats         statsCoverage                  // of the programs' run statistics; zero when Start could not turn them on
	monoNS        uint64                         // CLOCK_MONOTONIC when the counters were read
}

// read reads the maps, and what else the capture needs of the system at its end, into the
// snapshot: everything the probes aggregated, for Stop (base nil), or one round of Rounds since
// base, the cumulative sources at the round's start. A round drains the aggregation maps, and has
// no open waits (a wait counts in the round it ends in) and no timeline.
//
// The aggregation maps are read before the cumulative sources: the order Rounds.Begin explains.
// It returns how long the programs' run statistics counted, from the start or from base.
func (c *Collector) read(snap *snapshot, base *cumulative) (statsCoverage, error) {
	round := base != nil
	if err := c.readAggregates(snap, round); err != nil {
		return statsCoverage{}, err
	}
	now, err := c.readCumulative()
	if err != nil {
		return statsCoverage{}, err
	}
	var start cumulative // Stop's: nothing of the tree before the collector
	if round {
		start = *base
	}
	snap.tree = treeThreads(start, now)
	if round {
		now = now.since(*base)
	}
	snap.counters, snap.histogram, snap.holdHistogram, snap.programs = now.counters, now.histogram, now.holdHistogram, now.programs
	maps := &c.obj.maps
	var open []lockstatWaitSlot
	if !round {
		if snap.threadWaits, snap.spinWaits, err = readWaitSlots(maps.ThreadWaits, maps.SpinWaits); err != nil {
			return statsCoverage{}, err
		}
		open = openWaits(snap.threadWaits, snap.spinWaits, snap.stopNS)
		snap.threadNames = map[uint32]string{}
		for _, s := range open {
			snap.threadNames[s.Tid] = threadName(s.Pid, s.Tid)
		}
		if snap.timeline, err = c.timeline.capture(c.cfg.Spec.Names(), snap.duration); err != nil {
			return statsCoverage{}, err
		}
	}
	if snap.stacks, err = readStacks(maps.Stacks, snap, open); err != nil {
		return statsCoverage{}, err
	}
	if c.cfg.Scope != "" {
		if snap.commandPIDs, err = readCommandTree(maps.CommandTree); err != nil {
			return statsCoverage{}, err
		}
	}
	if snap.slabNames, err = readSlabNames(maps.SlabNames); err != nil {
		return statsCoverage{}, err
	}
	snap.mapSizes = c.mapSizes()
	snap.cgroups = c.cgroups.atEnd()
	return now.stats, nil
}

// readAggregates reads the aggregation maps (waits, holds, owners and their facts) into the
// snapshot; drained, it deletes what it read.
func (c *Collector) readAggregates(snap *snapshot, drained bool) error {
	readWaits, readOwners := readEntries[lockstatWaitKey, lockstatWaitStats], readEntries[lockstatOwnerKey, lockstatOwnerStats]
	if drained {
		readWaits, readOwners = drain[lockstatWaitKey, lockstatWaitStats], drainOwners
	}
	maps := &c.obj.maps
	var err error
	if snap.waits, err = readWaits(maps.Aggregate); err != nil {
		return err
	}
	if c.att.acquire != nil {
		if snap.holds, err = readWaits(maps.HoldAggregate); err != nil {
			return err
		}
	}
	if !c.cfg.Owners {
		return nil
	}
	if snap.owners, err = readOwners(maps.Owners); err != nil {
		return err
	}
	return readOwnerFacts(maps, snap, drained)
}

// readCumulative reads the cumulative sources.
func (c *Collector) readCumulative() (cumulative, error) {
	var now cumulative
	var err error
	if c.stats != nil {
		if now.stats, err = c.stats.sofar(); err != nil {
			return now, err
		}
	}
	if now.programs, err = c.programStats(); err != nil {
		return now, err
	}
	if now.counters, err = c.readCounters(); err != nil {
		return now, err
	}
	if now.monoNS, err = monotonicNow(); err != nil {
		return now, err
	}
	maps := &c.obj.maps
	types := len(c.cfg.Spec.Types)
	if now.histogram, err = readHistogram(maps.Histogram, types); err != nil {
		return now, err
	}
	if c.att.acquire != nil {
		if now.holdHistogram, err = readHistogram(maps.HoldHistogram, types); err != nil {
			return now, err
		}
	}
	return now, nil
}

// stopFunctionProbes ends the capture of the function probes before they
// are detached, which takes seconds on some kernels (Linux 5.10 waits for an
// RCU-tasks grace period per program): from then on their programs leave
// every open wait open, to be charged up to the returned time. Other
// backends detach at once: it returns 0 for them.
func (c *Collector) stopFunctionProbes() (uint64, error) {
	if c.att.acquire == nil {
		return 0, nil
	}
	ctl := c.obj.maps.Control
	var v lockstatFnControl
	if err := ctl.Lookup(uint32(0), &v); err != nil {
		return 0, fmt.Errorf("reading the probes' control: %w", err)
	}
	v.Stopped = 1
	if err := ctl.Update(uint32(0), v, ebpf.UpdateAny); err != nil {
		return 0, fmt.Errorf("stopping the probes: %w", err)
	}
	return monotonicNow()
}

func monotonicNow() (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("reading the monotonic clock: %w", err)
	}
	return uint64(ts.Nano()), nil
}

func (c *Collector) programStats() ([]capture.ProgramStats, error) {
	var out []capture.ProgramStats
	for _, p := range c.att.probes {
		s, err := p.prog.Stats()
		if err != nil {
			return nil, fmt.Errorf("reading run statistics of BPF program %s: %w", p.name, err)
		}
		out = append(out, capture.ProgramStats{
			Name:            p.name,
			RunCount:        s.RunCount,
			RunTimeNS:       uint64(s.Runtime.Nanoseconds()),
			RecursionMisses: s.RecursionMisses,
			Begins:          p.begins,
			Hook:            p.hook,
		})
	}
	return out, nil
}

// programRuns is how many runs of the probes' programs the kernel counted, summed over them.
func (c *Collector) programRuns() (uint64, error) {
	programs, err := c.programStats()
	if err != nil {
		return 0, err
	}
	var runs uint64
	for _, p := range programs {
		runs += p.RunCount
	}
	return runs, nil
}

// eventCounters are the counters most runs of a lock event's program add to one of: not a
// mutex's wait announced again, nor a run nested too deep.
var eventCounters = []lockstatCounter{lockstatCounterCNT_BEGIN, lockstatCounterCNT_FILTERED, lockstatCounterCNT_END, lockstatCounterCNT_FAST, lockstatCounterCNT_HOLD}

// programEvents is how many events the programs counted so far, by eventCounters.
func (c *Collector) programEvents() (uint64, error) {
	var n uint64
	for _, i := range eventCounters {
		v, err := c.readCounter(i)
		if err != nil {
			return 0, err
		}
		n += v
	}
	return n, nil
}

// countedEvents is how many events the programs counted themselves, by eventCounters.
func countedEvents(counters [lockstatCounterCNT_MAX]uint64) uint64 {
	var n uint64
	for _, i := range eventCounters {
		n += counters[i]
	}
	return n
}

func (c *Collector) readCounters() ([lockstatCounterCNT_MAX]uint64, error) {
	var out [lockstatCounterCNT_MAX]uint64
	for i := range lockstatCounterCNT_MAX {
		n, err := c.readCounter(i)
		if err != nil {
			return out, err
		}
		out[i] = n
	}
	// The tree's counters move together (tree.bpf.h bumps a thread's end count, then its end
	// time), each read apart: a thread ending between two reads would count one without the
	// other, off by the clock's whole value. Read again until two readings agree, as a seqlock's
	// reader does; threads end far less often than a reading takes.
	for range maxTreeRereads {
		var again [len(treeCounters)]uint64
		same := true
		for j, i := range treeCounters {
			n, err := c.readCounter(i)
			if err != nil {
				return out, err
			}
			again[j], same = n, same && n == out[i]
		}
		if same {
			break
		}
		for j, i := range treeCounters {
			out[i] = again[j]
		}
	}
	return out, nil
}

// treeCounters are the counters treeThreads takes together.
var treeCounters = [...]lockstatCounter{lockstatCounterCNT_TREE_THREADS, lockstatCounterCNT_TREE_ENDED,
	lockstatCounterCNT_TREE_START_NS, lockstatCounterCNT_TREE_END_NS}

// maxTreeRereads bounds the readings of the tree's counters: a tree starting and ending threads
// faster than they are read still gets a reading, a little off.
const maxTreeRereads = 8

// readCounter sums one counter over the CPUs.
func (c *Collector) readCounter(i lockstatCounter) (uint64, error) {
	var perCPU []uint64
	if err := c.obj.maps.Counters.Lookup(uint32(i), &perCPU); err != nil {
		return 0, fmt.Errorf("reading counter %d: %w", i, err)
	}
	return sum(perCPU), nil
}

// readSlabNames reads the slab names map, which Rounds.Begin clears with the records.
func readSlabNames(m *ebpf.Map) (map[uint64]string, error) {
	entries, err := readEntries[uint64, lockstatSlabName](m)
	if err != nil {
		return nil, err
	}
	names := make(map[uint64]string, len(entries))
	for _, e := range entries {
		names[e.key] = cString(e.value.Cache[:])
	}
	return names, nil
}

// readEntries reads every entry of a hash map.
func readEntries[K, V any](m *ebpf.Map) ([]entry[K, V], error) {
	var (
		entries []entry[K, V]
		e       entry[K, V]
	)
	it := m.Iterate()
	for it.Next(&e.key, &e.value) {
		entries = append(entries, e)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading the map %s: %w", m, err)
	}
	return entries, nil
}

// treeThreads is what the workload's tree ran between two readings of the counters (tree.bpf.h):
// the threads that ran, those alive at from and those started since, and their time, the integral
// of the live threads over the stretch, in the arithmetic modulo 2^64 the sums are kept in.
func treeThreads(from, to cumulative) treeStats {
	c := func(r cumulative, i lockstatCounter) uint64 { return r.counters[i] }
	liveFrom := c(from, lockstatCounterCNT_TREE_THREADS) - c(from, lockstatCounterCNT_TREE_ENDED)
	liveTo := c(to, lockstatCounterCNT_TREE_THREADS) - c(to, lockstatCounterCNT_TREE_ENDED)
	ns := liveTo*to.monoNS - liveFrom*from.monoNS -
		(c(to, lockstatCounterCNT_TREE_START_NS) - c(from, lockstatCounterCNT_TREE_START_NS)) +
		(c(to, lockstatCounterCNT_TREE_END_NS) - c(from, lockstatCounterCNT_TREE_END_NS))
	if int64(ns) < 0 {
		ns = 0 // counters still apart after maxTreeRereads
	}
	return treeStats{
		processes: c(to, lockstatCounterCNT_TREE_PROCESSES) - c(from, lockstatCounterCNT_TREE_PROCESSES),
		threads:   c(to, lockstatCounterCNT_TREE_THREADS) - c(from, lockstatCounterCNT_TREE_THREADS) + liveFrom,
		threadNS:  ns,
	}
}

// readCommandTree reads the tgids of the workload's process tree, exited processes included.
func readCommandTree(m *ebpf.Map) ([]uint32, error) {
	entries, err := readEntries[uint32, uint8](m)
	if err != nil {
		return nil, err
	}
	pids := make([]uint32, len(entries))
	for i, e := range entries {
		pids[i] = e.key
	}
	return pids, nil
}

// readHistogram reads a per-type histogram map: dense bucket counts per
// type, as the BPF programs index them.
func readHistogram(m *ebpf.Map, types int) ([][]uint64, error) {
	buckets := make([][]uint64, types)
	var perCPU []uint64
	for i := range buckets {
		buckets[i] = make([]uint64, histBuckets)
		for j := range buckets[i] {
			if err := m.Lookup(uint32(i*histBuckets+j), &perCPU); err != nil {
				return nil, fmt.Errorf("reading histogram bucket %d: %w", i*histBuckets+j, err)
			}
			buckets[i][j] = sum(perCPU)
		}
	}
	return buckets, nil
}

// readWaitSlots reads the waits of the threads and of the CPUs, open or not.
func readWaitSlots(threads, spins *ebpf.Map) ([]lockstatWaitSlot, []lockstatCpuWaits, error) {
	entries, err := readEntries[uint32, lockstatWaitSlot](threads)
	if err != nil {
		return nil, nil, err
	}
	slots := make([]lockstatWaitSlot, len(entries))
	for i, e := range entries {
		slots[i] = e.value
	}
	var perCPU []lockstatCpuWaits
	if err := spins.Lookup(uint32(0), &perCPU); err != nil {
		return nil, nil, fmt.Errorf("reading the per-CPU wait map: %w", err)
	}
	return slots, perCPU, nil
}

// threadName reads a thread's name for a wait that has not ended, so the
// kernel never wrote one; "" when the thread is gone.
func threadName(pid, tid uint32) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

// readStacks reads the stacks the snapshot's entries and its open waits
// refer to, each once.
func readStacks(m *ebpf.Map, snap *snapshot, open []lockstatWaitSlot) (map[uint64][]uint64, error) {
	ids := []uint64{}
	for _, e := range snap.waits {
		ids = append(ids, e.key.Stack)
	}
	for _, e := range snap.holds {
		ids = append(ids, e.key.Stack)
	}
	for _, s := range open {
		ids = append(ids, s.Stack)
	}
	for _, e := range snap.owners {
		if e.value.Count > 0 { // an owner begun, not ended by the stop, is left out
			ids = append(ids, e.key.Stack)
		}
	}
	for _, e := range snap.ownerSamples {
		ids = append(ids, e.key.Stack)
	}
	stacks := map[uint64][]uint64{}
	for _, id := range ids {
		if _, ok := stacks[id]; ok || id == 0 {
			continue
		}
		addrs := make([]uint64, m.ValueSize()/8)
		if err := m.Lookup(id, &addrs); err != nil {
			return nil, fmt.Errorf("reading stack %#x: %w", id, err)
		}
		stacks[id] = addrs
	}
	return stacks, nil
}
