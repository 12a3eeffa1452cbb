package collector

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
	"github.com/klockstat/klockstat/kallsyms"
	"github.com/klockstat/klockstat/lockspec"
)

// claims says whether the running kernel advertises a backend's hook, as
// the kernel itself publishes it, apart from the collector's detection: a
// backend must work exactly where its hook is advertised, and elsewhere
// fail at once saying what is missing.
func claims(t *testing.T, backend string) (bool, string) {
	t.Helper()
	if err := mountTracefs(); err != nil {
		t.Fatal(err)
	}
	exists := func(path string) bool { _, err := os.Stat(path); return err == nil }
	switch backend {
	case "tp_btf":
		spec, err := btf.LoadKernelSpec()
		if err != nil {
			return false, "no kernel BTF: " + err.Error()
		}
		if _, err := spec.AnyTypeByName("btf_trace_contention_begin"); err != nil {
			return false, "no btf_trace_contention_begin in the kernel's BTF"
		}
		return true, "btf_trace_contention_begin in the kernel's BTF"
	case "rawtp", "tracepoint":
		if exists(tracefsPath + "/events/lock/contention_begin") {
			return true, "tracefs lists lock:contention_begin"
		}
		return false, "tracefs lists no lock:contention_begin"
	case "fentry":
		f, err := os.Open(tracefsPath + "/available_filter_functions")
		if err != nil {
			return false, "the traceable functions cannot be read: " + err.Error()
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if sc.Text() == "mutex_lock" {
				return true, "tracefs lists mutex_lock as traceable"
			}
		}
		return false, "tracefs does not list mutex_lock as traceable"
	case "kprobe":
		if exists("/sys/bus/event_source/devices/kprobe/type") || exists(tracefsPath+"/kprobe_events") {
			return true, "kprobe PMU or tracefs kprobe_events present"
		}
		return false, "neither the kprobe PMU nor tracefs kprobe_events exists"
	}
	t.Fatalf("unknown backend %s", backend)
	return false, ""
}

// firstClaimed is the backend auto must pick.
func firstClaimed(t *testing.T) string {
	for _, b := range Backends() {
		if ok, _ := claims(t, b.Name()); ok {
			return b.Name()
		}
	}
	t.Fatal("this kernel claims no backend")
	return ""
}

// mmapCallers take mmap_lock themselves; see TestCaptureMmapLockContention.
var mmapCallers = []string{"vm_mmap_pgoff", "__vm_munmap", "__x64_sys_munmap", "__x64_sys_mincore", "__do_sys_mincore", "lock_mm_and_find_vma", "do_user_addr_fault"}

// TestBackends runs every backend on the mmap_lock contention of contend,
// or, where the kernel lacks its hook, checks that it fails at once and
// says why.
func TestBackends(t *testing.T) {
	testenv.RequireRoot(t)
	for _, b := range Backends() {
		t.Run(b.Name(), func(t *testing.T) {
			claimed, why := claims(t, b.Name())
			w := startWorkload(t, "-lock", "mmap", "-threads", "4")
			cfg := defaultConfig(t)
			cfg.Probe = b.Name()
			cfg.PIDs = []uint32{w.pid}
			start := time.Now()
			c, err := Start(cfg)
			elapsed := time.Since(start)
			if err != nil {
				if claimed {
					t.Fatalf("the kernel claims %s (%s), but: %v", b.Name(), why, err)
				}
				checkUnavailable(t, b.Name(), err)
				t.Logf("unavailable here as the kernel says (%s), failing in %v: %v", why, elapsed.Round(time.Millisecond), err)
				return
			}
			defer c.Close()
			if !claimed {
				t.Logf("works although the kernel does not claim it (%s)", why)
			}
			w.run(t)
			w.stopWhen(t, c, 500)
			stop := time.Now()
			cp, err := c.Stop()
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			t.Logf("started in %v, stopped and closed in %v", elapsed.Round(time.Millisecond), time.Since(stop).Round(time.Millisecond))
			if err := cp.Validate(); err != nil {
				t.Fatalf("captured data does not validate: %v", err)
			}
			checkBackendCapture(t, b.Name(), cp, w.pid)
		})
	}
}

