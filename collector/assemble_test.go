package collector

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/kallsyms"
)

// The tests of assemble build captures from fixed snapshots: no BPF, no
// root.

// assembleKallsyms is a kernel's symbol table in little: vmlinux code and
// data, and a module.
const assembleKallsyms = `ffffffff81000000 T _stext
ffffffff81100000 T down_write
ffffffff81180000 T mutex_lock
ffffffff81200000 T pipe_write
ffffffff81300000 T vfs_write
ffffffff81400000 T bpf_trace_run2
ffffffff81f00000 T _etext
ffffffff82000000 D jiffies_lock
ffffffff82000100 D init_mm
ffffffff82100000 B _end
ffffffffc0100000 t xfs_ilock	[xfs]
ffffffffc0100100 t xfs_file_write_iter	[xfs]
`

// restrictedKallsyms is what /proc/kallsyms shows under kptr_restrict:
// every address zero.
const restrictedKallsyms = `0000000000000000 T _stext
0000000000000000 T down_write
0000000000000000 D jiffies_lock
0000000000000000 t xfs_ilock	[xfs]
`

// Addresses of the fixture: frames, and locks.
const (
	atBPFTrace      = 0xffffffff81400010 // bpf_trace_run2+0x10: tracing machinery
	atDownWrite     = 0xffffffff81100020 // down_write+0x20
	atXfsIlock      = 0xffffffffc010003c // xfs_ilock+0x3c [xfs]
	atXfsWriteIter  = 0xffffffffc0100110 // xfs_file_write_iter+0x10 [xfs]
	atMutexLock     = 0xffffffff81180005 // mutex_lock+0x5
	atPipeWrite     = 0xffffffff81200040 // pipe_write+0x40
	lockJiffies     = 0xffffffff82000000 // jiffies_lock
	lockInitMM      = 0xffffffff82000178 // init_mm+0x78
	lockHeap        = 0xffff888100001000 // in no symbol
	lockHeapOther   = 0xffff888100002000
	stackXfs        = 0x11
	stackPipe       = 0x22
	stackOwner      = 0x33
	stopNS          = 10_000_000_000
	assembleMapSize = 16384
)

// assembleFixture is a snapshot of a few waits, with what assemble needs
// besides; each test changes what it is about.
type assembleFixture struct {
	snap  snapshot
	in    assembly
	namer *fakeNamer
	types map[string]uint32 // index of each type in the spec
}

// newAssembleFixture is a fixture of the lock types mutex, rwsem:W and spinlock, and more.
func newAssembleFixture(t *testing.T, symbols string, more ...string) *assembleFixture {
	t.Helper()
	spec := loadSpec(t, append([]string{"mutex", "rwsem:W", "spinlock"}, more...)...)
	table, err := kallsyms.Parse(strings.NewReader(symbols))
	if err != nil {
		t.Fatal(err)
	}
	f := &assembleFixture{namer: &fakeNamer{}, types: map[string]uint32{}}
	for i, typ := range spec.Types {
		f.types[typ.Name] = uint32(i)
	}
	histogram := make([][]uint64, len(spec.Types))
	for i := range histogram {
		histogram[i] = make([]uint64, histBuckets)
	}
	f.snap = snapshot{
		stopNS:    stopNS,
		duration:  2 * time.Second,
		histogram: histogram,
		stacks: map[uint64][]uint64{
			stackXfs:   {atBPFTrace, atDownWrite, atXfsIlock, atXfsWriteIter, 0, 0},
			stackPipe:  {atMutexLock, atPipeWrite, 0, 0, 0, 0},
			stackOwner: {atPipeWrite, 0, 0, 0, 0, 0},
		},
		threadNames: map[uint32]string{},
		mapSizes:    map[string]uint32{"aggregate": assembleMapSize, "stacks": assembleMapSize, "thread_waits": assembleMapSize, "owners": 1},
	}
	f.in = assembly{
		cfg:     Config{Spec: spec, StackDepth: 6, MapSize: assembleMapSize},
		probe:   "tp_btf",
		start:   time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC),
		symbols: table,
		locks:   f.namer,
		cgroups: &cgroupPaths{start: map[uint64]string{}},
	}
	return f
}

// wait adds an ended wait to the aggregate map and its type's histogram.
func (f *assembleFixture) wait(typ string, lock, stack uint64, tid uint32, count, total, lo, hi uint64) lockstatWaitKey {
	k := lockstatWaitKey{Lock: lock, Stack: stack, Pid: 100, Tid: tid, Type: f.types[typ]}
	v := lockstatWaitStats{Count: count, TotalNs: total, MinNs: lo, MaxNs: hi}
	copy(v.Comm[:], []int8{'w', 'o', 'r', 'k'})
	f.snap.waits = append(f.snap.waits, aggregateEntry{key: k, value: v})
	f.snap.histogram[k.Type][capture.BucketIndex(lo)] += count
	return k
}

// openWait is a wait of key k begun at ts and still open at the stop.
func openWait(k lockstatWaitKey, ts uint64) lockstatWaitSlot {
	return lockstatWaitSlot{Lock: k.Lock, Ts: ts, Stack: k.Stack, Cgroup: k.Cgroup, Tid: k.Tid, Pid: k.Pid, Type: uint16(k.Type)}
}

func (f *assembleFixture) assemble(t *testing.T) *capture.Capture {
	t.Helper()
	cp, err := assemble(f.snap, f.in)
	if err != nil {
		t.Fatalf("assemble: %v", err)
	}
	if err := cp.Validate(); err != nil {
		t.Fatalf("the capture does not validate: %v", err)
	}
	return cp
}

