package workload

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// flockLoad contends fs/locks.c's file_rwsem, a static percpu_rw_semaphore, the top lock of
// stress-ng --flock: even workers take and drop an exclusive flock(2) of one shared file, each
// through an open file of its own, which reads the semaphore (percpu_down_read in
// flock_lock_inode); odd workers read /proc/locks, which writes it (percpu_down_write in
// locks_start). On a 2-CPU guest with 4 workers, 3 s gave 377 waits of readers and 156 of
// writers.
type flockLoad struct {
	file *os.File
	mu   sync.Mutex // op runs in every worker at once
	own  []*os.File // the workers' open files, for Close
}

func newFlock(o Options) (generator, error) {
	f, err := sharedFile(o.Dir, "flock")
	if err != nil {
		return nil, err
	}
	return &flockLoad{file: f}, nil
}

func (l *flockLoad) op(worker int) func() error {
	if worker%2 == 1 {
		// Reading /proc/locks writes the semaphore (percpu_down_write in locks_start).
		return func() error {
			if _, err := os.ReadFile("/proc/locks"); err != nil {
				return fmt.Errorf("reading /proc/locks: %w", err)
			}
			return nil
		}
	}
	// An open file of the worker's own: flocks of one open file do not conflict.
	own, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(l.file.Fd())), os.O_RDWR, 0)
	if err != nil {
		return func() error { return fmt.Errorf("opening the shared file again: %w", err) }
	}
	l.mu.Lock()
	l.own = append(l.own, own)
	l.mu.Unlock()
	// The closure keeps own, not its descriptor alone: the garbage collector would close it.
	return func() error {
		if err := unix.Flock(int(own.Fd()), unix.LOCK_EX); err != nil {
			return fmt.Errorf("flock: %w", err)
		}
		if err := unix.Flock(int(own.Fd()), unix.LOCK_UN); err != nil {
			return fmt.Errorf("flock unlock: %w", err)
		}
		return nil
	}
}

func (l *flockLoad) Close() error {
	for _, f := range l.own {
		f.Close()
	}
	return l.file.Close()
}