func checkUnavailable(t *testing.T, backend string, err error) {
	t.Helper()
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("error is not ErrUnavailable: %v", err)
	}
	missing := map[string]string{
		"tp_btf": "tracepoint", "rawtp": "tracepoint", "tracepoint": "tracepoint",
		"fentry": "fentry unavailable", "kprobe": "kprobes unavailable",
	}[backend]
	msg := err.Error()
	if !strings.HasPrefix(msg, "--probe "+backend+": ") || !strings.Contains(msg, missing) {
		t.Errorf("error %q does not start --probe %s: and name what is missing (%q)", msg, backend, missing)
	}
	if !strings.Contains(msg, "--probe values that work on this kernel: ") && !strings.Contains(msg, "no other --probe value works") {
		t.Errorf("error %q does not say which --probe values work", msg)
	}
	if backend == "kprobe" && kernelConfig("CONFIG_KPROBES") == "n" && !strings.Contains(msg, "kernel built without CONFIG_KPROBES") {
		t.Errorf("error %q does not name CONFIG_KPROBES, which the kernel configuration lacks", msg)
	}
}

// checkBackendCapture checks what a backend captured of contend (pid),
// the only process it captured.
func checkBackendCapture(t *testing.T, backend string, cp *capture.Capture, pid uint32) {
	t.Helper()
	if cp.Meta.Probe != backend {
		t.Fatalf("backend %q, want %s", cp.Meta.Probe, backend)
	}
	var waits, holds uint64
	for _, r := range cp.Records {
		if r.PID != pid {
			t.Errorf("record of pid %d (%s) passed the filter for pid %d", r.PID, r.Comm, pid)
		}
		if !strings.HasPrefix(r.Type, "rwsem:") {
			continue
		}
		holds += r.HoldCount
		if r.Count == 0 || !hasFrame([]string{r.Caller}, mmapCallers...) {
			continue
		}
		waits += r.Count
		// Before a frame of code, a first frame of tracing machinery or a
		// raw address would be skipped.
		if lockspec.TracingFrames([]string{r.Stack[0], "code+0x1"}) != 0 {
			t.Errorf("stack of a wait starts with tracing machinery: %v", r.Stack)
		}
	}
	if waits == 0 {
		var seen []string
		for _, r := range cp.Records {
			if strings.HasPrefix(r.Type, "rwsem:") && r.Count > 0 && len(seen) < 5 {
				seen = append(seen, fmt.Sprintf("%s from %q: %v", r.Type, r.Caller, r.Stack))
			}
		}
		t.Fatalf("no rwsem waits of contend (pid %d) from its mmap callers in %d records; rwsem waits: %q", pid, len(cp.Records), seen)
	}
	checkHistogramsMatchRecords(t, cp)
	m := cp.Meta
	if m.ProbeNSPerEvent() <= 0 {
		t.Errorf("probe cost not measured: %+v", m.Programs)
	}
	t.Logf("%s on %s: %d events, %d waits, %d of them contend's on mmap_lock; %.1f%% of the wait time named; probe %.0f ns/event; stacks %+v",
		backend, kernelRelease(), m.Events.Begin, m.Events.Waits, waits, 100*(cp.NameShares().Symbol+cp.NameShares().SlabCache), m.ProbeNSPerEvent(), m.Stacks)
	t.Logf("%s on %s: waits by type and name: %v", backend, kernelRelease(), waitsByTypeAndName(cp))

	switch backend {
	case "tp_btf", "rawtp":
		if m.Stacks.Known == 0 {
			t.Errorf("%s recognised no path walked before: %+v", backend, m.Stacks)
		}
	}
	a := m.Acquire
	if backend != "fentry" && backend != "kprobe" {
		if a != nil || len(cp.HoldHistograms) > 0 {
			t.Errorf("tracepoint backend reports acquire times or holds: %+v", a)
		}
		return
	}
	if a == nil {
		t.Fatal("function-probe capture without acquire metadata")
	}
	cal := a.Calibration
	t.Logf("threshold %d ns: %d calibration samples, p50 %d ns, p99 %d ns, max %d ns; %d uncontended acquires, %d holds; %d functions probed, %d skipped",
		a.ThresholdNS, cal.Samples, cal.P50NS, cal.P99NS, cal.MaxNS, a.Uncontended, a.Holds, len(a.Functions), len(a.Skipped))
	if cal.Samples == 0 || a.ThresholdNS != thresholdFactor*cal.P99NS || cal.P50NS > cal.P99NS || cal.P99NS > cal.MaxNS {
		t.Errorf("calibration %+v with threshold %d", cal, a.ThresholdNS)
	}
	if a.Uncontended == 0 {
		t.Error("no uncontended acquire counted")
	}
	if holds == 0 || len(cp.HoldHistograms) == 0 {
		t.Errorf("no holds of contend's rwsems timed (%d hold histograms)", len(cp.HoldHistograms))
	}
	for _, fn := range []string{"down_write_killable", "down_read", "mutex_lock", "mutex_unlock", "up_write"} {
		if !slices.Contains(a.Functions, fn) {
			t.Errorf("%s not probed: probed %v", fn, a.Functions)
		}
	}
	// Spinlocks are left to the tracepoints.
	if !slices.ContainsFunc(a.Skipped, func(s capture.Skipped) bool {
		return s.Function == "_raw_spin_lock" && strings.HasPrefix(s.Reason, "spinning lock: ")
	}) {
		t.Errorf("_raw_spin_lock not skipped with a reason: %+v", a.Skipped)
	}
}

