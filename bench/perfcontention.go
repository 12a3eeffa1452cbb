package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/cilium/ebpf"
)

// perfCacheGlob matches the binaries bench/perf-skel/build.sh caches, one
// per Debian kernel source version.
const perfCacheGlob = "/var/cache/klockstat/perf-*/perf"

// defaultPerf is the newest cached perf with BPF skeletons, or "".
func defaultPerf() string {
	paths, _ := filepath.Glob(perfCacheGlob)
	if len(paths) == 0 {
		return ""
	}
	return slices.Max(paths)
}

// perfContentionRun is `perf lock contention -a -b` in progress: perf's
// own BPF programs aggregate wait times per stack in the kernel, as
// klockstat's do, and print them when perf is interrupted.
type perfContentionRun struct {
	cmd    *exec.Cmd
	output bytes.Buffer
	exited chan struct{}
	progs  []*ebpf.Program
}

// startPerfContention starts perf at path keeping stacks of depth
// frames, and returns once its programs are attached.
func startPerfContention(path string, depth int) (*perfContentionRun, error) {
	before, err := maxProgramID()
	if err != nil {
		return nil, err
	}
	// -E 10: perf resolves and prints only the top stacks when it stops,
	// which takes seconds with all of them and costs nothing measured here.
	r := &perfContentionRun{exited: make(chan struct{})}
	r.cmd = exec.Command(path, "lock", "contention", "-a", "-b", "--max-stack", strconv.Itoa(depth), "-E", "10")
	r.cmd.Stdout = &r.output
	r.cmd.Stderr = &r.output
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s lock contention: %w", path, err)
	}
	go func() { r.cmd.Wait(); close(r.exited) }()
	if r.progs, err = awaitPrograms(before, ebpf.Tracing, r.exited); err != nil {
		r.stop()
		return nil, fmt.Errorf("%s lock contention -b: %w: %s", path, err, bytes.TrimSpace(r.output.Bytes()))
	}
	return r, nil
}

func (r *perfContentionRun) stop() (probeResult, error) {
	return stopTool(r.cmd.Process, r.exited, r.progs, os.Interrupt, os.Kill)
}
