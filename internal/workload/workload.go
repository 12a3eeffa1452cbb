// Package workload generates real Linux kernel lock contention from many OS threads, so lock profilers have something true to measure.
package workload

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// init keeps the main goroutine on the main thread for good. Workers lock
// their goroutine to a thread and rename it; one scheduled on the main thread
// would rename the thread-group leader, whose name is the process's name in
// ps and in klockstat's --comm filter, and would wedge that thread when it exits.
func init() {
	runtime.LockOSThread()
}

// Lock names a kernel lock that a workload hammers.
type Lock string

// The kernel locks a workload can contend.
const (
	// Mmap contends the process's mmap_lock, an rwsem: writers map and unmap
	// anonymous memory while readers call mincore.
	Mmap Lock = "mmap"
	// Inode contends the i_rwsem of one shared file: every thread overwrites
	// its first page with pwrite.
	Inode Lock = "inode"
	// Pipe contends the mutex of one shared pipe: every thread writes a small
	// message and reads one back.
	Pipe Lock = "pipe"
	// Spin contends the wait-queue spinlock of one shared eventfd: every
	// thread adds to the counter and reads it back.
	Spin Lock = "spin"
	// Fault contends mmap_lock with page faults on fresh mappings: from
	// user mode first, then from read(2) inside the kernel as well.
	Fault Lock = "fault"
	// Threads contends mmap_lock from short-lived threads: every operation
	// is a new thread that maps and unmaps memory, then exits.
	Threads Lock = "threads"
	// Hog contends the i_rwsem of one shared file held long by one thread,
	// "<prefix>-hog", writing 16 MiB at a time while the others write a page.
	Hog Lock = "hog"
	// Relay contends the i_rwsem of one shared file held in turn by two
	// threads, "<prefix>-relay0" and "<prefix>-relay1", writing 1 MiB at a
	// time, while the others write a page: a page writer woken as one lets
	// the lock go finds the other holding it, and sleeps again.
	Relay Lock = "relay"
	// Chain makes a wait chain: "<prefix>-hold" holds the i_rwsem of a
	// file long, writing 16 MiB at a time; "<prefix>-link" splices a
	// pipe into that file, holding the pipe's mutex while it waits for
	// the file's i_rwsem; the others write to the pipe and wait for its
	// mutex, blocked by the link, itself blocked by the holder.
	Chain Lock = "chain"
	// Fown contends the f_owner rwlock_t of one shared file: half the
	// threads set its owner, half read it.
	Fown Lock = "fown"
	// Zone contends the lock of a memory zone: every thread has the kernel
	// allocate and free a 64 KiB buffer, in getxattr(2).
	Zone Lock = "zone"
	// LRU contends the LRU lock of the memory cgroup's node: every thread
	// faults in the pages of a region of its own and frees them again.
	LRU Lock = "lru"
	// Preempt is lock-holder preemption: the i_rwsem of one shared file
	// held long by "<prefix>-hog", pinned to one CPU at nice 19 beside
	// "<prefix>-busy", which spins at nice 0 and preempts it, while the
	// others, on the other CPUs, write a page and wait for the lock.
	Preempt Lock = "preempt"
	// Flock contends file_rwsem, the static semaphore of fs/locks.c: half
	// the threads take and drop an exclusive flock of one shared file, half
	// read /proc/locks.
	Flock Lock = "flock"
)

// ErrUnknownLock is returned for a lock name outside Names.
var ErrUnknownLock = errors.New("unknown lock")

// A generator holds the kernel object that all workers of one Run share.
type generator interface {
	// op returns the operation worker i repeats on its own OS thread.
	op(worker int) func() error
	Close() error
}

var generators = map[Lock]func(Options) (generator, error){
	Mmap:    newMmap,
	Inode:   newInode,
	Pipe:    newPipe,
	Spin:    newSpin,
	Fault:   newFault,
	Threads: newThreads,
	Hog:     newHogs(1, hogWriteSize),
	Relay:   newHogs(2, relayWriteSize),
	Chain:   newChain,
	Fown:    newFown,
	Zone:    newZone,
	LRU:     newLRU,
	Flock:   newFlock,
	Preempt: newPreempt,
}

// A threadNamer names its workers itself, instead of "<prefix>-<i>".
type threadNamer interface {
	threadName(prefix string, worker int) string
}

// Names returns the lock names Run accepts.
func Names() []string {
	return []string{string(Mmap), string(Inode), string(Pipe), string(Spin), string(Fault), string(Threads), string(Hog), string(Relay), string(Chain), string(Fown), string(Zone), string(LRU), string(Flock), string(Preempt)}
}

// Options configures one Run.
type Options struct {
	// Lock is one of Names.
	Lock string
	// Threads is the number of worker OS threads, at least 1.
	Threads int
	// Duration bounds the run; 0 means no time limit.
	Duration time.Duration
	// Ops stops each worker after that many operations; 0 means no limit.
	Ops uint64
	// NamePrefix names worker i "<NamePrefix>-<i>"; the kernel keeps the
	// first 15 bytes. Empty means "ct-<Lock>".
	NamePrefix string
	// Dir holds the Inode workload's file; empty means os.TempDir().
	Dir string
	// WriteSize is the bytes of each write of the Inode workload, which holds the file's i_rwsem
	// for the copy, and of each message of the Pipe workload, copied in and out under the pipe's
	// mutex: the hold time as a parameter. 0 means one page, and 64 bytes.
	WriteSize int
	// Started, if set, is called with the worker thread IDs once every
	// worker is running, just before the timed loop begins.
	Started func(tids []int)
}

