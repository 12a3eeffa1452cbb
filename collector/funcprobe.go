package collector

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/lockspec"
)

// The function-probe backends probe the acquire and release functions that
// locks.json lists, for kernels without the contention tracepoints. They
// time whole acquire calls, fast path included, and count an acquire as
// contended only above a threshold calibrated at start-up (calibrate.go).

// funcHook is how a function-probe backend hooks functions.
type funcHook int

const (
	hookFentry funcHook = iota // fentry/fexit: BPF trampolines (Linux 5.5+)
	hookKprobe                 // kprobe/kretprobe
)

// functionBackend probes the lock functions of locks.json.
type functionBackend struct{ hook funcHook }

var (
	fentryBackend = functionBackend{hookFentry}
	kprobeBackend = functionBackend{hookKprobe}
)

func (b functionBackend) Name() string {
	if b.hook == hookFentry {
		return "fentry"
	}
	return "kprobe"
}

// The entry programs read the lock type from a cookie or a patched
// constant, and may take the stack at the entry.
func (b functionBackend) variables(k *kernel, s *lockstatSpecs, _ *lockspec.Spec) ([]variable, error) {
	return []variable{{s.FnCookie, b.cookies()}, {s.FnStackAtEntry, b.stackAtEntry(k)}}, nil
}

func (functionBackend) timesAcquires() bool { return true }

func (functionBackend) schedHook(event string, p schedPrograms) schedHook {
	return rawSchedHook(event, p.raw)
}

// kprobeCookies reports whether kprobe programs can read a BPF cookie
// (Linux 5.15+). Without cookies, every function gets a copy of the program
// with its lock type patched in. Tests switch cookies off to exercise that.
var kprobeCookies = sync.OnceValue(func() bool {
	return features.HaveProgramHelper(ebpf.Kprobe, asm.FnGetAttachCookie) == nil
})

var noCookies bool // set by tests

func (b functionBackend) cookies() bool {
	return b.hook == hookKprobe && !noCookies && kprobeCookies()
}

// Programs are the kprobe programs when they read cookies: one program
// serves every function. fentry programs are loaded per function anyway
// (the kernel checks them against the function's BTF), so they carry the
// lock type as a constant and none is loaded with the maps.
func (b functionBackend) Programs(p *lockstatProgramSpecs) []*ebpf.ProgramSpec {
	if b.cookies() {
		return []*ebpf.ProgramSpec{b.template(p, roleEnter), b.template(p, roleReturn), b.template(p, roleRelease)}
	}
	return nil
}

// The stacks are taken at the return. An fexit program's frame comes
// first, then the BPF trampoline's, below the context (the trampoline's
// argument array); a kretprobe program walks from the probe's pt_regs,
// whose first frame is the caller the function returned to, a return
// address already taken off the stack. So the first frame above the
// context is the first or the second. Recognising a path needs bpf_loop
// (Linux 5.17), which every kernel with the contention tracepoints has, but
// not every kernel these backends are for: without it, the return programs
// are the copies that walk every stack (a program that calls bpf_loop does
// not even load there).
func (b functionBackend) StackLayout() StackLayout {
	skip := uint32(1)
	if b.hook == hookKprobe {
		skip = 0
	}
	return StackLayout{Skip: skip, ContextOnStack: haveLoop(), Lead: 2}
}

// stackAtEntry reports whether the programs take the stack at the acquire's
// entry rather than at its return: for kretprobes on kernels whose
// unwinder stops at the kretprobe trampoline, before Linux 5.15, which
// taught it kretprobe_find_ret_addr (later rethook_find_ret_addr). That
// costs a walk per acquire, contended or not. Without symbols the kernel
// is taken for a recent one.
func (b functionBackend) stackAtEntry(k *kernel) bool {
	if b.hook != hookKprobe {
		return false
	}
	ksyms, err := k.symbols()
	if err != nil {
		return false
	}
	names := ksyms.TextNames()
	return !names["kretprobe_find_ret_addr"] && !names["rethook_find_ret_addr"]
}

