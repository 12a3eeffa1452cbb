package report

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
)

// Strings a thread name, a command line, a locks.json or a kernel symbol could carry to run script in a
// report. Type names must not contain spaces, so the hostile types are the ones without.
const (
	svgComm     = `<svg/onload=x>`
	scriptBreak = `</script><script>alert(1)</script>`
	imgCanary   = `<img src=x onerror=window.pwned=1>`
	commentOpen = `<!--<script>alert(2)//`
	funcMarker  = `__f__",x:alert(3),y:"__f__`
	funcType    = `__f__+alert(4)+__f__`
	bidiComm    = "exe.\u202etxt" // a right-to-left override, which reorders what follows it
)

// knownCapture is a small capture with everything a report shows: several lock types, records that
// merge by caller and by lock, raw addresses in stacks and callers, lost events, warnings, and hostile
// strings in every field that holds text. Its records' total waits all differ, so every order is exact.
// It also returns the individual waits of each type, as buildCapture does.
func knownCapture(t testing.TB) (*capture.Capture, map[string][]uint64) {
	t.Helper()
	exit := 2
	mmap := capture.Addr(0xffff888104d2a0c8)
	inode := capture.Addr(0xffff8881237e5a10)
	pipe := capture.Addr(0xffff88810a6b3c40)
	rq := capture.Addr(0xffff88813bd2f1c0)
	mmapStack := []string{"rwsem_down_write_slowpath+0x2a1", "down_write_killable+0x4f", "vm_mmap_pgoff+0xe0", "ksys_mmap_pgoff+0x1a", "do_syscall_64+0x82", "entry_SYSCALL_64_after_hwframe+0x76"}
	munmapStack := []string{"rwsem_down_write_slowpath+0x2a1", "down_write_killable+0x4f", "__vm_munmap+0x7d", "__x64_sys_munmap+0x1b", "do_syscall_64+0x82"}
	mincoreStack := []string{"rwsem_down_read_slowpath+0x1c2", "down_read+0x4a", "__x64_sys_mincore+0xf8", "do_syscall_64+0x82"}
	inodeStack := []string{"rwsem_down_write_slowpath+0x2a1", "down_write+0x3c", "ext4_buffered_write_iter+0x31", "vfs_write+0x26b", "0xffffffffc0a81234", "do_syscall_64+0x82"}
	pipeStack := []string{"__mutex_lock.constprop.0+0x8e", "mutex_lock+0x3d", "anon_pipe_write+0x43", "vfs_write+0x26b"}
	rawStack := []string{"queued_spin_lock_slowpath+0x5e", "0xffffffffc0a81234", "0xffffffffc0a85678"}

	records := []capturetest.Record{
		{Record: capture.Record{Type: "rwsem:W", Lock: mmap, Name: "mmap_lock", Comm: "ct-mmap-0", PID: 3099, TID: 3105, Caller: "vm_mmap_pgoff+0xe0", Stack: mmapStack}, Waits: []uint64{5_000_000, 12_000_000, 800_000}},
		{Record: capture.Record{Type: "rwsem:W", Lock: mmap, Name: "mmap_lock", Comm: "ct-mmap-1", PID: 3099, TID: 3106, Caller: "vm_mmap_pgoff+0xe0", Stack: mmapStack}, Waits: []uint64{7_500_000, 300_000}},
		{Record: capture.Record{Type: "rwsem:W", Lock: mmap, Name: "mmap_lock", Comm: svgComm, PID: 3099, TID: 3107, Caller: "__vm_munmap+0x7d", Stack: munmapStack}, Waits: []uint64{2_000_000, 2_500_000, 900_000, 40_000}},
		{Record: capture.Record{Type: "rwsem:R", Lock: mmap, Name: "mmap_lock", Comm: "ct-mmap-1", PID: 3099, TID: 3106, Caller: "__x64_sys_mincore+0xf8", Stack: mincoreStack}, Waits: []uint64{1_200, 3_400, 98_000, 15_000, 640}},
		{Record: capture.Record{Type: "rwsem:R", Lock: mmap, Name: "mmap_lock", Comm: imgCanary, PID: 3099, TID: 3108, Caller: "__x64_sys_mincore+0xf8", Stack: mincoreStack}, Waits: []uint64{700, 2_100}},
		{Record: capture.Record{Type: "rwsem:W", Lock: inode, Comm: "ct-inode-0", PID: 3150, TID: 3164, Caller: "ext4_buffered_write_iter+0x31", Stack: inodeStack}, Waits: []uint64{20_000_000, 19_000_000, 11_000_000}},
		{Record: capture.Record{Type: "rwsem:W", Lock: inode, Comm: "ct-inode-1", PID: 3150, TID: 3163, Caller: "ext4_buffered_write_iter+0x31", Stack: inodeStack}, Waits: []uint64{23_000_000, 8_000_000}},
		{Record: capture.Record{Type: "mutex", Lock: pipe, Comm: "ct-pipe-0", PID: 3200, TID: 3201, Caller: "anon_pipe_write+0x43", Stack: pipeStack}, Waits: []uint64{260, 310, 290, 12_000, 180}},
		{Record: capture.Record{Type: "mutex", Lock: pipe, Comm: scriptBreak, PID: 3200, TID: 3202, Caller: commentOpen, Stack: []string{"mutex_lock+0x3d", commentOpen}}, Waits: []uint64{450, 520}},
		{Record: capture.Record{Type: "spinlock", Lock: rq, Name: "runqueues+0x1c0", Comm: "swapper/1", PID: 0, TID: 0, Caller: "0xffffffffc0a81234", Stack: rawStack}, Waits: []uint64{900, 1_100, 3_000, 64}},
		{Record: capture.Record{Type: "spinlock", Lock: rq, Name: "runqueues+0x1c0", Comm: funcMarker, PID: 0, TID: 0, Caller: "__schedule+0xad", Stack: []string{}}, Waits: []uint64{1_500, 2_900, 1_950}},
		{Record: capture.Record{Type: scriptBreak, Lock: 0xffffffff83a1b2c0, Name: imgCanary, Comm: "hostile", PID: 4000, TID: 4001, Caller: funcMarker, Stack: []string{svgComm, funcMarker}}, Waits: []uint64{77_000, 5_000}},
		{Record: capture.Record{Type: funcType, Lock: 0xffffffff83a1b2c8, Comm: "hostile", PID: 4000, TID: 4002, Caller: "x+0x1", Stack: []string{"x+0x1"}}, Waits: []uint64{66_666}},
	}

	c, waits := capturetest.Build(t, capture.Meta{
		Tool: "klockstat", ToolVersion: "0.1.0-test", Kernel: "6.18.44-fc-v669", KernelBuild: "#1 SMP PREEMPT_DYNAMIC " + svgComm,
		Arch: "x86_64", Hostname: "bench-" + imgCanary, CPUModel: "AMD EPYC " + scriptBreak, CPUs: 2,
		Start:       time.Date(2026, 11, 21, 15, 12, 12, 0, time.UTC),
		DurationNS:  3_010_000_000,
		CommandLine: []string{"klockstat", "-d", "3s", "--comm", commentOpen, "--", "sh", "-c", scriptBreak},
		Workload:    []string{"sh", "-c", scriptBreak}, WorkloadExit: &exit,
		Probe: "rawtp", StackDepth: 16, Types: append([]string{"rwsem:W", "rwsem:R", "mutex", "spinlock"}, scriptBreak, funcType),
		Comm:     commentOpen,
		MapSizes: map[string]uint32{"aggregate": 65536, "stacks": 65536, imgCanary: 1},
		Events:   capture.Events{Begin: 12557, End: 12554, Waits: 12556, InProgress: 2, Nested: 3, UnmatchedBegin: 1, UnmatchedEnd: 1},
		Lost:     []capture.Lost{{Reason: "aggregation map full", Count: 17}, {Reason: scriptBreak, Count: 4}},
		Programs: []capture.ProgramStats{{Name: "contention_begin", RunCount: 12557, RunTimeNS: 26_000_000}, {Name: imgCanary, RunCount: 12554, RunTimeNS: 17_500_000}},
		Warnings: []string{"kernel.bpf_stats_enabled was 0 " + svgComm, imgCanary},
	}, records...)
	// Each process in a cgroup of its own, named by a hostile container runtime; the pipe
	// workload's cgroup was created and removed during the capture: it has an id only.
	cgroups := map[uint32]struct {
		id   uint64
		path string
	}{3099: {4711, "/system.slice/ct-" + imgCanary}, 3150: {4712, "/kubepods/" + scriptBreak}, 3200: {4713, ""}, 0: {1, "/"}, 4000: {4714, "/" + svgComm}}
	for i := range c.Records {
		cg := cgroups[c.Records[i].PID]
		c.Records[i].CgroupID, c.Records[i].Cgroup = cg.id, cg.path
	}
	// A spinlock spins for all of its wait, a mutex for part of it.
	for i := range c.Records {
		switch c.Records[i].Type {
		case "spinlock":
			c.Records[i].SpinNS = c.Records[i].TotalNS
		case "mutex":
			c.Records[i].SpinNS = c.Records[i].TotalNS / 3
		}
	}
	return c, waits
}

