package collector

import (
	"fmt"
	"slices"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/kallsyms"
	"github.com/klockstat/klockstat/lockspec"
)

// assembly is what a capture is built from besides the snapshot: the
// configuration, and what Start found and loaded.
type assembly struct {
	cfg   Config
	probe string // the backend's name
	start time.Time
	// acquire describes what a function-probe backend probed, its
	// threshold included; nil for the tracepoint backends.
	acquire  *capture.Acquire
	warnings []string        // of Start
	symbols  *kallsyms.Table // loaded at Start
	// staticFrom is the image whose data symbols symbols has too, "" when none.
	staticFrom string
	locks      lockNamer
	cgroups    *cgroupPaths
	// unseen are the lock types whose waits the backend cannot see on
	// this kernel (unseenTypes).
	unseen []capture.UnseenType
	// runTimeOff is set when Start could not turn BPF run-time
	// statistics on: the programs' run times then count only while
	// another process had them on, and are left out.
	runTimeOff bool
	// coverage is when in the window the statistics counted the
	// programs' runs (runStats): a window of every period, or all of it
	// when another holder kept them on.
	coverage statsCoverage
	// ownerSampleHz is the rate owners were sampled at on their CPU,
	// 0 when they were not.
	ownerSampleHz int
}

// lockNamer names locks the programs could not name, from the kernel's
// objects as they are at the end of the capture: *kernel does, with BPF
// iterators (names.go).
type lockNamer interface {
	lockNames(addrs []uint64) (names map[uint64]string, warnings []string, err error)
}

// slabFieldNamer gives the locks inside slab objects ("&CACHE") their offset in the object and
// the struct field they are: *kernel does, from SLUB's sysfs and the kernel's BTF (slabfield.go).
type slabFieldNamer interface {
	slabFields(records []capture.Record) (warnings []string)
}

// lostReasons names the counters that mean an event was not recorded.
// A reason of a full map names the map, all of them sized by --map-nr-entries.
var lostReasons = []struct {
	counter lockstatCounter
	reason  string
	mapName string // the map that was full, "" for another reason
}{
	{lockstatCounterCNT_LOST_AGG_FULL, "aggregation map full (an entry per thread, lock and stack: raise --map-nr-entries, or narrow the capture with -p, --comm or -Y)", lockstatMapAggregate},
	{lockstatCounterCNT_LOST_WAIT_FULL, "per-thread wait map full (more live threads waited than --map-nr-entries: raise it)", lockstatMapThreadWaits},
	{lockstatCounterCNT_LOST_NEST_DEPTH, fmt.Sprintf("more than %d nested waits on one CPU", maxNest), ""},
	{lockstatCounterCNT_LOST_LEVELS, fmt.Sprintf("probes nested more than %d deep on one CPU", maxLevels), ""},
	{lockstatCounterCNT_LOST_HOLD_FULL, "hold not timed: per-lock hold map full (raise --map-nr-entries)", lockstatMapHolds},
	{lockstatCounterCNT_LOST_HOLD_AGG_FULL, "hold not stored: hold aggregation map full (raise --map-nr-entries)", lockstatMapHoldAggregate},
	{lockstatCounterCNT_LOST_OWNER_FULL, "wait not charged to its owner: owner map full (an entry per lock and owner: raise --map-nr-entries)", lockstatMapOwners},
	{lockstatCounterCNT_LOST_OWNER_SAMPLE, "owner sample not stored: owner sample map full (an entry per lock, owner and stack: raise --map-nr-entries)", lockstatMapOwnerSamples},
	{lockstatCounterCNT_LOST_CHAIN_FULL, "wait not charged to its chain of owners: chain map full (an entry per chain: raise --map-nr-entries)", lockstatMapOwnerChains},
}