// haveLoop reports whether BPF programs can call bpf_loop. It came to every
// tracing program type in the same kernel, so asking about kprobe programs
// answers for fentry too.
var haveLoop = sync.OnceValue(func() bool {
	return features.HaveProgramHelper(ebpf.Kprobe, asm.FnLoop) == nil
})

// roleProgram is the program of a role, which the function probes either
// load once and attach with a cookie per function, or copy per function;
// probe names and the capture's program statistics name it.
func (b functionBackend) roleProgram(p *lockstatProgramSpecs, role funcRole) *ebpf.ProgramSpec {
	if b.hook == hookFentry {
		return [...]*ebpf.ProgramSpec{p.FentryAcquire, p.FexitAcquire, p.FentryRelease}[role]
	}
	return [...]*ebpf.ProgramSpec{p.KprobeAcquire, p.KretprobeAcquire, p.KprobeRelease}[role]
}

// template is the BPF program to load for a role: the return programs
// without bpf_loop where the kernel lacks it.
func (b functionBackend) template(p *lockstatProgramSpecs, role funcRole) *ebpf.ProgramSpec {
	if role == roleReturn && !haveLoop() {
		if b.hook == hookFentry {
			return p.FexitAcquireWalk
		}
		return p.KretprobeAcquireWalk
	}
	return b.roleProgram(p, role)
}

// noSpinSplit is the capture's warning that the function probes record no
// spin: they time an acquire call from its entry to its return.
const noSpinSplit = "spin vs sleep is not split (spin_ns 0): it needs the contention tracepoints (Linux 5.19); the function probes time each acquire call whole"

// spinningReason says why the acquire functions of spinning locks are not
// probed: a probe would run on every spin_lock in the kernel, and
// attaching is not safe.
var spinningReason = map[funcHook]string{
	hookKprobe: "spinning lock: a kretprobe on a spinlock acquire function can hang the machine (the tracepoint backends capture spinlocks)",
	hookFentry: "spinning lock: attaching fentry to _raw_spin_lock crashed a Linux 6.12 guest (int3 oops while the kernel patched it), and its probes would run at every spin_lock (the tracepoint backends capture spinlocks)",
}

// funcRole is what a program does at a function.
type funcRole int

const (
	roleEnter   funcRole = iota // acquire entry: save lock and time
	roleReturn                  // acquire return: time it, start the hold
	roleRelease                 // release entry: end the hold
)

// target is a kernel function to probe.
type target struct {
	fn      string // as the kernel names it
	typ     string // the lock type listing it
	release bool
	info    uint32 // FN_* value: type index and flags
}