// fakeNamer names locks from a table, as the kernel's iterators would.
type fakeNamer struct {
	names    map[uint64]string
	warnings []string
	err      error
	asked    []uint64
}

func (n *fakeNamer) lockNames(addrs []uint64) (map[uint64]string, []string, error) {
	n.asked = append(n.asked, addrs...)
	return n.names, n.warnings, n.err
}

func record(t *testing.T, cp *capture.Capture, typ string, lock uint64) capture.Record {
	t.Helper()
	i := slices.IndexFunc(cp.Records, func(r capture.Record) bool { return r.Type == typ && r.Lock == capture.Addr(lock) })
	if i < 0 {
		t.Fatalf("no %s record of lock %#x among %d", typ, lock, len(cp.Records))
	}
	return cp.Records[i]
}

func histogram(cp *capture.Capture, typ string) capture.Histogram {
	for _, h := range cp.Histograms {
		if h.Type == typ {
			return h
		}
	}
	return capture.Histogram{}
}

func reasons(lost []capture.Lost) map[string]uint64 {
	out := map[string]uint64{}
	for _, l := range lost {
		out[l.Reason] = l.Count
	}
	return out
}

const (
	lostAggFull = "aggregation map full (an entry per thread, lock and stack: raise --map-nr-entries, or narrow the capture with -p, --comm or -Y)"
	lostSkipped = "kernel skipped the probe: a BPF program was already running on the CPU"
)

