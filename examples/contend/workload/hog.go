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
type hogLoad struct {
	inodeLoad
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

func newHog(o Options) (generator, error) {
	l, err := newInode(o)
	if err != nil {
		return nil, err
	}
	return &hogLoad{*l.(*inodeLoad)}, nil
}

func (l *hogLoad) op(worker int) func() error {
	if worker != 0 {
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
	buf := make([]byte, hogWriteSize)
	return func() error {
		if _, err := unix.Pwrite(fd, buf, 0); err != nil {
			return fmt.Errorf("pwrite of %d bytes: %w", len(buf), err)
		}
		return nil
	}
}

// threadName names the hog apart from the others.
func (l *hogLoad) threadName(prefix string, worker int) string {
	if worker == 0 {
		return prefix + "-" + HogThread
	}
	return fmt.Sprintf("%s-%d", prefix, worker)
}