// assemble builds the capture of a snapshot: records with symbolized
// stacks, histograms, owners, and the metadata with what was lost. Waits
// still open at the snapshot are charged up to its stop and marked in
// progress. Host, command-line and tool fields of the metadata are left to
// the caller. It reads nothing but its arguments, the lock names aside.
func assemble(snap snapshot, in assembly) (*capture.Capture, error) {
	b := builder{
		spec:      in.cfg.Spec,
		stackSkip: in.cfg.StackSkip,
		symbols:   in.symbols,
		stacks:    snap.stacks,
		byKey:     map[lockstatWaitKey]int{},
		frames:    map[uint64][]string{},
	}
	if err := b.addAggregate(snap.waits, addWaits); err != nil {
		return nil, err
	}
	buckets := cloneBuckets(snap.histogram)
	var threshold uint64 // an open acquire no longer than this is not a wait
	if in.acquire != nil {
		threshold = in.acquire.ThresholdNS
	}
	open := openWaits(snap.threadWaits, snap.spinWaits, snap.stopNS)
	inProgress, err := b.addOpenWaits(open, snap, threshold, buckets)
	if err != nil {
		return nil, err
	}
	cp := &capture.Capture{Version: capture.FormatVersion, Timeline: snap.timeline}
	cp.Histograms = b.histograms(buckets, waitStats)
	if in.acquire != nil {
		if err := b.addAggregate(snap.holds, addHolds); err != nil {
			return nil, err
		}
		cp.HoldHistograms = b.histograms(snap.holdHistogram, holdStats)
	}
	cp.Records = b.records
	if in.cfg.Owners {
		if cp.Owners, err = b.owners(snap.owners); err != nil {
			return nil, err
		}
		samples, err := b.ownerSamples(snap.ownerSamples)
		if err != nil {
			return nil, err
		}
		cp.Owners = capture.SpreadOwnerSamples(cp.Owners, samples)
		if cp.OwnerChains, err = b.ownerChains(snap.ownerChains, open, snap.stopNS, cp.Owners, snap.threadNames); err != nil {
			return nil, err
		}
	}
	cp.Meta = meta(snap, in, inProgress)
	m := &cp.Meta
	// Off the hot path, once: names the programs could not give. The processes' own locks first:
	// a process's mmap_lock is named after it, not after the slab cache holding its mm.
	if warnings, err := nameLocks(cp.Records, in.locks); err != nil {
		m.Warnings = append(m.Warnings, fmt.Sprintf("locks of other processes, runqueues and memory zones are not named: %v", err))
	} else {
		m.Warnings = append(m.Warnings, warnings...)
	}
	nameSlabLocks(cp.Records, snap.slabNames)
	if n := snap.counters[lockstatCounterCNT_LOST_SLAB_NAME]; n > 0 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%d locks inside slab objects are not named by their cache: the slab name map (%d entries) was full (raise --map-nr-entries)", n, snap.mapSizes["slab_names"]))
	}
	if f, ok := in.locks.(slabFieldNamer); ok {
		m.Warnings = append(m.Warnings, f.slabFields(cp.Records)...)
	}
	nameOwners(cp.Owners, cp.Records)
	nameChains(cp.OwnerChains, cp.Records)
	m.Warnings = append(m.Warnings, in.cgroups.name(cp.Records, snap.cgroups)...)
	if n := snap.counters[lockstatCounterCNT_STACK_FAILED]; n > 0 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%d waits recorded without a stack: the stack walk failed or the stack map was full (raise --map-nr-entries)", n))
	}
	cp.Sort()
	return cp, nil
}