// TestAssembleEvents checks the events and losses of the metadata: waits
// are the ends recorded plus the waits in progress, and a begin the
// kernel skipped is lost unless its rescue copy took it.
func TestAssembleEvents(t *testing.T) {
	tests := []struct {
		name      string
		counters  map[lockstatCounter]uint64
		programs  []capture.ProgramStats
		open      int    // waits open at the stop, each 1 ms long
		threshold uint64 // of the function probes; 0 for tracepoints
		want      capture.Events
		wantLost  map[string]uint64
	}{{
		name:     "every end recorded",
		counters: map[lockstatCounter]uint64{lockstatCounterCNT_BEGIN: 12, lockstatCounterCNT_END: 12},
		want:     capture.Events{Begin: 12, End: 12, Waits: 12},
		wantLost: map[string]uint64{},
	}, {
		name:     "aggregation map full",
		counters: map[lockstatCounter]uint64{lockstatCounterCNT_BEGIN: 12, lockstatCounterCNT_END: 12, lockstatCounterCNT_LOST_AGG_FULL: 5},
		want:     capture.Events{Begin: 12, End: 12, Waits: 7},
		wantLost: map[string]uint64{lostAggFull: 5},
	}, {
		name:     "waits in progress",
		counters: map[lockstatCounter]uint64{lockstatCounterCNT_BEGIN: 14, lockstatCounterCNT_END: 12, lockstatCounterCNT_LOST_AGG_FULL: 1},
		open:     2,
		want:     capture.Events{Begin: 14, End: 12, Waits: 13, InProgress: 2},
		wantLost: map[string]uint64{lostAggFull: 1},
	}, {
		name:      "open acquires under the threshold are no waits",
		counters:  map[lockstatCounter]uint64{lockstatCounterCNT_BEGIN: 14, lockstatCounterCNT_END: 12},
		open:      2,
		threshold: 2_000_000,
		want:      capture.Events{Begin: 14, End: 12, Waits: 12},
		wantLost:  map[string]uint64{},
	}, {
		name: "nested, unmatched and rescued",
		counters: map[lockstatCounter]uint64{
			lockstatCounterCNT_BEGIN: 20, lockstatCounterCNT_END: 19, lockstatCounterCNT_NESTED: 4,
			lockstatCounterCNT_UNMATCHED_BEGIN: 2, lockstatCounterCNT_UNMATCHED_END: 1,
			lockstatCounterCNT_RESCUED_BEGIN: 3, lockstatCounterCNT_RESCUED_END: 2,
		},
		programs: []capture.ProgramStats{{Name: "btf_contention_end", RecursionMisses: 9}, {Name: "btf_contention_begin", Begins: true, RecursionMisses: 3}},
		want:     capture.Events{Begin: 20, End: 19, Waits: 19, Nested: 4, UnmatchedBegin: 2, UnmatchedEnd: 1, Rescued: 5},
		wantLost: map[string]uint64{},
	}, {
		name:     "skipped begins beyond the rescued",
		counters: map[lockstatCounter]uint64{lockstatCounterCNT_BEGIN: 20, lockstatCounterCNT_END: 20, lockstatCounterCNT_RESCUED_BEGIN: 3},
		programs: []capture.ProgramStats{
			{Name: "kprobe_acquire:down_write", Begins: true, RecursionMisses: 4},
			{Name: "kprobe_acquire:mutex_lock", Begins: true, RecursionMisses: 6},
			{Name: "kretprobe_acquire:mutex_lock", RecursionMisses: 50},
		},
		want:     capture.Events{Begin: 20, End: 20, Waits: 20, Rescued: 3},
		wantLost: map[string]uint64{lostSkipped: 7},
	}, {
		name: "every other loss",
		counters: map[lockstatCounter]uint64{
			lockstatCounterCNT_LOST_WAIT_FULL: 1, lockstatCounterCNT_LOST_NEST_DEPTH: 2, lockstatCounterCNT_LOST_LEVELS: 3,
			lockstatCounterCNT_LOST_HOLD_FULL: 4, lockstatCounterCNT_LOST_HOLD_AGG_FULL: 5, lockstatCounterCNT_LOST_OWNER_FULL: 6,
			lockstatCounterCNT_LOST_OWNER_SAMPLE: 7, lockstatCounterCNT_LOST_CHAIN_FULL: 8,
		},
		want: capture.Events{},
		wantLost: map[string]uint64{
			"per-thread wait map full (more live threads waited than --map-nr-entries: raise it)":                         1,
			"more than 4 nested waits on one CPU":                                                                         2,
			"probes nested more than 4 deep on one CPU":                                                                   3,
			"hold not timed: per-lock hold map full (raise --map-nr-entries)":                                             4,
			"hold not stored: hold aggregation map full (raise --map-nr-entries)":                                         5,
			"wait not charged to its owner: owner map full (an entry per lock and owner: raise --map-nr-entries)":         6,
			"owner sample not stored: owner sample map full (an entry per lock, owner and stack: raise --map-nr-entries)": 7,
			"wait not charged to its chain of owners: chain map full (an entry per chain: raise --map-nr-entries)":        8,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newAssembleFixture(t, assembleKallsyms)
			for c, n := range tt.counters {
				f.snap.counters[c] = n
			}
			f.snap.programs = tt.programs
			if tt.threshold > 0 {
				f.in.acquire = &capture.Acquire{ThresholdNS: tt.threshold}
				f.snap.holdHistogram = f.snap.histogram
			}
			for i := range tt.open {
				k := lockstatWaitKey{Lock: lockHeap, Stack: stackPipe, Pid: 200, Tid: 201 + uint32(i), Type: f.types["mutex"]}
				f.snap.threadWaits = append(f.snap.threadWaits, openWait(k, stopNS-1_000_000))
			}
			cp := f.assemble(t)
			if cp.Meta.Events != tt.want {
				t.Errorf("events %+v, want %+v", cp.Meta.Events, tt.want)
			}
			if got := reasons(cp.Meta.Lost); !mapsEqual(got, tt.wantLost) {
				t.Errorf("lost %v, want %v", got, tt.wantLost)
			}
		})
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestAssembleWaitsInProgress charges the waits open at the stop: added to
// the record of their key when it has ended waits, else a record of their
// own named by the thread's name; spinning waits of the CPUs up to their
// depth; slots freed, skipped or begun after the stop left out.
func TestAssembleWaitsInProgress(t *testing.T) {
	f := newAssembleFixture(t, assembleKallsyms)
	ended := f.wait("mutex", lockHeap, stackPipe, 301, 2, 3000, 1000, 2000)
	f.snap.threadWaits = []lockstatWaitSlot{
		openWait(ended, stopNS-5000), // 5 µs, the longest of its record
		openWait(lockstatWaitKey{Lock: lockHeapOther, Stack: stackXfs, Pid: 400, Tid: 401, Type: f.types["rwsem:W"]}, stopNS-700),
		{Lock: 0, Ts: stopNS - 100, Tid: 402, Pid: 400},                      // no wait open
		{Lock: lockHeapOther, Ts: stopNS + 100, Tid: 403, Pid: 400},          // begun after the stop
		{Lock: lockHeapOther, Ts: stopNS - 100, Tid: 404, Pid: 400, Skip: 1}, // not to be recorded
	}
	spin := openWait(lockstatWaitKey{Lock: lockJiffies, Pid: 500, Tid: 501, Type: f.types["spinlock"]}, stopNS-400)
	spin.SpinNs, spin.SpinFrom = 100, stopNS-250 // spun 100 ns, then again since 250 ns
	var cpu0, cpu1 lockstatCpuWaits
	cpu0.Depth, cpu0.Slot[0] = 1, spin
	cpu1.Slot[0] = openWait(lockstatWaitKey{Lock: lockJiffies, Pid: 600, Tid: 601, Type: f.types["spinlock"]}, stopNS-400) // depth 0: ended
	f.snap.spinWaits = []lockstatCpuWaits{cpu0, cpu1}
	f.snap.threadNames = map[uint32]string{301: "ended", 401: "writer", 501: "spinner"}
	f.snap.counters[lockstatCounterCNT_END] = 2
	before := slices.Clone(f.snap.histogram[f.types["mutex"]])

	cp := f.assemble(t)
	if len(cp.Records) != 3 {
		t.Fatalf("%d records, want 3: %+v", len(cp.Records), cp.Records)
	}
	mutex := record(t, cp, "mutex", lockHeap)
	if mutex.Count != 3 || mutex.InProgress != 1 || mutex.TotalNS != 8000 || mutex.MinNS != 1000 || mutex.MaxNS != 5000 || mutex.Comm != "work" {
		t.Errorf("mutex record %+v, want 3 waits of 8000 ns, 1000 to 5000 ns, 1 in progress, of work", mutex)
	}
	writer := record(t, cp, "rwsem:W", lockHeapOther)
	if writer.Count != 1 || writer.InProgress != 1 || writer.TotalNS != 700 || writer.MinNS != 700 || writer.MaxNS != 700 || writer.Comm != "writer" || writer.TID != 401 {
		t.Errorf("rwsem:W record %+v, want one wait of 700 ns in progress, of thread 401 named writer", writer)
	}
	spinner := record(t, cp, "spinlock", lockJiffies)
	if spinner.TID != 501 || spinner.TotalNS != 400 || spinner.SpinNS != 350 || spinner.Comm != "spinner" {
		t.Errorf("spinlock record %+v, want thread 501's wait of 400 ns, 350 ns spinning, named spinner", spinner)
	}
	if cp.Meta.Events.InProgress != 3 || cp.Meta.Events.Waits != 5 {
		t.Errorf("events %+v, want 3 in progress of 5 waits", cp.Meta.Events)
	}
	h := histogram(cp, "mutex")
	if h.Count != 3 || h.TotalNS != 8000 || h.MinNS != 1000 || h.MaxNS != 5000 {
		t.Errorf("mutex histogram of %d waits, %d ns, %d to %d ns; want 3, 8000, 1000 to 5000", h.Count, h.TotalNS, h.MinNS, h.MaxNS)
	}
	if h := histogram(cp, "rwsem:W"); h.Count != 1 || h.TotalNS != 700 {
		t.Errorf("rwsem:W histogram of %d waits, %d ns; want 1, 700", h.Count, h.TotalNS)
	}
	if !slices.Equal(f.snap.histogram[f.types["mutex"]], before) {
		t.Errorf("assemble changed the snapshot's histogram")
	}
}

// TestAssembleSymbols symbolizes stacks and static locks: module frames
// keep their module, the tracing machinery on top is dropped, the caller
// is the frame below the lock functions; under kptr_restrict, frames are
// raw addresses, no lock is named by symbol, and the capture says so.
func TestAssembleSymbols(t *testing.T) {
	tests := []struct {
		name         string
		symbols      string
		wantStack    []string
		wantCaller   string
		wantNames    map[uint64]string // lock -> name
		wantAsked    []uint64
		wantRestrict bool
	}{{
		name:       "kallsyms",
		symbols:    assembleKallsyms,
		wantStack:  []string{"down_write+0x20", "xfs_ilock+0x3c [xfs]", "xfs_file_write_iter+0x10 [xfs]"},
		wantCaller: "xfs_ilock+0x3c [xfs]",
		wantNames:  map[uint64]string{lockJiffies: "jiffies_lock", lockInitMM: "init_mm+0x78", lockHeap: "&xfs_inode"},
		wantAsked:  []uint64{lockHeap},
	}, {
		name:         "restricted kallsyms",
		symbols:      restrictedKallsyms,
		wantStack:    []string{"0xffffffff81400010", "0xffffffff81100020", "0xffffffffc010003c", "0xffffffffc0100110"},
		wantCaller:   "0xffffffff81400010",
		wantNames:    map[uint64]string{lockJiffies: "", lockInitMM: "", lockHeap: "&xfs_inode"},
		wantAsked:    []uint64{lockHeap, lockJiffies, lockInitMM},
		wantRestrict: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newAssembleFixture(t, tt.symbols)
			f.wait("rwsem:W", lockJiffies, stackXfs, 11, 1, 100, 100, 100)
			f.wait("rwsem:W", lockInitMM, stackXfs, 12, 1, 100, 100, 100)
			f.wait("rwsem:W", lockHeap, stackXfs, 13, 1, 100, 100, 100)
			f.namer.names = map[uint64]string{lockHeap: "&xfs_inode"}
			cp := f.assemble(t)
			for lock, name := range tt.wantNames {
				r := record(t, cp, "rwsem:W", lock)
				if r.Name != name {
					t.Errorf("lock %#x named %q, want %q", lock, r.Name, name)
				}
				if !slices.Equal(r.Stack, tt.wantStack) || r.Caller != tt.wantCaller {
					t.Errorf("stack %q from %q, want %q from %q", r.Stack, r.Caller, tt.wantStack, tt.wantCaller)
				}
			}
			slices.Sort(f.namer.asked)
			if !slices.Equal(f.namer.asked, tt.wantAsked) {
				t.Errorf("locks to name by the kernel's objects %#x, want %#x", f.namer.asked, tt.wantAsked)
			}
			said := slices.ContainsFunc(cp.Meta.Warnings, func(w string) bool { return strings.Contains(w, "kernel symbols are hidden") })
			if cp.Meta.KallsymsRestricted != tt.wantRestrict || said != tt.wantRestrict {
				t.Errorf("kallsyms restricted %v, warned %v; want %v", cp.Meta.KallsymsRestricted, said, tt.wantRestrict)
			}
		})
	}
}

// TestAssembleStaticLocks marks the locks of the kernel image's static data, named or not, on a
// kernel whose kallsyms lists data and on one whose kallsyms lists section markers only; there,
// an image's symbol table names them.
func TestAssembleStaticLocks(t *testing.T) {
	// assembleKallsyms as a kernel without CONFIG_KALLSYMS_ALL lists it: no data objects, no _end.
	var lines []string
	for _, l := range strings.SplitAfter(assembleKallsyms, "\n") {
		if !strings.Contains(l, " D ") && !strings.Contains(l, " B ") {
			lines = append(lines, l)
		}
	}
	noData := strings.Join(lines, "") + "ffffffff81f80000 D __start_rodata\n"
	image := []kallsyms.Symbol{ // linked 16 MiB below where the kernel runs
		{Addr: 0xffffffff80000000, Type: 'T', Name: "_stext"},
		{Addr: 0xffffffff80f00000, Type: 'T', Name: "_etext"},
		{Addr: 0xffffffff81000000, Type: 'D', Name: "jiffies_lock", Size: 0x40},
		{Addr: 0xffffffff81000100, Type: 'D', Name: "init_mm", Size: 0x400},
	}
	for _, tc := range []struct {
		name        string
		symbols     string
		image       bool
		wantNames   map[uint64]string
		wantNoData  bool
		wantFromImg string
	}{
		{"kallsyms lists data", assembleKallsyms, false, map[uint64]string{lockJiffies: "jiffies_lock", lockInitMM: "init_mm+0x78"}, false, ""},
		{"kallsyms lists markers only", noData, false, map[uint64]string{lockJiffies: "", lockInitMM: ""}, true, ""},
		{"an image names them", noData, true, map[uint64]string{lockJiffies: "jiffies_lock", lockInitMM: "init_mm+0x78"}, true, "/usr/lib/debug/boot/vmlinux"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAssembleFixture(t, tc.symbols)
			if tc.image {
				merged, _, err := f.in.symbols.WithImage(image)
				if err != nil {
					t.Fatal(err)
				}
				f.in.symbols, f.in.staticFrom = merged, tc.wantFromImg
			}
			f.wait("rwsem:W", lockJiffies, stackXfs, 11, 1, 100, 100, 100)
			f.wait("rwsem:W", lockInitMM, stackXfs, 12, 1, 100, 100, 100)
			f.wait("rwsem:W", lockHeap, stackXfs, 13, 1, 100, 100, 100)
			cp := f.assemble(t)
			for lock, name := range tc.wantNames {
				if r := record(t, cp, "rwsem:W", lock); r.Name != name || !r.Static {
					t.Errorf("lock %#x: name %q, static %v; want %q, static", lock, r.Name, r.Static, name)
				}
			}
			if r := record(t, cp, "rwsem:W", lockHeap); r.Static {
				t.Errorf("heap lock %#x marked static", uint64(lockHeap))
			}
			if cp.Meta.KallsymsNoData != tc.wantNoData || cp.Meta.StaticNamesFrom != tc.wantFromImg {
				t.Errorf("meta kallsyms_no_data %v, static_names_from %q; want %v, %q", cp.Meta.KallsymsNoData, cp.Meta.StaticNamesFrom, tc.wantNoData, tc.wantFromImg)
			}
		})
	}
}