// ownerComm is the thread name of a lock owner that tries to run script in the page, break out of
// an attribute either way, and reverse the text after it.
const ownerComm = `<img src=x onerror=alert(1)>"'` + "\u202e" + `gpj.exe`

// ownedCapture is knownCapture with the owners its waits were charged to, sorted as a capture has
// them: the mmap_lock's writer (ownerComm) for its writers and readers, two writers of the inode
// (one of them with two stacks) for its waiters, the pipe's writer, and the runqueue spinlock's
// unknown owner. The waits of the hostile lock types were charged to no owner.
func ownedCapture(t testing.TB) *capture.Capture {
	t.Helper()
	c, _ := knownCapture(t)
	mmap, inode, pipe := capture.Addr(0xffff888104d2a0c8), capture.Addr(0xffff8881237e5a10), capture.Addr(0xffff88810a6b3c40)
	c.Owners = []capture.Owner{
		{Type: "rwsem:W", Lock: mmap, Name: "mmap_lock", Comm: ownerComm, PID: 3099, TID: 3110, Count: 9, TotalNS: 31_040_000,
			Stack:  []string{"__schedule+0x618", "io_schedule+0x46", "folio_wait_bit_common+0x13c", "filemap_fault+0x5d2", "0xffffffff81a2b3c4"},
			States: []capture.OwnerState{{State: capture.OwnerDiskSleep, Count: 7, TotalNS: 25_000_000}, {State: capture.OwnerSleeping, Count: 2, TotalNS: 6_040_000}}},
		{Type: "rwsem:R", Lock: mmap, Name: "mmap_lock", Comm: ownerComm, PID: 3099, TID: 3110, Count: 7, TotalNS: 121_040, StackReason: capture.OwnerStackRan,
			States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 7, TotalNS: 121_040}}},
		{Type: "rwsem:W", Lock: inode, Comm: "ct-inode-w", PID: 3150, TID: 3170, Count: 4, TotalNS: 70_000_000,
			Stack:  []string{"__schedule+0x618", "__cond_resched+0x2c", "generic_perform_write+0x11d", "ext4_buffered_write_iter+0x5a", "vfs_write+0x26b"},
			States: []capture.OwnerState{{State: capture.OwnerRunnable, Count: 3, TotalNS: 60_000_000}, {State: capture.OwnerOnCPU, Count: 1, TotalNS: 10_000_000}}},
		{Type: "rwsem:W", Lock: inode, Comm: "ct-inode-w", PID: 3150, TID: 3170, Count: 1, TotalNS: 6_000_000, StackReason: capture.OwnerStackRan,
			States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 1, TotalNS: 6_000_000}}},
		{Type: "rwsem:W", Lock: inode, Comm: "ct-inode-0", PID: 3150, TID: 3164, Count: 1, TotalNS: 5_000_000, StackReason: capture.OwnerStackRan,
			States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 1, TotalNS: 5_000_000}}},
		{Type: "mutex", Lock: pipe, Comm: "ct-pipe-1", PID: 3200, TID: 3203, Count: 7, TotalNS: 14_010, StackReason: capture.OwnerStackRan,
			States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 7, TotalNS: 14_010}}},
		{Type: "spinlock", Lock: 0xffff88813bd2f1c0, Name: "runqueues+0x1c0", Reason: capture.OwnerNoField, Count: 7, TotalNS: 11_564},
	}
	capture.SortOwners(c.Owners)
	return c
}

