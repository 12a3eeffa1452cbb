package collector

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf/btf"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
)

// TestLockNames captures contend writing one file, contending mmap_lock
// and waking its threads, while a shell reads its /proc/PID/maps, and
// checks the names found at the end of the capture: the inode's rwsem is
// named after the inode's slab cache and by its field, the runqueue locks
// the scheduler takes are a CPU's rq_lock, and the readers of the maps wait
// on contend's mmap_lock.
func TestLockNames(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	// contend must outlive the capture, however slowly the capture starts
	// and stops: its mmap_lock is named from its task, which must still
	// exist at the end. The test ends it.
	contend := startContend(t, "-lock", "inode,mmap,spin", "-threads", "4", "-dir", dir, "-duration", "10m")
	pid := uint32(contend.Process.Pid)
	reader := exec.Command("/bin/sh", "-c", fmt.Sprintf("while :; do cat /proc/%d/maps >/dev/null; done", pid))
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { reader.Process.Kill(); reader.Wait() }()
	readerWait := func(r capture.Record) bool {
		return r.PID != pid && r.Type == "rwsem:R" && r.Comm == "cat" && hasFrame(r.Stack, "seq_read_iter")
	}
	// A reader meets the writers' mmap_lock a few times a second at most
	// where the function probes stand in for the tracepoints (5.10 under
	// emulation: 1 to 4 in 2 s, sometimes none), so a capture without one
	// is taken again.
	var cp *capture.Capture
	for round := 1; ; round++ {
		cp = captureNames(t)
		if slices.ContainsFunc(cp.Records, readerWait) || round == 5 {
			break
		}
		t.Logf("round %d: no wait of the maps readers captured; again", round)
	}
	if err := cp.Validate(); err != nil {
		t.Fatalf("captured data does not validate: %v", err)
	}
	k := &kernel{}
	functionProbes := cp.Meta.Probe == "fentry" || cp.Meta.Probe == "kprobe"
	named := cp.NameShares()
	t.Logf("%s on %s: %.1f%% of wait time named by symbol or field, %.1f%% by slab cache only; warnings %q",
		cp.Meta.Probe, kernelRelease(), 100*named.Symbol, 100*named.SlabCache, cp.Meta.Warnings)

	t.Run("inode by slab cache", func(t *testing.T) {
		said := slices.ContainsFunc(cp.Meta.Warnings, func(w string) bool { return strings.Contains(w, "bpf_get_kmem_cache") })
		if ok, err := hasBTF[*btf.Func](k, "bpf_get_kmem_cache"); err != nil || !ok {
			if !said {
				t.Errorf("the kernel lacks bpf_get_kmem_cache, and the capture does not say so: %q", cp.Meta.Warnings)
			}
			t.Skipf("the kernel lacks the bpf_get_kmem_cache kfunc (Linux 6.13): %v", err)
		}
		if said {
			t.Errorf("the capture says the kernel lacks bpf_get_kmem_cache, which it has: %q", cp.Meta.Warnings)
		}
		writes := func(r capture.Record) bool {
			return r.PID == pid && r.Type == "rwsem:W" && hasFrame(r.Stack, "vfs_write", "ksys_pwrite64")
		}
		checkNamed(t, cp, "rwsem:W writes of contend's file", writes, func(name string) bool { return strings.HasPrefix(name, "&") && strings.Contains(name, "inode") })
		// The cache's struct (ext4_inode_info, shmem_inode_info, or inode itself) holds the rwsem
		// of the VFS inode; BTF names it from the lock's offset in the object.
		fields := map[string]uint64{}
		for _, r := range cp.Records {
			if writes(r) {
				fields[r.LockLabel()] += r.Count
				if !r.FieldKnown() || !strings.HasSuffix(r.Field, "i_rwsem") {
					t.Errorf("a write of contend's file waits on %s, want the inode's i_rwsem named by field", r.LockLabel())
				}
			}
		}
		t.Logf("writes by lock: %v", fields)
	})
	t.Run("runqueue", func(t *testing.T) {
		if functionProbes {
			t.Skipf("the %s backend leaves spinlocks to the tracepoints, which this kernel lacks", cp.Meta.Probe)
		}
		requireSpinlockWaits(t)
		if reason, unseen := cp.Meta.UnseenOf("spinlock"); unseen {
			t.Errorf("the capture says spinlock waits cannot be seen (%s), which SpinlockWaits saw", reason)
		}
		// __schedule locks its runqueue through raw_spin_rq_lock, inlined.
		throughRunqueue := func(r capture.Record) bool {
			return r.Type == "spinlock" && hasFrame([]string{r.Caller}, "raw_spin_rq_lock", "raw_spin_rq_lock_nested", "__schedule")
		}
		if !slices.ContainsFunc(cp.Records, throughRunqueue) && testenv.Emulated() {
			// In the kernel-matrix guests (tests/vm/init sets
			// KLOCKSTAT_TEST_ROOT), under software emulation, one CPU runs at a
			// time: the scheduler's short critical sections seldom
			// meet. Everywhere else they do, and the test requires it.
			t.Skip("no runqueue lock was contended during the capture under emulation")
		}
		checkNamed(t, cp, "spinlock waits through raw_spin_rq_lock", throughRunqueue, func(name string) bool { return strings.HasPrefix(name, "rq_lock (CPU ") })
	})
	t.Run("another process's mmap_lock", func(t *testing.T) {
		checkNamed(t, cp, "rwsem:R waits of the maps readers", readerWait, func(name string) bool { return name == "mmap_lock (contend)" })
	})
}