// waitsByTypeAndName counts a capture's waits by "type name" ("type" for
// locks without a name).
func waitsByTypeAndName(cp *capture.Capture) map[string]uint64 {
	waits := map[string]uint64{}
	for _, r := range cp.Records {
		if r.Count > 0 {
			waits[strings.TrimSpace(r.Type+" "+r.Name)] += r.Count
		}
	}
	return waits
}

// requireClaimed skips a test of backends the kernel does not claim, saying
// what it lacks; TestBackends checks that they fail at once there.
func requireClaimed(t *testing.T, backends ...string) {
	t.Helper()
	for _, b := range backends {
		if ok, why := claims(t, b); !ok {
			t.Skipf("no %s on this kernel (%s)", b, why)
		}
	}
}

// claimedFunctionBackends are the function-probe backends this kernel
// claims; tests of them skip where there is none (the kernel says so, so
// CI may skip too).
func claimedFunctionBackends(t *testing.T) []string {
	var names []string
	for _, b := range []string{"fentry", "kprobe"} {
		if ok, _ := claims(t, b); ok {
			names = append(names, b)
		}
	}
	if len(names) == 0 {
		t.Skip("this kernel has neither fentry nor kprobes (see TestBackends)")
	}
	return names
}

// TestUserAddedFunction probes a function the lock catalogue does not
// list, and one that does not exist: the first captures, the second is
// skipped with a warning naming it.
func TestUserAddedFunction(t *testing.T) {
	testenv.RequireRoot(t)
	backends := claimedFunctionBackends(t)
	slowpath, lock := lockSlowpath(t)
	doc := fmt.Sprintf(`{"version": 1, "types": [{"name": "slowpath", "flags": [["MUTEX"], ["MUTEX", "SPIN"]],
		"acquire": [%q, "klockstat_no_such_function"]}]}`, slowpath)
	spec, err := lockspec.Parse("user-locks.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			var (
				log   strings.Builder
				cp    *capture.Capture
				pid   uint32
				waits uint64
			)
			// Under emulation one CPU runs at a time and a second of contend may hold no
			// acquire longer than the threshold (6.1's guest: 4 under kprobe, once none under
			// fentry): a capture without a wait is taken again, up to three.
			for round := 1; round <= 3 && waits == 0; round++ {
				log.Reset()
				cfg := Config{Spec: spec, Probe: backend, StackDepth: 16, MapSize: 16384, Log: &log}
				cp = capture1(t, cfg, func() {
					cmd := startContend(t, "-lock", lock, "-threads", "4", "-duration", "1s")
					pid = uint32(cmd.Process.Pid)
					waitContend(t, cmd)
				})
				waits = 0
				for _, r := range cp.Records {
					if r.PID == pid && r.Type == "slowpath" {
						waits += r.Count
					}
				}
				if waits == 0 {
					t.Logf("round %d: no wait through %s; again", round, slowpath)
				}
			}
			a := cp.Meta.Acquire
			if !slices.Equal(a.Functions, []string{slowpath}) {
				t.Errorf("probed %v, want [%s]", a.Functions, slowpath)
			}
			want := capture.Skipped{Function: "klockstat_no_such_function", Type: "slowpath", Reason: "not in this kernel (/proc/kallsyms)"}
			if !slices.Equal(a.Skipped, []capture.Skipped{want}) {
				t.Errorf("skipped %+v, want %+v", a.Skipped, want)
			}
			if !slices.ContainsFunc(cp.Meta.Warnings, func(w string) bool { return strings.Contains(w, "klockstat_no_such_function (slowpath)") }) {
				t.Errorf("no warning names the missing function: %q", cp.Meta.Warnings)
			}
			if !strings.Contains(log.String(), "klockstat: warning: ") || !strings.Contains(log.String(), "klockstat_no_such_function") {
				t.Errorf("the log does not warn about the missing function: %q", log.String())
			}
			if waits == 0 {
				t.Fatalf("no waits of contend -lock %s (pid %d) through %s in three captures", lock, pid, slowpath)
			}
			t.Logf("%s: %d waits of contend -lock %s through %s, threshold %d ns", backend, waits, lock, slowpath, a.ThresholdNS)
		})
	}
}

