package workload

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// zoneLoad contends the lock of the memory zone the kernel's pages come from: every worker asks
// for an extended attribute of / that does not exist, with a 64 KiB buffer. getxattr(2) allocates
// a kernel buffer of that size first (kvzalloc) and frees it at once: 16 pages in one block,
// larger than the blocks the CPUs keep lists of, so each allocation and each free takes the
// zone's lock (zone->lock), the workers of every CPU the same zone's.
type zoneLoad struct{}

// zoneBufferBytes is XATTR_SIZE_MAX, the largest buffer getxattr allocates.
const zoneBufferBytes = 64 << 10

func newZone(Options) (generator, error) { return zoneLoad{}, nil }

func (zoneLoad) op(int) func() error {
	buf := make([]byte, zoneBufferBytes)
	return func() error {
		_, err := unix.Getxattr("/", "user.klockstat-zone", buf)
		if err != nil && !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("reading an extended attribute: %w", err)
		}
		return nil
	}
}

func (zoneLoad) Close() error { return nil }