// hostileDiff compares two captures whose every string tries to run script in the page.
func hostileDiff(t testing.TB, o capture.DiffOptions) *capture.Diff {
	t.Helper()
	b, a := hostilePair(t)
	return capture.Compare(b, a, o)
}

// hostilePair are the captures hostileDiff compares, before and after.
func hostilePair(t testing.TB) (before, after *capture.Capture) {
	t.Helper()
	b := capturetest.Of(t, 1e9,
		capturetest.Rec(funcType, imgCanary, svgComm+"+0x10", svgComm, 1, 1, 0xffff888100000000, 5_000, 9_000),
		capturetest.Rec("mutex", "", scriptBreak, commentOpen, 1, 2, 0xffff888100000040, 1_000),
		capturetest.Rec("spinlock", "", "0xffffffffc0a81234", funcMarker, 1, 3, 0xffff888100000080, 2_000),
	)
	a := capturetest.Of(t, 2e9,
		capturetest.Rec(funcType, imgCanary, svgComm+"+0x20", svgComm, 2, 1, 0xffff888100000100, 50_000),
		capturetest.Rec(scriptBreak, "", funcMarker, scriptBreak, 2, 2, 0xffff888100000140, 700),
	)
	b.Records[0].Stack = []string{"mutex_lock+0x3d", svgComm + "+0x10", "0xffffffffc0a85678"}
	a.Records[0].Stack = []string{scriptBreak, "0xffffffffc0a85678"}
	for _, c := range []*capture.Capture{b, a} {
		c.Meta.CommandLine = []string{"klockstat", "--", "sh", "-c", scriptBreak}
		c.Meta.Hostname = imgCanary
		c.Meta.Warnings = []string{svgComm}
		c.Meta.Types = append(c.Meta.Types, scriptBreak, funcType)
	}
	a.Meta.Kernel = "6.12 " + svgComm
	a.Meta.Comm = commentOpen
	// The owners: a hostile thread name holding a hostile lock at hostile frames matches across
	// the captures, as does a thread whose name reverses the text after it; an owner whose stack
	// has a raw address goes.
	b.Owners = []capture.Owner{
		{Type: funcType, Lock: 0xffff888100000000, Name: imgCanary, Comm: imgCanary, PID: 1, TID: 1, Stack: []string{svgComm + "+0x10", scriptBreak}, Count: 1, TotalNS: 5_000,
			States: []capture.OwnerState{{State: capture.OwnerDiskSleep, Count: 1, TotalNS: 5_000}}},
		{Type: "mutex", Lock: 0xffff888100000040, Comm: bidiComm, PID: 1, TID: 2, StackReason: capture.OwnerStackRan, Count: 1, TotalNS: 1_000,
			States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 1, TotalNS: 1_000}}},
		{Type: "mutex", Lock: 0xffff888100000040, Comm: scriptBreak, PID: 1, TID: 3, Stack: []string{"__schedule+0x618", "0xffffffffc0a85678"}, Count: 1, TotalNS: 300,
			States: []capture.OwnerState{{State: capture.OwnerRunnable, Count: 1, TotalNS: 300}}},
		{Type: "spinlock", Lock: 0xffff888100000080, Reason: capture.OwnerNoField, Count: 1, TotalNS: 2_000},
	}
	a.Owners = []capture.Owner{
		{Type: funcType, Lock: 0xffff888100000100, Name: imgCanary, Comm: imgCanary, PID: 2, TID: 7, Stack: []string{svgComm + "+0x20", scriptBreak}, Count: 2, TotalNS: 50_000,
			States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 1, TotalNS: 30_000}, {State: capture.OwnerDiskSleep, Count: 1, TotalNS: 20_000}}},
		{Type: "mutex", Lock: 0xffff888100000140, Comm: bidiComm, PID: 2, TID: 8, StackReason: capture.OwnerStackRan, Count: 1, TotalNS: 700,
			States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 1, TotalNS: 700}}},
	}
	return b, a
}