// plan resolves the functions of the lock spec in the running kernel: which
// to probe, and which to skip and why.
func (b functionBackend) plan(k *kernel, spec *lockspec.Spec) ([]target, []capture.Skipped, error) {
	var (
		targets []target
		skipped []capture.Skipped
		owner   = map[string]string{} // function -> type probing it
	)
	skip := func(fn, typ, reason string) {
		skipped = append(skipped, capture.Skipped{Function: fn, Type: typ, Reason: reason})
	}
	ksyms, err := k.symbols()
	if err != nil {
		return nil, nil, fmt.Errorf("looking up the lock functions: %w", err)
	}
	functions := ksyms.TextNames()
	exists := func(name string) bool { return functions[name] }
	for i, t := range spec.Types {
		info := uint32(i)
		if t.Spinning() {
			// Spinning locks are left to the contention tracepoints.
			for _, fn := range t.Acquire {
				skip(fn, t.Name, spinningReason[b.hook])
			}
			continue
		}
		resolve := func(fn string, release bool) error {
			fns := lockspec.KernelFunctions(fn, exists)
			if len(fns) == 0 {
				skip(fn, t.Name, "not in this kernel (/proc/kallsyms)")
				return nil
			}
			for _, kfn := range fns {
				if other, dup := owner[kfn]; dup {
					skip(kfn, t.Name, fmt.Sprintf("already probed for type %s", other))
					continue
				}
				if b.hook == hookFentry {
					ok, err := hasBTF[*btf.Func](k, kfn)
					if err != nil {
						return err
					}
					if !ok {
						skip(kfn, t.Name, "no BTF for it (fentry needs the function in /sys/kernel/btf/vmlinux)")
						continue
					}
				}
				owner[kfn] = t.Name
				targets = append(targets, target{fn: kfn, typ: t.Name, release: release, info: info})
			}
			return nil
		}
		before := len(targets)
		for _, fn := range t.Acquire {
			if err := resolve(fn, false); err != nil {
				return nil, nil, err
			}
		}
		if !t.Hold || len(targets) == before {
			continue
		}
		acquires := len(targets)
		for _, fn := range t.Release {
			if err := resolve(fn, true); err != nil {
				return nil, nil, err
			}
		}
		if len(targets) > acquires {
			for j := before; j < acquires; j++ {
				targets[j].info |= uint32(lockstatFnInfoFN_HOLD)
			}
		}
	}
	if len(targets) == 0 {
		return nil, skipped, fmt.Errorf("none of the lock functions of %s exist in this kernel (%s)", spec.Source, skippedSummary(skipped))
	}
	return targets, skipped, nil
}

// Detect attaches a program that does nothing to the first function to
// probe.
func (b functionBackend) Detect(k *kernel, spec *lockspec.Spec) error {
	targets, _, err := b.plan(k, spec)
	if err != nil {
		return err
	}
	fn := targets[0].fn
	if b.hook == hookFentry {
		return detectHook(ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry, AttachTo: fn},
			func(p *ebpf.Program) (link.Link, error) { return link.AttachTracing(link.TracingOptions{Program: p}) },
			func(err error) *UnavailableError { return fentryUnavailable(fn, err) })
	}
	return detectHook(ebpf.ProgramSpec{Type: ebpf.Kprobe},
		func(p *ebpf.Program) (link.Link, error) { return link.Kprobe(fn, p, nil) },
		func(err error) *UnavailableError { return kprobesUnavailable(fn, err) })
}

func fentryUnavailable(fn string, err error) *UnavailableError {
	switch {
	case errors.Is(err, ebpf.ErrNotSupported):
		return &UnavailableError{Backend: "fentry", Missing: "fentry unavailable: BPF trampolines need Linux 5.5 or later (arm64: 6.0) built with CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS", Err: err}
	case refused(err):
		missing := fmt.Sprintf("fentry unavailable: the kernel refuses to load an fentry program on %s() although klockstat runs with CAP_SYS_ADMIN, CAP_BPF and CAP_PERFMON", fn)
		// BPF trampolines attach through ftrace: say what tracefs
		// answers about the traceable functions, if it refuses too.
		if _, ferr := os.ReadFile(tracefsPath + "/available_filter_functions"); ferr != nil {
			missing += fmt.Sprintf("; function tracing is closed as well (%v)", ferr)
		}
		return &UnavailableError{Backend: "fentry", Missing: missing, Err: err}
	}
	return nil
}

