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
			outsider := startWorkload(t, "-lock", "mmap", "-threads", "2")
			cfg := defaultConfig(t)
			cfg.Scope, cfg.Probe = scope, tc.probe
			c, err := Start(cfg)
			if err != nil {
				t.Fatalf("starting the collector: %v", err)
			}
			defer c.Close()
			outsider.run(t)
			// The shell is the command; both contends are its children, one in the background.
			run := `"$0" -lock mmap -threads 2 -duration 3s -json & "$0" -lock mmap -threads 2 -duration 3s -json; wait`
			command := exec.Command("/bin/sh", "-c", run, contend)
			out, err := command.Output()
			if err != nil {
				t.Fatalf("%v: %v", command.Args, err)
			}
			outsider.stop(t)
			cp, err := c.Stop()
			if err != nil {
				t.Fatalf("stopping the collector: %v", err)
			}
			if err := cp.Validate(); err != nil {
				t.Fatalf("captured data does not validate: %v", err)
			}
			children := contendPIDs(t, out)
			tree := append([]uint32{uint32(command.Process.Pid)}, children...)
			if cp.Meta.Scope != scope || cp.Meta.MapSizes["command_tree"] != commandTreeEntries {
				t.Errorf("scope %q, command_tree size %d: want %q, %d", cp.Meta.Scope, cp.Meta.MapSizes["command_tree"], scope, commandTreeEntries)
			}
			// Exactly: contend's threads are not processes of the tree, nor is the outsider.
			slices.Sort(tree)
			if !slices.Equal(cp.Meta.CommandPIDs, tree) {
				t.Errorf("command_pids %v, want the shell and its two contends %v (the outsider is %d)", cp.Meta.CommandPIDs, tree, outsider.pid)
			}
			captured := map[uint32]bool{}
			for _, r := range cp.Records {
				captured[r.PID] = true
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
		})
	}
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