// meta is the capture's metadata but the warnings of the lock and cgroup
// names, which the records give.
func meta(snap snapshot, in assembly, inProgress uint64) capture.Meta {
	counters := &snap.counters
	m := capture.Meta{
		Start:      in.start,
		DurationNS: snap.duration.Nanoseconds(),
		Probe:      in.probe,
		StackDepth: in.cfg.StackDepth,
		Types:      in.cfg.Spec.Names(),
		PIDs:       in.cfg.PIDs,
		Comm:       in.cfg.Comm,
		MapSizes:   map[string]uint32{},
		Programs:   slices.Clone(snap.programs),
		// The owners' on-CPU samples spread their charged wait.
		OwnerSampleHz: in.ownerSampleHz,
		Unseen:        slices.Clone(in.unseen),
	}
	if in.runTimeOff {
		for i := range m.Programs {
			m.Programs[i].RunTimeNS = 0
		}
	} else {
		m.ProgramsMeasuredNS = in.coverage.measured(snap.duration).Nanoseconds()
		m.ProgramsEvents = countedEvents(snap.counters)
		m.ProgramsMeasuredEvents = in.coverage.measuredEvents(m.ProgramsEvents)
	}
	for _, dir := range in.cfg.Cgroups {
		m.Cgroups = append(m.Cgroups, in.cgroups.hierarchy.PathOf(dir))
	}
	for name, size := range snap.mapSizes {
		// Without --owners the loader shrinks the owners map to one
		// entry, which says nothing of the capture.
		if name != "owners" || in.cfg.Owners {
			m.MapSizes[name] = size
		}
	}
	if in.cfg.Scope != "" {
		m.Scope = in.cfg.Scope
		m.CommandPIDs = slices.Sorted(slices.Values(snap.commandPIDs))
		m.CommandProcesses, m.CommandThreads, m.CommandThreadNS = snap.tree.processes, snap.tree.threads, snap.tree.threadNS
		if n := counters[lockstatCounterCNT_LOST_TREE_THREAD]; n > 0 {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%d threads of the workload were not timed (tree thread map full, %d entries): its thread time is short by theirs", n, snap.mapSizes["tree_threads"]))
		}
		if n := counters[lockstatCounterCNT_LOST_TREE_FULL]; n > 0 {
			m.Warnings = append(m.Warnings, treeFull(in.cfg.Scope, n, snap.mapSizes["command_tree"]))
		}
	}
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
			m.Lost = append(m.Lost, capture.Lost{Reason: l.reason, Count: n, Map: l.mapName})
		}
	}
	// A wait is lost when its begin is: a missed end leaves the begin
	// open, and it is counted as unmatched when the next one replaces it.
	// A begin the kernel skipped is lost unless the rescue copy took it.
	var misses uint64
	for _, p := range snap.programs {
		if p.Begins {
			misses += p.RecursionMisses
		}
	}
	if rescued := counters[lockstatCounterCNT_RESCUED_BEGIN]; misses > rescued {
		m.Lost = append(m.Lost, capture.Lost{Reason: "kernel skipped the probe: a BPF program was already running on the CPU", Count: misses - rescued})
	}
	if in.acquire != nil {
		acquire := *in.acquire
		acquire.Uncontended = counters[lockstatCounterCNT_FAST]
		acquire.Holds = counters[lockstatCounterCNT_HOLD]
		m.Acquire = &acquire
		m.Warnings = append(m.Warnings, noSpinSplit)
	}
	m.KallsymsRestricted = in.symbols.Restricted()
	m.KallsymsNoData, m.StaticNamesFrom = in.symbols.NoData(), in.staticFrom
	m.Warnings = append(m.Warnings, in.warnings...)
	if m.KallsymsRestricted {
		m.Warnings = append(m.Warnings, "kernel symbols are hidden (kernel.kptr_restrict, or not root): stacks and lock names are raw addresses")
	}
	return m
}

// treeFull is the warning of a workload that forked more processes than its tree's map holds:
// the processes not added, and their descendants, are not the command's.
func treeFull(scope string, missed uint64, entries uint32) string {
	lost := "their waits were not captured"
	if scope == capture.ScopeSystem {
		lost = "their waits count as other processes'"
	}
	return fmt.Sprintf("%d processes the workload forked, and what they forked, are missing from its process tree (%d entries, full): %s", missed, entries, lost)
}

