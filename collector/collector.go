package collector

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/kallsyms"
	"github.com/klockstat/klockstat/lockspec"
)

// The limits of lockstat.h that Go needs: taken from the generated types
// where they size one, else repeated here and checked against the BPF
// object by TestConstantsMatchTheBPFObject.
const (
	// MaxStackDepth is the deepest kernel stack bpf_get_stackid can walk
	// (PERF_MAX_STACK_DEPTH): the scratch space holds one more frame.
	MaxStackDepth = len(lockstatStackScratch{}.Ips) - 1
	// maxNest is MAX_NEST, the spinning waits open at once on one CPU.
	maxNest = len(lockstatCpuWaits{}.Slot)
	// maxLevels is MAX_LEVELS, the runs of the programs nested on one CPU.
	maxLevels = 4
	// MaxTypes is how many lock types one capture can tell apart (MAX_TYPES
	// in lockstat.h).
	MaxTypes = 32
	// MaxCgroups is how many cgroups --cgroup can name at once
	// (MAX_CGROUP_FILTERS in lockstat.h).
	MaxCgroups = 64
	// maxKstackShifters is MAX_KSTACK_SHIFTERS in lockstat.h.
	maxKstackShifters = 8
	// maxKeySkip is MAX_KEY_SKIP in lockstat.h.
	maxKeySkip = 4
	// histBuckets is HIST_BUCKETS in lockstat.h.
	histBuckets = capture.NumBuckets
)

// commandTreeEntries bounds a workload's process tree (command_tree in tree.bpf.h): the
// processes it forks during one capture, those that exited included. 32768, Linux's default
// pid_max on machines of up to 32 CPUs, is about 2.6 MiB of kernel memory; a build that forks
// more counts the rest in a warning.
const commandTreeEntries = 32768

// ErrPermission means the kernel refused to load BPF programs for lack of
// privileges: errors.Is matches the *LimitError of a missing capability.
var ErrPermission = errors.New("loading BPF programs needs root (CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN): run klockstat as root")

// Config says what to capture and how.
type Config struct {
	Spec       *lockspec.Spec // lock types to capture
	Probe      string         // backend name, or "auto"
	StackDepth int            // kernel frames per stack; 0 disables stacks
	StackSkip  int            // frames dropped at the top of a wait's stack, after the tracing frames
	MapSize    uint32         // entries of the aggregation, stack and per-thread maps
	PIDs       []uint32       // capture only these processes (tgids); empty: all
	Comm       string         // capture only processes whose main thread has this name
	// Cgroups are cgroup2 directories (cgroups.Hierarchy.Dir): capture only tasks in one of them
	// or in their descendants; empty: all.
	Cgroups []string
	Owners  bool // charge each wait to the lock's owner when it began, and the owner's stack
	// OwnerSampleHz is the rate, per CPU, at which owners are sampled on their CPU while others
	// wait for a lock they hold (DefaultOwnerSampleHz); 0 samples none. Only with Owners.
	OwnerSampleHz int
	// Scope is set when a workload runs (klockstat -- COMMAND): capture.ScopeCommand captures
	// only the waits of the workload's process tree, capture.ScopeSystem every process's; both
	// follow the tree (the processes klockstat itself forks, and theirs) into Meta.CommandPIDs.
	// Empty: no workload, no tree.
	Scope string
	// ImageSymbols, when set, reads the data symbols of the running kernel's image (a vmlinux's
	// symbol table) and says which image they are from, "" and none when there is no image to
	// read; an error is why that image cannot name them. Start calls it when kallsyms lists no
	// data symbols (CONFIG_KALLSYMS_ALL off), to name the static locks kallsyms cannot
	// (kallsyms.Table.WithImage, docs/lock-names.md); an error is one warning.
	ImageSymbols func() (path string, syms []kallsyms.Symbol, err error)
	// Log receives the warnings of Start as they arise (a lock function
	// skipped, a backend that failed before another one worked), one per
	// line; nil is os.Stderr. The capture's warnings repeat them.
	Log io.Writer
}

