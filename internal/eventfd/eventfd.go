// Package eventfd contends a kernel spinlock from user space: the wait-queue
// lock of one eventfd that several threads share.
package eventfd

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Shared is one non-blocking eventfd. eventfd_write and eventfd_read take its
// ctx->wqh.lock with spin_lock_irq, so threads adding to and draining it
// queue on that spinlock.
type Shared struct {
	fd int
}

// Open creates the shared eventfd.
func Open() (*Shared, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating the shared eventfd: %w", err)
	}
	return &Shared{fd: fd}, nil
}

// Op returns the operation one thread repeats: add 1 to the counter, then
// read it back. Each call of Op has buffers of its own.
func (s *Shared) Op() func() error {
	one := binary.NativeEndian.AppendUint64(nil, 1)
	counter := make([]byte, 8)
	return func() error {
		if _, err := unix.Write(s.fd, one); err != nil && !retryable(err) {
			return fmt.Errorf("adding to the eventfd: %w", err)
		}
		// EAGAIN: another thread drained the counter first.
		if _, err := unix.Read(s.fd, counter); err != nil && !retryable(err) {
			return fmt.Errorf("reading the eventfd: %w", err)
		}
		return nil
	}
}

// Close closes the eventfd.
func (s *Shared) Close() error {
	return unix.Close(s.fd)
}

func retryable(err error) bool {
	return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)
}