// TestAssembleLockNames names the records' locks: the programs' own mmap_lock first, then what
// the kernel's objects name at the end, then the slab caches the programs found at the locks'
// first records; a process's lock named by the end's namer keeps that name over its slab
// cache's. A namer that fails costs only its names, and says why; a full slab name map is said.
func TestAssembleLockNames(t *testing.T) {
	const lockSlab = lockHeapOther + 0x1000
	for _, failed := range []bool{false, true} {
		f := newAssembleFixture(t, assembleKallsyms)
		f.wait("rwsem:W", lockHeap, stackXfs, 11, 1, 100, 100, 100)
		f.snap.waits[0].value.LockName = uint32(lockstatLockNameLOCK_NAME_MMAP)
		f.wait("rwsem:W", lockHeapOther, stackXfs, 12, 1, 100, 100, 100)
		f.wait("mutex", lockSlab, stackPipe, 13, 1, 100, 100, 100)
		f.namer.names = map[uint64]string{lockHeapOther: "mmap_lock (cat)"}
		f.namer.warnings = []string{"runqueue locks are not named"}
		f.snap.slabNames = map[uint64]string{lockHeapOther: "mm_struct", lockSlab: "pipe_inode_info"}
		f.snap.counters[lockstatCounterCNT_LOST_SLAB_NAME] = 3
		f.snap.mapSizes["slab_names"] = 1024
		wantOther := "mmap_lock (cat)"
		if failed {
			f.namer.err = errors.New("no BTF")
			wantOther = "&mm_struct"
		}
		cp := f.assemble(t)
		if got := record(t, cp, "rwsem:W", lockHeap).Name; got != "mmap_lock" {
			t.Errorf("lock the programs labelled mmap_lock named %q", got)
		}
		if got := record(t, cp, "rwsem:W", lockHeapOther).Name; got != wantOther {
			t.Errorf("failed %v: another process's lock named %q, want %q", failed, got, wantOther)
		}
		if got := record(t, cp, "mutex", lockSlab).Name; got != "&pipe_inode_info" {
			t.Errorf("failed %v: slab lock named %q, want &pipe_inode_info", failed, got)
		}
		if !slices.Equal(f.namer.asked, []uint64{lockHeapOther, lockSlab}) {
			t.Errorf("locks to name by the kernel's objects %#x, want %#x", f.namer.asked, []uint64{lockHeapOther, lockSlab})
		}
		wantWarnings := []string{
			"runqueue locks are not named",
			"3 locks inside slab objects are not named by their cache: the slab name map (1024 entries) was full (raise --map-nr-entries)",
		}
		if failed {
			wantWarnings[0] = "locks of other processes, runqueues and memory zones are not named: no BTF"
		}
		for _, w := range wantWarnings {
			if !slices.Contains(cp.Meta.Warnings, w) {
				t.Errorf("failed %v: warnings %q, want %q among them", failed, cp.Meta.Warnings, w)
			}
		}
	}
}