// nameLocks names the records' locks that the programs left unnamed, and
// returns the namer's warnings.
func nameLocks(records []capture.Record, namer lockNamer) ([]string, error) {
	var addrs []uint64
	seen := map[uint64]bool{}
	for _, r := range records {
		if r.Name == "" && !seen[uint64(r.Lock)] {
			seen[uint64(r.Lock)] = true
			addrs = append(addrs, uint64(r.Lock))
		}
	}
	if len(addrs) == 0 {
		return nil, nil
	}
	names, warnings, err := namer.lockNames(addrs)
	if err != nil {
		return nil, err
	}
	for i := range records {
		if records[i].Name == "" {
			records[i].Name = names[uint64(records[i].Lock)]
		}
	}
	return warnings, nil
}

// nameSlabLocks names the records' locks still unnamed that the programs found inside slab
// objects, after their caches with perf's "&": "&kmalloc-512", "&ext4_inode_cache".
func nameSlabLocks(records []capture.Record, slabNames map[uint64]string) {
	for i := range records {
		if records[i].Name != "" {
			continue
		}
		if cache, ok := slabNames[uint64(records[i].Lock)]; ok && cache != "" {
			records[i].Name = "&" + cache
		}
	}
}

// nameOwners names the owners' locks as the records name them, once nameLocks has named what the
// programs could not: an owner and its waiters' records then show a lock by the same name.
func nameOwners(owners []capture.Owner, records []capture.Record) {
	names := recordLockNames(records)
	for i := range owners {
		owners[i].Name = names[owners[i].Lock]
	}
}

// recordLockNames are the names the records give their locks.
func recordLockNames(records []capture.Record) map[capture.Addr]string {
	names := map[capture.Addr]string{}
	for _, r := range records {
		if r.Name != "" {
			names[r.Lock] = r.Name
		}
	}
	return names
}

// cloneBuckets copies a histogram's buckets, which the waits still open
// are added to: the snapshot stays as read.
func cloneBuckets(buckets [][]uint64) [][]uint64 {
	out := make([][]uint64, len(buckets))
	for i, b := range buckets {
		out[i] = append([]uint64(nil), b...)
	}
	return out
}

// builder turns map entries into records, symbolizing each stack once.
type builder struct {
	spec      *lockspec.Spec
	stackSkip int // Config.StackSkip
	symbols   *kallsyms.Table
	stacks    map[uint64][]uint64
	records   []capture.Record
	byKey     map[lockstatWaitKey]int
	frames    map[uint64][]string
}

// addWaits and addHolds put an aggregate's numbers into its record.
func addWaits(r *capture.Record, v *lockstatWaitStats) {
	r.Count, r.TotalNS, r.MinNS, r.MaxNS, r.SpinNS = v.Count, v.TotalNs, v.MinNs, v.MaxNs, v.SpinNs
}

func addHolds(r *capture.Record, v *lockstatWaitStats) {
	r.HoldCount, r.HoldTotalNS, r.HoldMinNS, r.HoldMaxNS = v.Count, v.TotalNs, v.MinNs, v.MaxNs
}

// addAggregate adds the entries of an aggregation map (waits, or holds of
// the same keys) to the records.
func (b *builder) addAggregate(entries []aggregateEntry, add func(*capture.Record, *lockstatWaitStats)) error {
	for _, e := range entries {
		i, ok := b.byKey[e.key]
		if !ok {
			r, err := b.newRecord(e.key)
			if err != nil {
				return err
			}
			r.Comm = cString(e.value.Comm[:])
			switch lockstatLockName(e.value.LockName) {
			case lockstatLockNameLOCK_NAME_MMAP:
				r.Name = "mmap_lock"
			case lockstatLockNameLOCK_NAME_SIGHAND:
				r.Name = "siglock"
			}
			i = b.add(e.key, r)
		}
		add(&b.records[i], &e.value)
	}
	return nil
}

