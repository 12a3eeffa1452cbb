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

	"github.com/klockstat/klockstat/kallsyms"
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
	return permissionError(err)
}

// refused reports whether the kernel refused something although klockstat
// runs with every capability BPF tracing needs: a kernel that closes the
// hook to root, not a permission klockstat lacks.
func refused(err error) bool {
	return (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)) && privileged()
}

// Capability bits of /proc/self/status CapEff.
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// privileged reports whether this process has CAP_SYS_ADMIN, CAP_PERFMON
// and CAP_BPF, which together allow every BPF tracing program.
func privileged() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		hex, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return false
		}
		want := uint64(1)<<capSysAdmin | 1<<capPerfmon | 1<<capBPF
		return caps&want == want
	}
	return false
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
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return nil, nil, err
	}
	f, err := os.Open("/boot/config-" + unix.ByteSliceToString(u.Release[:]))
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