// Validate reports the first problem with the configuration, before any
// kernel object is created: the maps' memory included.
func (c Config) Validate() error {
	switch {
	case c.Spec == nil || len(c.Spec.Types) == 0:
		return errors.New("no lock types to capture")
	case len(c.Spec.Types) > MaxTypes:
		return fmt.Errorf("%d lock types in %s, at most %d can be captured at once (narrow them with -Y)", len(c.Spec.Types), c.Spec.Source, MaxTypes)
	case c.StackDepth < 0 || c.StackDepth > MaxStackDepth:
		return fmt.Errorf("--max-stack %d out of range (want 0 to %d)", c.StackDepth, MaxStackDepth)
	case c.MapSize < 64:
		return fmt.Errorf("--map-nr-entries %d too small (want at least 64)", c.MapSize)
	case len(c.Comm) > 15:
		return fmt.Errorf("--comm %q longer than the kernel's 15-byte task names", c.Comm)
	case c.OwnerSampleHz < 0 || c.OwnerSampleHz > MaxOwnerSampleHz:
		return fmt.Errorf("--owner-sample-hz %d out of range (want 0 to %d)", c.OwnerSampleHz, MaxOwnerSampleHz)
	case len(c.Cgroups) > MaxCgroups:
		return fmt.Errorf("%d --cgroup values, at most %d can filter one capture", len(c.Cgroups), MaxCgroups)
	case c.Scope != "" && c.Scope != capture.ScopeCommand && c.Scope != capture.ScopeSystem:
		return fmt.Errorf("--scope %q: want %s or %s", c.Scope, capture.ScopeCommand, capture.ScopeSystem)
	}
	if c.Probe != "auto" {
		if _, err := backendByName(c.Probe); err != nil {
			return err
		}
	}
	return c.checkMapMemory()
}

// Collector is a running capture: programs loaded and attached.
type Collector struct {
	cfg      Config
	backend  Backend
	obj      *object
	att      *attachment
	stats    *runStats // the BPF run-time statistics' windows; nil when the kernel refused them
	timeline *timeline
	cgroups  *cgroupPaths
	symbols  *kallsyms.Table // the kernel's, for the stacks and the locks' names
	// staticFrom is the image whose symbol table named static locks too, "" when none did.
	staticFrom string
	start      time.Time
	warnings   []string
	// spinErr is what SpinlockWaits answered, asked before the programs
	// attach when checkSpin; unseen the types the backend cannot see for it.
	checkSpin bool
	spinErr   error
	unseen    []capture.UnseenType
}

// Start loads the BPF programs, attaches them with the configured backend
// (or the first that works, for "auto") and starts counting. When no
// backend can attach, the error says what the kernel lacks for each, and
// which --probe values work; errors.Is(err, ErrUnavailable) tells a kernel
// without the hooks from a failure.
// A limit of the process (memory, open files, capabilities) is named
// first, with the fix, as a *LimitError.
func Start(cfg Config) (*Collector, error) {
	c, err := start(cfg)
	var limit *LimitError
	if err != nil && !errors.As(err, &limit) {
		if limit = limitReached(err, currentLimits(cfg)); limit != nil {
			return nil, limit
		}
	}
	return c, err
}

