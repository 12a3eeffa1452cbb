package collector

import (
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
)

// TestOwnersPreempted captures lock-holder preemption: the hog holds a file's i_rwsem through 16 MiB
// writes, pinned to one CPU at nice 19 beside a busy thread of nice 0 that preempts it, while the
// others wait on the other CPU (contend -lock preempt). The hog is runnable but not running for most
// of its tenures: the wait charged to it must be mostly runnable, more than on CPU, at the stack in
// its write path it was preempted at; and none of the runnable share may go to a stack sampled on
// its CPU.
func TestOwnersPreempted(t *testing.T) {
	testenv.RequireRoot(t)
	cfg := defaultConfig(t)
	cfg.Owners, cfg.OwnerSampleHz = true, DefaultOwnerSampleHz
	cp, pid := captureContend(t, cfg, "-lock", "preempt", "-threads", "4", "-duration", "2s", "-name", "ct-pre")
	var hog []capture.Owner
	for _, o := range cp.Owners {
		if o.PID == pid && o.Comm == "ct-pre-hog" && o.Type == "rwsem:W" {
			hog = append(hog, o)
		}
	}
	split := capture.SplitByHolder(hog)
	if split.SplitNS() == 0 {
		t.Fatalf("no wait charged to ct-pre-hog split by its state: %+v", hog)
	}
	var preemptedInWrite uint64
	for _, o := range hog {
		if o.Where == capture.OwnerStackOnCPU && o.HolderState != capture.HolderOnCPU {
			t.Errorf("a stack sampled on the hog's CPU carries a share it spent %s: %+v", o.HolderState, o)
		}
		if o.HolderState == capture.HolderRunnable && o.Where == capture.OwnerStackOffCPU && inWritePath(o.Stack) {
			preemptedInWrite += o.TotalNS
		}
	}
	t.Logf("ct-pre-hog: %d ns on CPU, %d ns runnable (%d ns preempted in its write path), %d ns off CPU, %d ns not split",
		split.OnCPUNS, split.RunnableNS, preemptedInWrite, split.OffCPUNS, split.UnsplitNS)
	// Alone, 72-97% of the charge is runnable (this host, the 6.1 guest); beside a helper's load
	// 45-50% was seen, the rest on CPU or off it: a third still tells preemption apart from the
	// on-CPU share, which is what must not swallow it. Under emulation, whose vCPUs take turns on
	// host threads, the hog may run as long as it waits to (6.12 in CI's matrix: 2.05 s each).
	if split.RunnableShare() < 1.0/3 || !testenv.Emulated() && split.RunnableNS <= split.OnCPUNS {
		t.Errorf("the hog, preempted holding the lock, was charged %.1f%% runnable (%d ns) and %d ns on CPU: want at least a third runnable, more than on CPU but under emulation",
			100*split.RunnableShare(), split.RunnableNS, split.OnCPUNS)
	}
	if 2*preemptedInWrite < split.RunnableNS {
		t.Errorf("only %d of the %d ns the hog was runnable are at a stack it was preempted at in its write path, want at least half",
			preemptedInWrite, split.RunnableNS)
	}
}
