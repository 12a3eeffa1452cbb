package workload

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// lruRegionBytes is each LRU worker's memory: pages enough that every round moves batches of them
// on and off the LRU lists.
const lruRegionBytes = 8 << 20

// lruLoad contends the LRU lock of the memory cgroup's node (lruvec->lru_lock): each worker
// faults in the pages of a region of its own, which join the LRU lists a batch at a time, and
// frees them (MADV_DONTNEED), which takes them off again.
type lruLoad struct {
	regions [][]byte
}

func newLRU(o Options) (generator, error) {
	l := &lruLoad{}
	for range max(o.Threads, 1) {
		b, err := unix.Mmap(-1, 0, lruRegionBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("mapping an LRU worker's region: %w", err)
		}
		l.regions = append(l.regions, b)
	}
	return l, nil
}

func (l *lruLoad) op(worker int) func() error {
	region := l.regions[worker%len(l.regions)]
	page := unix.Getpagesize()
	return func() error {
		for i := 0; i < len(region); i += page {
			region[i] = 1
		}
		if err := unix.Madvise(region, unix.MADV_DONTNEED); err != nil {
			return fmt.Errorf("freeing an LRU worker's pages: %w", err)
		}
		return nil
	}
}

func (l *lruLoad) Close() error {
	var first error
	for _, b := range l.regions {
		if err := unix.Munmap(b); err != nil && first == nil {
			first = fmt.Errorf("unmapping an LRU worker's region: %w", err)
		}
	}
	l.regions = nil
	return first
}
