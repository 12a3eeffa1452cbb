package workload

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// spinLoad contends a spinlock: eventfd_write and eventfd_read take the
// eventfd's ctx->wqh.lock with spin_lock_irq, so workers adding to and
// draining one shared non-blocking eventfd queue on it.
type spinLoad struct {
	fd int
}

func newSpin(Options) (generator, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating the shared eventfd: %w", err)
	}
	return &spinLoad{fd: fd}, nil
}

func (s *spinLoad) op(int) func() error {
	one := binary.NativeEndian.AppendUint64(nil, 1)
	counter := make([]byte, 8)
	return func() error {
		if _, err := unix.Write(s.fd, one); err != nil && !retryable(err) {
			return fmt.Errorf("adding to the eventfd: %w", err)
		}
		// EAGAIN: another worker drained the counter first.
		if _, err := unix.Read(s.fd, counter); err != nil && !retryable(err) {
			return fmt.Errorf("reading the eventfd: %w", err)
		}
		return nil
	}
}

func (s *spinLoad) Close() error {
	return unix.Close(s.fd)
}