// lockSlowpath names a traceable function that a contended lock calls, not
// inlined, with the lock as its first argument, and the contend workload
// that contends that lock: __mutex_lock_slowpath, or on PREEMPT_RT, where
// a mutex is an rtmutex, a slow path of the rtmutex or rwbase code.
func lockSlowpath(t *testing.T) (fn, lock string) {
	t.Helper()
	traceable := map[string]bool{}
	f, err := os.Open(tracefsPath + "/available_filter_functions")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 0 {
			traceable[fields[0]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	candidates := []struct{ fn, lock string }{
		{"__mutex_lock_slowpath", "pipe"},
		{"__rt_mutex_slowlock_locked", "pipe"},
		{"rt_mutex_slowlock", "pipe"},
		{"rtlock_slowlock_locked", "spin"},
		{"__rwbase_read_lock", "mmap"},
	}
	var names []string
	for _, c := range candidates {
		if traceable[c.fn] {
			return c.fn, c.lock
		}
		names = append(names, c.fn)
	}
	t.Fatalf("none of %v is traceable (tracefs available_filter_functions)", names)
	return "", ""
}

// TestKprobeWithoutCookies runs the kprobe backend as on kernels before
// 5.15, whose kprobes have no cookie: one copy of the programs per
// function, the lock type patched in.
func TestKprobeWithoutCookies(t *testing.T) {
	testenv.RequireRoot(t)
	requireClaimed(t, "kprobe")
	noCookies = true
	defer func() { noCookies = false }()
	cfg := defaultConfig(t)
	cfg.Probe = "kprobe"
	cfg.Spec = loadSpec(t, "rwsem:R", "rwsem:W")
	var pid uint32
	cp := capture1(t, cfg, func() {
		cmd := startContend(t, "-lock", "mmap", "-threads", "4", "-duration", "1s")
		pid = uint32(cmd.Process.Pid)
		waitContend(t, cmd)
	})
	var names []string
	for _, p := range cp.Meta.Programs {
		names = append(names, p.Name)
	}
	for _, want := range []string{"kprobe_acquire:down_write_killable", "kretprobe_acquire:down_write_killable", "kprobe_release:up_write"} {
		if !slices.Contains(names, want) {
			t.Errorf("no program %s among %v", want, names)
		}
	}
	checkBackendCaptureTypes(t, cp, pid)
}

// checkBackendCaptureTypes checks that contend's mmap_lock waits got the
// rwsem types of the functions that timed them.
func checkBackendCaptureTypes(t *testing.T, cp *capture.Capture, pid uint32) {
	t.Helper()
	perType := map[string]uint64{}
	for _, r := range cp.Records {
		if r.PID == pid && hasFrame([]string{r.Caller}, mmapCallers...) {
			perType[r.Type] += r.Count
		}
	}
	if perType["rwsem:W"] == 0 {
		t.Errorf("no rwsem:W waits of contend's mmap callers: %v", perType)
	}
	for typ := range perType {
		if typ != "rwsem:R" && typ != "rwsem:W" {
			t.Errorf("waits of type %s captured with only rwsem types selected", typ)
		}
	}
}

// TestTpBTFBesideRawtp runs the two raw-tracepoint flavours on the same
// events: they must see the same waits, and the log says what each cost.
// The program attached first runs first on every event, on colder caches,
// so each order gets a round.
func TestTpBTFBesideRawtp(t *testing.T) {
	testenv.RequireRoot(t)
	requireClaimed(t, "tp_btf", "rawtp")
	for _, order := range [][2]string{{"tp_btf", "rawtp"}, {"rawtp", "tp_btf"}} {
		w := startWorkload(t, "-lock", "mmap", "-threads", "4")
		var caps [2]*capture.Capture
		var colls [2]*Collector
		for i, probe := range order {
			colls[i] = w.capture(t, probe)
		}
		w.run(t)
		w.stopWhen(t, colls[0], 500)
		for i, c := range colls {
			cp, err := c.Stop()
			if err != nil {
				t.Fatal(err)
			}
			caps[i] = cp
		}
		a, b := caps[0].Meta, caps[1].Meta
		t.Logf("on %s, same events, %s attached first: %s %.0f ns/event, %s %.0f ns/event (%d events, stacks %+v and %+v)",
			kernelRelease(), order[0], order[0], a.ProbeNSPerEvent(), order[1], b.ProbeNSPerEvent(), a.Events.Begin, a.Stacks, b.Stacks)
		compareCallers(t, order[0], caps[0], order[1], caps[1])
	}
}

func TestCalibration(t *testing.T) {
	// 1000 samples 1..1000, shuffled: by definition of the nearest rank,
	// the median is the 500th value and the 99th percentile the 990th.
	samples := make([]uint64, 1000)
	for i := range samples {
		samples[(i*7919)%len(samples)] = uint64(i + 1)
	}
	cal, threshold := calibration(samples)
	if cal.Samples != 1000 || cal.P50NS != 500 || cal.P99NS != 990 || cal.MaxNS != 1000 {
		t.Errorf("calibration of 1..1000 = %+v, want 1000 samples, p50 500, p99 990, max 1000", cal)
	}
	if threshold != thresholdFactor*990 || cal.Rule != "2 × p99" {
		t.Errorf("threshold %d by rule %q, want %d by 2 × p99", threshold, cal.Rule, thresholdFactor*990)
	}
	for _, tc := range []struct {
		samples       []uint64
		p50, p99, max uint64
	}{
		{[]uint64{42}, 42, 42, 42},
		// Nearest rank of 2 samples: p50 is the first, p99 the second.
		{[]uint64{300, 100}, 100, 300, 300},
		// One slow outlier in 100 does not move the 99th percentile...
		{append(slices.Repeat([]uint64{100}, 99), 1_000_000), 100, 100, 1_000_000},
		// ...two do.
		{append(slices.Repeat([]uint64{100}, 98), 1_000_000, 1_000_000), 100, 1_000_000, 1_000_000},
	} {
		cal, threshold := calibration(tc.samples)
		if cal.P50NS != tc.p50 || cal.P99NS != tc.p99 || cal.MaxNS != tc.max || threshold != thresholdFactor*tc.p99 {
			t.Errorf("calibration of %d samples = %+v, threshold %d; want p50 %d, p99 %d, max %d", len(tc.samples), cal, threshold, tc.p50, tc.p99, tc.max)
		}
	}
	if cal, threshold := calibration(nil); cal.Samples != 0 || threshold != 0 {
		t.Errorf("calibration without samples = %+v, threshold %d; want none and 0: every acquire counts", cal, threshold)
	}
	if _, threshold := calibration([]uint64{1 << 63}); threshold != 1<<64-1 {
		t.Errorf("threshold of a huge p99 = %d, want saturated", threshold)
	}
}

func TestPatchInfo(t *testing.T) {
	spec, err := loadLockstat()
	if err != nil {
		t.Fatal(err)
	}
	marked := func(ps *ebpf.ProgramSpec, value int64) int {
		n := 0
		for _, ins := range ps.Instructions {
			if ins.OpCode.ALUOp() == asm.Mov && ins.Constant == value {
				n++
			}
		}
		return n
	}
	const info = 0x2_0003 // FN_HOLD | type 3
	s, err := specsOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tmpl := range []*ebpf.ProgramSpec{s.FentryAcquire, s.FexitAcquire, s.KprobeAcquire, s.KretprobeAcquire} {
		ps := tmpl.Copy()
		before := marked(ps, int64(lockstatFnInfoFN_MARK))
		if err := patchInfo(ps, info); err != nil {
			t.Errorf("%s: %v", tmpl.Name, err)
			continue
		}
		if before != 1 || marked(ps, int64(lockstatFnInfoFN_MARK)) != 0 || marked(ps, info) != 1 {
			t.Errorf("%s: %d marked instructions before, want 1, turned into one holding %#x", tmpl.Name, before, info)
		}
		if marked(tmpl, int64(lockstatFnInfoFN_MARK)) != 1 {
			t.Errorf("%s: patching a copy changed the template", tmpl.Name)
		}
	}
	if err := patchInfo(s.FentryRelease.Copy(), info); err == nil || !strings.Contains(err.Error(), "0 marked instructions") {
		t.Errorf("patching a program without the mark: %v, want an error", err)
	}
}

func TestPlan(t *testing.T) {
	const doc = `{"version": 1, "types": [
		{"name": "spinlock", "flags": [["SPIN"]], "acquire": ["_raw_spin_lock"]},
		{"name": "rwsem:W", "flags": [["WRITE"]], "acquire": ["down_write", "down_write_killable"], "release": ["up_write", "downgrade_write"], "hold": true},
		{"name": "mutex", "flags": [["MUTEX"]], "acquire": ["mutex_lock", "mutex_lock_io"], "release": ["mutex_unlock"], "hold": true},
		{"name": "semaphore", "flags": [[]], "acquire": ["down", "down_write"]}
	]}`
	spec, err := lockspec.Parse("t.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	// A kernel built with CONFIG_DEBUG_LOCK_ALLOC, without mutex_lock_io
	// and downgrade_write.
	var table strings.Builder
	for i, fn := range []string{"_raw_spin_lock", "_raw_spin_lock_nested", "down_write", "down_write_nested",
		"down_write_killable", "up_write", "mutex_lock_nested", "mutex_unlock", "down"} {
		fmt.Fprintf(&table, "%x T %s\n", uint64(0xffffffff81000000)+0x100*uint64(i), fn)
	}
	k := &kernel{}
	k.ksymsOnce.Do(func() { k.ksyms, k.ksymsErr = kallsyms.Parse(strings.NewReader(table.String())) })
	targets, skipped, err := kprobeBackend.plan(k, spec)
	if err != nil {
		t.Fatal(err)
	}
	const hold = uint32(lockstatFnInfoFN_HOLD)
	want := []target{
		{fn: "down_write", typ: "rwsem:W", info: 1 | hold},
		{fn: "down_write_nested", typ: "rwsem:W", info: 1 | hold},
		{fn: "down_write_killable", typ: "rwsem:W", info: 1 | hold},
		{fn: "up_write", typ: "rwsem:W", release: true, info: 1},
		{fn: "mutex_lock_nested", typ: "mutex", info: 2 | hold},
		{fn: "mutex_unlock", typ: "mutex", release: true, info: 2},
		{fn: "down", typ: "semaphore", info: 3},
	}
	if !slices.Equal(targets, want) {
		t.Errorf("targets\n%+v\nwant\n%+v", targets, want)
	}
	wantSkipped := []capture.Skipped{
		{Function: "_raw_spin_lock", Type: "spinlock", Reason: spinningReason[hookKprobe]},
		{Function: "downgrade_write", Type: "rwsem:W", Reason: "not in this kernel (/proc/kallsyms)"},
		{Function: "mutex_lock_io", Type: "mutex", Reason: "not in this kernel (/proc/kallsyms)"},
		{Function: "down_write", Type: "semaphore", Reason: "already probed for type rwsem:W"},
		{Function: "down_write_nested", Type: "semaphore", Reason: "already probed for type rwsem:W"},
	}
	if !slices.Equal(skipped, wantSkipped) {
		t.Errorf("skipped\n%+v\nwant\n%+v", skipped, wantSkipped)
	}
	if got := skippedSummary(wantSkipped[1:3]); got != "not in this kernel (/proc/kallsyms): downgrade_write (rwsem:W), mutex_lock_io (mutex)" {
		t.Errorf("skippedSummary = %q", got)
	}

	// fentry probes only functions the kernel's BTF describes: here not
	// down_write_nested.
	k.btfOnce.Do(func() {
		var types []btf.Type
		for _, fn := range []string{"_raw_spin_lock", "_raw_spin_lock_nested", "down_write", "down_write_killable", "up_write", "mutex_lock_nested", "mutex_unlock", "down"} {
			types = append(types, &btf.Func{Name: fn, Type: &btf.FuncProto{Return: (*btf.Void)(nil)}, Linkage: btf.GlobalFunc})
		}
		b, err := btf.NewBuilder(types, nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := b.Marshal(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		k.btf, k.btfErr = btf.LoadSpecFromReader(bytes.NewReader(raw))
	})
	targets, skipped, err = fentryBackend.plan(k, spec)
	if err != nil {
		t.Fatal(err)
	}
	want = append([]target{
		{fn: "down_write", typ: "rwsem:W", info: 1 | hold},
		{fn: "down_write_killable", typ: "rwsem:W", info: 1 | hold},
	}, want[3:]...)
	if !slices.Equal(targets, want) {
		t.Errorf("fentry targets\n%+v\nwant\n%+v", targets, want)
	}
	wantSkipped = []capture.Skipped{
		{Function: "_raw_spin_lock", Type: "spinlock", Reason: spinningReason[hookFentry]},
		{Function: "down_write_nested", Type: "rwsem:W", Reason: "no BTF for it (fentry needs the function in /sys/kernel/btf/vmlinux)"},
		wantSkipped[1], wantSkipped[2], wantSkipped[3],
		{Function: "down_write_nested", Type: "semaphore", Reason: "no BTF for it (fentry needs the function in /sys/kernel/btf/vmlinux)"},
	}
	if !slices.Equal(skipped, wantSkipped) {
		t.Errorf("fentry skipped\n%+v\nwant\n%+v", skipped, wantSkipped)
	}
}
