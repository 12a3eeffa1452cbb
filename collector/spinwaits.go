package collector

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/eventfd"
	"github.com/klockstat/klockstat/internal/host"
	"github.com/klockstat/klockstat/lockspec"
)

// Whether the contention tracepoint shows spinlock waits is a question about
// the running kernel, answered by trying. On x86, queued_spin_lock_slowpath
// first calls virt_spin_lock(), which in a guest without paravirtual
// spinlocks (virt_spin_lock_key on) spins in a test-and-set loop and returns
// before trace_contention_begin: a plain spinlock wait (flags SPIN alone)
// then announces nothing, to klockstat or to perf. rwlocks still announce
// theirs, before they take their wait_lock. On bare metal the key is off.

// ErrSpinlockWaitsUnseen means the contention tracepoint shows no spinlock
// wait on this kernel: errors.Is matches every *SpinlockUnseenError.
var ErrSpinlockWaitsUnseen = errors.New("spinlock waits cannot be seen on this kernel")

// spinUnseenReason is why, in a capture's unseen types and in messages.
const spinUnseenReason = "this guest spins in virt_spin_lock() without paravirtual spinlocks, before the contention tracepoint"

// SpinlockUnseenError is the evidence that spinlock waits cannot be seen:
// two threads on two CPUs contended one spinlock, and the tracepoint
// announced none of their waits.
type SpinlockUnseenError struct {
	CPUs [2]int    // the CPUs the threads were pinned to
	Ops  [2]uint64 // eventfd writes and reads of each thread
	// Overlapped counts the operations during which the other thread
	// did one too: the chances to contend.
	Overlapped uint64
	Events     uint64        // their lock:contention_begin events with flags SPIN: 0
	Elapsed    time.Duration // how long they ran
}

func (e *SpinlockUnseenError) Error() string {
	return fmt.Sprintf("%v: %s (in a guest, two threads on CPUs %d and %d took one eventfd's spinlock %d and %d times in %v, %d times while the other did too; lock:contention_begin with flags SPIN fired %d times)",
		ErrSpinlockWaitsUnseen, spinUnseenReason, e.CPUs[0], e.CPUs[1], e.Ops[0], e.Ops[1], e.Elapsed.Round(time.Millisecond), e.Overlapped, e.Events)
}

// Reason says why, in a phrase.
func (e *SpinlockUnseenError) Reason() string { return spinUnseenReason }

// Is makes errors.Is(err, ErrSpinlockWaitsUnseen) true.
func (e *SpinlockUnseenError) Is(target error) bool { return target == ErrSpinlockWaitsUnseen }

// The check's bounds: it stops at the first spinlock wait announced, else
// after spinCheckWindow once the threads took the lock spinCheckMinOps
// times while the other did too, and proves nothing if they had not by
// spinCheckLimit. In the 2-CPU PVM guest of docs/spin-sleep.md each takes it
// about 40,000 times in 200 ms alone, 7,000 to 45,000 times beside the
// programs' loading, nearly all while the other does too; with two guests
// emulated beside them (load 10) 5,900 times together in 2 s. An operation
// is two system calls of a few microseconds, each holding the lock for part
// of it: thousands of them side by side on two CPUs leave a kernel that
// announces spinlock waits next to no chance to announce none.
const (
	spinCheckWindow = 200 * time.Millisecond
	spinCheckLimit  = 2 * time.Second
	spinCheckMinOps = 2_000
	// spinFilter keeps the contention_begin events of plain spinlocks.
	spinFilter = "flags == 1"
)

var spinlockWaits = sync.OnceValue(checkSpinlockWaits)

// SpinlockWaits reports whether the lock:contention_begin tracepoint shows
// spinlock waits on this kernel, as cilium/ebpf's feature probes do: nil
// when it does, an error matching ErrSpinlockWaitsUnseen (a
// *SpinlockUnseenError) when it proved it does not, and any other error
// when it could not tell, saying why. Outside a guest, or off x86, nothing
// comes before the tracepoint and it answers nil at once; in an x86 guest it
// contends a spinlock from two threads until their first wait announced,
// else for 200 ms (up to 2 s on a busy machine), once per process.
// It needs root (perf_event_open of a tracepoint).
func SpinlockWaits() error { return spinlockWaits() }

