package collector

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// A map or program the kernel refuses for lack of memory, of file descriptors or of a capability
// fails for a limit of the process, not for a kernel without a hook: every backend would meet the
// same limit and fail with a message about the kernel. So Start stops at the first backend that meets
// one, and its error names the limit first, with the fix.

// limitKind is what ran short.
type limitKind int

const (
	limitMemory limitKind = iota
	limitFiles
	limitCapability
)

// LimitError says which limit of the process stopped the capture and how to lift it.
type LimitError struct {
	kind   limitKind
	Reason string // what ran short, e.g. "missing capability CAP_PERFMON"
	Fix    string // what to do, e.g. "give --map-nr-entries 4096"
	Err    error  // what the kernel answered
}

// Error is one line: the reason, the fix and the kernel's errno, without the library's guesses
// (cilium/ebpf adds a hint about RLIMIT_MEMLOCK to every EPERM).
func (e *LimitError) Error() string {
	var errno unix.Errno
	if errors.As(e.Err, &errno) {
		return fmt.Sprintf("%s: %s (%v)", e.Reason, e.Fix, errno)
	}
	return fmt.Sprintf("%s: %s (%v)", e.Reason, e.Fix, e.Err)
}

func (e *LimitError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrPermission) true of a missing capability.
func (e *LimitError) Is(target error) bool {
	return target == ErrPermission && e.kind == limitCapability
}

// processLimits is what classifying an error needs to know of the process.
type processLimits struct {
	caps    uint64 // effective capabilities, as bits of /proc/self/status CapEff
	openMax uint64 // RLIMIT_NOFILE, the soft limit
	mapSize uint32 // the --map-nr-entries that failed
	// fitting is the largest --map-nr-entries whose maps the kernel creates now, mapSize itself when its
	// maps fit (the programs then did not), or 0 when not even the smallest fits.
	fitting func() uint32
}

// has reports whether the process holds capability bit.
func (l processLimits) has(bit uint) bool { return l.caps&(1<<bit) != 0 }

// limitReached returns the *LimitError of err when a limit of the process caused it, else nil.
func limitReached(err error, l processLimits) *LimitError {
	switch {
	case errors.Is(err, unix.EMFILE):
		return &LimitError{kind: limitFiles, Err: err,
			Reason: fmt.Sprintf("too many open files: the limit of %d (ulimit -n) is too low for klockstat's BPF maps and programs", l.openMax),
			Fix:    "raise it, e.g. ulimit -n 1024"}
	case errors.Is(err, unix.ENFILE):
		return &LimitError{kind: limitFiles, Err: err,
			Reason: "too many open files in the system: its limit (fs.file-max) is reached, whatever ulimit -n says",
			Fix:    "close files, or raise it with sysctl fs.file-max"}
	case errors.Is(err, unix.ENOMEM):
		return memoryLimit(err, l)
	case errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES):
		return capabilityLimit(err, l)
	}
	return nil
}

// memoryLimit says how little memory there was: too little for the maps of --map-nr-entries, for which it
// names one that fits, or for the programs.
func memoryLimit(err error, l processLimits) *LimitError {
	e := &LimitError{kind: limitMemory, Err: err}
	switch fit := l.fitting(); {
	case fit == 0:
		e.Reason = fmt.Sprintf("out of memory for the BPF maps, even at the smallest --map-nr-entries %d", minMapSize)
		e.Fix = "raise the memory limit of klockstat's cgroup (memory.max), or free memory"
	case fit < l.mapSize:
		e.Reason = fmt.Sprintf("out of memory for the BPF maps of --map-nr-entries %d (kernel memory counts against the memory cgroup's limit)", l.mapSize)
		e.Fix = fmt.Sprintf("give --map-nr-entries %d, whose maps fit, or raise the memory limit of klockstat's cgroup", fit)
	default:
		e.Reason = "out of memory for the BPF programs, although their maps fit"
		e.Fix = "raise the memory limit of klockstat's cgroup (memory.max), or free memory"
	}
	return e
}

// Capability bits of /proc/self/status CapEff.
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

var capNames = map[uint]string{capSysAdmin: "CAP_SYS_ADMIN", capPerfmon: "CAP_PERFMON", capBPF: "CAP_BPF"}