// TestAssembleOwners builds the owners: a known owner with its states and
// stack, an unknown one by reason, the spinning locks' waits charged to
// no owner field, owners named as their locks' records are; none without
// --owners, and the owners map's size listed only with it.
func TestAssembleOwners(t *testing.T) {
	for _, owners := range []bool{true, false} {
		f := newAssembleFixture(t, assembleKallsyms)
		f.in.cfg.Owners = owners
		f.snap.mapSizes["owners"] = assembleMapSize
		f.wait("mutex", lockHeap, stackPipe, 11, 3, 9000, 1000, 5000)
		f.wait("spinlock", lockJiffies, 0, 12, 2, 600, 200, 400)
		f.wait("spinlock", lockJiffies, 0, 13, 1, 100, 100, 100)
		f.namer.names = map[uint64]string{lockHeap: "&pipe_inode_info"}
		known := ownerEntry{
			key:   lockstatOwnerKey{Lock: lockHeap, Stack: stackOwner, Tid: 77, Type: f.types["mutex"], Reason: uint32(lockstatOwnerReasonOWNER_KNOWN)},
			value: lockstatOwnerStats{Count: 2, TotalNs: 7000, Pid: 70},
		}
		known.value.StateCount[lockstatOwnerStateOWNER_ON_CPU], known.value.StateNs[lockstatOwnerStateOWNER_ON_CPU] = 1, 2000
		known.value.StateCount[lockstatOwnerStateOWNER_SLEEP_D], known.value.StateNs[lockstatOwnerStateOWNER_SLEEP_D] = 1, 5000
		copy(known.value.Comm[:], []int8{'h', 'o', 'g'})
		f.snap.owners = []ownerEntry{
			known,
			{key: lockstatOwnerKey{Lock: lockHeap, Type: f.types["mutex"], Reason: uint32(lockstatOwnerReasonOWNER_NONE)}, value: lockstatOwnerStats{Count: 1, TotalNs: 2000}},
			{key: lockstatOwnerKey{Lock: lockHeapOther, Type: f.types["mutex"], Reason: uint32(lockstatOwnerReasonOWNER_KNOWN), Tid: 88}}, // begun, not ended
		}
		cp := f.assemble(t)
		if _, listed := cp.Meta.MapSizes["owners"]; listed != owners {
			t.Errorf("with --owners %v, owners map size listed: %v", owners, listed)
		}
		if !owners {
			if len(cp.Owners) != 0 {
				t.Errorf("owners %+v without --owners", cp.Owners)
			}
			continue
		}
		got := map[string]capture.Owner{}
		for _, o := range cp.Owners {
			got[o.Comm+o.Reason] = o
		}
		if len(cp.Owners) != 3 {
			t.Fatalf("%d owners, want 3: %+v", len(cp.Owners), cp.Owners)
		}
		hog := got["hog"]
		// The longest state first.
		wantStates := []capture.OwnerState{{State: capture.OwnerStates[lockstatOwnerStateOWNER_SLEEP_D], Count: 1, TotalNS: 5000}, {State: capture.OwnerStates[lockstatOwnerStateOWNER_ON_CPU], Count: 1, TotalNS: 2000}}
		if hog.PID != 70 || hog.TID != 77 || hog.Count != 2 || hog.TotalNS != 7000 || hog.Name != "&pipe_inode_info" ||
			!slices.Equal(hog.Stack, []string{"pipe_write+0x40"}) || !slices.Equal(hog.States, wantStates) {
			t.Errorf("known owner %+v, want hog (70/77), 2 waits of 7000 ns, asleep then on CPU, in pipe_write, of &pipe_inode_info", hog)
		}
		if none := got[capture.OwnerNone]; none.Count != 1 || none.TotalNS != 2000 || none.Lock != lockHeap {
			t.Errorf("owner unknown for %q: %+v, want 1 wait of 2000 ns", capture.OwnerNone, none)
		}
		if spin := got[capture.OwnerNoField]; spin.Type != "spinlock" || spin.Count != 3 || spin.TotalNS != 700 || spin.Name != "jiffies_lock" {
			t.Errorf("spinning lock's owner %+v, want 3 waits of 700 ns of jiffies_lock charged to %q", spin, capture.OwnerNoField)
		}
	}
}