func checkSpinlockWaits() error {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "386" {
		return nil // virt_spin_lock() is x86's only
	}
	if !host.InGuest() {
		return nil // bare metal: virt_spin_lock_key is off
	}
	if host.PreemptRT() {
		// The check's eventfd spinlock is an rtmutex there, announced as RT: a count of 0
		// plain spinlock waits would prove nothing of the raw spinlocks, which user space
		// cannot contend at will.
		return errors.New("checking whether spinlock waits can be seen: not on PREEMPT_RT, where the spinlock the check contends is an rtmutex")
	}
	if err := spinCheck(); err != nil {
		if errors.Is(err, ErrSpinlockWaitsUnseen) {
			return err
		}
		return fmt.Errorf("checking whether spinlock waits can be seen: %w", err)
	}
	return nil
}

// spinCheck contends an eventfd's spinlock from two threads pinned to two
// CPUs, counting their plain spinlock contention_begin events, and returns
// nil at the first one.
func spinCheck() error {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return fmt.Errorf("reading the CPUs this process may use: %w", err)
	}
	var cpus []int
	for cpu := 0; cpu < len(allowed)*64 && len(cpus) < 2; cpu++ {
		if allowed.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	if len(cpus) < 2 {
		return errors.New("fewer than 2 CPUs to run on: no two threads can contend a spinlock")
	}
	id, err := tracepointID("lock", contentionTracepoint)
	if err != nil {
		return err
	}
	fd, err := eventfd.Open()
	if err != nil {
		return err
	}
	defer fd.Close()

	var (
		stop    atomic.Bool
		ready   sync.WaitGroup
		done    sync.WaitGroup
		start   = make(chan struct{})
		ops     [2]uint64
		overlap [2]uint64
		setup   [2]error // of pinning and counting, before the start
		errs    [2]error // of the operations
		counter [2]int
	)
	for i := range counter {
		counter[i] = -1
	}
	defer func() {
		for _, c := range counter {
			if c >= 0 {
				unix.Close(c)
			}
		}
	}()
	for i, cpu := range cpus {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			// Never unlocked: the pinned thread exits with the goroutine
			// instead of returning to the runtime's pool.
			runtime.LockOSThread()
			var set unix.CPUSet
			set.Set(cpu)
			// Ahead of other work on its CPU, so that the two run side by
			// side on a busy machine too; the thread exits with its nice.
			// Refused, it runs at the process's own.
			_ = unix.Setpriority(unix.PRIO_PROCESS, 0, -20)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				setup[i] = fmt.Errorf("pinning a thread to CPU %d: %w", cpu, err)
			} else {
				counter[i], setup[i] = countBegins(id, unix.Gettid(), spinFilter)
			}
			op := fd.Op()
			ready.Done()
			<-start
			other := &ops[1-i]
			for setup[i] == nil && errs[i] == nil && !stop.Load() {
				before := atomic.LoadUint64(other)
				if errs[i] = op(); errs[i] == nil {
					atomic.AddUint64(&ops[i], 1)
					if atomic.LoadUint64(other) != before {
						atomic.AddUint64(&overlap[i], 1)
					}
				}
			}
		}()
	}
	ready.Wait()
	if err := errors.Join(setup[:]...); err != nil {
		close(start)
		done.Wait()
		return err
	}
	began := time.Now()
	close(start)
	events, err := watchSpinBegins(counter, began, func() bool {
		return atomic.LoadUint64(&overlap[0])+atomic.LoadUint64(&overlap[1]) >= spinCheckMinOps
	})
	stop.Store(true)
	done.Wait()
	elapsed := time.Since(began)
	if err := errors.Join(append(errs[:], err)...); err != nil {
		return err
	}
	if events > 0 {
		return nil
	}
	if n := overlap[0] + overlap[1]; n < spinCheckMinOps {
		return fmt.Errorf("two threads took one spinlock %d and %d times in %v, only %d times while the other did too, too few to tell (want %d): the machine was too busy", ops[0], ops[1], elapsed.Round(time.Millisecond), n, spinCheckMinOps)
	}
	return &SpinlockUnseenError{CPUs: [2]int(cpus), Ops: ops, Overlapped: overlap[0] + overlap[1], Events: events, Elapsed: elapsed}
}