func kprobesUnavailable(fn string, err error) *UnavailableError {
	if !errors.Is(err, ebpf.ErrNotSupported) && !errors.Is(err, os.ErrNotExist) && !refused(err) {
		return nil
	}
	// The function exists (kallsyms): what is missing is the mechanism,
	// if neither the kprobe PMU nor tracefs' kprobe_events is there.
	_, pmuErr := os.Stat("/sys/bus/event_source/devices/kprobe")
	_, eventsErr := os.Stat(tracefsPath + "/kprobe_events")
	if pmuErr == nil || eventsErr == nil {
		if refused(err) {
			return &UnavailableError{Backend: "kprobe", Missing: fmt.Sprintf("kprobes unavailable: the kernel refuses a kprobe on %s() although klockstat runs with CAP_SYS_ADMIN, CAP_BPF and CAP_PERFMON", fn), Err: err}
		}
		return nil
	}
	why := configSays("CONFIG_KPROBES")
	if why == "" {
		why = configSays("CONFIG_KPROBE_EVENTS")
	}
	if why == "" {
		why = "kernel built without CONFIG_KPROBES or CONFIG_KPROBE_EVENTS"
	}
	return &UnavailableError{
		Backend: "kprobe",
		Missing: fmt.Sprintf("kprobes unavailable: %s (no kprobe PMU in /sys/bus/event_source/devices, no kprobe_events in %s)", why, tracefsPath),
		Err:     err,
	}
}

// Attach attaches, in turn, the release programs, the acquire return
// programs and the acquire entry programs: every program that ends a wait
// or a hold is in place before any that begins one, and they are detached
// in the reverse order.
func (b functionBackend) Attach(obj *object) (*attachment, error) {
	targets, skipped, err := b.plan(obj.kernel, obj.locks)
	if err != nil {
		return nil, err
	}
	a := &attachment{acquire: &capture.Acquire{Skipped: skipped}}
	if b.cookies() {
		for i, p := range b.Programs(obj.progs) {
			a.probes = append(a.probes, probe{name: p.Name, prog: obj.program(p), begins: i == 0})
		}
	}
	var firstErr error
	fail := func(t target, err error) {
		a.acquire.Skipped = append(a.acquire.Skipped, capture.Skipped{Function: t.fn, Type: t.typ, Reason: err.Error()})
		if firstErr == nil {
			firstErr = err
		}
	}
	// Each acquire's return program, kept until its entry is attached: a
	// return without its entry would only count unmatched ends.
	returns := map[int]attached{}
	for _, role := range []funcRole{roleRelease, roleReturn, roleEnter} {
		for i, t := range targets {
			if t.release != (role == roleRelease) {
				continue
			}
			ret, ok := returns[i]
			if role == roleEnter && !ok {
				continue // its return failed
			}
			at, err := b.attachRole(obj, role, t)
			if err != nil {
				if role == roleEnter {
					ret.close()
				}
				fail(t, err)
				continue
			}
			if role == roleReturn {
				returns[i] = at
				continue
			}
			if role == roleEnter {
				ret.addTo(a, false)
			}
			at.addTo(a, role == roleEnter)
			a.acquire.Functions = append(a.acquire.Functions, t.fn)
		}
	}
	if len(a.acquire.Functions) == 0 {
		a.close()
		return nil, fmt.Errorf("attaching to the lock functions: %w", firstErr)
	}
	if len(a.acquire.Skipped) > 0 {
		a.warnings = append(a.warnings, fmt.Sprintf("%s: functions of %s not probed: %s", b.Name(), obj.locks.Source, skippedSummary(a.acquire.Skipped)))
	}
	if b.hook == hookKprobe && !countsSkippedRuns(kernelRelease()) {
		a.warnings = append(a.warnings, uncountedSkips(b.Name()))
	}
	return a, nil
}

// attached is one program attached to one function.
type attached struct {
	link  link.Link
	probe probe
}

func (at attached) close() {
	at.link.Close()
	if at.probe.owned {
		at.probe.prog.Close()
	}
}

// addTo hands the program to the attachment, among the programs that begin
// waits or among the others.
func (at attached) addTo(a *attachment, begins bool) {
	if begins {
		a.beginLinks = append(a.beginLinks, at.link)
	} else {
		a.links = append(a.links, at.link)
	}
	if at.probe.owned {
		a.probes = append(a.probes, at.probe)
	}
}

