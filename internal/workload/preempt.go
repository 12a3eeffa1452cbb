package workload

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// preemptLoad is lock-holder preemption: the hog of hogLoad, "<prefix>-hog",
// holds one file's i_rwsem through hogWriteSize writes on one CPU at nice 19,
// beside "<prefix>-busy", a thread of nice 0 on the same CPU that spins
// busySpin and sleeps busyNap in turn and preempts the hog as it wakes. The
// others write a page on the other CPUs and wait for the lock while its
// holder is runnable but not running most of the time. Raising a thread's
// nice needs no privilege.
type preemptLoad struct {
	hogLoad
	hogCPU int         // the CPU of the hog and the busy thread
	others unix.CPUSet // the CPUs of the others; empty when only hogCPU is allowed
}

// busySpin is the busy thread's turn on the CPU: longer than the kernel's
// base slice, so that the hog is preempted by it, not only behind it.
const busySpin = 4 * time.Millisecond

// busyNap leaves the hog the CPU between the busy thread's turns, so that
// its writes end.
const busyNap = time.Millisecond

// BusyThread is the name suffix of the thread that preempts the hog.
const BusyThread = "busy"

func newPreempt(o Options) (generator, error) {
	g, err := newHogs(1, hogWriteSize)(o)
	if err != nil {
		return nil, err
	}
	l := &preemptLoad{hogLoad: *g.(*hogLoad), hogCPU: -1}
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		g.Close()
		return nil, fmt.Errorf("reading the CPUs allowed: %w", err)
	}
	for cpu := range 1024 {
		switch {
		case !allowed.IsSet(cpu):
		case l.hogCPU < 0:
			l.hogCPU = cpu
		default:
			l.others.Set(cpu)
		}
	}
	return l, nil
}

func (l *preemptLoad) op(worker int) func() error {
	if err := l.place(worker); err != nil {
		return func() error { return err }
	}
	if worker != 1 {
		return l.hogLoad.op(worker)
	}
	return func() error {
		for began := time.Now(); time.Since(began) < busySpin; {
		}
		time.Sleep(busyNap)
		return nil
	}
}

// place pins the calling thread, worker's, to its CPUs, and lowers the
// hog's priority.
func (l *preemptLoad) place(worker int) error {
	var cpus unix.CPUSet
	switch {
	case worker < 2:
		cpus.Set(l.hogCPU)
	case l.others.Count() > 0:
		cpus = l.others
	default:
		cpus.Set(l.hogCPU)
	}
	if err := unix.SchedSetaffinity(0, &cpus); err != nil {
		return fmt.Errorf("pinning worker %d: %w", worker, err)
	}
	if worker == 0 {
		// PRIO_PROCESS of thread 0 is the calling thread alone on Linux.
		if err := unix.Setpriority(unix.PRIO_PROCESS, 0, 19); err != nil {
			return fmt.Errorf("lowering the hog's priority: %w", err)
		}
	}
	return nil
}

// threadName names the hog and the busy thread apart from the others.
func (l *preemptLoad) threadName(prefix string, worker int) string {
	if worker == 1 {
		return prefix + "-" + BusyThread
	}
	return l.hogLoad.threadName(prefix, worker)
}