// syntheticCapture is a capture shaped like a big real one: n records on about 12 lock types, a few
// hundred locks and callers, 16-frame stacks, waits spread over six orders of magnitude. Its records
// share stacks as a real capture's do: one record in four has a stack of its own, the others wait on
// a path another thread took (a capture of stress-ng's dentry, mmap, fork, pipe, futex, flock, open
// and sem-sysv stressors had 525 stacks in 994 records, and more threads add fewer new paths).
func syntheticCapture(n int) *capture.Capture {
	return syntheticCaptureOf(n, max(1, n/4))
}

// syntheticCaptureOf is syntheticCapture with the number of distinct stacks its records draw from:
// n gives every record a stack of its own, the worst case for interning.
func syntheticCaptureOf(n, stacks int) *capture.Capture {
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	types := []string{"spinlock", "rwlock:R", "rwlock:W", "rwsem:R", "rwsem:W", "mutex", "semaphore", "rtmutex", "rwlock-rt:R", "rwlock-rt:W", "pcpu-sem:R", "pcpu-sem:W"}
	funcs := []string{"vm_mmap_pgoff", "__vm_munmap", "__x64_sys_mincore", "ext4_buffered_write_iter", "anon_pipe_write", "anon_pipe_read",
		"__schedule", "try_to_wake_up", "__task_rq_lock", "get_signal", "free_pcppages_bulk", "lock_mm_and_find_vma", "do_sys_openat2",
		"path_openat", "dput", "d_alloc_parallel", "futex_wake", "futex_wait_setup", "tcp_sendmsg", "sock_def_readable"}
	callers := make([]string, 300)
	for i := range callers {
		callers[i] = fmt.Sprintf("%s+0x%x", funcs[i%len(funcs)], 16+rng.IntN(0x400))
	}
	hists := make(map[string]*capture.Histogram)
	c := &capture.Capture{
		Version: capture.FormatVersion,
		Meta: capture.Meta{
			Tool: "klockstat", ToolVersion: "0.1.0", Kernel: "6.18.44", Arch: "x86_64", Hostname: "bench1", CPUModel: "AMD EPYC 7B13", CPUs: 64,
			Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), DurationNS: 30_000_000_000,
			CommandLine: []string{"klockstat", "-d", "30s", "--", "make", "-j64"}, Workload: []string{"make", "-j64"},
			Probe: "rawtp", StackDepth: 16, Types: types,
			Events: capture.Events{Begin: uint64(n) * 40, End: uint64(n) * 40, Waits: uint64(n) * 40},
		},
	}
	paths := make([][]string, stacks)
	for i := range paths {
		stack := make([]string, 16)
		stack[0] = "queued_spin_lock_slowpath+0x1c"
		stack[1] = callers[rng.IntN(len(callers))]
		for j := 2; j < len(stack); j++ {
			if rng.IntN(20) == 0 {
				stack[j] = fmt.Sprintf("0xffffffffc0%06x", rng.IntN(1<<24))
			} else {
				stack[j] = fmt.Sprintf("%s+0x%x", funcs[rng.IntN(len(funcs))], rng.IntN(0x800))
			}
		}
		paths[i] = stack
	}
	for i := range n {
		typ := types[rng.IntN(len(types))]
		stack := paths[i%stacks]
		caller := stack[1]
		r := capture.Record{
			Type: typ, Lock: capture.Addr(0xffff888100000000 + uint64(rng.IntN(500))*64), Comm: fmt.Sprintf("worker-%d", i%977),
			PID: uint32(1000 + i%97), TID: uint32(2000 + i), Caller: caller, Stack: stack,
		}
		if rng.IntN(3) == 0 {
			r.Name = "mmap_lock"
		}
		h := hists[typ]
		if h == nil {
			h = &capture.Histogram{Type: typ}
			hists[typ] = h
		}
		for range 1 + rng.IntN(60) {
			capturetest.AddWait(&r, h, uint64(100*(1+rng.ExpFloat64()*float64(uint64(1)<<rng.IntN(17)))))
		}
		c.Records = append(c.Records, r)
	}
	for _, typ := range types {
		if h := hists[typ]; h != nil {
			c.Histograms = append(c.Histograms, *h)
		}
	}
	return c
}