// capabilityLimit names the capabilities a refusal shows missing: CAP_BPF and CAP_PERFMON load and
// attach tracing programs (Linux 5.8+), CAP_SYS_ADMIN does both; with CAP_BPF and CAP_PERFMON a
// kernel that still refuses wants CAP_SYS_ADMIN. nil when the process has all three: the kernel then
// refused for another reason.
func capabilityLimit(err error, l processLimits) *LimitError {
	var missing []string
	if !l.has(capSysAdmin) {
		for _, bit := range []uint{capBPF, capPerfmon} {
			if !l.has(bit) {
				missing = append(missing, capNames[bit])
			}
		}
	}
	e := &LimitError{kind: limitCapability, Err: err}
	switch {
	case len(missing) > 0:
		what := strings.Join(missing, " and ")
		e.Reason = fmt.Sprintf("missing %s %s: loading BPF tracing programs needs root, or CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN for both",
			plural(len(missing), "capability", "capabilities"), what)
		e.Fix = "run klockstat as root, or grant it " + what
	case !l.has(capSysAdmin):
		e.Reason = "missing capability CAP_SYS_ADMIN: this kernel refuses klockstat's BPF programs with CAP_BPF and CAP_PERFMON alone"
		e.Fix = "run klockstat as root, or grant it CAP_SYS_ADMIN"
	default:
		return nil
	}
	return e
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// outOfResources reports whether err is the kernel's lack of memory or of file descriptors.
func outOfResources(err error) bool {
	return errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE)
}

// memlockLimit explains why the locked-memory limit, which BPF maps count against before Linux
// 5.11, could not be lifted: a missing capability, or a hard limit only CAP_SYS_RESOURCE raises.
func memlockLimit(err error, l processLimits) *LimitError {
	if e := capabilityLimit(err, l); e != nil {
		return e
	}
	return &LimitError{kind: limitMemory, Err: err,
		Reason: "the locked-memory limit (ulimit -l) is too low for BPF maps on this kernel (before Linux 5.11 they count against it), and klockstat may not raise it",
		Fix:    "raise it (ulimit -l unlimited), or run klockstat as root with CAP_SYS_RESOURCE"}
}

// runTimeStatsUnavailable is why the probe cost is not measured when enabling BPF run-time
// statistics failed.
func runTimeStatsUnavailable(err error, caps uint64) string {
	if (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)) && caps&(1<<capSysAdmin) == 0 {
		return "probe cost not measured: enabling BPF run-time statistics needs CAP_SYS_ADMIN"
	}
	return fmt.Sprintf("probe cost not measured: enabling BPF run-time statistics: %v", err)
}

// currentLimits reads the process's limits for a capture of cfg.
func currentLimits(cfg Config) processLimits {
	l := processLimits{caps: effectiveCaps(), mapSize: cfg.MapSize, fitting: func() uint32 {
		// What is left under the memory cgroups' limits, or in the machine.
		headroom, err := availableMemory()
		if err != nil {
			headroom = math.MaxUint64
		}
		if h, ok := settledCgroupHeadroom(); ok {
			headroom = min(headroom, h)
		}
		cpus, err := ebpf.PossibleCPU()
		if err != nil {
			return 0
		}
		return fittingMapSize(cfg, headroom, cpus)
	}}
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &r) == nil {
		l.openMax = r.Cur
	}
	return l
}

// minMapSize is the smallest --map-nr-entries.
const minMapSize = 64

// fittingMapSize is the largest --map-nr-entries, cfg's or cfg's halved, whose maps take at most half of
// headroom by mapMemory's estimate: the other half is for the programs, klockstat itself and the
// estimate's error. 0 when not even the smallest fits.
func fittingMapSize(cfg Config, headroom uint64, cpus int) uint32 {
	for size := cfg.MapSize; size >= minMapSize; size /= 2 {
		c := cfg
		c.MapSize = size
		need, err := c.mapBytes(cpus)
		if err != nil {
			return 0
		}
		if need <= headroom/2 {
			return size
		}
	}
	return 0
}

// settledCgroupHeadroom is memoryCgroupHeadroom once the memory of the maps that failed to be
// created is back: the kernel frees a map after an RCU grace period, and its memory counts until
// then. The Go heap klockstat no longer needs (the kernel's BTF, read to detect the backends) is
// returned first.
func settledCgroupHeadroom() (uint64, bool) {
	debug.FreeOSMemory()
	var best uint64
	found := false
	for i := range 5 {
		if i > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		if h, ok := memoryCgroupHeadroom(); ok {
			best, found = max(best, h), true
		}
	}
	return best, found
}

// effectiveCaps reads this process's effective capabilities; none when they cannot be read.
func effectiveCaps() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return parseCapEff(string(b))
}

// parseCapEff finds CapEff in the text of /proc/self/status; none when it is missing.
func parseCapEff(status string) uint64 {
	for _, line := range strings.Split(status, "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				return 0
			}
			return caps
		}
	}
	return 0
}
