package collector

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/internal/host"
	"github.com/klockstat/klockstat/kallsyms"
	"github.com/klockstat/klockstat/lockfield"
)

// Feature detection follows cilium/ebpf's features package: a check has
// three outcomes, and only a kernel that lacks the hook is "unavailable".
// Every check attaches a program that does nothing to the real hook the
// backend uses, so the answer is about that hook, not a proxy for it.

// ErrUnavailable means the kernel lacks what a backend needs: errors.Is
// matches every *UnavailableError.
var ErrUnavailable = errors.New("probe backend unavailable on this kernel")

// UnavailableError says which kernel feature a backend misses.
type UnavailableError struct {
	Backend string
	Missing string // the missing feature, e.g. "kprobes unavailable: kernel built without CONFIG_KPROBES"
	Err     error  // what the kernel answered
}

// Error says what is missing and the kernel's answer: its errno where
// there is one, since Missing already says what was tried.
func (e *UnavailableError) Error() string {
	var errno unix.Errno
	switch {
	case e.Err == nil:
		return e.Missing
	case errors.As(e.Err, &errno):
		return fmt.Sprintf("%s (%v)", e.Missing, errno)
	}
	return fmt.Sprintf("%s (%v)", e.Missing, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// kernel answers what the backends ask about the running kernel, reading
// each source once.
type kernel struct {
	ksymsOnce sync.Once
	ksyms     *kallsyms.Table
	ksymsErr  error

	btfOnce sync.Once
	btf     *btf.Spec
	btfErr  error

	// fields is built at the first capture that names slab locks and kept: its index of the
	// kernel's types by size is the costly part, and klockstat scale assembles a capture a run.
	fieldsOnce sync.Once
	fields     *lockfield.Finder
}

// symbols is the kernel's symbol table, /proc/kallsyms.
func (k *kernel) symbols() (*kallsyms.Table, error) {
	k.ksymsOnce.Do(func() { k.ksyms, k.ksymsErr = kallsyms.Load() })
	return k.ksyms, k.ksymsErr
}

// kstackShifters names the functions that move the kernel stack by a random
// offset at each syscall when randomize_kstack_offset is on, and whose
// callers, above the offset, a path does not compare: so each must have the
// same callers whenever it runs. x86-64: the 64-bit and int 0x80 entries.
// Not the 32-bit fast syscall (do_fast_syscall_32), entered through either
// SYSENTER or SYSCALL: paths through it are compared in full, which the
// offset defeats, so they are walked. arm64: invoke_syscall, whose callers
// differ for AArch32 tasks only. Names a kernel lacks are ignored.
var kstackShifters = []string{"do_syscall_64", "do_int80_syscall_32", "do_int80_emulation", "invoke_syscall"}

// keySkipped names the tracepoint machinery between a tracepoint probe and
// the traced code: __traceiter_* runs once two programs are attached.
var keySkipped = []string{"__traceiter_contention_begin", "__traceiter_contention_end", "__bpf_trace_contention_begin", "__bpf_trace_contention_end"}

// kstackShifterBounds returns the code of the kstackShifters this kernel
// has, for kstack_shifter_lo/hi. Without symbols it returns none: paths
// through syscalls are then learnt once per stack offset instead of once.
func (k *kernel) kstackShifterBounds() (lo, hi [maxKstackShifters]uint64) {
	k.funcBounds(kstackShifters, lo[:], hi[:])
	return lo, hi
}

// keySkipBounds returns the code of the keySkipped functions this kernel
// has, for key_skip_lo/hi. Without symbols it returns none: the keys of
// known paths then tell fewer callers apart.
func (k *kernel) keySkipBounds() (lo, hi [maxKeySkip]uint64) {
	k.funcBounds(keySkipped, lo[:], hi[:])
	return lo, hi
}

// percpuDownWriteBounds returns percpu_down_write's code, for
// pcpu_down_write_lo/hi: a percpu rwsem's writer sleeping in it waits for
// the lock without announcing it (writer_sleeps in owner.bpf.h). Without
// symbols it returns zeros: readers blocked by a writer that took the lock
// without waiting for another are then charged at the writer's release.
func (k *kernel) percpuDownWriteBounds() (lo, hi uint64) {
	var l, h [1]uint64
	k.funcBounds([]string{"percpu_down_write"}, l[:], h[:])
	return l[0], h[0]
}

// funcBounds fills lo and hi with the [lo, hi) code ranges of the named
// functions this kernel has, as many as fit.
func (k *kernel) funcBounds(names []string, lo, hi []uint64) {
	ksyms, err := k.symbols()
	if err != nil {
		return
	}
	n := 0
	for _, name := range names {
		if l, h, ok := ksyms.FuncBounds(name); ok && n < len(lo) {
			lo[n], hi[n] = l, h
			n++
		}
	}
}

// types is the kernel's BTF.
func (k *kernel) types() (*btf.Spec, error) {
	k.btfOnce.Do(func() {
		k.btf, k.btfErr = btf.LoadKernelSpec()
		if k.btfErr != nil {
			k.btfErr = fmt.Errorf("reading the kernel's BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF): %w", k.btfErr)
		}
	})
	return k.btf, k.btfErr
}

// hasBTF reports whether the kernel's BTF has a type of that name and kind.
func hasBTF[T btf.Type](k *kernel, name string) (bool, error) {
	spec, err := k.types()
	if err != nil {
		return false, err
	}
	var t T
	err = spec.TypeByName(name, &t)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, btf.ErrNotFound):
		return false, nil
	case errors.Is(err, btf.ErrMultipleMatches):
		return true, nil
	}
	return false, err
}

