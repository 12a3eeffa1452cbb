package collector

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/kallsyms"
	"github.com/klockstat/klockstat/lockspec"
)

// lostReasons names the counters that mean an event was not recorded.
var lostReasons = []struct {
	counter lockstatCounter
	reason  string
}{
	{lockstatCounterCNT_LOST_AGG_FULL, "aggregation map full (an entry per thread, lock and stack: raise --map-size, or narrow the capture with --pid, --comm or --types)"},
	{lockstatCounterCNT_LOST_WAIT_FULL, "per-thread wait map full (more live threads waited than --map-size: raise it)"},
	{lockstatCounterCNT_LOST_NEST_DEPTH, fmt.Sprintf("more than %d nested waits on one CPU", maxNest)},
	{lockstatCounterCNT_LOST_LEVELS, fmt.Sprintf("probes nested more than %d deep on one CPU", maxLevels)},
	{lockstatCounterCNT_LOST_HOLD_FULL, "hold not timed: per-lock hold map full (raise --map-size)"},
	{lockstatCounterCNT_LOST_HOLD_AGG_FULL, "hold not stored: hold aggregation map full (raise --map-size)"},
	{lockstatCounterCNT_LOST_OWNER_FULL, "wait not charged to its owner: owner map full (an entry per lock and owner: raise --map-size)"},
}

