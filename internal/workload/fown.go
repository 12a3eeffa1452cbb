package workload

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// fownLoad contends an rwlock_t: the f_owner lock of one shared file, which
// fcntl F_SETOWN takes for writing and F_GETOWN for reading. Even workers
// set the owner (to the process), odd ones read it. On PREEMPT_RT kernels
// an rwlock_t sleeps (rwlock-rt); elsewhere it spins (rwlock).
type fownLoad struct {
	fd  int
	pid int
}

func newFown(Options) (generator, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating the shared file: %w", err)
	}
	return &fownLoad{fd: fd, pid: unix.Getpid()}, nil
}

func (f *fownLoad) op(worker int) func() error {
	if worker%2 == 0 {
		return func() error {
			if _, err := unix.FcntlInt(uintptr(f.fd), unix.F_SETOWN, f.pid); err != nil {
				return fmt.Errorf("setting the file's owner: %w", err)
			}
			return nil
		}
	}
	return func() error {
		if _, err := unix.FcntlInt(uintptr(f.fd), unix.F_GETOWN, 0); err != nil {
			return fmt.Errorf("reading the file's owner: %w", err)
		}
		return nil
	}
}

func (f *fownLoad) Close() error {
	return unix.Close(f.fd)
}
