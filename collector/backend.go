package collector

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/lockspec"
)

// A Backend attaches the BPF programs to one kind of kernel hook. All
// backends feed the same maps, so what they capture reads the same way.
type Backend interface {
	// Name is the --probe value that selects the backend.
	Name() string
	// Programs picks the programs of the BPF object loaded with its maps,
	// the one that sees a wait begin first; the others are not loaded.
	Programs(p *lockstatProgramSpecs) []*ebpf.ProgramSpec
	// StackLayout says how kernel stacks look from the backend's programs.
	StackLayout() StackLayout
	// Detect attaches a program that does nothing to the backend's hook:
	// nil if that works, an *UnavailableError if the kernel lacks the
	// hook, another error if the check itself failed.
	Detect(k *kernel, spec *lockspec.Spec) error
	// Attach attaches the loaded object's programs, or copies of them it
	// loads itself.
	Attach(obj *object) (*attachment, error)
	// variables are the backend's values of the BPF object's variables
	// that only some backends' programs read.
	variables(k *kernel, s *lockstatSpecs, locks *lockspec.Spec) ([]variable, error)
	// timesAcquires reports whether the programs time whole acquire
	// calls (the function probes): only those time holds and calibrate.
	timesAcquires() bool
	// schedHook says how a bookkeeping program on a sched tracepoint
	// attaches beside the backend's programs, and which of its programs.
	schedHook(event string, p schedPrograms) schedHook
}

// object is the BPF object as loaded for a backend.
type object struct {
	spec   *ebpf.CollectionSpec  // as configured, with every program
	progs  *lockstatProgramSpecs // spec's programs, typed
	coll   *ebpf.Collection      // the backend's Programs, loaded
	maps   lockstatMaps          // the maps, loaded
	vars   lockstatVariables     // the global variables, loaded
	byName map[string]*ebpf.Map  // the maps by the names programs refer to them by
	kernel *kernel
	locks  *lockspec.Spec
}

// program returns the loaded program of a spec.
func (o *object) program(p *ebpf.ProgramSpec) *ebpf.Program { return o.coll.Programs[p.Name] }

func (o *object) close() {
	o.maps.Close()
	o.coll.Close()
}

// attachment is what a backend attached, in two groups: links, attached
// first and detached last, are the programs that end waits (and free
// threads' state); beginLinks are the programs that begin them. So a wait
// the capture sees begin always finds its end attached, and Stop can detach
// the begins, take its time, and let the waits in progress end.
type attachment struct {
	links      []link.Link
	beginLinks []link.Link
	probes     []probe
	// acquire describes what a function-probe backend probed; nil for
	// tracepoints.
	acquire  *capture.Acquire
	warnings []string
	sampler  *ownerSampler // samples lock owners on their CPU; nil when it does not
}

// probe is one loaded program whose run-time statistics go in the capture.
type probe struct {
	name   string
	prog   *ebpf.Program
	begins bool   // sees waits (or acquires) begin: a run the kernel skipped loses one
	owned  bool   // loaded by the backend, not part of the collection
	hook   string // the scheduler event of a bookkeeping program; "" for one that sees lock events
}

func (a *attachment) close() {
	a.sampler.close()
	a.sampler = nil
	a.detachBegins()
	closeLinks(a.links)
	a.links = nil
	for _, p := range a.probes {
		if p.owned {
			p.prog.Close()
		}
	}
	a.probes = nil
}

// detachBegins detaches the programs that begin waits: from then on no wait
// begins, and those in progress still end.
func (a *attachment) detachBegins() {
	closeLinks(a.beginLinks)
	a.beginLinks = nil
}

// StackLayout describes kernel stacks as a backend's programs see them.
type StackLayout struct {
	// Skip is how many frames on top of every stack are the probe
	// machinery itself, on every kernel; machinery frames only some
	// kernels have are trimmed in user space.
	Skip uint32
	// ContextOnStack is true when the program's context pointer points
	// into the probed thread's kernel stack, so that a path walked once
	// can be recognised from the raw stack above it instead of walked
	// again.
	ContextOnStack bool
	// Lead is how many of the first frames after Skip may be the first
	// above the context, on one kernel or another; the programs try each.
	// 1 when Skip is exact.
	Lead uint32
}

