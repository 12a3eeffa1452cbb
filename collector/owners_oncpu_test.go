package collector

import (
	"slices"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
	"github.com/klockstat/klockstat/lockspec"
)

// inWritePath says whether a stack runs in a file write, below the file system's write_iter, where
// the inode's lock is held.
func inWritePath(stack []string) bool {
	return slices.ContainsFunc(stack, func(f string) bool {
		fn := capture.ParseFrame(f).Func()
		return fn == "generic_perform_write" || strings.HasSuffix(fn, "_file_write_iter") || strings.HasSuffix(fn, "_buffered_write_iter")
	})
}

// TestOwnersSampledOnCPU captures the hog, a thread that holds a file's i_rwsem through 16 MiB
// writes, on its CPU most of the time, while others wait: at least 80% of the wait charged to it
// must carry a stack in the write path that holds the lock, sampled on its CPU or taken as it left
// it, and the sampler must have found it on its CPU holding the lock. A share the hog spent
// runnable or off its CPU since before it was marked has no stack to carry, by design
// (capture.OwnerStackBefore), and is left out: on this host it was a quarter of the charge once.
func TestOwnersSampledOnCPU(t *testing.T) {
	testenv.RequireRoot(t)
	cfg := defaultConfig(t)
	cfg.Owners, cfg.OwnerSampleHz = true, DefaultOwnerSampleHz
	var pid uint32
	var raw []ownerSampleEntry
	cp := captureWith(t, cfg, func(c *Collector) {
		cmd := startContend(t, "-lock", "hog", "-threads", "3", "-duration", "2s", "-name", "ct-smp")
		pid = uint32(cmd.Process.Pid)
		waitContend(t, cmd)
		// Read before Stop: the capture keeps only the samples of waits whose owner was never seen
		// leaving its CPU in its tenure, spread over them (TestAssembleOwnerSamples), and the hog
		// may leave it in every tenure: preempted on a loaded guest, or blocked on a spinlock_t
		// of PREEMPT_RT. The raw map says whether the sampler found it.
		var err error
		if raw, err = readEntries[lockstatOwnerSampleKey, uint64](c.obj.maps.OwnerSamples); err != nil {
			t.Fatal(err)
		}
	})
	if cp.Meta.OwnerSampleHz != DefaultOwnerSampleHz {
		t.Fatalf("owners sampled at %d Hz, want %d: %v", cp.Meta.OwnerSampleHz, DefaultOwnerSampleHz, cp.Meta.Warnings)
	}
	var charged, inWrite, onCPU, spread, before uint64
	hog := map[uint32]bool{}
	for _, o := range cp.Owners {
		if o.PID != pid || o.Comm != "ct-smp-hog" || o.Type != "rwsem:W" {
			continue
		}
		hog[o.TID] = true
		if o.StackReason == capture.OwnerStackBefore {
			before += o.TotalNS
			continue
		}
		charged += o.TotalNS
		if inWritePath(o.Stack) {
			inWrite += o.TotalNS
		}
		if o.Where == capture.OwnerStackOnCPU {
			onCPU += o.TotalNS
			spread += o.Samples
		}
	}
	if charged == 0 {
		t.Fatal("no wait charged to ct-smp-hog")
	}
	rwsemW := slices.IndexFunc(cfg.Spec.Types, func(ty lockspec.Type) bool { return ty.Name == "rwsem:W" })
	var samples uint64
	for _, e := range raw {
		if hog[e.key.Tid] && int(e.key.Type) == rwsemW {
			samples += e.value
		}
	}
	t.Logf("ct-smp-hog: %d ns charged with a stack to be seen (%d ns more left its CPU before it was marked), %.1f%% with a stack in the write path, %.1f%% on CPU over %d of its %d samples",
		charged, before, 100*float64(inWrite)/float64(charged), 100*float64(onCPU)/float64(charged), spread, samples)
	if inWrite*100 < charged*80 {
		t.Errorf("only %d of the %d ns charged to the hog have a stack in its write path, want at least 80%%", inWrite, charged)
	}
	if samples == 0 {
		t.Error("the hog, copying with the lock held, was never sampled on its CPU")
	}
	if !slices.ContainsFunc(cp.Meta.Programs, func(p capture.ProgramStats) bool { return p.Hook == "cpu-clock" && p.RunCount > 0 }) {
		t.Errorf("no run of the owner sampler among the programs: %+v", cp.Meta.Programs)
	}
}

// TestOwnersChain captures a wait chain: the pipe's writers wait for its mutex, held by the link,
// which splices the pipe into a file whose i_rwsem the holder keeps through 16 MiB writes. Their
// waits are charged to the link, and through it to the holder and the file's lock.
func TestOwnersChain(t *testing.T) {
	testenv.RequireRoot(t)
	cfg := defaultConfig(t)
	cfg.Owners = true
	cp, pid := captureContend(t, cfg, "-lock", "chain", "-threads", "4", "-duration", "2s", "-name", "ct-chn")
	// On PREEMPT_RT the pipe's mutex is an rtmutex, and its waits are typed so.
	mutex := "mutex"
	if preemptRT(t) {
		mutex = "rtmutex"
	}
	var link, through uint64
	// A name is read as an entry is made: entries made before a thread named itself carry the
	// process's name, so the chain's threads are known by the owners' thread ids too.
	linkTIDs, holdTIDs := map[uint32]bool{}, map[uint32]bool{}
	for _, o := range cp.Owners {
		if o.PID == pid && o.Comm == "ct-chn-link" && o.Type == mutex {
			link += o.TotalNS
			linkTIDs[o.TID] = true
		}
		if o.PID == pid && o.Comm == "ct-chn-hold" {
			holdTIDs[o.TID] = true
		}
	}
	for _, c := range cp.OwnerChains {
		if (c.Comm == "ct-chn-link" || linkTIDs[c.TID]) && c.Type == mutex && (c.EndComm == "ct-chn-hold" || holdTIDs[c.EndTID]) && c.EndType == "rwsem:W" && !c.Cycle {
			through += c.TotalNS
		}
	}
	t.Logf("%d ns of pipe waits charged to ct-chn-link, %d of them through it to ct-chn-hold; chains: %+v", link, through, cp.OwnerChains)
	if link == 0 {
		t.Fatal("no pipe mutex wait charged to the link")
	}
	if through == 0 {
		t.Error("no pipe mutex wait charged through the link to the holder of the file's i_rwsem")
	}
	if through > link {
		t.Errorf("%d ns through the link, more than the %d charged to it", through, link)
	}
}
