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
	fds  [2]int
	size int // bytes per message
}

// pipeMessageSize keeps messages small, so time goes to locking, not copying.
const pipeMessageSize = 64

// pipeBigSize is the pipe's capacity for messages of WriteSize: room for every worker's.
const pipeBigSize = 1 << 20

func newPipe(o Options) (generator, error) {
	p := pipeLoad{size: pipeMessageSize}
	if err := unix.Pipe2(p.fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("creating the shared pipe: %w", err)
	}
	if o.WriteSize > 0 {
		// Each message is copied in and out under pipe->mutex: its size is the hold time.
		p.size = o.WriteSize
		if _, err := unix.FcntlInt(uintptr(p.fds[1]), unix.F_SETPIPE_SZ, pipeBigSize); err != nil {
			p.Close()
			return nil, fmt.Errorf("growing the pipe to %d bytes for messages of %d: %w", pipeBigSize, o.WriteSize, err)
		}
	}
	return &p, nil
}

func (p *pipeLoad) op(int) func() error {
	msg := make([]byte, p.size)
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