// Backends lists every backend in the order "auto" tries them: the
// contention tracepoints where the kernel has them (5.19+), cheapest hook
// first, else the lock functions themselves.
func Backends() []Backend {
	return []Backend{btfTracepoint{}, rawTracepoint{}, perfTracepoint{}, fentryBackend, kprobeBackend}
}

// BackendNames lists the valid --probe values.
func BackendNames() []string {
	names := []string{"auto"}
	for _, b := range Backends() {
		names = append(names, b.Name())
	}
	return names
}

func backendByName(name string) (Backend, error) {
	for _, b := range Backends() {
		if b.Name() == name {
			return b, nil
		}
	}
	return nil, fmt.Errorf("unknown probe backend %q (want one of %v)", name, BackendNames())
}

// tracepointProgram is one program of a tracepoint backend and the
// contention event it attaches to.
type tracepointProgram struct {
	spec   *ebpf.ProgramSpec
	event  string
	begins bool
}

// tracepointPrograms lists a tracepoint backend's programs in attach order:
// the end programs before the begin programs, so that no wait the capture
// sees begin misses its end, and each rescue copy (nil: none) right after
// its main copy (see claim() in lockstat.bpf.c). Programs are detached in
// the reverse order.
func tracepointPrograms(end, endRescue, begin, beginRescue *ebpf.ProgramSpec) []tracepointProgram {
	progs := []tracepointProgram{{spec: end, event: "contention_end"}}
	if endRescue != nil {
		progs = append(progs, tracepointProgram{spec: endRescue, event: "contention_end"})
	}
	progs = append(progs, tracepointProgram{spec: begin, event: "contention_begin", begins: true})
	if beginRescue != nil {
		progs = append(progs, tracepointProgram{spec: beginRescue, event: "contention_begin"})
	}
	return progs
}

func programSpecs(progs []tracepointProgram) []*ebpf.ProgramSpec {
	specs := make([]*ebpf.ProgramSpec, len(progs))
	for i, p := range progs {
		specs[i] = p.spec
	}
	return specs
}

// attachTracepoints attaches a tracepoint backend's loaded programs, each to
// its event, in order, and lists them.
func attachTracepoints(obj *object, progs []tracepointProgram, attach func(event string, prog *ebpf.Program) (link.Link, error)) (*attachment, error) {
	a := &attachment{}
	for _, tp := range progs {
		prog := obj.program(tp.spec)
		l, err := attach(tp.event, prog)
		if err != nil {
			a.close()
			return nil, fmt.Errorf("attaching %s to lock:%s: %w", tp.spec.Name, tp.event, err)
		}
		if tp.event == "contention_begin" {
			a.beginLinks = append(a.beginLinks, l)
		} else {
			a.links = append(a.links, l)
		}
		a.probes = append(a.probes, probe{name: tp.spec.Name, prog: prog, begins: tp.begins})
	}
	return a, nil
}

// contentionHooks is what the backends on the contention tracepoints have
// in common.
type contentionHooks struct{}

// The begin programs tell lock types apart by the contention flags, and by
// the functions of the types that share flags.
func (contentionHooks) variables(k *kernel, s *lockstatSpecs, locks *lockspec.Spec) ([]variable, error) {
	return sharedFlagVariables(k, s, locks)
}

func (contentionHooks) timesAcquires() bool { return false }

func (contentionHooks) schedHook(event string, p schedPrograms) schedHook {
	return rawSchedHook(event, p.raw)
}

// btfTracepoint attaches BTF-enabled raw tracepoints (tp_btf, Linux 5.5+)
// to lock:contention_begin/end: raw tracepoints whose programs the verifier
// checks against the tracepoint's typed arguments.
type btfTracepoint struct{ contentionHooks }

func (btfTracepoint) Name() string { return "tp_btf" }

func (b btfTracepoint) Programs(p *lockstatProgramSpecs) []*ebpf.ProgramSpec {
	return programSpecs(b.programs(p))
}