// sortedRecords are the records of c in the order of capture.Sort, as the report's "By thread"
// view shows them.
func sortedRecords(c *capture.Capture) []capture.Record {
	var sorted []capture.Record
	for _, i := range capture.Order(c.Records) {
		sorted = append(sorted, c.Records[i])
	}
	return sorted
}

// mergedLocksCapture is a capture of two processes, each waiting on its own mmap_lock (two locks
// of one name) from the same callers, and on a pipe mutex; scale multiplies the waits, so that two
// of them compare.
func mergedLocksCapture(t testing.TB, durationNS int64, scale uint64) (*capture.Capture, [2]capture.Addr) {
	t.Helper()
	locks := [2]capture.Addr{0xffff888104d2a0c8, 0xffff888104d2b1d0}
	mmap := []string{"rwsem_down_write_slowpath+0x2a1", "down_write_killable+0x4f", "vm_mmap_pgoff+0xe0", "do_syscall_64+0x82"}
	munmap := []string{"rwsem_down_write_slowpath+0x2a1", "down_write_killable+0x4f", "__vm_munmap+0x7d", "do_syscall_64+0x82"}
	records := []capturetest.Record{
		capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "proc-a", 100, 101, locks[0], 4_000*scale, 9_000*scale),
		capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "proc-b", 200, 201, locks[1], 7_000*scale),
		capturetest.Rec("rwsem:W", "mmap_lock", "__vm_munmap+0x7d", "proc-a", 100, 102, locks[0], 3_000*scale),
		capturetest.Rec("rwsem:W", "mmap_lock", "__vm_munmap+0x7d", "proc-b", 200, 202, locks[1], 1_000*scale, 500*scale),
		capturetest.Rec("mutex", "", "anon_pipe_write+0x43", "proc-b", 200, 203, 0xffff88810a6b3c40, 600*scale),
	}
	for i := range records {
		if records[i].Caller == "vm_mmap_pgoff+0xe0" {
			records[i].Stack = mmap
		} else if records[i].Type == "rwsem:W" {
			records[i].Stack = munmap
		}
	}
	c := capturetest.Of(t, durationNS, records...)
	return c, locks
}