func (b *builder) newRecord(k lockstatWaitKey) (capture.Record, error) {
	if int(k.Type) >= len(b.spec.Types) {
		return capture.Record{}, fmt.Errorf("a wait of lock type %d, of %d types captured", k.Type, len(b.spec.Types))
	}
	r := capture.Record{
		Type:     b.spec.Types[k.Type].Name,
		Lock:     capture.Addr(k.Lock),
		PID:      k.Pid,
		TID:      k.Tid,
		CgroupID: k.Cgroup,
	}
	if name, ok := b.symbols.Data(k.Lock); ok {
		r.Name = name
	}
	r.Static = b.symbols.Static(k.Lock)
	stack, err := b.stack(k.Stack)
	if err != nil {
		return r, err
	}
	// perf's --stack-skip, counted after the tracing frames: their number varies by backend and is
	// known only once the frames are named, so the skip is made here, not in the stack walk.
	stack = stack[min(b.stackSkip, len(stack)):]
	r.Stack = stack
	if i := b.spec.Caller(stack); i >= 0 {
		r.Caller = stack[i]
	}
	return r, nil
}

// add appends a record and returns its index.
func (b *builder) add(k lockstatWaitKey, r capture.Record) int {
	b.byKey[k] = len(b.records)
	b.records = append(b.records, r)
	return len(b.records) - 1
}

// stack symbolizes a stack once; frames are innermost first.
func (b *builder) stack(id uint64) ([]string, error) {
	if id == 0 {
		return []string{}, nil
	}
	if frames, ok := b.frames[id]; ok {
		return frames, nil
	}
	addrs, ok := b.stacks[id]
	if !ok {
		return nil, fmt.Errorf("stack %#x missing from the snapshot", id)
	}
	frames := []string{}
	for _, a := range addrs {
		if a == 0 {
			break
		}
		frames = append(frames, b.symbols.FormatFrame(a))
	}
	frames = frames[lockspec.TracingFrames(frames):]
	b.frames[id] = frames
	return frames, nil
}