// Stop detaches the probes and reads everything they aggregated into a
// capture. Waits still open at this point are charged up to now and marked
// in progress. Host, command-line and tool fields of the metadata are left
// to the caller.
func (c *Collector) Stop() (*capture.Capture, error) {
	// The function probes stop first, all at once (stopFunctionProbes).
	// Otherwise no wait begins after stopNS; those in progress then may
	// still end and be recorded, until the end programs are detached too.
	stopNS, err := c.stopFunctionProbes()
	if err != nil {
		return nil, err
	}
	c.att.detachBegins()
	if c.att.acquire == nil {
		stopNS, err = monotonicNow()
	}
	duration := time.Since(c.start)
	// The window has ended: its timeline's buckets stop widening before
	// the links close, which took long enough on Linux 5.10 under TCG
	// for a widening past the window (87 buckets of a 1.4 s window); a
	// wait that ends meanwhile counts in the last bucket.
	growErr := c.timeline.stopGrowing()
	closeLinks(c.att.links)
	c.att.links = nil
	if err != nil {
		return nil, err
	}
	if growErr != nil {
		return nil, growErr
	}

	progs, err := c.programStats()
	if err != nil {
		return nil, err
	}
	counters, err := c.readCounters()
	if err != nil {
		return nil, err
	}

	ksyms, err := kallsyms.Load()
	if err != nil {
		return nil, fmt.Errorf("symbolizing: %w", err)
	}
	b := builder{
		spec:   c.cfg.Spec,
		ksyms:  ksyms,
		stacks: c.obj.maps.Stacks,
		byKey:  map[lockstatWaitKey]int{},
		frames: map[uint64][]string{},
	}
	if err := b.readAggregate(c.obj.maps.Aggregate, addWaits); err != nil {
		return nil, err
	}
	buckets, err := b.readHistogram(c.obj.maps.Histogram)
	if err != nil {
		return nil, err
	}
	var threshold uint64 // an open acquire no longer than this is not a wait
	if a := c.att.acquire; a != nil {
		threshold = a.ThresholdNS
	}
	inProgress, err := b.readOpenWaits(c.obj.maps.ThreadWaits, c.obj.maps.SpinWaits, stopNS, threshold, buckets)
	if err != nil {
		return nil, err
	}
	cp := &capture.Capture{Version: capture.FormatVersion}
	cp.Histograms = b.histograms(buckets, waitStats)
	if c.att.acquire != nil {
		if err := b.readAggregate(c.obj.maps.HoldAggregate, addHolds); err != nil {
			return nil, err
		}
		holdBuckets, err := b.readHistogram(c.obj.maps.HoldHistogram)
		if err != nil {
			return nil, err
		}
		cp.HoldHistograms = b.histograms(holdBuckets, holdStats)
	}
	cp.Records = b.records
	if cp.Timeline, err = c.timeline.capture(c.cfg.Spec.Names(), duration); err != nil {
		return nil, err
	}
	if c.cfg.Owners {
		if cp.Owners, err = b.readOwners(c.obj.maps.Owners); err != nil {
			return nil, err
		}
	}
	m := &cp.Meta
	m.Start = c.start
	m.DurationNS = duration.Nanoseconds()
	m.Probe = c.backend.Name()
	m.StackDepth = c.cfg.StackDepth
	m.Types = c.cfg.Spec.Names()
	m.PIDs = c.cfg.PIDs
	m.Comm = c.cfg.Comm
	for _, dir := range c.cfg.Cgroups {
		m.Cgroups = append(m.Cgroups, c.cgroups.hierarchy.PathOf(dir))
	}
	m.MapSizes = map[string]uint32{
		"aggregate":    c.obj.maps.Aggregate.MaxEntries(),
		"stacks":       c.obj.maps.Stacks.MaxEntries(),
		"thread_waits": c.obj.maps.ThreadWaits.MaxEntries(),
	}
	if c.cfg.Owners {
		// Without --owners the loader shrinks the owners map to one entry,
		// which says nothing of the capture.
		m.MapSizes["owners"] = c.obj.maps.Owners.MaxEntries()
	}
	m.Programs = progs
	m.Events = capture.Events{
		Begin: counters[lockstatCounterCNT_BEGIN],
		End:   counters[lockstatCounterCNT_END],
		// Recorded waits only: an end that found the aggregation map
		// full is counted as lost.
		Waits:          counters[lockstatCounterCNT_END] - counters[lockstatCounterCNT_LOST_AGG_FULL] + inProgress,
		InProgress:     inProgress,
		Nested:         counters[lockstatCounterCNT_NESTED],
		UnmatchedBegin: counters[lockstatCounterCNT_UNMATCHED_BEGIN],
		UnmatchedEnd:   counters[lockstatCounterCNT_UNMATCHED_END],
		Rescued:        counters[lockstatCounterCNT_RESCUED_BEGIN] + counters[lockstatCounterCNT_RESCUED_END],
	}
	m.Stacks = capture.StackStats{
		Walked: counters[lockstatCounterCNT_STACK_WALKED],
		Known:  counters[lockstatCounterCNT_STACK_KNOWN],
		Failed: counters[lockstatCounterCNT_STACK_FAILED],
	}
	for _, l := range lostReasons {
		if n := counters[l.counter]; n > 0 {
			m.Lost = append(m.Lost, capture.Lost{Reason: l.reason, Count: n})
		}
	}
	// A wait is lost when its begin is: a missed end leaves the begin
	// open, and it is counted as unmatched when the next one replaces it.
	// A begin the kernel skipped is lost unless the rescue copy took it.
	var misses uint64
	for i, p := range c.att.probes {
		if p.begins {
			misses += progs[i].RecursionMisses
		}
	}
	if rescued := counters[lockstatCounterCNT_RESCUED_BEGIN]; misses > rescued {
		m.Lost = append(m.Lost, capture.Lost{Reason: "kernel skipped the probe: a BPF program was already running on the CPU", Count: misses - rescued})
	}
	if a := c.att.acquire; a != nil {
		acquire := *a
		acquire.Uncontended = counters[lockstatCounterCNT_FAST]
		acquire.Holds = counters[lockstatCounterCNT_HOLD]
		m.Acquire = &acquire
		m.Warnings = append(m.Warnings, noSpinSplit)
	}
	m.KallsymsRestricted = ksyms.Restricted()
	m.Warnings = append(m.Warnings, c.warnings...)
	if m.KallsymsRestricted {
		m.Warnings = append(m.Warnings, "kernel symbols are hidden (kernel.kptr_restrict, or not root): stacks and lock names are raw addresses")
	}
	// Off the hot path, once: names the programs could not give.
	if warnings, err := nameLocks(cp.Records, &kernel{}); err != nil {
		m.Warnings = append(m.Warnings, fmt.Sprintf("locks of other processes, runqueues and slab objects are not named: %v", err))
	} else {
		m.Warnings = append(m.Warnings, warnings...)
	}
	nameOwners(cp.Owners, cp.Records)
	m.Warnings = append(m.Warnings, c.cgroups.name(cp.Records)...)
	if n := counters[lockstatCounterCNT_STACK_FAILED]; n > 0 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%d waits recorded without a stack: the stack walk failed or the stack map was full (raise --map-size)", n))
	}
	cp.Sort()
	return cp, nil
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

