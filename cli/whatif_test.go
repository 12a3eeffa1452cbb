package cli

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/collector"
	"github.com/klockstat/klockstat/internal/capturetest"
	"github.com/klockstat/klockstat/internal/testenv"
	"github.com/klockstat/klockstat/whatif"
)

func TestParseDelays(t *testing.T) {
	got, err := parseDelays("0, 10us,20µs,40us")
	if err != nil || !slices.Equal(got, []uint64{0, 10000, 20000, 40000}) {
		t.Errorf("parseDelays: %v, %v", got, err)
	}
	for _, bad := range []string{"10us", "0,101us", "0,10us,10us", "0,x", "0,-5us"} {
		var ue usageError
		if _, err := parseDelays(bad); !errors.As(err, &ue) {
			t.Errorf("parseDelays(%q): %v, want a usage error", bad, err)
		}
	}
}

func TestDefaultDelays(t *testing.T) {
	for _, c := range []struct {
		wait float64
		want []uint64
	}{
		{2000, []uint64{0, 10000, 20000, 40000}},   // a short wait: the floor, to clear the noise
		{30000, []uint64{0, 15000, 30000, 60000}},  // 0.5x, 1x, 2x
		{46000, []uint64{0, 23000, 46000, 92000}},  // the rename mutex's, in the README
		{2.7e6, []uint64{0, 25000, 50000, 100000}}, // a long wait: the bound
	} {
		if got := defaultDelays(c.wait, 0, collector.MaxBudgetNS, 2); !slices.Equal(got, c.want) {
			t.Errorf("defaultDelays(%v) = %v, want %v", c.wait, got, c.want)
		}
	}
	// 4000 contended acquisitions a second on 2 CPUs: 50 us each fill half of 2 × 200 ms.
	if got, want := defaultDelays(46000, 4000, collector.MaxBudgetNS, 2), []uint64{0, 12500, 25000, 50000}; !slices.Equal(got, want) {
		t.Errorf("within the budget: %v, want %v", got, want)
	}
	if got, want := defaultDelays(46000, 1e7, collector.MaxBudgetNS, 2), []uint64{0, 1000, 2000, 4000}; !slices.Equal(got, want) {
		t.Errorf("a budget too small: %v, want %v", got, want)
	}
}

// whatifCapture has a rename mutex at two call sites, an inode rwsem, and a spinlock.
func whatifCapture(t *testing.T) *capture.Capture {
	c := capturetest.Of(t, 1e9,
		capturetest.Rec("mutex", "&kmalloc-2k", "do_renameat2+0x221", "stress-ng", 10, 11, 0xffff888100000408, 40000, 50000, 60000),
		capturetest.Rec("mutex", "&kmalloc-2k", "lock_rename+0x10", "stress-ng", 10, 12, 0xffff888100000408, 1000),
		capturetest.Rec("rwsem:W", "&ext4_inode_cache", "ext4_buffered_write_iter+0x31", "ct", 20, 21, 0xffff888200001a8, 30000),
		capturetest.Rec("spinlock", "jiffies_lock", "tick_do_update_jiffies64+0x20", "ct", 20, 22, 0xffffffff82000000, 90000),
	)
	for i := range c.Records {
		if c.Records[i].Name == "&kmalloc-2k" {
			c.Records[i].ObjectOffset, c.Records[i].Field = "0x408", "super_block.s_vfs_rename_mutex"
		}
	}
	return c
}