func start(cfg Config) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.keepHeapInCgroup()
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, memlockLimit(err, currentLimits(cfg))
	}
	spec, err := loadLockstat()
	if err != nil {
		return nil, fmt.Errorf("reading the embedded BPF object: %w", err)
	}
	if err := configure(spec, cfg); err != nil {
		return nil, err
	}

	// Listed before the capture starts: a cgroup removed during it keeps its path.
	c := &Collector{cfg: cfg, cgroups: newCgroupPaths()}
	k := &kernel{}
	candidates := Backends()
	if cfg.Probe != "auto" {
		b, _ := backendByName(cfg.Probe)
		candidates = []Backend{b}
	}
	if c.checkSpin = needsSpinCheck(cfg.Spec, candidates); c.checkSpin {
		// Answered while the programs load, and awaited before they
		// attach (load), so that its own spinlock waits, when the
		// kernel shows them, are not captured.
		go SpinlockWaits()
	}
	var failed []backendError
	for _, b := range candidates {
		err := b.Detect(k, cfg.Spec)
		if err == nil {
			err = c.load(spec, b, k)
		}
		if err == nil {
			break
		}
		if limit := limitReached(err, currentLimits(cfg)); limit != nil {
			c.Close()
			return nil, limit
		}
		failed = append(failed, backendError{b.Name(), err})
	}
	if c.backend == nil {
		c.Close()
		if err := mapSizeRefused(cfg, failed); err != nil {
			return nil, err
		}
		return nil, noBackend(cfg, k, failed)
	}
	for _, f := range failed {
		c.warn("backend %v; using %s", f, c.backend.Name())
	}
	for _, w := range c.att.warnings {
		c.warn("%s", w)
	}
	c.sayUnseen()
	// Read here unless the backend already did: Stop symbolizes with this
	// table and reads none of its own.
	if c.symbols, err = k.symbols(); err != nil {
		c.Close()
		return nil, fmt.Errorf("symbolizing: %w", err)
	}
	if c.symbols.NoData() && cfg.ImageSymbols != nil {
		c.addImageSymbols()
	}
	if c.att.acquire != nil {
		if err := c.calibrate(); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.startTimeline(); err != nil {
		c.Close()
		return nil, err
	}
	// The run-time statistics cost every BPF program run on the machine: they are on in a
	// window of every period of the capture, from its start (runstats.go). Said once a capture
	// runs: a failed capture needs no word about its cost.
	if c.stats, err = startRunStats(c.start, c.programRuns, c.programEvents); err != nil {
		c.warn("%s", runTimeStatsUnavailable(err, effectiveCaps()))
	}
	return c, nil
}

// addImageSymbols names static locks from the kernel image's symbol table as well as kallsyms,
// or says in one warning why it cannot.
func (c *Collector) addImageSymbols() {
	path, syms, err := c.cfg.ImageSymbols()
	if err == nil && path == "" {
		return
	}
	var t *kallsyms.Table
	if err == nil {
		t, _, err = c.symbols.WithImage(syms)
	}
	if err != nil {
		c.warn("static locks not named from %s: %v", cmp.Or(path, "the kernel's debug image"), err)
		return
	}
	c.symbols, c.staticFrom = t, path
}

// sayUnseen records the lock types the chosen backend cannot see, and says
// so on the log; a check of spinlock visibility that could not tell is a
// warning of the capture.
func (c *Collector) sayUnseen() {
	c.unseen = unseenTypes(c.cfg.Spec, c.backend, c.spinErr)
	for _, u := range c.unseen {
		fmt.Fprintf(c.log(), "klockstat: %s waits cannot be seen on this kernel: %s\n", u.Type, u.Reason)
	}
	if c.spinErr != nil && !c.backend.timesAcquires() && !errors.Is(c.spinErr, ErrSpinlockWaitsUnseen) {
		c.warn("spinlock waits may be missing: %v", c.spinErr)
	}
}

// startTimeline starts the window: its start, from which the timeline's buckets count.
func (c *Collector) startTimeline() error {
	start, control := c.obj.vars.TimelineStart, c.obj.vars.TimelineControl
	now, err := monotonicNow()
	if err != nil {
		return err
	}
	c.start = time.Now()
	if err := start.Set(now); err != nil {
		return fmt.Errorf("starting the timeline: %w", err)
	}
	c.timeline = newTimeline(c.obj.maps.Timeline, control, len(c.cfg.Spec.Types))
	c.timeline.grow(c.start)
	return nil
}

func (c *Collector) warn(format string, args ...any) {
	w := fmt.Sprintf(format, args...)
	c.warnings = append(c.warnings, w)
	fmt.Fprintf(c.log(), "klockstat: warning: %s\n", w)
}

