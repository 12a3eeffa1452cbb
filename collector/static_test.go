package collector

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
	"github.com/klockstat/klockstat/kallsyms"
)

// TestStaticLockMarked captures contend's flock workload, whose flocks read fs/locks.c's static
// file_rwsem and whose readers of /proc/locks write it, and checks that its waits on the semaphore are marked
// static: named file_rwsem where kallsyms lists data (CONFIG_KALLSYMS_ALL), unnamed where it lists
// section markers only, and then the capture says so.
func TestStaticLockMarked(t *testing.T) {
	testenv.RequireRoot(t)
	ksyms, err := kallsyms.Load()
	if err != nil {
		t.Fatal(err)
	}
	contend := startContend(t, "-lock", "flock", "-threads", "4", "-dir", t.TempDir(), "-duration", "10m")
	pid := uint32(contend.Process.Pid)
	onFileRwsem := func(r capture.Record) bool {
		return r.PID == pid && strings.HasPrefix(r.Type, "pcpu-sem:") && hasFrame(r.Stack, "flock_lock_inode", "locks_lock_inode_wait", "locks_start")
	}
	var cp *capture.Capture
	for round := 1; ; round++ {
		cp = captureFor(t, 2*time.Second)
		if slices.ContainsFunc(cp.Records, onFileRwsem) || round == 3 {
			break
		}
		t.Logf("round %d: no wait on file_rwsem captured; again", round)
	}
	if err := cp.Validate(); err != nil {
		t.Fatalf("captured data does not validate: %v", err)
	}
	if cp.Meta.KallsymsNoData != ksyms.NoData() {
		t.Errorf("meta kallsyms_no_data %v, but kallsyms lists no data: %v", cp.Meta.KallsymsNoData, ksyms.NoData())
	}
	want := "file_rwsem"
	if ksyms.NoData() {
		want = "" // no image is given here
	}
	var waits uint64
	for _, r := range cp.Records {
		if !onFileRwsem(r) {
			continue
		}
		waits += r.Count
		if !r.Static || r.Name != want {
			t.Errorf("%s wait on %s from %s: static %v, name %q; want static, named %q", r.Type, r.Lock, r.Caller, r.Static, r.Name, want)
		}
	}
	if waits == 0 {
		t.Fatalf("no wait of contend (pid %d) on file_rwsem among %d records", pid, len(cp.Records))
	}
	if i := slices.IndexFunc(cp.Records, func(r capture.Record) bool { return r.Static && r.Lock < 0xffffffff80000000 }); i >= 0 {
		t.Errorf("a lock below the kernel image marked static: %+v", cp.Records[i])
	}
	locks, share := capture.StaticUnnamed(cp.Records)
	t.Logf("%s on %s: %d waits on file_rwsem; %d static locks without a name, %.1f%% of the wait",
		cp.Meta.Probe, kernelRelease(), waits, locks, 100*share)
}

// captureFor captures for d.
func captureFor(t *testing.T, d time.Duration) *capture.Capture {
	t.Helper()
	c, err := Start(defaultConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(d)
	cp, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	return cp
}
