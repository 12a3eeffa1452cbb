package workload

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// hogLoad contends the i_rwsem of one file held long by one thread: worker 0,
// the hog, overwrites hogWriteSize bytes at a time with pwrite, holding the
// inode lock (down_write) for the whole copy, while the others overwrite a
// page now and then. Nearly all of the others' wait is for the hog, so a
// profiler that names lock owners should name it: its thread is
// "<prefix>-hog".
//
// As relay, workers 0 and 1 hold the lock in turn, "<prefix>-relay0" and
// "<prefix>-relay1", writing relayWriteSize bytes at a time: each takes the
// lock as the other lets it go (spinning on the owner, a steal), before the
// page writer the release woke runs, which goes back to sleep; one of its
// waits spans tenures of both, until the kernel hands the lock over to it
// (an rwsem writer waiting over 4 ms, RWSEM_WAIT_TIMEOUT).
type hogLoad struct {
	inodeLoad
	hogs int // workers writing size bytes at a time
	size int
}

// hogWriteSize makes each of the hog's writes hold the lock for a
// few milliseconds, thousands of times a page's copy.
const hogWriteSize = 16 << 20

// hogPause is what the others wait between their writes: the lock is the
// hog's most of the time, as when one thread streams a file that others
// append a line to.
const hogPause = 200 * time.Microsecond

// HogThread is the name suffix of the hog's thread.
const HogThread = "hog"

// relayWriteSize holds the lock for a fraction of a millisecond: a page
// writer's wait, until handed the lock, spans many tenures.
const relayWriteSize = 1 << 20

// RelayThread is the name suffix of the relay's threads, followed by 0 or 1.
const RelayThread = "relay"

// newHogs returns the constructor of a hogLoad whose first hogs workers
// write size bytes at a time.
func newHogs(hogs, size int) func(Options) (generator, error) {
	return func(o Options) (generator, error) {
		l, err := newInode(o)
		if err != nil {
			return nil, err
		}
		return &hogLoad{inodeLoad: *l.(*inodeLoad), hogs: hogs, size: size}, nil
	}
}

func (l *hogLoad) op(worker int) func() error {
	if worker >= l.hogs {
		write := l.inodeLoad.op(worker)
		return func() error {
			if err := write(); err != nil {
				return err
			}
			time.Sleep(hogPause)
			return nil
		}
	}
	fd := int(l.file.Fd())
	buf := make([]byte, l.size)
	return func() error {
		if _, err := unix.Pwrite(fd, buf, 0); err != nil {
			return fmt.Errorf("pwrite of %d bytes: %w", len(buf), err)
		}
		return nil
	}
}

// threadName names the hog, or the relay's threads, apart from the others.
func (l *hogLoad) threadName(prefix string, worker int) string {
	switch {
	case worker >= l.hogs:
	case l.hogs == 1:
		return prefix + "-" + HogThread
	default:
		return fmt.Sprintf("%s-%s%d", prefix, RelayThread, worker)
	}
	return fmt.Sprintf("%s-%d", prefix, worker)
}
