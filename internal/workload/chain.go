package workload

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// chainLoad makes a wait chain: worker 0, "<prefix>-hold", holds the
// i_rwsem of a file long, writing hogWriteSize bytes at a time as the hog
// does; worker 1, "<prefix>-link", splices a pipe's data into the same
// file, which holds the pipe's mutex while it waits for the file's
// i_rwsem (iter_file_splice_write takes pipe_lock, then the file system's
// write_iter takes inode_lock); the others write small messages to the
// pipe, and wait for its mutex: blocked by the link, which is blocked by
// the holder.
type chainLoad struct {
	inodeLoad
	pipe [2]int
}

// The name suffixes of the chain's holder and link threads.
const (
	ChainHolder = "hold"
	ChainLink   = "link"
)

// chainSpliceSize is what the link moves from the pipe at a time: all
// the pipe holds.
const chainSpliceSize = 1 << 16

func newChain(o Options) (generator, error) {
	l, err := newInode(o)
	if err != nil {
		return nil, err
	}
	c := &chainLoad{inodeLoad: *l.(*inodeLoad)}
	// Non-blocking, so that no worker sleeps on an empty or full pipe at
	// the end of the run.
	if err := unix.Pipe2(c.pipe[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		c.inodeLoad.Close()
		return nil, fmt.Errorf("creating the shared pipe: %w", err)
	}
	return c, nil
}

func (c *chainLoad) op(worker int) func() error {
	fd := int(c.file.Fd())
	switch worker {
	case 0:
		buf := make([]byte, hogWriteSize)
		return func() error {
			if _, err := unix.Pwrite(fd, buf, 0); err != nil {
				return fmt.Errorf("pwrite of %d bytes: %w", len(buf), err)
			}
			return nil
		}
	case 1:
		return func() error {
			off := int64(2 * hogWriteSize) // past the holder's bytes
			_, err := unix.Splice(c.pipe[0], nil, fd, &off, chainSpliceSize, unix.SPLICE_F_NONBLOCK)
			if err != nil && !retryable(err) {
				return fmt.Errorf("splicing the pipe into the file: %w", err)
			}
			if err != nil {
				time.Sleep(hogPause) // the pipe was empty
			}
			return nil
		}
	}
	msg := make([]byte, pipeMessageSize)
	return func() error {
		if _, err := unix.Write(c.pipe[1], msg); err != nil && !retryable(err) {
			return fmt.Errorf("writing to the pipe: %w", err)
		}
		time.Sleep(hogPause)
		return nil
	}
}

// threadName names the holder and the link apart from the writers.
func (c *chainLoad) threadName(prefix string, worker int) string {
	switch worker {
	case 0:
		return prefix + "-" + ChainHolder
	case 1:
		return prefix + "-" + ChainLink
	}
	return fmt.Sprintf("%s-%d", prefix, worker)
}

func (c *chainLoad) Close() error {
	return errors.Join(unix.Close(c.pipe[0]), unix.Close(c.pipe[1]), c.inodeLoad.Close())
}