// TestAssembleBlockers builds the blockers of a percpu rwsem's readers from the owners map's
// entries the sched_waking program made: a writer seen waiting for the lock, charged at the stack it
// waited at, a writer known as such only because it woke readers, at its stack then, and one whose
// stack walk failed, without a place; the waits the kernel could not charge keep their reason: no
// waker seen, or a waiter that never slept.
func TestAssembleBlockers(t *testing.T) {
	f := newAssembleFixture(t, assembleKallsyms, "pcpu-sem:R")
	f.in.cfg.Owners = true
	f.wait("pcpu-sem:R", lockHeap, stackPipe, 11, 6, 9000, 1000, 5000)
	woken := func(tid uint32, stack uint64, waker lockstatOwnerWaker, reason lockstatOwnerStackReason, count, total uint64) ownerEntry {
		e := ownerEntry{
			key: lockstatOwnerKey{Lock: lockHeap, Stack: stack, Tid: tid, Type: f.types["pcpu-sem:R"],
				Reason: uint32(lockstatOwnerReasonOWNER_WOKEN), StackReason: uint32(reason), Waker: uint32(waker)},
			value: lockstatOwnerStats{Count: count, TotalNs: total, Pid: 70},
		}
		copy(e.value.Comm[:], []int8{'w', 'r', int8('0' + tid%10)})
		return e
	}
	f.snap.owners = []ownerEntry{
		woken(71, stackOwner, lockstatOwnerWakerOWNER_WAKER_WRITER_WAITED, lockstatOwnerStackReasonOWNER_STACK_TAKEN, 3, 5000),
		woken(72, stackOwner, lockstatOwnerWakerOWNER_WAKER_WRITER, lockstatOwnerStackReasonOWNER_STACK_TAKEN, 1, 2000),
		woken(73, 0, lockstatOwnerWakerOWNER_WAKER_WRITER, lockstatOwnerStackReasonOWNER_STACK_FAILED, 1, 1500),
		{key: lockstatOwnerKey{Lock: lockHeap, Type: f.types["pcpu-sem:R"], Reason: uint32(lockstatOwnerReasonOWNER_NO_FIELD)}, value: lockstatOwnerStats{Count: 1, TotalNs: 500}},
		{key: lockstatOwnerKey{Lock: lockHeap, Type: f.types["pcpu-sem:R"], Reason: uint32(lockstatOwnerReasonOWNER_NEVER_SLEPT)}, value: lockstatOwnerStats{Count: 2, TotalNs: 700}},
	}
	cp := f.assemble(t)
	got := map[uint32]capture.Owner{}
	unknown := map[string]capture.Owner{}
	for _, o := range cp.Owners {
		if o.Reason != "" {
			unknown[o.Reason] = o
			continue
		}
		got[o.TID] = o
	}
	if len(cp.Owners) != 5 {
		t.Fatalf("%d owners, want 5: %+v", len(cp.Owners), cp.Owners)
	}
	want := map[uint32]capture.Owner{
		71: {Comm: "wr1", TID: 71, PID: 70, Blocker: capture.BlockerWriter, Where: capture.BlockerStackAcquire, Stack: []string{"pipe_write+0x40"}, Count: 3, TotalNS: 5000},
		72: {Comm: "wr2", TID: 72, PID: 70, Blocker: capture.BlockerWriter, Where: capture.BlockerStackWake, Stack: []string{"pipe_write+0x40"}, Count: 1, TotalNS: 2000},
		73: {Comm: "wr3", TID: 73, PID: 70, Blocker: capture.BlockerWriter, StackReason: capture.OwnerStackFailed, Count: 1, TotalNS: 1500},
	}
	for tid, w := range want {
		o := got[tid]
		if o.Comm != w.Comm || o.PID != w.PID || o.Blocker != w.Blocker || o.Where != w.Where || !slices.Equal(o.Stack, w.Stack) ||
			o.StackReason != w.StackReason || o.Count != w.Count || o.TotalNS != w.TotalNS || o.Reason != "" || len(o.States) != 0 || o.HolderState != "" {
			t.Errorf("blocker %d: %+v, want %+v", tid, o, w)
		}
	}
	if none := unknown[capture.OwnerNoField]; none.TotalNS != 500 || none.TID != 0 {
		t.Errorf("the wait no waker was seen for: %+v, want 500 ns charged to %q", none, capture.OwnerNoField)
	}
	if awake := unknown[capture.OwnerNeverSlept]; awake.Count != 2 || awake.TotalNS != 700 || awake.TID != 0 {
		t.Errorf("the waits that never slept: %+v, want 2 waits of 700 ns charged to %q", awake, capture.OwnerNeverSlept)
	}
}