func TestChooseTarget(t *testing.T) {
	c := whatifCapture(t)
	// By default: the most wait at one call site.
	tg, err := chooseTarget(c, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Type != "mutex" || !slices.Equal(tg.Callers, []string{"do_renameat2+0x221"}) || tg.Waits != 3 || tg.MeanWaitNS != 50000 {
		t.Errorf("default target %+v", tg)
	}
	if !strings.Contains(tg.Label, "super_block.s_vfs_rename_mutex at do_renameat2+0x221") || len(tg.Locks) != 0 {
		t.Errorf("label %q, addresses %v: want the field at its call site, no address for a named lock", tg.Label, tg.Locks)
	}
	// By field: every call site of the lock.
	tg, err = chooseTarget(c, []string{"super_block.s_vfs_rename_mutex"}, "", nil)
	if err != nil || len(tg.Callers) != 2 || tg.Waits != 4 {
		t.Errorf("by field: %+v, %v", tg, err)
	}
	// By address: the address is kept.
	tg, err = chooseTarget(c, []string{"0xffff888100000408"}, "lock_rename", nil)
	if err != nil || !slices.Equal(tg.Callers, []string{"lock_rename+0x10"}) || len(tg.Locks) != 1 {
		t.Errorf("by address and caller: %+v, %v", tg, err)
	}
	// A sweep's culprit.
	tg, err = chooseTarget(c, nil, "", &capture.Culprit{Type: "rwsem:W", Name: "&ext4_inode_cache"})
	if err != nil || tg.Type != "rwsem:W" || tg.ChosenBy != "the top scaling culprit of the sweep" {
		t.Errorf("culprit: %+v, %v", tg, err)
	}
	// A lock whose wait was one long wait loses to one a delay reaches often enough: 200 waits
	// of 10 us in a second can add 200 x 100 us, 2% of it; one wait, 0.01%.
	short := make([]uint64, 200)
	for i := range short {
		short[i] = 10000
	}
	once := capturetest.Of(t, 1e9,
		capturetest.Rec("rwsem:W", "mmap_lock", "do_mprotect_pkey+0x159", "stress-ng", 10, 11, 0xffff888300000000, 346e6),
		capturetest.Rec("mutex", "&kmalloc-2k", "do_renameat2+0x221", "stress-ng", 10, 12, 0xffff888100000408, short...),
	)
	if tg, err := chooseTarget(once, nil, "", nil); err != nil || tg.Type != "mutex" || tg.Waits != 200 {
		t.Errorf("a one-off long wait beside a lock contended throughout: chose %+v, %v", tg, err)
	}
	// Where no lock is reached often enough, the most wait still.
	if tg, err := chooseTarget(once, nil, "do_mprotect", nil); err != nil || tg.Type != "rwsem:W" {
		t.Errorf("the only lock, reached once: chose %+v, %v", tg, err)
	}
	var ue usageError
	if _, err := chooseTarget(c, []string{"no_such_lock"}, "", nil); !errors.As(err, &ue) {
		t.Errorf("no such lock: %v", err)
	}
}

// TestWhatifRefusesSpinlock runs the binary on a spinlock: refused before anything loads.
func TestWhatifRefusesSpinlock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	saveCapture(t, path, whatifCapture(t))
	cmd, _, stderr := klockstat(t, "whatif", "--from", path, "--lock", "jiffies_lock", "--", "true")
	if st := exitStatus(t, cmd.Run()); st != 2 || !strings.Contains(stderr.String(), "spinning lock") || !strings.Contains(stderr.String(), "--allow-spin") {
		t.Errorf("status %d, stderr %s", st, stderr)
	}
}

// TestWhatifSignalsDetach sends SIGTERM, SIGINT and SIGKILL to a klockstat whatif mid-run: it ends,
// and no delay program is left loaded.
func TestWhatifSignalsDetach(t *testing.T) {
	testenv.RequireRoot(t)
	contend := testenv.Build(t, "./examples/contend")
	// A capture whose lock's call site is in vfs_write, which every kernel has: the delay attaches
	// whether or not it fires.
	c := capturetest.Of(t, 1e9, capturetest.Rec("rwsem:W", "&ext4_inode_cache", "vfs_write+0x1", "ct", 20, 21, 0xffff8882000001a8, 30000))
	path := filepath.Join(t.TempDir(), "c.json")
	saveCapture(t, path, c)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, _, stderr := klockstat(t, "whatif", "--from", path, "--delays", "0,50us", "-o", "", "--",
				contend, "-lock", "inode", "-threads", "4", "-duration", "60s")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			// Its own programs, whatever the collector package's tests load beside it.
			var ids []ebpf.ProgramID
			for deadline := time.Now().Add(30 * time.Second); len(ids) < 3; ids = testenv.BPFPrograms(cmd.Process.Pid) {
				if time.Now().After(deadline) {
					t.Fatalf("the delay's programs not loaded after 30 s (%v): %s", ids, stderr)
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(time.Second) // mid-run
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("klockstat whatif still running 30 s after %v", sig)
			}
			if got := testenv.WaitUnloaded(ids); len(got) != 0 {
				t.Fatalf("after %v, still loaded: %v\n%s", sig, got, stderr)
			}
		})
	}
}

// TestReportOfAnExperiment re-renders an experiment's JSON with klockstat report.
func TestReportOfAnExperiment(t *testing.T) {
	dir := t.TempDir()
	e := &whatif.Experiment{Version: whatif.FormatVersion, Unit: "rename", CPUs: 2, DelaysNS: []uint64{0, 20000},
		Target: whatif.Target{Label: "s_vfs_rename_mutex", Type: "mutex"}, Bounds: whatif.Bounds{MaxDelayNS: 100000, BudgetNS: 200e6}}
	for i := range 6 {
		d := e.DelaysNS[i%2]
		metric := 1e9 / (10000 + float64(d)/2 + float64(i))
		e.Runs = append(e.Runs, whatif.Run{DelayNS: d, WallNS: 1e9, Metric: &metric, Counters: whatif.Counters{AddedNS: uint64(metric) * d / 2}})
	}
	path := filepath.Join(dir, "e.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	cmd, stdout, stderr := klockstat(t, "report", path, "-o", filepath.Join(dir, "e.html"))
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if !strings.Contains(stdout.String(), "costs 1.00 us per rename") {
		t.Errorf("summary:\n%s", stdout)
	}
	if page, err := os.ReadFile(filepath.Join(dir, "e.html")); err != nil || !strings.Contains(string(page), `id="whatif-fit"`) {
		t.Errorf("page: %v", err)
	}
}