func (c *Collector) readCounters() (map[lockstatCounter]uint64, error) {
	out := map[lockstatCounter]uint64{}
	for i := lockstatCounter(0); i < lockstatCounterCNT_MAX; i++ {
		var perCPU []uint64
		if err := c.obj.maps.Counters.Lookup(uint32(i), &perCPU); err != nil {
			return nil, fmt.Errorf("reading counter %d: %w", i, err)
		}
		out[i] = sum(perCPU)
	}
	return out, nil
}

// builder turns map entries into records, symbolizing each stack once.
type builder struct {
	spec    *lockspec.Spec
	ksyms   *kallsyms.Table
	stacks  *ebpf.Map
	records []capture.Record
	byKey   map[lockstatWaitKey]int
	frames  map[uint64][]string
}

// addWaits and addHolds put an aggregate's numbers into its record.
func addWaits(r *capture.Record, v *lockstatWaitStats) {
	r.Count, r.TotalNS, r.MinNS, r.MaxNS, r.SpinNS = v.Count, v.TotalNs, v.MinNs, v.MaxNs, v.SpinNs
}

func addHolds(r *capture.Record, v *lockstatWaitStats) {
	r.HoldCount, r.HoldTotalNS, r.HoldMinNS, r.HoldMaxNS = v.Count, v.TotalNs, v.MinNs, v.MaxNs
}

// readAggregate reads an aggregation map (waits, or holds of the same
// keys) into the records.
func (b *builder) readAggregate(m *ebpf.Map, add func(*capture.Record, *lockstatWaitStats)) error {
	var (
		k lockstatWaitKey
		v lockstatWaitStats
	)
	it := m.Iterate()
	for it.Next(&k, &v) {
		i, ok := b.byKey[k]
		if !ok {
			r, err := b.newRecord(k)
			if err != nil {
				return err
			}
			r.Comm = cString(v.Comm[:])
			switch lockstatLockName(v.LockName) {
			case lockstatLockNameLOCK_NAME_MMAP:
				r.Name = "mmap_lock"
			case lockstatLockNameLOCK_NAME_SIGHAND:
				r.Name = "siglock"
			}
			b.add(k, r)
			i = len(b.records) - 1
		}
		add(&b.records[i], &v)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("reading the aggregation map %s: %w", m, err)
	}
	return nil
}

func (b *builder) newRecord(k lockstatWaitKey) (capture.Record, error) {
	r := capture.Record{
		Type:     b.spec.Types[k.Type].Name,
		Lock:     capture.Addr(k.Lock),
		PID:      k.Pid,
		TID:      k.Tid,
		CgroupID: k.Cgroup,
	}
	if name, ok := b.ksyms.Data(k.Lock); ok {
		r.Name = name
	}
	stack, err := b.stack(k.Stack)
	if err != nil {
		return r, err
	}
	r.Stack = stack
	if i := b.spec.Caller(stack); i >= 0 {
		r.Caller = stack[i]
	}
	return r, nil
}

func (b *builder) add(k lockstatWaitKey, r capture.Record) {
	b.byKey[k] = len(b.records)
	b.records = append(b.records, r)
}

