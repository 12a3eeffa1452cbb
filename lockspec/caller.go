package lockspec

import (
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// tracingPrefixes name the BPF and tracing machinery that sits on top of a
// stack captured from a tracepoint, a BPF trampoline (fentry/fexit) or a
// kprobe: kprobes enter through ftrace or an int3 exception, kretprobes
// through the rethook trampoline.
var tracingPrefixes = []string{
	"bpf_", "__bpf_trace_", "__traceiter_", "trace_", "__probestub_", "bpf_prog_", "perf_",
	"kprobe_", "kretprobe_", "__kretprobe_", "rethook_", "arch_rethook_", "ftrace_", "arch_ftrace_",
	"asm_exc_int3", "exc_int3", "do_int3",
}

// IsLockFunction reports whether a kernel function name (no offset) is an
// acquire, release or internal function of any type in the spec. Compiler
// suffixes are ignored ("rwsem_down_write_slowpath.constprop.0" matches
// "rwsem_down_write_slowpath"), and so is a "_nested" suffix, because kernels
// with CONFIG_DEBUG_LOCK_ALLOC call mutex_lock_nested and friends.
func (s *Spec) IsLockFunction(name string) bool {
	name = stripCompilerSuffix(name)
	if _, ok := s.lockFuncs[name]; ok {
		return true
	}
	base, nested := strings.CutSuffix(name, "_nested")
	if !nested {
		return false
	}
	_, ok := s.lockFuncs[base]
	return ok
}

// Caller returns the index in stack of the caller frame of a contended lock,
// or -1 for an empty stack or one made only of lock and tracing functions.
//
// Frames are as capture.ParseFrame reads them: "function+0xoff",
// "function+0xoff [module]" (a module's function is matched by its name
// alone) or a raw "0xffffffff..." address, which is no function. The caller
// is the first frame after the run of lock functions that starts at the
// first lock frame. Every frame above that run is skipped: it is tracing
// machinery (sometimes an unsymbolized BPF program) or a helper the lock
// code called, never the lock's caller. If no frame is a lock function, the
// caller is the first frame that is not tracing machinery.
func (s *Spec) Caller(stack []string) int {
	first := -1
	for i, frame := range stack {
		if s.IsLockFunction(capture.ParseFrame(frame).Function) {
			first = i
			break
		}
	}
	if first < 0 {
		for i, frame := range stack {
			if !isTracingFunction(capture.ParseFrame(frame).Function) {
				return i
			}
		}
		return -1
	}
	for i := first + 1; i < len(stack); i++ {
		if !s.IsLockFunction(capture.ParseFrame(stack[i]).Function) {
			return i
		}
	}
	return -1
}

// TracingFrames returns how many frames at the top of stack are tracing
// machinery (the BPF program, its trampolines, tracepoint iterators) rather
// than kernel code that waited: klockstat drops them before storing a stack.
// A stack made only of such frames is kept whole.
func TracingFrames(stack []string) int {
	for i, frame := range stack {
		fn := capture.ParseFrame(frame).Function
		if fn != "" && !isTracingFunction(fn) {
			return i
		}
	}
	return 0
}

func isTracingFunction(name string) bool {
	for _, prefix := range tracingPrefixes {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// stripCompilerSuffix removes the suffixes compilers append to specialised
// copies of a function: "foo.constprop.0" and "foo.isra.0" become "foo".
func stripCompilerSuffix(name string) string {
	base, _, _ := strings.Cut(name, ".")
	return base
}
