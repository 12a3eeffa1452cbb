package collector

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
)

// TestScopeFollowsTheCommandsTree runs a command that forks a second contending process, beside a
// contending process started before the capture: --scope command keeps the command's tree only,
// --scope system keeps both and lists the tree's processes in CommandPIDs. The perf-event
// tracepoint backend follows forks with a program of its own, which tells threads from processes
// another way.
func TestScopeFollowsTheCommandsTree(t *testing.T) {
	testenv.RequireRoot(t)
	// Built before the tree is followed: the test's own process is its root, and a build
	// would be one of its processes.
	contend := testenv.Build(t, "./examples/contend")
	for _, tc := range []struct{ scope, probe string }{
		{capture.ScopeCommand, "auto"},
		{capture.ScopeSystem, "auto"},
		{capture.ScopeCommand, "tracepoint"},
	} {
		scope := tc.scope
		t.Run(scope+"/"+tc.probe, func(t *testing.T) {
			if tc.probe != "auto" {
				requireClaimed(t, tc.probe)
			}
			// On a loaded machine (the other packages' tests beside this one) a contend's two
			// threads may meet on mmap_lock too seldom to wait in its 3 s: a capture where one
			// that should be captured made no wait is taken again, as the tree is what is
			// tested, not the workload's luck.
			for round := 1; ; round++ {
				if scopeRound(t, contend, scope, tc.probe, round == 3) {
					return
				}
				t.Logf("round %d: a contend made no wait; again", round)
			}
		})
	}
}

// scopeRound is one capture of TestScopeFollowsTheCommandsTree; it returns false, having checked
// nothing else, when a contend of the command (or, where it is captured, the outsider) made no
// captured wait and last is false.
func scopeRound(t *testing.T, contend, scope, probe string, last bool) bool {
	t.Helper()
	outsider := startWorkload(t, "-lock", "mmap", "-threads", "2")
	cfg := defaultConfig(t)
	cfg.Scope, cfg.Probe = scope, probe
	c, err := Start(cfg)
	if err != nil {
		t.Fatalf("starting the collector: %v", err)
	}
	defer c.Close()
	outsider.run(t)
	// The shell is the command; both contends are its children, one in the background.
	run := `"$0" -lock mmap -threads 2 -duration 3s -json & "$0" -lock mmap -threads 2 -duration 3s -json; wait`
	command := exec.Command("/bin/sh", "-c", run, contend)
	began := time.Now()
	out, err := command.Output()
	if err != nil {
		t.Fatalf("%v: %v", command.Args, err)
	}
	ran := time.Since(began)
	outsider.stop(t)
	cp, err := c.Stop()
	if err != nil {
		t.Fatalf("stopping the collector: %v", err)
	}
	if err := cp.Validate(); err != nil {
		t.Fatalf("captured data does not validate: %v", err)
	}
	children := contendPIDs(t, out)
	captured := map[uint32]bool{}
	for _, r := range cp.Records {
		captured[r.PID] = true
	}
	quiet := !captured[children[0]] || !captured[children[1]] || scope == capture.ScopeSystem && !captured[outsider.pid]
	if !last && quiet {
		return false
	}
	tree := append([]uint32{uint32(command.Process.Pid)}, children...)
	if cp.Meta.Scope != scope || cp.Meta.MapSizes["command_tree"] != commandTreeEntries {
		t.Errorf("scope %q, command_tree size %d: want %q, %d", cp.Meta.Scope, cp.Meta.MapSizes["command_tree"], scope, commandTreeEntries)
	}
	// Exactly: contend's threads are not processes of the tree, nor is the outsider.
	slices.Sort(tree)
	if !slices.Equal(cp.Meta.CommandPIDs, tree) {
		t.Errorf("command_pids %v, want the shell and its two contends %v (the outsider is %d)", cp.Meta.CommandPIDs, tree, outsider.pid)
	}
	// The shell and its two contends, each contend with its two workers and the Go
	// runtime's threads; every thread alive at most from the shell's start to the end.
	m := cp.Meta
	if m.CommandProcesses != 3 || m.CommandThreads < 3+2*2 {
		t.Errorf("the tree ran %d processes and %d threads, want 3 and at least 7", m.CommandProcesses, m.CommandThreads)
	}
	if lo, hi := 2*2*3*time.Second, time.Duration(m.CommandThreads)*(ran+time.Since(began)); time.Duration(m.CommandThreadNS) < lo || time.Duration(m.CommandThreadNS) > hi {
		t.Errorf("thread time %v, want from the contends' workers' %v to %d threads × the run %v", time.Duration(m.CommandThreadNS), lo, m.CommandThreads, hi)
	}
	for _, r := range cp.Records {
		if scope == capture.ScopeCommand && !cp.Meta.InCommand(r.PID) {
			t.Errorf("record of pid %d (%s) outside the command's tree captured", r.PID, r.Comm)
		}
	}
	for _, pid := range children {
		if !captured[pid] {
			t.Errorf("no waits of the command's contend %d", pid)
		}
	}
	if captured[outsider.pid] != (scope == capture.ScopeSystem) {
		t.Errorf("waits of the outsider %d captured: %v, under --scope %s", outsider.pid, captured[outsider.pid], scope)
	}
	return true
}

