package collector

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
)

// TestStartAndStopInsideContention starts and stops captures while a
// contended workload runs: every wait begun in a capture must find its end
// attached, and no wait may begin once the end programs are gone. Either
// mistake leaves a wait open, which the next wait on its thread or CPU
// finds unmatched (or, past 4 on a CPU, drops as too deeply nested), and
// which the stop charges as in progress.
func TestStartAndStopInsideContention(t *testing.T) {
	testenv.RequireRoot(t)
	// Up to 8 captures while the workload lasts: under emulation (the
	// kernel matrix) starting and stopping take tens of seconds.
	w := startWorkload(t, "-lock", "spin,mmap,pipe", "-threads", "4", "-duration", "2m")
	w.run(t)
	captures := 0
	for i := range 8 {
		cfg := defaultConfig(t)
		cfg.PIDs = []uint32{w.pid}
		c, err := Start(cfg)
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		inside := w.waitEvents(c, 50)
		cp, err := c.Stop()
		c.Close()
		if err != nil {
			t.Fatalf("stop %d: %v", i, err)
		}
		if !inside {
			break
		}
		captures++
		e := cp.Meta.Events
		t.Logf("capture %d: %+v, lost %v", i, e, cp.Meta.Lost)
		if e.UnmatchedBegin != 0 || cp.Meta.LostTotal() != 0 {
			t.Errorf("capture %d: %d waits begun without an end, %d lost (%v)", i, e.UnmatchedBegin, cp.Meta.LostTotal(), cp.Meta.Lost)
		}
		if e.Waits == 0 {
			t.Errorf("capture %d recorded no wait: %+v", i, e)
		}
	}
	w.check(t)
	if captures == 0 {
		t.Fatalf("the workload ended before a capture saw 50 of its events:\n%s", w.out.String())
	}
}

// TestFaultsInKernelAfterUserMode runs the default backend, which
// recognises paths it has walked before, beside the perf-event backend,
// which walks every stack, on page faults that wait for mmap_lock: taken in
// user mode first, so that the default backend learns their path, then
// taken by the kernel inside read(2) as well, whose stacks hold the same
// frames at the same places up to the fault's entry, and more above. Both
// must find the same share of faults taken in the kernel, and the same
// waits for every whole stack, but for those a kernel before 6.7 skips
// uncounted for the perf-event backend (see compareCounts).
func TestFaultsInKernelAfterUserMode(t *testing.T) {
	testenv.RequireRoot(t)
	requireClaimed(t, "tracepoint")
	a, b := cachedBesideWalked(t, "auto", 3000, "-lock", "fault", "-threads", "4")
	t.Logf("%s stacks %+v, tracepoint stacks %+v", a.Meta.Probe, a.Meta.Stacks, b.Meta.Stacks)
	// Which system call, if any, a fault waiting for mmap_lock came from.
	fault := func(r capture.Record) string {
		switch {
		case !hasFrame(r.Stack, "lock_mm_and_find_vma"):
			return "other"
		case hasFrame(r.Stack, "ksys_read", "vfs_read"):
			return "fault in read(2)"
		}
		return "fault from user mode"
	}
	for _, cp := range []*capture.Capture{a, b} {
		n := map[string]uint64{}
		for _, r := range cp.Records {
			n[fault(r)] += r.Count
		}
		t.Logf("%s: %v", cp.Meta.Probe, n)
		if n["fault in read(2)"] == 0 || n["fault from user mode"] == 0 {
			t.Fatalf("%s captured no mmap_lock wait of one kind of fault: %v", cp.Meta.Probe, n)
		}
	}
	compareCounts(t, fault, a.Meta.Probe, a, "tracepoint", b)
	byStack := func(r capture.Record) string { return r.Type + " " + strings.Join(r.Stack, " <- ") }
	compareCounts(t, byStack, a.Meta.Probe, a, "tracepoint", b)
}

// TestShortLivedThreadsFreeTheirSlots captures a workload that starts a
// new thread for every operation, many more threads than a small per-thread
// wait map holds: each thread's slot must be freed when it exits, so that
// none of their waits is lost to a full map, with either exit hook. With a
// map that holds every thread id, no exit hook is attached and none is lost
// either: a thread id that comes round again reuses its slot.
func TestShortLivedThreadsFreeTheirSlots(t *testing.T) {
	testenv.RequireRoot(t)
	// Every thread of the machine that waits takes a slot, the filters
	// apply later: the small map is small beside the workload's threads,
	// large beside what the rest of the machine keeps alive.
	const smallMap = 256
	everyTid := pidMax()
	cases := []struct {
		name    string
		probe   string
		mapSize uint32
	}{
		{"auto", "auto", smallMap},
		{"tracepoint", "tracepoint", smallMap},
		{"every thread id", "auto", uint32(everyTid)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.probe != "auto" {
				requireClaimed(t, tc.probe)
			}
			if tc.mapSize != smallMap && (everyTid == 0 || everyTid > 1<<20) {
				t.Skipf("pid_max %d (0: unreadable, or a pid namespace of its own): no map of this test holds every thread id", everyTid)
			}
			mapSize := tc.mapSize
			wantFrees := mapSize == smallMap
			var cp *capture.Capture
			for ops := 3 * smallMap; ; ops *= 2 {
				w := startWorkload(t, "-lock", "threads", "-threads", "4", "-ops", strconv.Itoa(ops), "-duration", "0", "-json")
				cfg := defaultConfig(t)
				cfg.Probe = tc.probe
				cfg.MapSize = mapSize
				cfg.PIDs = []uint32{w.pid}
				c, err := Start(cfg)
				if err != nil {
					t.Fatal(err)
				}
				w.run(t)
				w.wait(t)
				cp, err = c.Stop()
				c.Close()
				if err != nil {
					t.Fatal(err)
				}
				var res struct{ Total struct{ Ops uint64 } }
				for line := range strings.Lines(w.out.String()) {
					if strings.HasPrefix(line, "{") {
						if err := json.Unmarshal([]byte(line), &res); err != nil {
							t.Fatalf("contend's results %q: %v", line, err)
						}
					}
				}
				threads := res.Total.Ops
				t.Logf("%d threads started; events %+v, lost %v", threads, cp.Meta.Events, cp.Meta.Lost)
				if threads < 2*smallMap {
					t.Fatalf("only %d threads started, want at least %d to fill a map of %d that keeps them", threads, 2*smallMap, smallMap)
				}
				if cp.Meta.Events.Begin >= 2*smallMap {
					break
				}
				if ops >= 12*smallMap {
					t.Fatalf("only %d waits began, too few to fill a map of %d that keeps their threads", cp.Meta.Events.Begin, smallMap)
				}
			}
			frees := slices.ContainsFunc(cp.Meta.Programs, func(p capture.ProgramStats) bool { return p.Hook == "sched_process_free" })
			if frees != wantFrees {
				t.Errorf("a program at every thread's free attached: %v, want %v with a map of %d and pid_max %d", frees, wantFrees, mapSize, everyTid)
			}
			for _, l := range cp.Meta.Lost {
				if strings.HasPrefix(l.Reason, "per-thread wait map full") {
					t.Errorf("%d waits lost to a full per-thread map: slots of exited threads were not freed", l.Count)
				}
			}
		})
	}
}