func (c *Collector) log() io.Writer {
	if c.cfg.Log == nil {
		return os.Stderr
	}
	return c.cfg.Log
}

// backendError is why one backend could not be used.
type backendError struct {
	backend string
	err     error
}

func (e backendError) Error() string { return e.backend + ": " + e.err.Error() }
func (e backendError) Unwrap() error { return e.err }

// noBackendError is why each backend "auto" tried could not attach.
type noBackendError []backendError

func (e noBackendError) Error() string {
	reasons := make([]string, len(e))
	for i, f := range e {
		reasons[i] = f.Error()
	}
	return "no probe backend works on this kernel: " + strings.Join(reasons, "; ")
}

func (e noBackendError) Unwrap() []error {
	errs := make([]error, len(e))
	for i, f := range e {
		errs[i] = f
	}
	return errs
}

// noBackend explains why no backend could attach: what each tried lacks,
// and which --probe values work on this kernel.
func noBackend(cfg Config, k *kernel, failed []backendError) error {
	if cfg.Probe == "auto" {
		return noBackendError(failed)
	}
	var work []string
	for _, b := range Backends() {
		if b.Name() != cfg.Probe && b.Detect(k, cfg.Spec) == nil {
			work = append(work, b.Name())
		}
	}
	alternatives := "no other --probe value works on this kernel either"
	if len(work) > 0 {
		alternatives = fmt.Sprintf("--probe values that work on this kernel: %s (auto picks %s)", strings.Join(work, ", "), work[0])
	}
	return fmt.Errorf("--probe %w; %s", failed[0], alternatives)
}

// specsOf returns the parts of a BPF object spec as bpf2go typed them: a
// map, program or variable renamed in C fails to compile here, not at run
// time. They point into spec, so changing them changes spec.
func specsOf(spec *ebpf.CollectionSpec) (*lockstatSpecs, error) {
	var s lockstatSpecs
	if err := spec.Assign(&s); err != nil {
		return nil, fmt.Errorf("BPF object does not match its generated code (stale? run go generate ./...): %w", err)
	}
	return &s, nil
}

// configure writes the run-time options into the object before it is loaded.
func configure(spec *ebpf.CollectionSpec, cfg Config) error {
	s, err := specsOf(spec)
	if err != nil {
		return err
	}
	comm := [16]byte{}
	copy(comm[:], cfg.Comm)
	err = setVariables([]variable{
		{s.SelfTgid, uint32(os.Getpid())},
		{s.StackDepth, uint32(cfg.StackDepth)},
		{s.FilterPids, len(cfg.PIDs) > 0},
		{s.FilterComm, cfg.Comm != ""},
		{s.CommFilter, comm},
		{s.CgroupFilters, uint32(len(cfg.Cgroups))},
		{s.FlagType, cfg.Spec.FlagTable()},
		{s.TimelineTypes, uint32(len(cfg.Spec.Types))},
		{s.TimelineControl, uint64(timelineFirstShift)},
		{s.OwnersOn, cfg.Owners},
		{s.TreeOn, cfg.Scope != ""},
		{s.FilterCommand, cfg.Scope == capture.ScopeCommand},
	})
	if err != nil {
		return err
	}

	for _, m := range []*ebpf.MapSpec{s.Aggregate, s.ThreadWaits, s.Stacks, s.Holds, s.HoldAggregate, s.Owners, s.OwnerMarks, s.OwnerSamples, s.OwnerChains} {
		m.MaxEntries = cfg.MapSize
	}
	if !cfg.Owners {
		s.Owners.MaxEntries, s.OwnerMarks.MaxEntries, s.OwnerExits.MaxEntries = 1, 1, 1
		s.OwnerSamples.MaxEntries, s.OwnerChains.MaxEntries, s.OwnerTasks.MaxEntries = 1, 1, 1
		s.WriterPaths.MaxEntries = 1
	}
	s.SlabNames.MaxEntries = slabNameEntries(cfg.MapSize)
	s.Stacks.ValueSize = uint32(max(cfg.StackDepth, 1) * 8)
	for _, m := range []*ebpf.MapSpec{s.Histogram, s.HoldHistogram} {
		m.MaxEntries = uint32(len(cfg.Spec.Types) * histBuckets)
	}
	s.Timeline.MaxEntries = uint32(2 * len(cfg.Spec.Types) * timelineBuckets)
	s.PidFilter.MaxEntries = uint32(max(len(cfg.PIDs), 1))
	if cfg.Scope != "" {
		s.CommandTree.MaxEntries = commandTreeEntries
		s.TreeThreads.MaxEntries = commandTreeEntries
	}
	s.CgroupFilter.MaxEntries = uint32(max(len(cfg.Cgroups), 1))
	for _, pid := range cfg.PIDs {
		s.PidFilter.Contents = append(s.PidFilter.Contents, ebpf.MapKV{Key: pid, Value: uint8(1)})
	}
	return nil
}