func (btfTracepoint) programs(p *lockstatProgramSpecs) []tracepointProgram {
	return tracepointPrograms(p.BtfContentionEnd, p.BtfContentionEndRescue, p.BtfContentionBegin, p.BtfContentionBeginRescue)
}

// As for raw tracepoints, bpf_trace_runN calls the program with its
// argument array, on the probed thread's stack.
func (btfTracepoint) StackLayout() StackLayout { return rawTracepoint{}.StackLayout() }

// A sched hook with a BTF program attaches as one too: its arguments are
// task pointers the helpers take (btf_owner_switch walks the stack of the
// task arriving).
func (btfTracepoint) schedHook(event string, p schedPrograms) schedHook {
	if p.btf == nil {
		return rawSchedHook(event, p.raw)
	}
	return schedHook{spec: p.btf, event: event, btf: true, skip: rawTracepoint{}.StackLayout().Skip}
}

func (b btfTracepoint) Detect(k *kernel, _ *lockspec.Spec) error {
	if u := noContentionTracepoint(k, b.Name()); u != nil {
		return u
	}
	return detectHook(ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: contentionTracepoint},
		func(p *ebpf.Program) (link.Link, error) { return link.AttachTracing(link.TracingOptions{Program: p}) },
		func(err error) *UnavailableError {
			switch {
			case errors.Is(err, ebpf.ErrNotSupported):
				return &UnavailableError{Backend: b.Name(), Missing: "BTF-enabled tracepoints unavailable: they need Linux 5.5 or later with BTF (CONFIG_DEBUG_INFO_BTF)", Err: err}
			case refused(err):
				return &UnavailableError{Backend: b.Name(), Missing: "BTF-enabled tracepoints refused by the kernel although klockstat runs with CAP_SYS_ADMIN, CAP_BPF and CAP_PERFMON", Err: err}
			}
			return nil
		})
}

func (b btfTracepoint) Attach(obj *object) (*attachment, error) {
	return attachTracepoints(obj, b.programs(obj.progs), func(_ string, prog *ebpf.Program) (link.Link, error) {
		return link.AttachTracing(link.TracingOptions{Program: prog})
	})
}

// rawTracepoint attaches to the lock:contention_begin/end raw tracepoints
// (Linux 5.19+): no perf event and no tracefs.
type rawTracepoint struct{ contentionHooks }

func (rawTracepoint) Name() string { return "rawtp" }

func (b rawTracepoint) Programs(p *lockstatProgramSpecs) []*ebpf.ProgramSpec {
	return programSpecs(b.programs(p))
}

func (rawTracepoint) programs(p *lockstatProgramSpecs) []tracepointProgram {
	return tracepointPrograms(p.RawContentionEnd, p.RawContentionEndRescue, p.RawContentionBegin, p.RawContentionBeginRescue)
}

// The BPF program and bpf_trace_runN come first; __traceiter_* or
// __bpf_trace_* follow on some kernels only. The context is bpf_trace_runN's
// argument array, on the probed thread's stack.
func (rawTracepoint) StackLayout() StackLayout {
	return StackLayout{Skip: 2, ContextOnStack: true, Lead: 1}
}

func (b rawTracepoint) Detect(k *kernel, _ *lockspec.Spec) error {
	if u := noContentionTracepoint(k, b.Name()); u != nil {
		return u
	}
	return detectHook(ebpf.ProgramSpec{Type: ebpf.RawTracepoint},
		func(p *ebpf.Program) (link.Link, error) {
			return link.AttachRawTracepoint(link.RawTracepointOptions{Name: contentionTracepoint, Program: p})
		},
		func(err error) *UnavailableError {
			switch {
			case errors.Is(err, ebpf.ErrNotSupported):
				return &UnavailableError{Backend: b.Name(), Missing: "raw tracepoints unavailable: they need Linux 4.17 or later", Err: err}
			case refused(err):
				return &UnavailableError{Backend: b.Name(), Missing: "raw tracepoints refused by the kernel although klockstat runs with CAP_SYS_ADMIN, CAP_BPF and CAP_PERFMON", Err: err}
			}
			return nil
		})
}