// watchSpinBegins reads the counters every millisecond until one counts an
// event, or spinCheckWindow passes with enough operations done, or
// spinCheckLimit passes, and returns their sum.
func watchSpinBegins(counter [2]int, began time.Time, enough func() bool) (uint64, error) {
	for {
		var sum uint64
		for _, c := range counter {
			n, err := readCount(c)
			if err != nil {
				return 0, err
			}
			sum += n
		}
		if elapsed := time.Since(began); sum > 0 || elapsed >= spinCheckWindow && enough() || elapsed >= spinCheckLimit {
			return sum, nil
		}
		time.Sleep(time.Millisecond)
	}
}

// countBegins opens a counter of the contention_begin events of one thread
// that pass an ftrace filter, on any CPU.
func countBegins(tracepoint uint64, tid int, filter string) (int, error) {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_TRACEPOINT,
		Config: tracepoint,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitDisabled,
	}
	fd, err := unix.PerfEventOpen(&attr, tid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("counting lock:%s events (perf_event_open, needs root or CAP_PERFMON): %w", contentionTracepoint, err)
	}
	p, err := unix.BytePtrFromString(filter)
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_SET_FILTER, uintptr(unsafe.Pointer(p))); errno != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("filtering lock:%s events with %q: %w", contentionTracepoint, filter, errno)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("enabling the lock:%s counter: %w", contentionTracepoint, err)
	}
	return fd, nil
}

func readCount(fd int) (uint64, error) {
	var buf [8]byte
	if _, err := unix.Read(fd, buf[:]); err != nil {
		return 0, fmt.Errorf("reading the lock:%s counter: %w", contentionTracepoint, err)
	}
	return binary.NativeEndian.Uint64(buf[:]), nil
}

// tracepointID is the perf id of a tracepoint, from tracefs, which it
// mounts if need be.
func tracepointID(group, event string) (uint64, error) {
	if err := mountTracefs(); err != nil {
		return 0, err
	}
	file := tracefsPath + "/events/" + group + "/" + event + "/id"
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("reading the id of tracepoint %s:%s: %w", group, event, err)
	}
	id, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parsing %s: %w", file, err)
	}
	return id, nil
}

// plainSpin reports whether every wait of a lock type is announced with
// flags SPIN alone: the waits virt_spin_lock() hides.
func plainSpin(t lockspec.Type) bool {
	for _, f := range t.Flags {
		if f != lockspec.FlagSpin {
			return false
		}
	}
	return len(t.Flags) > 0
}

// unseenTypes are the types of spec whose waits a backend cannot see, given
// what SpinlockWaits answered: the plain spinlock types, to a tracepoint
// backend, when it proved their waits unseen. The function-probe backends
// probe no spinning lock, and say so in the capture's Acquire.Skipped.
func unseenTypes(spec *lockspec.Spec, b Backend, spinErr error) []capture.UnseenType {
	if b.timesAcquires() || !errors.Is(spinErr, ErrSpinlockWaitsUnseen) {
		return nil
	}
	var unseen []capture.UnseenType
	for _, t := range spec.Types {
		if plainSpin(t) {
			unseen = append(unseen, capture.UnseenType{Type: t.Name, Reason: spinUnseenReason})
		}
	}
	return unseen
}

// needsSpinCheck reports whether a capture of spec asks SpinlockWaits: it
// has a plain spinlock type, and a tracepoint backend among the candidates.
func needsSpinCheck(spec *lockspec.Spec, candidates []Backend) bool {
	if !slices.ContainsFunc(candidates, func(b Backend) bool { return !b.timesAcquires() }) {
		return false
	}
	for _, t := range spec.Types {
		if plainSpin(t) {
			return true
		}
	}
	return false
}