// TestAssembleHolds adds the function probes' holds to the records of the
// same keys, with their own histograms, and their acquire counts to the
// metadata.
func TestAssembleHolds(t *testing.T) {
	f := newAssembleFixture(t, assembleKallsyms)
	f.in.probe = "fentry"
	f.in.acquire = &capture.Acquire{Functions: []string{"mutex_lock"}, ThresholdNS: 300}
	k := f.wait("mutex", lockHeap, stackPipe, 11, 2, 3000, 1000, 2000)
	f.snap.holdHistogram = make([][]uint64, len(f.in.cfg.Spec.Types))
	for i := range f.snap.holdHistogram {
		f.snap.holdHistogram[i] = make([]uint64, histBuckets)
	}
	held := lockstatWaitKey{Lock: lockHeapOther, Stack: stackPipe, Pid: 100, Tid: 11, Type: f.types["mutex"]}
	f.snap.holds = []aggregateEntry{
		{key: k, value: lockstatWaitStats{Count: 4, TotalNs: 400, MinNs: 50, MaxNs: 200}},
		{key: held, value: lockstatWaitStats{Count: 1, TotalNs: 90, MinNs: 90, MaxNs: 90}},
	}
	f.snap.holdHistogram[k.Type][capture.BucketIndex(50)] = 4
	f.snap.holdHistogram[k.Type][capture.BucketIndex(90)] = 1
	f.snap.counters[lockstatCounterCNT_FAST] = 40
	f.snap.counters[lockstatCounterCNT_HOLD] = 5

	cp := f.assemble(t)
	waited := record(t, cp, "mutex", lockHeap)
	if waited.Count != 2 || waited.HoldCount != 4 || waited.HoldTotalNS != 400 || waited.HoldMinNS != 50 || waited.HoldMaxNS != 200 {
		t.Errorf("record %+v, want 2 waits and 4 holds of 400 ns, 50 to 200 ns", waited)
	}
	if only := record(t, cp, "mutex", lockHeapOther); only.Count != 0 || only.HoldCount != 1 {
		t.Errorf("record of a hold alone %+v, want no wait and 1 hold", only)
	}
	if len(cp.HoldHistograms) != 1 || cp.HoldHistograms[0].Count != 5 || cp.HoldHistograms[0].TotalNS != 490 || cp.HoldHistograms[0].MinNS != 50 {
		t.Errorf("hold histograms %+v, want one of 5 holds, 490 ns from 50 ns", cp.HoldHistograms)
	}
	a := cp.Meta.Acquire
	if a == nil || a.Uncontended != 40 || a.Holds != 5 || a.ThresholdNS != 300 {
		t.Errorf("acquire %+v, want 40 uncontended, 5 holds, threshold 300 ns", a)
	}
	if f.in.acquire.Uncontended != 0 {
		t.Errorf("assemble changed the collector's acquire: %+v", f.in.acquire)
	}
	if len(cp.Meta.Warnings) == 0 || cp.Meta.Warnings[0] != noSpinSplit {
		t.Errorf("warnings %q, want first that spin and sleep are not split", cp.Meta.Warnings)
	}
}