// contendPIDs reads the pids of the contend -json results in out.
func contendPIDs(t *testing.T, out []byte) []uint32 {
	t.Helper()
	var pids []uint32
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var r struct {
			PID uint32 `json:"pid"`
		}
		err := dec.Decode(&r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading the contend results %q: %v", out, err)
		}
		pids = append(pids, r.PID)
	}
	if len(pids) != 2 {
		t.Fatalf("%d contend results, want 2: %q", len(pids), out)
	}
	return pids
}

func TestAssembleScope(t *testing.T) {
	for _, scope := range []string{capture.ScopeCommand, capture.ScopeSystem} {
		t.Run(scope, func(t *testing.T) {
			f := newAssembleFixture(t, assembleKallsyms)
			f.in.cfg.Scope = scope
			f.snap.commandPIDs = []uint32{700, 12, 4100}
			f.snap.mapSizes["command_tree"] = 64
			f.snap.counters[lockstatCounterCNT_LOST_TREE_FULL] = 3
			m := f.assemble(t).Meta
			if m.Scope != scope || !slices.Equal(m.CommandPIDs, []uint32{12, 700, 4100}) || m.MapSizes["command_tree"] != 64 {
				t.Errorf("scope %q, command pids %v, map sizes %v", m.Scope, m.CommandPIDs, m.MapSizes)
			}
			if !slices.ContainsFunc(m.Warnings, func(w string) bool {
				return strings.HasPrefix(w, "3 processes the workload forked") && strings.Contains(w, "(64 entries, full)")
			}) {
				t.Errorf("warnings %q do not count the processes the full tree missed", m.Warnings)
			}
		})
	}
	f := newAssembleFixture(t, assembleKallsyms)
	if m := f.assemble(t).Meta; m.Scope != "" || m.CommandPIDs != nil {
		t.Errorf("a capture without a workload has scope %q, command pids %v", m.Scope, m.CommandPIDs)
	}
}

// TestTreeThreads integrates the tree's live threads between two readings of the counters: one
// thread alive throughout, one started and freed inside, one started inside and alive at the end,
// with the sums wrapped past 2^64 as the kernel's are.
func TestTreeThreads(t *testing.T) {
	const wrap = ^uint64(0) - 50 // the sums started near the top of the range
	reading := func(at, started, ended, startSum, endSum, processes uint64) cumulative {
		var r cumulative
		r.monoNS = at
		r.counters[lockstatCounterCNT_TREE_THREADS] = started
		r.counters[lockstatCounterCNT_TREE_ENDED] = ended
		r.counters[lockstatCounterCNT_TREE_START_NS] = wrap + startSum
		r.counters[lockstatCounterCNT_TREE_END_NS] = wrap + endSum
		r.counters[lockstatCounterCNT_TREE_PROCESSES] = processes
		return r
	}
	// Thread A started at 100 before the first reading (at 1000); B lived from 1200 to 1500, C
	// from 1800 on; the second reading is at 2000.
	from := reading(1000, 1, 0, 100, 0, 1)
	to := reading(2000, 3, 1, 100+1200+1800, 1500, 2)
	got := treeThreads(from, to)
	want := treeStats{processes: 1, threads: 3, threadNS: (2000 - 1000) + (1500 - 1200) + (2000 - 1800)}
	if got != want {
		t.Errorf("treeThreads = %+v, want %+v", got, want)
	}
	// Stop's reading is from the counters' zero: one thread started at 500.
	var end cumulative
	end.monoNS = 2000
	end.counters[lockstatCounterCNT_TREE_THREADS], end.counters[lockstatCounterCNT_TREE_START_NS] = 1, 500
	if got, want := treeThreads(cumulative{}, end), (treeStats{threads: 1, threadNS: 1500}); got != want {
		t.Errorf("treeThreads from the start = %+v, want %+v", got, want)
	}
}
