package workload

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// faultWarmup is how many faults each fault worker takes in user mode
// before it starts taking every other one inside the kernel.
const faultWarmup = 500

// faultLoad contends mmap_lock with page faults, taken in user mode first,
// then inside the kernel as well, on one region all workers share. Even
// workers change the protection of a page of it and back (mmap_lock for
// write, and the region's VMA write-locked as it is split and merged again);
// odd workers drop a page of their own with MADV_DONTNEED and fault it in
// again. A user-mode fault that finds the VMA write-locked cannot be handled
// under the per-VMA lock and takes mmap_lock for read in
// lock_mm_and_find_vma; a fault the kernel takes on a user address always
// does. An odd worker's first faultWarmup faults are stores, from user mode;
// then every other one is a read(2) from /dev/zero into the page, which the
// kernel faults in while copying: the same frames up to the fault's entry,
// and the system call's above them.
type faultLoad struct {
	zero   int
	region unsafe.Pointer
	page   uintptr
}

// faultRegionPages bounds the workers that fault a page of their own.
const faultRegionPages = 64

func newFault(Options) (generator, error) {
	page := uintptr(unix.Getpagesize())
	region, err := unix.MmapPtr(-1, 0, nil, faultRegionPages*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mapping the shared region: %w", err)
	}
	fd, err := unix.Open("/dev/zero", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.MunmapPtr(region, faultRegionPages*page)
		return nil, fmt.Errorf("opening /dev/zero: %w", err)
	}
	return &faultLoad{zero: fd, region: region, page: page}, nil
}

func (f *faultLoad) op(worker int) func() error {
	// The middle page: splitting the region there leaves a VMA either side.
	mid := unsafe.Add(f.region, faultRegionPages/2*f.page)
	if worker%2 == 0 {
		return func() error {
			for _, prot := range []int{unix.PROT_READ, unix.PROT_READ | unix.PROT_WRITE} {
				if _, _, errno := unix.Syscall(unix.SYS_MPROTECT, uintptr(mid), f.page, uintptr(prot)); errno != 0 {
					return fmt.Errorf("mprotect: %w", errno)
				}
			}
			return nil
		}
	}
	// Odd workers' pages, away from the middle one.
	p := unsafe.Add(f.region, uintptr(worker/2%(faultRegionPages/2))*f.page)
	n := 0
	return func() error {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(p), f.page, unix.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("madvise: %w", errno)
		}
		n++
		if n <= faultWarmup || n%2 == 0 {
			*(*byte)(p) = 1
			return nil
		}
		if _, _, errno := unix.Syscall(unix.SYS_READ, uintptr(f.zero), uintptr(p), f.page); errno != 0 {
			return fmt.Errorf("reading /dev/zero into the region: %w", errno)
		}
		return nil
	}
}

func (f *faultLoad) Close() error {
	err := unix.MunmapPtr(f.region, faultRegionPages*f.page)
	if cerr := unix.Close(f.zero); err == nil {
		err = cerr
	}
	return err
}

// threadOps is how many times a thread of the threads workload maps and
// unmaps memory before it exits: enough that most of them wait.
const threadOps = 16

// threadsLoad contends mmap_lock from short-lived threads: every operation
// starts a thread that maps a region, touches it and unmaps it, threadOps
// times, and exits, so a workload of N operations waits from N threads
// that come and go.
type threadsLoad struct{}

func newThreads(Options) (generator, error) { return threadsLoad{}, nil }

func (threadsLoad) op(int) func() error {
	return func() error {
		done := make(chan error, 1)
		go func() {
			// Never unlocked: the thread exits with this goroutine.
			runtime.LockOSThread()
			for range threadOps {
				p, err := unix.MmapPtr(-1, 0, nil, mmapSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
				if err != nil {
					done <- fmt.Errorf("mmap: %w", err)
					return
				}
				*(*byte)(p) = 1
				if err := unix.MunmapPtr(p, mmapSize); err != nil {
					done <- fmt.Errorf("munmap: %w", err)
					return
				}
			}
			done <- nil
		}()
		return <-done
	}
}

func (threadsLoad) Close() error { return nil }