func (b rawTracepoint) Attach(obj *object) (*attachment, error) {
	return attachTracepoints(obj, b.programs(obj.progs), func(event string, prog *ebpf.Program) (link.Link, error) {
		return link.AttachRawTracepoint(link.RawTracepointOptions{Name: event, Program: prog})
	})
}

// perfTracepoint attaches through perf events to the lock:contention_*
// tracepoints, for kernels or sandboxes where raw tracepoint attach fails.
// It needs tracefs to look up the event ids. It has no rescue copies: the
// kernel skips every perf-event BPF program on a CPU where one is running.
type perfTracepoint struct{ contentionHooks }

func (perfTracepoint) Name() string { return "tracepoint" }

// The sched hooks attach through perf events too: this backend is for
// kernels or sandboxes where raw tracepoints fail.
func (perfTracepoint) schedHook(event string, p schedPrograms) schedHook {
	return schedHook{spec: p.perf, event: event, perf: true, skip: perfTracepoint{}.StackLayout().Skip}
}

func (b perfTracepoint) Programs(p *lockstatProgramSpecs) []*ebpf.ProgramSpec {
	return programSpecs(b.programs(p))
}

func (perfTracepoint) programs(p *lockstatProgramSpecs) []tracepointProgram {
	return tracepointPrograms(p.TpContentionEnd, nil, p.TpContentionBegin, nil)
}

// Perf events unwind from the tracepoint's caller; the context is the perf
// event's record buffer.
func (perfTracepoint) StackLayout() StackLayout { return StackLayout{Lead: 1} }

func (b perfTracepoint) Detect(k *kernel, _ *lockspec.Spec) error {
	if err := mountTracefs(); err != nil {
		return err
	}
	if u := noContentionTracepoint(k, b.Name()); u != nil {
		return u
	}
	return detectHook(ebpf.ProgramSpec{Type: ebpf.TracePoint},
		func(p *ebpf.Program) (link.Link, error) { return link.Tracepoint("lock", contentionTracepoint, p, nil) },
		func(err error) *UnavailableError {
			switch {
			case errors.Is(err, ebpf.ErrNotSupported):
				return &UnavailableError{Backend: b.Name(), Missing: "perf-event tracepoints unavailable: they need CONFIG_PERF_EVENTS and CONFIG_BPF_EVENTS", Err: err}
			case refused(err):
				return &UnavailableError{Backend: b.Name(), Missing: "perf-event tracepoints refused by the kernel although klockstat runs with CAP_SYS_ADMIN, CAP_BPF and CAP_PERFMON", Err: err}
			}
			return nil
		})
}

func (b perfTracepoint) Attach(obj *object) (*attachment, error) {
	if err := mountTracefs(); err != nil {
		return nil, err
	}
	a, err := attachTracepoints(obj, b.programs(obj.progs), func(event string, prog *ebpf.Program) (link.Link, error) {
		return link.Tracepoint("lock", event, prog, nil)
	})
	if err == nil && !countsSkippedRuns(kernelRelease()) {
		a.warnings = append(a.warnings, uncountedSkips(b.Name()))
	}
	return a, err
}

// closeLinks detaches the last attached first: a rescue copy that outlived
// its main copy would take events the main copy never saw.
func closeLinks(links []link.Link) {
	for _, l := range slices.Backward(links) {
		l.Close()
	}
}

const tracefsPath = "/sys/kernel/tracing"

// mountTracefs mounts tracefs where the kernel expects it unless some tracefs
// is mounted already. Boot does not always mount it, and perf-event
// tracepoints and tracefs kprobes are created there.
func mountTracefs() error {
	if _, err := os.Stat(tracefsPath + "/events"); err == nil {
		return nil
	}
	err := unix.Mount("nodev", tracefsPath, "tracefs", 0, "")
	if err != nil && !errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("mounting tracefs on %s (try: mount -t tracefs nodev %s): %w", tracefsPath, tracefsPath, err)
	}
	return nil
}