// nopProgram does nothing: what the detections attach.
func nopProgram(spec ebpf.ProgramSpec) (*ebpf.Program, error) {
	spec.Instructions = asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
	spec.License = "GPL"
	return ebpf.NewProgram(&spec)
}

// detectHook loads nop with the given spec and attaches it; unavailable
// turns an error that means the kernel lacks the hook into an
// *UnavailableError, or returns nil for any other error.
func detectHook(spec ebpf.ProgramSpec, attach func(*ebpf.Program) (link.Link, error), unavailable func(error) *UnavailableError) error {
	prog, err := nopProgram(spec)
	if err == nil {
		defer prog.Close()
		var l link.Link
		if l, err = attach(prog); err == nil {
			return l.Close()
		}
	}
	if u := unavailable(err); u != nil {
		return u
	}
	return err
}

// refused reports whether the kernel refused something although klockstat
// runs with every capability BPF tracing needs: a kernel that closes the
// hook to root, not a permission klockstat lacks.
func refused(err error) bool {
	return (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)) && privileged()
}

// privileged reports whether this process has CAP_SYS_ADMIN, CAP_PERFMON
// and CAP_BPF, which together allow every BPF tracing program.
func privileged() bool {
	want := uint64(1)<<capSysAdmin | 1<<capPerfmon | 1<<capBPF
	return effectiveCaps()&want == want
}

// kernelConfig returns the value of a build option (CONFIG_X) of the
// running kernel, "n" when it is not set, or "" when no configuration can
// be read (/proc/config.gz, /boot/config-RELEASE).
func kernelConfig(option string) string {
	r, closeFn, err := openKernelConfig()
	if err != nil {
		return ""
	}
	defer closeFn()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "# "+option+" is not set" {
			return "n"
		}
		if v, ok := strings.CutPrefix(line, option+"="); ok {
			return v
		}
	}
	if sc.Err() != nil {
		return ""
	}
	return "n"
}

func openKernelConfig() (io.Reader, func(), error) {
	if f, err := os.Open("/proc/config.gz"); err == nil {
		gz, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return gz, func() { gz.Close(); f.Close() }, nil
	}
	f, err := os.Open("/boot/config-" + kernelRelease())
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// configSays phrases what the kernel configuration says about an option,
// for messages: "kernel built without CONFIG_KPROBES" or "".
func configSays(option string) string {
	if kernelConfig(option) == "n" {
		return "kernel built without " + option
	}
	return ""
}

// contentionTracepoint is the event every tracepoint backend attaches to.
const contentionTracepoint = "contention_begin"

// noContentionTracepoint says the lock:contention_* tracepoints are missing,
// or nil if they exist. tracefs lists them; where it cannot be read, the
// kernel's BTF has a btf_trace_ typedef for every tracepoint.
func noContentionTracepoint(k *kernel, backend string) *UnavailableError {
	if _, err := os.Stat(tracefsPath + "/events/lock/" + contentionTracepoint); err == nil {
		return nil
	}
	if ok, err := hasBTF[*btf.Typedef](k, "btf_trace_"+contentionTracepoint); err != nil || ok {
		return nil
	}
	return &UnavailableError{Backend: backend, Missing: "no lock:contention_begin tracepoint: it needs Linux 5.19 or later"}
}

// uncountedSkips is the capture's warning, for a backend whose programs the
// kernel runs through trace_call_bpf (perf-event tracepoints, kprobes), that
// the runs the kernel skips are not counted: before Linux 6.7 ("bpf: Count
// missed stats in trace_call_bpf") a skip leaves recursion_misses alone, so
// the waits it loses are missing without being counted as lost. The kernel
// skips these programs on a CPU while bpf_prog_active is raised there: while
// another such program runs, and while any process reads, writes or deletes
// a BPF map entry through the bpf system call (klockstat itself does, for its
// counters and timeline). A preemptible kernel (PREEMPT_RT) can preempt a
// process inside that system call, and the CPU's programs stay skipped until
// it runs again. In the kernel matrix's 6.1 PREEMPT_RT guest the perf-event
// backend missed 0.06 to 0.8% of a workload's waits that tp_btf saw beside it,
// 0.8 to 3.4% while another thread read map entries without pause; on 6.1's
// cloud kernel (PREEMPT_VOLUNTARY) none, even so. The raw tracepoint and
// fentry backends do not share that counter, and count their skips (the raw
// tracepoint ones also rescue them).
func uncountedSkips(backend string) string {
	return "the " + backend + " backend may miss waits without counting them as lost: before Linux 6.7 the kernel skips its programs uncounted on a CPU where another BPF program runs or a process reads or writes a BPF map (often on PREEMPT_RT, where that process can be preempted meanwhile); tp_btf, rawtp and fentry count every skip"
}

// countsSkippedRuns reports whether a kernel release counts the runs
// trace_call_bpf skips (see uncountedSkips). A release that does not parse is
// taken for an older one: the capture then warns of a loss it may not have.
func countsSkippedRuns(release string) bool {
	major, rest, _ := strings.Cut(release, ".")
	minor, _, _ := strings.Cut(rest, ".")
	minor = minor[:len(minor)-len(strings.TrimLeft(minor, "0123456789"))]
	ma, errMajor := strconv.Atoi(major)
	mi, errMinor := strconv.Atoi(minor)
	if errMajor != nil || errMinor != nil {
		return false
	}
	return ma > 6 || ma == 6 && mi >= 7
}

// kernelRelease is the running kernel's release (uname -r), or "" when it
// cannot be read.
func kernelRelease() string {
	return host.KernelRelease()
}