// TestAssembleMetadata fills the metadata from the configuration and the
// snapshot, and warns of the stacks that failed after the names' warnings.
func TestAssembleMetadata(t *testing.T) {
	f := newAssembleFixture(t, assembleKallsyms)
	f.in.cfg.PIDs, f.in.cfg.Comm = []uint32{100}, "work"
	f.in.warnings = []string{"backend rawtp: refused; using tp_btf"}
	f.in.unseen = []capture.UnseenType{{Type: "spinlock", Reason: spinUnseenReason}}
	f.snap.programs = []capture.ProgramStats{{Name: "btf_contention_begin", Begins: true, RunCount: 30}}
	f.snap.counters[lockstatCounterCNT_STACK_WALKED] = 9
	f.snap.counters[lockstatCounterCNT_STACK_KNOWN] = 20
	f.snap.counters[lockstatCounterCNT_STACK_FAILED] = 1
	f.wait("mutex", lockHeap, 0, 11, 1, 100, 100, 100)
	f.namer.warnings = []string{"slab-allocated locks are not named by their cache"}
	cp := f.assemble(t)
	m := cp.Meta
	if !m.Start.Equal(f.in.start) || m.DurationNS != 2e9 || m.Probe != "tp_btf" || m.StackDepth != 6 || m.Comm != "work" || !slices.Equal(m.PIDs, []uint32{100}) {
		t.Errorf("metadata %+v does not say the configuration", m)
	}
	if len(m.Types) != 3 || !slices.Equal(m.Types, f.in.cfg.Spec.Names()) {
		t.Errorf("types %q, want the 3 of the configuration", m.Types)
	}
	wantSizes := map[string]uint32{"aggregate": assembleMapSize, "stacks": assembleMapSize, "thread_waits": assembleMapSize}
	if !mapsEqual(m.MapSizes, wantSizes) {
		t.Errorf("map sizes %v, want %v", m.MapSizes, wantSizes)
	}
	if m.Stacks != (capture.StackStats{Walked: 9, Known: 20, Failed: 1}) || len(m.Programs) != 1 || m.Programs[0].RunCount != 30 {
		t.Errorf("stacks %+v, programs %+v", m.Stacks, m.Programs)
	}
	want := []string{
		"backend rawtp: refused; using tp_btf",
		"slab-allocated locks are not named by their cache",
		"1 waits recorded without a stack: the stack walk failed or the stack map was full (raise --map-nr-entries)",
	}
	if !slices.Equal(m.Warnings, want) {
		t.Errorf("warnings %q, want %q", m.Warnings, want)
	}
	if !slices.Equal(m.Unseen, f.in.unseen) {
		t.Errorf("unseen types %v, want %v", m.Unseen, f.in.unseen)
	}
}

// TestAssembleRefusesBrokenSnapshots fails on a stack the snapshot lacks
// and on a lock type the capture does not have, rather than making up a
// record.
func TestAssembleRefusesBrokenSnapshots(t *testing.T) {
	tests := []struct {
		name   string
		change func(f *assembleFixture)
		want   string
	}{{
		name:   "stack missing",
		change: func(f *assembleFixture) { f.wait("mutex", lockHeap, 0x99, 11, 1, 100, 100, 100) },
		want:   "stack 0x99 missing from the snapshot",
	}, {
		name: "type out of range",
		change: func(f *assembleFixture) {
			f.types["bogus"] = 7
			f.wait("bogus", lockHeap, stackPipe, 11, 1, 100, 100, 100)
		},
		want: "a wait of lock type 7, of 3 types captured",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newAssembleFixture(t, assembleKallsyms)
			f.snap.histogram = append(f.snap.histogram, make([][]uint64, 8)...) // room for the bogus type's buckets
			for i := range f.snap.histogram {
				if f.snap.histogram[i] == nil {
					f.snap.histogram[i] = make([]uint64, histBuckets)
				}
			}
			tt.change(f)
			if _, err := assemble(f.snap, f.in); err == nil || err.Error() != tt.want {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestAssembleRunTimeNotMeasured: when Start could not turn BPF run-time
// statistics on, the programs' run times are left out, run counts kept:
// the kernel counted them only while another process had the statistics
// on, for part of the window at best, and a cost from them would
// contradict the warning that it was not measured.
func TestAssembleRunTimeNotMeasured(t *testing.T) {
	for _, off := range []bool{false, true} {
		f := newAssembleFixture(t, assembleKallsyms)
		f.in.runTimeOff = off
		f.snap.programs = []capture.ProgramStats{
			{Name: "btf_contention_begin", Begins: true, RunCount: 30, RunTimeNS: 9000},
			{Name: "raw_thread_free", RunCount: 4, RunTimeNS: 800, Hook: "sched_process_free"},
		}
		cp := f.assemble(t)
		if len(cp.Meta.Programs) != 2 || cp.Meta.Programs[0].RunCount != 30 || cp.Meta.Programs[1].RunCount != 4 {
			t.Fatalf("run time off %v: programs %+v, want both with their run counts", off, cp.Meta.Programs)
		}
		if got, want := cp.Meta.ProbeRunTimeNS(), map[bool]uint64{false: 9800, true: 0}[off]; got != want {
			t.Errorf("run time off %v: programs ran %d ns, want %d", off, got, want)
		}
		if f.snap.programs[0].RunTimeNS != 9000 {
			t.Error("assemble changed the snapshot's programs")
		}
	}
}

// Every reason of a full map names the map, which the summary's next step sizes by, and no other
// reason names one.
func TestLostReasonsNameTheirMap(t *testing.T) {
	for _, l := range lostReasons {
		if full := strings.Contains(l.reason, "map full"); full != (l.mapName != "") {
			t.Errorf("%q: map %q", l.reason, l.mapName)
		}
	}
}