// slabNameEntries sizes the slab name map: an entry per slab lock, and a capture's records are
// mostly of fewer locks than stacks and threads, so a quarter of the records' entries.
func slabNameEntries(mapSize uint32) uint32 { return max(mapSize/4, 1024) }

// variable is a value for one of the BPF object's const volatile globals.
type variable struct {
	spec  *ebpf.VariableSpec
	value any
}

func setVariables(vars []variable) error {
	for _, v := range vars {
		if err := v.spec.Set(v.value); err != nil {
			return fmt.Errorf("setting BPF variable %s: %w", v.spec.Name, err)
		}
	}
	return nil
}

// load loads the object for a backend, only the programs it needs (a
// program for a hook the kernel lacks would fail to load), and attaches it.
func (c *Collector) load(configured *ebpf.CollectionSpec, b Backend, k *kernel) error {
	spec := configured.Copy()
	s, err := specsOf(spec)
	if err != nil {
		return err
	}
	progs := &s.lockstatProgramSpecs
	exit := b.schedHook("sched_process_free", schedPrograms{raw: progs.RawThreadFree, perf: progs.TpThreadFree})
	fork := b.schedHook("sched_process_fork", schedPrograms{raw: progs.RawTreeFork, perf: progs.TpTreeFork})
	switcher := b.schedHook("sched_switch", schedPrograms{raw: progs.RawOwnerSwitch, perf: progs.TpOwnerSwitch, btf: progs.BtfOwnerSwitch})
	waking := b.schedHook("sched_waking", schedPrograms{raw: progs.RawOwnerWaking, perf: progs.TpOwnerWaking})
	layout := b.StackLayout()
	vars := []variable{
		{s.StackSkip, layout.Skip},
		{s.OwnerSwitchSkip, switcher.skip},
		{s.CtxOnStack, layout.ContextOnStack},
		{s.LeadFrames, layout.Lead},
		{s.TypeOwnerFlags, typeOwnerFlags(c.cfg.Spec)},
	}
	if layout.ContextOnStack && c.cfg.StackDepth > 0 {
		lo, hi := k.kstackShifterBounds()
		skipLo, skipHi := k.keySkipBounds()
		vars = append(vars, variable{s.KstackShifterLo, lo}, variable{s.KstackShifterHi, hi},
			variable{s.KeySkipLo, skipLo}, variable{s.KeySkipHi, skipHi})
	}
	if c.cfg.Owners {
		lo, hi := k.percpuDownWriteBounds()
		vars = append(vars, variable{s.PcpuDownWriteLo, lo}, variable{s.PcpuDownWriteHi, hi})
	}
	own, err := b.variables(k, s, c.cfg.Spec)
	if err != nil {
		return err
	}
	if err := setVariables(append(vars, own...)); err != nil {
		return err
	}
	if !b.timesAcquires() {
		for _, m := range []*ebpf.MapSpec{s.Holds, s.HoldAggregate, s.HoldHistogram, s.CalibSamples} {
			m.MaxEntries = 1
		}
	}
	loaded := b.Programs(progs)
	frees := freesThreads(c.cfg, pidMax())
	if frees {
		loaded = append(loaded, exit.spec)
	}
	if c.cfg.Scope != "" {
		loaded = append(loaded, fork.spec)
	}
	sampleHz := 0
	if c.cfg.Owners {
		loaded = append(loaded, switcher.spec, waking.spec)
		sampleHz = c.cfg.OwnerSampleHz
	}
	if sampleHz > 0 {
		loaded = append(loaded, progs.OwnerSample)
	}
	obj, err := newObject(spec, progs, loaded)
	if err != nil {
		return err
	}
	obj.kernel, obj.locks = k, c.cfg.Spec
	if err := fillCgroupFilter(obj.maps.CgroupFilter, c.cfg.Cgroups); err != nil {
		obj.close()
		return err
	}
	if c.checkSpin {
		c.spinErr = SpinlockWaits()
	}
	att, err := b.Attach(obj)
	if err != nil {
		obj.close()
		return err
	}
	if frees {
		l, p, err := exit.attach(obj)
		if err != nil {
			att.close()
			obj.close()
			return err
		}
		// First among the links, so detached last.
		att.links = append([]link.Link{l}, att.links...)
		att.probes = append(att.probes, p)
	}
	var hooks []schedHook
	if c.cfg.Scope != "" {
		hooks = append(hooks, fork)
	}
	if c.cfg.Owners {
		hooks = append(hooks, switcher, waking)
	}
	for _, h := range hooks {
		l, p, err := h.attach(obj)
		if err != nil {
			att.close()
			obj.close()
			return err
		}
		att.links = append(att.links, l)
		att.probes = append(att.probes, p)
	}
	sampleOwners(sampleHz, obj, att)
	c.backend, c.obj, c.att = b, obj, att
	return nil
}