// captureNames captures for 2 s, or until 3000 events, bounded by 30 s.
func captureNames(t *testing.T) *capture.Capture {
	t.Helper()
	c, err := Start(defaultConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for start := time.Now(); time.Since(start) < 2*time.Second || c.Events() < 3000 && time.Since(start) < 30*time.Second; {
		time.Sleep(100 * time.Millisecond)
	}
	cp, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// TestNameOwners names each owner's lock as the records of any type name it, and leaves the locks
// no record names unnamed.
func TestNameOwners(t *testing.T) {
	inode, rq, other := capture.Addr(0xffff8881237e5a10), capture.Addr(0xffff88813bd2f1c0), capture.Addr(0xffff88810a6b3c40)
	records := []capture.Record{
		{Type: "rwsem:W", Lock: inode, Name: "&ext4_inode_cache"},
		{Type: "spinlock", Lock: rq, Name: ""},
	}
	owners := []capture.Owner{
		{Type: "rwsem:W", Lock: inode, Comm: "hog"},
		{Type: "rwsem:R", Lock: inode, Reason: capture.OwnerNone},
		{Type: "spinlock", Lock: rq, Name: "stale", Reason: capture.OwnerNoField},
		{Type: "mutex", Lock: other, Comm: "pipe"},
	}
	nameOwners(owners, records)
	var got []string
	for _, o := range owners {
		got = append(got, o.Name)
	}
	if want := []string{"&ext4_inode_cache", "&ext4_inode_cache", "", ""}; !slices.Equal(got, want) {
		t.Errorf("owners' locks named %q, want %q", got, want)
	}
}

// checkNamed requires records that match to exist, and every one of them
// to have a name that fits.
func checkNamed(t *testing.T, cp *capture.Capture, what string, match func(capture.Record) bool, fits func(string) bool) {
	t.Helper()
	var n, bad uint64
	names := map[string]uint64{}
	for _, r := range cp.Records {
		if !match(r) {
			continue
		}
		n += r.Count
		names[r.Name] += r.Count
		if !fits(r.Name) {
			bad += r.Count
		}
	}
	t.Logf("%s: %d waits, by name %v", what, n, names)
	if n == 0 {
		t.Fatalf("no %s captured", what)
	}
	if bad > 0 {
		t.Errorf("%d of %d %s are not named as they should be: %v", bad, n, what, names)
	}
}

// TestMemoryLockNames captures contend having the kernel allocate and free
// 64 KiB blocks, which takes the lock of the memory zone they come from, and
// faulting in and freeing pages of its own, which join and leave the LRU
// lists under the LRU lock of the memory cgroup's node; and checks that
// those waits are named zone_lock and lru_lock. Both need contend's threads
// on two CPUs at once: on a machine busy with other work a round may have
// none of them, and another round runs.
func TestMemoryLockNames(t *testing.T) {
	testenv.RequireRoot(t)
	// Spinlocks only: the function-probe backends leave them to the
	// tracepoints, so no backend works where the kernel lacks these.
	requireClaimed(t, "rawtp")
	requireSpinlockWaits(t)
	cfg := defaultConfig(t)
	cfg.Spec = loadSpec(t, "spinlock")
	kinds := []struct {
		what    string
		callers []string
		fits    func(string) bool
	}{
		{"spinlock waits of contend allocating and freeing blocks of pages", []string{"get_page_from_freelist", "rmqueue_buddy", "free_one_page"},
			func(name string) bool { return strings.HasPrefix(name, "zone_lock (") }},
		{"spinlock waits of contend on its pages' LRU lists", []string{"folio_lruvec_lock_irqsave", "folio_lruvec_lock_irq", "folio_lruvec_lock"},
			func(name string) bool { return strings.HasPrefix(name, "lru_lock") }},
	}
	var (
		cp      *capture.Capture
		matches []func(capture.Record) bool
	)
	for round := 0; round < 5; round++ {
		var pid uint32
		cp = capture1(t, cfg, func() {
			cmd := startContend(t, "-lock", "zone,lru", "-threads", "4", "-duration", "2s")
			pid = uint32(cmd.Process.Pid)
			waitContend(t, cmd)
		})
		matches = matches[:0]
		all := true
		for _, k := range kinds {
			match := func(r capture.Record) bool {
				return r.PID == pid && r.Type == "spinlock" && hasFrame([]string{r.Caller}, k.callers...)
			}
			matches = append(matches, match)
			all = all && slices.ContainsFunc(cp.Records, match)
		}
		if all {
			break
		}
		t.Logf("round %d: not every kind of wait was captured; again", round+1)
	}
	for i, k := range kinds {
		t.Run(k.what, func(t *testing.T) {
			if !slices.ContainsFunc(cp.Records, matches[i]) && testenv.Emulated() {
				// As for the runqueue locks in TestLockNames: one CPU at a
				// time under emulation, and older kernels take these locks
				// from other functions.
				t.Skipf("no %s under emulation", k.what)
			}
			checkNamed(t, cp, k.what, matches[i], k.fits)
		})
	}
}

// TestRoundsLoadTheNamerOnce cuts rounds of contend writing one file: every round names the inode's
// rwsem after its slab cache, with the lock-naming programs loaded at the first round and kept,
// their labels map left empty for the next. A round with more locks than the map has room for
// loads them again, larger.
func TestRoundsLoadTheNamerOnce(t *testing.T) {
	testenv.RequireRoot(t)
	c, err := Start(defaultConfig(t))
	if err != nil {
		t.Fatalf("starting the collector: %v", err)
	}
	defer c.Close()
	contend := startContend(t, "-lock", "inode", "-threads", "4", "-dir", t.TempDir(), "-duration", "10m")
	pid := uint32(contend.Process.Pid)
	rounds, err := c.Rounds()
	if err != nil {
		t.Fatal(err)
	}
	defer rounds.Close()
	slabNames, err := hasBTF[*btf.Func](c.obj.kernel, "bpf_get_kmem_cache")
	if err != nil {
		t.Fatal(err)
	}
	labelsLeft := func() int {
		var (
			n     int
			addr  uint64
			label namesLockLabel
		)
		for it := rounds.names.progs.objs.Labels.Iterate(); it.Next(&addr, &label); {
			n++
		}
		return n
	}
	var loaded *namerProgs
	for i := range 3 {
		if err := rounds.Begin(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		cp, err := rounds.End()
		if err != nil {
			t.Fatal(err)
		}
		if err := cp.Validate(); err != nil {
			t.Fatalf("round %d does not validate: %v", i, err)
		}
		switch progs := rounds.names.progs; {
		case progs == nil:
			t.Fatalf("round %d named no lock", i)
		case loaded == nil:
			loaded = progs
		case progs != loaded:
			t.Errorf("round %d loaded the lock-naming programs again", i)
		}
		if n := labelsLeft(); n != 0 {
			t.Errorf("round %d left %d locks in the labels map", i, n)
		}
		if slabNames {
			writes := func(r capture.Record) bool {
				return r.PID == pid && r.Type == "rwsem:W" && hasFrame(r.Stack, "vfs_write", "ksys_pwrite64")
			}
			checkNamed(t, cp, fmt.Sprintf("round %d's rwsem:W writes of contend's file", i), writes, func(name string) bool { return strings.HasPrefix(name, "&") })
		}
	}
	many := make([]uint64, loaded.capacity+1)
	for i := range many {
		many[i] = uint64(i + 1) // no kernel object: named by nothing
	}
	if _, _, err := rounds.names.lockNames(many); err != nil {
		t.Fatal(err)
	}
	if got := rounds.names.progs.capacity; got < len(many) {
		t.Errorf("%d locks to name, room for %d", len(many), got)
	}
	if n := labelsLeft(); n != 0 {
		t.Errorf("%d locks left in the labels map", n)
	}
}

// TestNamerRefusedByTheKernel loads the lock-naming program with an iterator target no kernel
// has, as a hardened kernel refuses a target it has: the capture's names lose only what that
// program gives, and one line says which program the kernel refused and its answer, with no
// verifier log.
func TestNamerRefusedByTheKernel(t *testing.T) {
	testenv.RequireRoot(t)
	spec, err := loadNames()
	if err != nil {
		t.Fatal(err)
	}
	spec.Programs["name_task_locks"].AttachTo = "klockstat_no_such_target"
	k := &kernel{}
	p, err := k.loadNamerSpec(spec, 4)
	if err != nil {
		t.Fatalf("a refused program is not an error of the capture: %v", err)
	}
	defer p.close()
	names, warnings, err := p.lockNames([]uint64{1, 2})
	if err != nil {
		t.Fatalf("naming with the program refused: %v", err)
	}
	if len(names) != 0 {
		t.Errorf("named %v with the program refused", names)
	}
	var said []string
	for _, w := range warnings {
		if strings.Contains(w, "name_task_locks") {
			said = append(said, w)
		}
	}
	if len(said) != 1 {
		t.Fatalf("want one warning naming the refused program, got %q", warnings)
	}
	w := said[0]
	t.Logf("warning: %s", w)
	if !strings.Contains(w, "iter/task") || !strings.Contains(w, "refused") {
		t.Errorf("the warning does not say the kernel refused the program and its section: %q", w)
	}
	if strings.ContainsAny(w, "\n\r\x00") || strings.Contains(w, "processed") || len(w) > 300 {
		t.Errorf("the warning is not one plain line (a verifier log?): %q", w)
	}
}

// TestSlabLockNamedAfterItsObjectIsFreed captures contend writing a file, then removes the file
// and drops the inode caches before the capture ends: the inode's rwsem, named after its slab
// cache as its first record was made, keeps that name, where a lookup at the end would find its
// memory free or another object's.
func TestSlabLockNamedAfterItsObjectIsFreed(t *testing.T) {
	testenv.RequireRoot(t)
	k := &kernel{}
	if ok, err := hasBTF[*btf.Func](k, "bpf_get_kmem_cache"); err != nil || !ok {
		if testenv.InCI() && err != nil {
			t.Fatalf("reading the kernel's BTF: %v", err)
		}
		t.Skipf("the kernel lacks the bpf_get_kmem_cache kfunc (Linux 6.13), which names slab locks: %v", err)
	}
	dir := t.TempDir()
	var pid uint32
	cp := capture1(t, defaultConfig(t), func() {
		cmd := startContend(t, "-lock", "inode", "-threads", "4", "-dir", dir, "-duration", "1s")
		pid = uint32(cmd.Process.Pid)
		waitContend(t, cmd)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		syscall.Sync()
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0); err != nil {
			t.Fatalf("dropping the inode caches: %v", err)
		}
	})
	writes := func(r capture.Record) bool {
		return r.PID == pid && r.Type == "rwsem:W" && hasFrame(r.Stack, "vfs_write", "ksys_pwrite64")
	}
	checkNamed(t, cp, "rwsem:W writes of contend's removed file", writes, func(name string) bool {
		return strings.HasPrefix(name, "&") && strings.Contains(name, "inode")
	})
}