// stack symbolizes a stack once; frames are innermost first.
func (b *builder) stack(id uint64) ([]string, error) {
	if id == 0 {
		return []string{}, nil
	}
	if frames, ok := b.frames[id]; ok {
		return frames, nil
	}
	addrs := make([]uint64, b.stacks.ValueSize()/8)
	if err := b.stacks.Lookup(id, &addrs); err != nil {
		return nil, fmt.Errorf("reading stack %#x: %w", id, err)
	}
	frames := []string{}
	for _, a := range addrs {
		if a == 0 {
			break
		}
		frames = append(frames, b.ksyms.FormatFrame(a))
	}
	frames = frames[lockspec.TracingFrames(frames):]
	b.frames[id] = frames
	return frames, nil
}

// readHistogram reads a per-type histogram map: dense bucket counts per
// type, as the BPF programs index them.
func (b *builder) readHistogram(m *ebpf.Map) ([][]uint64, error) {
	buckets := make([][]uint64, len(b.spec.Types))
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

// readOpenWaits charges the waits still open at stopNS up to then, adds
// them to their type's buckets, and returns how many there were. The
// function probes open one at every acquire: those no longer than the
// threshold are not waits.
func (b *builder) readOpenWaits(threads, spins *ebpf.Map, stopNS, threshold uint64, buckets [][]uint64) (uint64, error) {
	var open []lockstatWaitSlot
	var (
		tid  uint32
		slot lockstatWaitSlot
	)
	it := threads.Iterate()
	for it.Next(&tid, &slot) {
		open = append(open, slot)
	}
	if err := it.Err(); err != nil {
		return 0, fmt.Errorf("reading the per-thread wait map: %w", err)
	}
	var perCPU []lockstatCpuWaits
	if err := spins.Lookup(uint32(0), &perCPU); err != nil {
		return 0, fmt.Errorf("reading the per-CPU wait map: %w", err)
	}
	for _, cw := range perCPU {
		for i := 0; i < int(cw.Depth) && i < len(cw.Slot); i++ {
			open = append(open, cw.Slot[i])
		}
	}

	var n uint64
	for _, s := range open {
		if s.Lock == 0 || s.Skip != 0 || s.Ts == 0 || s.Ts > stopNS {
			continue
		}
		wait := stopNS - s.Ts
		if wait <= threshold {
			continue
		}
		k := lockstatWaitKey{Lock: s.Lock, Stack: s.Stack, Cgroup: s.Cgroup, Pid: s.Pid, Tid: s.Tid, Type: uint32(s.Type)}
		i, ok := b.byKey[k]
		if !ok {
			r, err := b.newRecord(k)
			if err != nil {
				return 0, err
			}
			r.Comm = threadName(s.Pid, s.Tid)
			r.MinNS = wait
			b.add(k, r)
			i = len(b.records) - 1
		}
		r := &b.records[i]
		if r.Count == 0 {
			r.MinNS = wait
		}
		r.Count++
		r.InProgress++
		r.TotalNS += wait
		r.SpinNS += openSpin(s, stopNS)
		r.MinNS = min(r.MinNS, wait)
		r.MaxNS = max(r.MaxNS, wait)
		buckets[s.Type][capture.BucketIndex(wait)]++
		n++
	}
	return n, nil
}

// openSpin is the time a wait still open at stopNS spent spinning, as
// spin_total in spin.bpf.h counts it.
func openSpin(s lockstatWaitSlot, stopNS uint64) uint64 {
	if s.SpinFrom == 0 || s.SpinFrom > stopNS {
		return s.SpinNs
	}
	return s.SpinNs + stopNS - s.SpinFrom
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

// stats picks a record's waits or holds: count, total, min and max.
type stats func(capture.Record) (count, total, lo, hi uint64)

func waitStats(r capture.Record) (uint64, uint64, uint64, uint64) {
	return r.Count, r.TotalNS, r.MinNS, r.MaxNS
}

func holdStats(r capture.Record) (uint64, uint64, uint64, uint64) {
	return r.HoldCount, r.HoldTotalNS, r.HoldMinNS, r.HoldMaxNS
}

// histograms builds the histogram of every type with waits (or holds), with
// exact totals from its records.
func (b *builder) histograms(buckets [][]uint64, of stats) []capture.Histogram {
	var hists []capture.Histogram
	for i, t := range b.spec.Types {
		h := capture.NewHistogram(t.Name, buckets[i])
		if h.Count == 0 {
			continue
		}
		first := true
		h.TotalNS, h.MinNS, h.MaxNS = 0, 0, 0
		for _, r := range b.records {
			count, total, lo, hi := of(r)
			if r.Type != t.Name || count == 0 {
				continue
			}
			h.TotalNS += total
			if first || lo < h.MinNS {
				h.MinNS = lo
			}
			h.MaxNS = max(h.MaxNS, hi)
			first = false
		}
		hists = append(hists, h)
	}
	return hists
}

// ownerReasons names the reasons the kernel side gives for an unknown owner.
var ownerReasons = map[lockstatOwnerReason]string{
	lockstatOwnerReasonOWNER_NO_FIELD: capture.OwnerNoField,
	lockstatOwnerReasonOWNER_READERS:  capture.OwnerReaders,
	lockstatOwnerReasonOWNER_NONE:     capture.OwnerNone,
}

// ownerStackReasons names the reasons the kernel side gives for a known
// owner's waits without the owner's stack.
var ownerStackReasons = map[lockstatOwnerStackReason]string{
	lockstatOwnerStackReasonOWNER_STACK_RAN:    capture.OwnerStackRan,
	lockstatOwnerStackReasonOWNER_STACK_FAILED: capture.OwnerStackFailed,
	lockstatOwnerStackReasonOWNER_STACK_LOST:   capture.OwnerStackLost,
	lockstatOwnerStackReasonOWNER_STACK_EXITED: capture.OwnerStackExited,
}

// readOwners reads the owners map into owners, and charges the waits of
// spinning locks, which record no owner, to that reason from the records.
// Their locks are named later, by nameOwners.
func (b *builder) readOwners(m *ebpf.Map) ([]capture.Owner, error) {
	var (
		k      lockstatOwnerKey
		v      lockstatOwnerStats
		owners []capture.Owner
	)
	it := m.Iterate()
	for it.Next(&k, &v) {
		if v.Count == 0 {
			continue // begun, not ended by the stop
		}
		stack, err := b.stack(k.Stack)
		if err != nil {
			return nil, err
		}
		o := capture.Owner{
			Type: b.spec.Types[k.Type].Name, Lock: capture.Addr(k.Lock),
			Count: v.Count, TotalNS: v.TotalNs, Stack: stack, StackReason: ownerStackReasons[lockstatOwnerStackReason(k.StackReason)],
		}
		if lockstatOwnerReason(k.Reason) == lockstatOwnerReasonOWNER_KNOWN {
			o.Comm, o.PID, o.TID = cString(v.Comm[:]), v.Pid, k.Tid
			for i, state := range capture.OwnerStates {
				if v.StateCount[i] > 0 {
					o.States = append(o.States, capture.OwnerState{State: state, Count: v.StateCount[i], TotalNS: v.StateNs[i]})
				}
			}
		} else {
			o.Reason = ownerReasons[lockstatOwnerReason(k.Reason)]
		}
		owners = append(owners, o)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading the owner map: %w", err)
	}
	spinningTypes := map[string]bool{}
	for _, t := range b.spec.Types {
		spinningTypes[t.Name] = t.Spinning()
	}
	spinning := map[string]capture.Owner{}
	for _, r := range b.records {
		if !spinningTypes[r.Type] || r.Count == 0 {
			continue
		}
		key := r.Type + "\x00" + r.Lock.String()
		o, ok := spinning[key]
		if !ok {
			o = capture.Owner{Type: r.Type, Lock: r.Lock, Reason: capture.OwnerNoField, Stack: []string{}}
		}
		o.Count += r.Count
		o.TotalNS += r.TotalNS
		spinning[key] = o
	}
	for _, o := range spinning {
		owners = append(owners, o)
	}
	capture.SortOwners(owners)
	return owners, nil
}