// freesThreads says whether a capture attaches the program run at every thread's free
// (free_thread in lockstat.bpf.c), given the kernel's pid_max (0: unknown). The owners and the
// workload's tree keep state of their own there. Otherwise it only deletes the thread's wait
// slot, so that threads that come and go do not fill the per-thread map; a map with room for
// every thread id the kernel hands out cannot fill, as a thread id that comes round again finds
// its slot idle since its last thread's wait ended. The program then costs a run at every
// thread's free for nothing: on stress-ng --fork, 4.7 frees per contention event, 230 ns each.
// A pid_max raised during the capture is met by the map's lost-wait count.
func freesThreads(cfg Config, pidMax uint64) bool {
	return cfg.Owners || cfg.Scope != "" || pidMax == 0 || uint64(cfg.MapSize) < pidMax
}

// pidMax is the largest thread id the kernel hands out, plus one; 0 when it cannot be read, or
// in a pid namespace of its own (whose pid_max may not be the machine's, from Linux 6.14).
func pidMax() uint64 {
	var ns unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &ns); err != nil || ns.Ino != initPidNamespace {
		return 0
	}
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// initPidNamespace is the inode number of the initial pid namespace (PROC_PID_INIT_INO).
const initPidNamespace = 0xEFFFFFFC

// schedHook is a bookkeeping program on a sched tracepoint. Four exist: the
// program that frees a thread's wait slot at sched_process_free, the one
// that takes lock owners' stacks as they leave a CPU at sched_switch, and
// re-reads the owner of the lock a waiter goes back to sleep on
// (owner.bpf.h), the one that notes who wakes a waiter of a lock that
// records no owner at sched_waking (owner.bpf.h), and the one that follows
// a workload's process tree at sched_process_fork (tree.bpf.h).
type schedHook struct {
	spec  *ebpf.ProgramSpec
	event string
	perf  bool // attached as a perf event, not as a raw tracepoint
	btf   bool // a BTF-enabled raw tracepoint (tp_btf)
	// skip is how many frames of probe machinery are on top of the stacks
	// the program takes: as for a backend's programs on the same kind of
	// hook.
	skip uint32
}