// Validate reports the first option that Run would reject regardless of its context.
func (o Options) Validate() error {
	if _, ok := generators[Lock(o.Lock)]; !ok {
		return fmt.Errorf("%w %q: choose one of %s", ErrUnknownLock, o.Lock, strings.Join(Names(), ", "))
	}
	if o.Threads < 1 {
		return fmt.Errorf("threads must be at least 1, got %d", o.Threads)
	}
	if o.WriteSize < 0 || o.WriteSize > 1<<30 {
		return fmt.Errorf("write size must be 0 (a page) to 1 GiB, got %d", o.WriteSize)
	}
	if o.Duration < 0 {
		return fmt.Errorf("duration must not be negative, got %v", o.Duration)
	}
	if strings.ContainsRune(o.NamePrefix, 0) {
		return fmt.Errorf("thread name prefix %q contains a NUL byte: remove it", o.NamePrefix)
	}
	return nil
}

// Result summarises one Run.
type Result struct {
	Lock       string  `json:"lock"`
	Threads    int     `json:"threads"`
	Ops        uint64  `json:"ops"`
	DurationNS int64   `json:"duration_ns"`
	OpsPerSec  float64 `json:"ops_per_sec"`
	// TIDs holds the kernel thread ID of each worker, in worker order.
	TIDs []int `json:"tids"`
}

// Run starts o.Threads workers on distinct OS threads, each repeating one
// operation on a kernel object they all share, until o.Duration passes, every
// worker has done o.Ops operations, or ctx is done, whichever comes first.
// A done ctx is a normal way to stop, not an error. On an error from a
// worker, Run stops the others and returns what was done so far with it.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.Validate(); err != nil {
		return Result{}, err
	}
	if o.Duration == 0 && o.Ops == 0 && ctx.Done() == nil {
		return Result{}, errors.New("no stop condition: set a duration, an ops limit, or pass a cancellable context")
	}
	if o.NamePrefix == "" {
		o.NamePrefix = "ct-" + o.Lock
	}
	gen, err := generators[Lock(o.Lock)](o)
	if err != nil {
		return Result{}, fmt.Errorf("setting up %s workload: %w", o.Lock, err)
	}
	res, err := run(ctx, o, gen)
	if cerr := gen.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("cleaning up %s workload: %w", o.Lock, cerr)
	}
	return res, err
}

func run(ctx context.Context, o Options, gen generator) (Result, error) {
	var (
		stop     atomic.Bool
		deadline time.Time
		ready    sync.WaitGroup
		finished sync.WaitGroup
		start    = make(chan struct{})
		tids     = make([]int, o.Threads)
		ops      = make([]uint64, o.Threads)
		errs     = make([]error, o.Threads)
	)
	for i := range o.Threads {
		ready.Add(1)
		finished.Add(1)
		go func() {
			defer finished.Done()
			// Never unlocked: the thread then exits with this goroutine
			// instead of returning to the runtime's pool under our name.
			runtime.LockOSThread()
			tids[i] = unix.Gettid()
			name := fmt.Sprintf("%s-%d", o.NamePrefix, i)
			if n, ok := gen.(threadNamer); ok {
				name = n.threadName(o.NamePrefix, i)
			}
			errs[i] = setThreadName(name)
			op := gen.op(i)
			ready.Done()
			<-start
			if errs[i] != nil {
				return
			}
			var n uint64
			for (o.Ops == 0 || n < o.Ops) && !stop.Load() && (o.Duration == 0 || time.Now().Before(deadline)) {
				if err := op(); err != nil {
					errs[i] = fmt.Errorf("worker %d: %w", i, err)
					stop.Store(true)
					break
				}
				n++
			}
			ops[i] = n
		}()
	}
	ready.Wait()
	if err := errors.Join(errs...); err != nil {
		stop.Store(true)
		close(start)
		finished.Wait()
		return Result{}, err
	}
	if o.Started != nil {
		o.Started(slices.Clone(tids))
	}

	// Workers watch the deadline themselves: a timer here would need this
	// goroutine scheduled, which busy workers can delay by many milliseconds.
	began := time.Now()
	deadline = began.Add(o.Duration)
	close(start)
	allDone := make(chan struct{})
	go func() {
		finished.Wait()
		close(allDone)
	}()
	select {
	case <-ctx.Done():
		stop.Store(true)
		<-allDone
	case <-allDone:
	}
	elapsed := time.Since(began)

	res := Result{
		Lock:       o.Lock,
		Threads:    o.Threads,
		DurationNS: elapsed.Nanoseconds(),
		TIDs:       tids,
	}
	for _, n := range ops {
		res.Ops += n
	}
	if elapsed > 0 {
		res.OpsPerSec = float64(res.Ops) / elapsed.Seconds()
	}
	return res, errors.Join(errs...)
}

// setThreadName sets the calling thread's comm, which the kernel truncates to 15 bytes.
func setThreadName(name string) error {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return fmt.Errorf("thread name %q: %w", name, err)
	}
	if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(p)), 0, 0, 0); err != nil {
		return fmt.Errorf("naming thread %q: %w", name, err)
	}
	return nil
}

// retryable reports whether a non-blocking operation on a shared object
// failed only because another worker got there first.
func retryable(err error) bool {
	return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)
}
