package workload

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// pipeLoad contends pipe->mutex: every worker writes a small message to one
// shared pipe and reads one back. Both ends are non-blocking, so every call
// takes the mutex and none sleeps waiting for data, and the run ends without
// closing descriptors under a blocked reader.
type pipeLoad struct {
	fds [2]int
}

// pipeMessageSize keeps messages small, so time goes to locking, not copying.
const pipeMessageSize = 64

func newPipe(Options) (generator, error) {
	var p pipeLoad
	if err := unix.Pipe2(p.fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("creating the shared pipe: %w", err)
	}
	return &p, nil
}

func (p *pipeLoad) op(int) func() error {
	msg := make([]byte, pipeMessageSize)
	return func() error {
		if _, err := unix.Write(p.fds[1], msg); err != nil && !retryable(err) {
			return fmt.Errorf("writing to the pipe: %w", err)
		}
		if _, err := unix.Read(p.fds[0], msg); err != nil && !retryable(err) {
			return fmt.Errorf("reading from the pipe: %w", err)
		}
		return nil
	}
}

func (p *pipeLoad) Close() error {
	return errors.Join(unix.Close(p.fds[0]), unix.Close(p.fds[1]))
}