// schedPrograms are a sched hook's programs for each kind of hook: raw
// tracepoint, perf event, and BTF-enabled raw tracepoint (nil for none).
type schedPrograms struct{ raw, perf, btf *ebpf.ProgramSpec }

// rawSchedHook attaches a sched hook as a raw tracepoint (Linux 4.17+,
// older than every backend's hooks).
func rawSchedHook(event string, raw *ebpf.ProgramSpec) schedHook {
	return schedHook{spec: raw, event: event, skip: rawTracepoint{}.StackLayout().Skip}
}

// attach attaches the hook's program of obj, and returns the probe whose run
// statistics go in the capture apart from those of the lock events'.
func (h schedHook) attach(obj *object) (link.Link, probe, error) {
	prog := obj.program(h.spec)
	var l link.Link
	var err error
	switch {
	case h.perf:
		l, err = link.Tracepoint("sched", h.event, prog, nil)
	case h.btf:
		l, err = link.AttachTracing(link.TracingOptions{Program: prog})
	default:
		l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: h.event, Program: prog})
	}
	if err != nil {
		return nil, probe{}, fmt.Errorf("attaching %s to sched:%s: %w", h.spec.Name, h.event, err)
	}
	return l, probe{name: h.spec.Name, prog: prog, hook: h.event}, nil
}

// typeOwnerFlags gives each lock type the contention flags its owner word is
// read by: its first, for the function probes, which see none.
func typeOwnerFlags(spec *lockspec.Spec) [MaxTypes]uint32 {
	var flags [MaxTypes]uint32
	for i, t := range spec.Types {
		if len(t.Flags) > 0 && i < MaxTypes {
			flags[i] = uint32(t.Flags[0])
		}
	}
	return flags
}

// newObject loads the maps of spec and the given programs of it: a
// program for a hook the kernel lacks would fail to load.
func newObject(spec *ebpf.CollectionSpec, specs *lockstatProgramSpecs, programs []*ebpf.ProgramSpec) (*object, error) {
	loaded := spec.Copy()
	for name := range loaded.Programs {
		if !slices.ContainsFunc(programs, func(p *ebpf.ProgramSpec) bool { return p.Name == name }) {
			delete(loaded.Programs, name)
		}
	}
	coll, err := ebpf.NewCollection(loaded)
	if err != nil {
		// The verifier's log, for a program it rejected; not for one the
		// kernel had no memory or descriptor for.
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) && !outOfResources(err) {
			return nil, fmt.Errorf("loading BPF programs: %+v", ve)
		}
		return nil, fmt.Errorf("loading BPF programs: %w", err)
	}
	obj := &object{spec: spec, progs: specs, coll: coll, byName: maps.Clone(coll.Maps)}
	for _, typed := range []any{&obj.maps, &obj.vars} {
		if err := coll.Assign(typed); err != nil {
			obj.close()
			return nil, fmt.Errorf("BPF object does not match its generated code (stale? run go generate ./...): %w", err)
		}
	}
	return obj, nil
}

// Backend is the name of the backend in use.
func (c *Collector) Backend() string { return c.backend.Name() }

// Events returns how many contention events were captured so far; cheap
// enough for a progress line.
func (c *Collector) Events() uint64 {
	var perCPU []uint64
	if err := c.obj.maps.Counters.Lookup(uint32(lockstatCounterCNT_BEGIN), &perCPU); err != nil {
		return 0
	}
	return sum(perCPU)
}

// Close detaches and frees everything. It is safe to call more than once.
func (c *Collector) Close() error {
	// First: the statistics' windows read the programs' runs.
	c.stats.stop()
	c.stats = nil
	if c.timeline != nil {
		c.timeline.stopGrowing()
	}
	if c.att != nil {
		c.att.close()
	}
	if c.obj != nil {
		c.obj.close()
		c.obj = nil
	}
	return nil
}

func sum(v []uint64) uint64 {
	var s uint64
	for _, x := range v {
		s += x
	}
	return s
}

// cString converts a NUL-padded kernel char array.
func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