// attachRole attaches the program of one role to one function.
func (b functionBackend) attachRole(obj *object, role funcRole, t target) (attached, error) {
	p, err := b.program(obj, role, t)
	if err != nil {
		return attached{}, err
	}
	l, err := b.attachProgram(p.prog, role, t)
	if err != nil {
		if p.owned {
			p.prog.Close()
		}
		return attached{}, fmt.Errorf("attaching %s: %w", p.name, err)
	}
	return attached{link: l, probe: p}, nil
}

// program returns the program of a role at a function: the shared program
// that reads cookies, or a copy of the template for this function.
func (b functionBackend) program(obj *object, role funcRole, t target) (probe, error) {
	tmpl := b.template(obj.progs, role)
	if b.cookies() {
		return probe{name: b.roleProgram(obj.progs, role).Name, prog: obj.program(tmpl)}, nil
	}
	ps := tmpl.Copy()
	if b.hook == hookFentry {
		ps.AttachTo = t.fn
	}
	if role != roleRelease {
		if err := patchInfo(ps, t.info); err != nil {
			return probe{}, err
		}
	}
	for i := range ps.Instructions {
		ins := &ps.Instructions[i]
		if !ins.IsLoadFromMap() || ins.Reference() == "" {
			continue
		}
		m, ok := obj.byName[ins.Reference()]
		if !ok {
			return probe{}, fmt.Errorf("program %s refers to map %s, which the object lacks", tmpl.Name, ins.Reference())
		}
		if err := ins.AssociateMap(m); err != nil {
			return probe{}, fmt.Errorf("program %s: map %s: %w", tmpl.Name, ins.Reference(), err)
		}
	}
	types, err := obj.kernel.types()
	if err != nil {
		return probe{}, err
	}
	prog, err := ebpf.NewProgramWithOptions(ps, ebpf.ProgramOptions{KernelTypes: types})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return probe{}, fmt.Errorf("loading %s for %s: %+v", tmpl.Name, t.fn, ve)
		}
		return probe{}, fmt.Errorf("loading %s for %s: %w", tmpl.Name, t.fn, err)
	}
	return probe{name: b.roleProgram(obj.progs, role).Name + ":" + t.fn, prog: prog, begins: role == roleEnter, owned: true}, nil
}

func (b functionBackend) attachProgram(prog *ebpf.Program, role funcRole, t target) (link.Link, error) {
	var cookie uint64
	if b.cookies() {
		cookie = uint64(t.info)
	}
	if b.hook == hookFentry {
		return link.AttachTracing(link.TracingOptions{Program: prog})
	}
	opts := &link.KprobeOptions{Cookie: cookie}
	if role == roleReturn {
		return link.Kretprobe(t.fn, prog, opts)
	}
	return link.Kprobe(t.fn, prog, opts)
}

// patchInfo writes a function's FN_* value into the program's marked
// `mov rX, FN_MARK` (fn_info in include/funcprobe.bpf.h).
func patchInfo(ps *ebpf.ProgramSpec, info uint32) error {
	mov := asm.Mov.Op(asm.ImmSource)
	n := 0
	for i := range ps.Instructions {
		ins := &ps.Instructions[i]
		if ins.OpCode == mov && ins.Constant == int64(lockstatFnInfoFN_MARK) {
			ins.Constant = int64(info)
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("program %s has %d marked instructions, want 1 (stale generated code? run go generate ./...)", ps.Name, n)
	}
	return nil
}

// skippedSummary lists skipped functions by reason, for one line:
// "not in this kernel (/proc/kallsyms): rt_spin_lock (rtmutex), ...".
func skippedSummary(skipped []capture.Skipped) string {
	var reasons []string
	byReason := map[string][]string{}
	for _, s := range skipped {
		if _, ok := byReason[s.Reason]; !ok {
			reasons = append(reasons, s.Reason)
		}
		byReason[s.Reason] = append(byReason[s.Reason], fmt.Sprintf("%s (%s)", s.Function, s.Type))
	}
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = r + ": " + strings.Join(slices.Compact(byReason[r]), ", ")
	}
	return strings.Join(parts, "; ")
}