// addOpenWaits charges the waits still open at the snapshot's stop up to
// then, adds them to their type's buckets, and returns how many there
// were. The function probes open one at every acquire: those no longer
// than the threshold are not waits.
func (b *builder) addOpenWaits(open []lockstatWaitSlot, snap snapshot, threshold uint64, buckets [][]uint64) (uint64, error) {
	var n uint64
	for _, s := range open {
		wait := snap.stopNS - s.Ts
		if wait <= threshold {
			continue
		}
		if int(s.Type) >= len(buckets) {
			return 0, fmt.Errorf("a wait in progress of lock type %d, of %d types captured", s.Type, len(buckets))
		}
		k := lockstatWaitKey{Lock: s.Lock, Stack: s.Stack, Cgroup: s.Cgroup, Pid: s.Pid, Tid: s.Tid, Type: uint32(s.Type)}
		i, ok := b.byKey[k]
		if !ok {
			r, err := b.newRecord(k)
			if err != nil {
				return 0, err
			}
			r.Comm = snap.threadNames[s.Tid]
			r.MinNS = wait
			i = b.add(k, r)
		}
		r := &b.records[i]
		if r.Count == 0 {
			r.MinNS = wait
		}
		r.Count++
		r.InProgress++
		r.TotalNS += wait
		r.SpinNS += openSpin(s, snap.stopNS)
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
	lockstatOwnerReasonOWNER_NO_FIELD:    capture.OwnerNoField,
	lockstatOwnerReasonOWNER_READERS:     capture.OwnerReaders,
	lockstatOwnerReasonOWNER_NONE:        capture.OwnerNone,
	lockstatOwnerReasonOWNER_NEVER_SLEPT: capture.OwnerNeverSlept,
	lockstatOwnerReasonOWNER_PASSED:      capture.OwnerPassed,
}

// ownerStackReasons names the reasons the kernel side gives for a known
// owner's waits without the owner's stack.
var ownerStackReasons = map[lockstatOwnerStackReason]string{
	lockstatOwnerStackReasonOWNER_STACK_RAN:    capture.OwnerStackRan,
	lockstatOwnerStackReasonOWNER_STACK_FAILED: capture.OwnerStackFailed,
	lockstatOwnerStackReasonOWNER_STACK_LOST:   capture.OwnerStackLost,
	lockstatOwnerStackReasonOWNER_STACK_EXITED: capture.OwnerStackExited,
	lockstatOwnerStackReasonOWNER_STACK_BEFORE: capture.OwnerStackBefore,
}

// holderStates names what an owner did over a share of a wait, the kernel
// side's split of it; OWNER_HELD_UNSPLIT names none.
var holderStates = map[lockstatOwnerHeld]string{
	lockstatOwnerHeldOWNER_HELD_ON_CPU:   capture.HolderOnCPU,
	lockstatOwnerHeldOWNER_HELD_RUNNABLE: capture.HolderRunnable,
	lockstatOwnerHeldOWNER_HELD_OFF_CPU:  capture.HolderOffCPU,
}

// ownerWakers names how the kernel side found the thread that woke a waiter of a lock that records
// no owner, and which of its stacks it took.
var ownerWakers = map[lockstatOwnerWaker]struct{ blocker, where string }{
	lockstatOwnerWakerOWNER_WAKER_WRITER_WAITED: {capture.BlockerWriter, capture.BlockerStackAcquire},
	lockstatOwnerWakerOWNER_WAKER_WRITER:        {capture.BlockerWriter, capture.BlockerStackWake},
	lockstatOwnerWakerOWNER_WAKER_READER:        {capture.BlockerReader, capture.BlockerStackWake},
	lockstatOwnerWakerOWNER_WAKER_RELEASER:      {capture.BlockerReleaser, capture.BlockerStackWake},
}

// owners builds the owners of the owners map's entries, and charges the
// waits of spinning locks, which record no owner, to that reason from the
// records. Their locks are named later, by nameOwners.
func (b *builder) owners(entries []ownerEntry) ([]capture.Owner, error) {
	var owners []capture.Owner
	for _, e := range entries {
		k, v := e.key, e.value
		if v.Count == 0 {
			continue // begun, not ended by the stop
		}
		if int(k.Type) >= len(b.spec.Types) {
			return nil, fmt.Errorf("an owner of lock type %d, of %d types captured", k.Type, len(b.spec.Types))
		}
		stack, err := b.stack(k.Stack)
		if err != nil {
			return nil, err
		}
		o := capture.Owner{
			Type: b.spec.Types[k.Type].Name, Lock: capture.Addr(k.Lock),
			Count: v.Count, TotalNS: v.TotalNs, Stack: stack, StackReason: ownerStackReasons[lockstatOwnerStackReason(k.StackReason)],
		}
		switch lockstatOwnerReason(k.Reason) {
		case lockstatOwnerReasonOWNER_WOKEN:
			o.Comm, o.PID, o.TID = cString(v.Comm[:]), v.Pid, k.Tid
			w, ok := ownerWakers[lockstatOwnerWaker(k.Waker)]
			if !ok {
				return nil, fmt.Errorf("a blocker of lock type %d found as %d, not a known way", k.Type, k.Waker)
			}
			o.Blocker = w.blocker
			if len(stack) > 0 {
				o.Where = w.where
			}
		case lockstatOwnerReasonOWNER_KNOWN:
			o.Comm, o.PID, o.TID = cString(v.Comm[:]), v.Pid, k.Tid
			o.HolderState = holderStates[lockstatOwnerHeld(k.Held)]
			for i, state := range capture.OwnerStates {
				if v.StateCount[i] > 0 {
					o.States = append(o.States, capture.OwnerState{State: state, Count: v.StateCount[i], TotalNS: v.StateNs[i]})
				}
			}
		default:
			o.Reason = ownerReasons[lockstatOwnerReason(k.Reason)]
		}
		owners = append(owners, o)
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
