package collector

import (
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/internal/testenv"
)

// TestRescueTakesWhatTheKernelSkipped runs the raw tracepoint programs with
// BPF_PROG_TEST_RUN on one CPU and plays what the kernel does: every event
// goes to the main copy, then the rescue copy, which must leave it alone;
// an event that fires while our programs run on the CPU may reach the
// rescue copy only, which must record it and leave the outer run's state
// intact.
func TestRescueTakesWhatTheKernelSkipped(t *testing.T) {
	testenv.RequireRoot(t)
	requireClaimed(t, "rawtp")
	spec, err := loadLockstat()
	if err != nil {
		t.Fatal(err)
	}
	if err := configure(spec, Config{Spec: loadSpec(t), MapSize: 64}); err != nil {
		t.Fatal(err)
	}
	s, err := specsOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	// The programs run in this process, which a capture ignores.
	if err := setVariables([]variable{{s.SelfTgid, uint32(0)}}); err != nil {
		t.Fatal(err)
	}
	p := &s.lockstatProgramSpecs
	obj, err := newObject(spec, p, rawTracepoint{}.Programs(p))
	if err != nil {
		t.Fatal(err)
	}
	defer obj.close()
	c := &Collector{obj: obj}

	// Spinning waits are kept per CPU: every run must land on the same one.
	// The thread stays locked, so that it ends with the test instead of
	// going back, pinned, to run other tests.
	runtime.LockOSThread()
	var one unix.CPUSet
	one.Set(0)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}

	busy := func() lockstatCpuBusy {
		t.Helper()
		var all []lockstatCpuBusy
		if err := obj.maps.Busy.Lookup(uint32(0), &all); err != nil {
			t.Fatal(err)
		}
		return all[0]
	}
	// setDepth plays runs of ours in progress on the CPU, as when an
	// interrupt arrives in one.
	setDepth := func(depth uint32) {
		t.Helper()
		b := busy()
		b.Depth = depth
		all := make([]lockstatCpuBusy, cpus)
		all[0] = b
		if err := obj.maps.Busy.Update(uint32(0), all, ebpf.UpdateAny); err != nil {
			t.Fatal(err)
		}
	}
	const spin = 1 // LCB_F_SPIN: a spinlock
	run := func(prog *ebpf.ProgramSpec, args ...uint64) {
		t.Helper()
		depth := busy().Depth
		if _, err := obj.program(prog).Run(&ebpf.RunOptions{Context: args}); err != nil {
			t.Fatalf("test run of %s: %v", prog.Name, err)
		}
		if got := busy().Depth; got != depth {
			t.Errorf("%s changed the nesting depth from %d to %d", prog.Name, depth, got)
		}
	}
	var want [lockstatCounterCNT_MAX]uint64
	check := func(step string) {
		t.Helper()
		got, err := c.readCounters()
		if err != nil {
			t.Fatal(err)
		}
		for counter, n := range got {
			if n != want[counter] {
				t.Errorf("%s: counter %d = %d, want %d", step, counter, n, want[counter])
			}
		}
	}
	const outer, inner, deep = 0xffff0000_00001000, 0xffff0000_00002000, 0xffff0000_00003000

	// Every event passes through the main copy, then the rescue copy.
	run(p.RawContentionBegin, outer, spin)
	run(p.RawContentionBeginRescue, outer, spin)
	want[lockstatCounterCNT_BEGIN]++
	check("begin taken by the main copy")

	// An interrupt contends while the main begin program runs: the kernel
	// skips the main copy, only the rescue copy sees the event.
	setDepth(1)
	run(p.RawContentionBeginRescue, inner, spin)
	want[lockstatCounterCNT_BEGIN]++
	want[lockstatCounterCNT_NESTED]++
	want[lockstatCounterCNT_RESCUED_BEGIN]++
	check("nested begin skipped by the kernel")
	run(p.RawContentionEndRescue, inner)
	want[lockstatCounterCNT_END]++
	want[lockstatCounterCNT_RESCUED_END]++
	check("nested end skipped by the kernel")

	setDepth(0)
	run(p.RawContentionEnd, outer)
	run(p.RawContentionEndRescue, outer)
	want[lockstatCounterCNT_END]++
	check("end taken by the main copy")

	// An interrupt contends between the two copies of an event: its notes
	// are written and cleared in between, and the rescue copy of the outer
	// event still finds that event's note under them.
	run(p.RawContentionBegin, outer, spin)
	run(p.RawContentionBegin, inner, spin)
	run(p.RawContentionBeginRescue, inner, spin)
	run(p.RawContentionEnd, inner)
	run(p.RawContentionEndRescue, inner)
	run(p.RawContentionBeginRescue, outer, spin)
	run(p.RawContentionEnd, outer)
	run(p.RawContentionEndRescue, outer)
	want[lockstatCounterCNT_BEGIN] += 2
	want[lockstatCounterCNT_NESTED]++
	want[lockstatCounterCNT_END] += 2
	check("event nested between the copies")

	// A note of the main copy names its lock and level: an event on the
	// same lock nested above it is still the rescue copy's, and the note
	// still there for the event it belongs to.
	run(p.RawContentionBegin, deep, spin)
	setDepth(1)
	run(p.RawContentionBeginRescue, deep, spin)
	want[lockstatCounterCNT_BEGIN]++
	want[lockstatCounterCNT_RESCUED_BEGIN]++
	check("same lock, other level")
	setDepth(0)
	run(p.RawContentionBeginRescue, deep, spin)
	check("note kept for its own event")
	for _, role := range busy().Taken {
		for _, n := range role {
			if n.Lock != 0 {
				t.Errorf("a note is left behind: %+v", n)
			}
		}
	}

	// Every level in use: counted as lost, nothing recorded.
	setDepth(maxLevels)
	run(p.RawContentionBeginRescue, inner, spin)
	want[lockstatCounterCNT_RESCUED_BEGIN]++
	want[lockstatCounterCNT_LOST_LEVELS]++
	check("rescue with every level in use")

	waits := map[uint64]uint64{}
	var (
		key   lockstatWaitKey
		stats lockstatWaitStats
	)
	it := obj.maps.Aggregate.Iterate()
	for it.Next(&key, &stats) {
		waits[key.Lock] += stats.Count
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if waits[outer] != 2 || waits[inner] != 2 || len(waits) != 2 {
		t.Errorf("recorded waits by lock: %#x, want two of %#x and two of %#x", waits, uint64(outer), uint64(inner))
	}
}
