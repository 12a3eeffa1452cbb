package workload

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmapSize is large enough that mmap and munmap do real VMA work while
// holding mmap_lock for write, small enough to stay fast.
const mmapSize = 64 << 10

// probeSize is the range a reader asks mincore about while holding mmap_lock for read.
const probeSize = 1 << 20

// pmdSize is the span of one page-middle-directory entry on x86-64 and arm64
// with 4 KiB pages.
const pmdSize = 2 << 20

// mmapLoad contends current->mm->mmap_lock. Even workers map, touch and
// unmap anonymous memory (mmap_lock for write); odd workers call mincore
// (mmap_lock for read). Page faults cannot be the readers: since Linux 6.4
// they take the per-VMA lock instead. Of the mixes measured on 6.18 (writers
// only; readers faulting, reading /proc/self/maps, calling madvise or
// mincore), writers with mincore readers gave the most rwsem contention
// events, several times the writers-only count.
//
// The readers probe a PROT_NONE reservation aligned to pmdSize, which never
// gets a page table, so mincore finds nothing to walk and takes no page-table
// spinlock: the contention this workload creates is on mmap_lock alone.
// Mapping goes through MmapPtr and MunmapPtr because unix.Munmap holds a
// process-wide Go mutex around the syscall, which would serialise the
// writers before they reach the kernel.
type mmapLoad struct {
	reservation unsafe.Pointer
	probe       uintptr
}

func newMmap(Options) (generator, error) {
	reservation, err := unix.MmapPtr(-1, 0, nil, 2*pmdSize, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("reserving the mincore region: %w", err)
	}
	probe := (uintptr(reservation) + pmdSize - 1) &^ (pmdSize - 1)
	return &mmapLoad{reservation: reservation, probe: probe}, nil
}

func (m *mmapLoad) op(worker int) func() error {
	if worker%2 == 1 {
		vec := make([]byte, probeSize/os.Getpagesize())
		return func() error {
			_, _, errno := unix.Syscall(unix.SYS_MINCORE, m.probe, probeSize, uintptr(unsafe.Pointer(&vec[0])))
			if errno != 0 {
				return fmt.Errorf("mincore: %w", errno)
			}
			return nil
		}
	}
	return func() error {
		p, err := unix.MmapPtr(-1, 0, nil, mmapSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return fmt.Errorf("mmap: %w", err)
		}
		*(*byte)(p) = 1 // fault a page in, so munmap has a page to free
		if err := unix.MunmapPtr(p, mmapSize); err != nil {
			return fmt.Errorf("munmap: %w", err)
		}
		return nil
	}
}

func (m *mmapLoad) Close() error {
	if err := unix.MunmapPtr(m.reservation, 2*pmdSize); err != nil {
		return fmt.Errorf("unmapping the mincore region: %w", err)
	}
	return nil
}
