package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/klockstat/klockstat/lockspec"
)

// realWorkload is a program nobody here wrote, run for a duration: the
// kernel paths klockstat meets in the field, not the ones contend takes.
type realWorkload struct {
	name string
	// tool is the program it needs on PATH, and the Debian package that has it.
	tool, pkg string
	// command returns the command line that runs for about d, with scratch
	// space in dir.
	command func(d time.Duration, dir string) []string
	// measured returns the same workload in a form that reports its own
	// throughput, for -throughput.
	measured func(d time.Duration, dir string) measuredRun
}

// untilDone repeats a command that runs for a number of loops rather than
// a time, until d has passed. Each loop reports its own time, which
// timePattern reads for -throughput.
func untilDone(name, cmd, timePattern string) realWorkload {
	args := func(d time.Duration, _ string) []string {
		return []string{"sh", "-c", fmt.Sprintf(`end=$(($(date +%%s)+%d)); while [ $(date +%%s) -lt $end ]; do %s || exit 1; done`, int(d.Seconds()), cmd)}
	}
	tool := strings.Fields(cmd)[0]
	return realWorkload{name, tool, debianPackages[tool], args, func(d time.Duration, dir string) measuredRun {
		return measuredRun{args: args(d, dir), rate: runsPerSecond(timePattern), unit: "runs/s"}
	}}
}

func stressNG(stressor string) realWorkload {
	args := func(d time.Duration, dir string) []string {
		return []string{"stress-ng", "--" + stressor, "4", "-t", fmt.Sprint(int(d.Seconds())), "--temp-path", dir}
	}
	return realWorkload{"stress-ng " + stressor, "stress-ng", "stress-ng",
		func(d time.Duration, dir string) []string { return append(args(d, dir), "--quiet") },
		func(d time.Duration, dir string) measuredRun {
			// --quiet would leave the metrics out of the YAML too.
			return measuredRun{args: append(args(d, dir), "--metrics-brief", "--yaml", filepath.Join(dir, "metrics.yaml")), rate: stressNGRate, unit: "bogo ops/s"}
		}}
}

func perfBench(args ...string) realWorkload {
	command := func(d time.Duration, _ string) []string {
		return append([]string{"perf", "bench"}, append(args, "-r", fmt.Sprint(int(d.Seconds())))...)
	}
	return realWorkload{"perf bench " + strings.Join(args, " "), "perf", debianPackages["perf"], command, func(d time.Duration, dir string) measuredRun {
		return measuredRun{args: command(d, dir), rate: perfBenchRate, unit: "ops/s"}
	}}
}

// fioOneFile is fio with 8 jobs writing one file, reporting in JSON.
func fioOneFile(d time.Duration, dir string) []string {
	return []string{"fio", "--name=onefile", "--filename=" + filepath.Join(dir, "fio.data"), "--size=64m", "--rw=randwrite",
		"--bs=4k", "--numjobs=8", "--time_based", fmt.Sprintf("--runtime=%d", int(d.Seconds())), "--ioengine=psync",
		"--group_reporting", "--output-format=json"}
}

// realWorkloads are the families of issue 10: stress-ng stressors (with
// issue 24's fault-heavy madvise, fiemap and fault), perf bench,
// hackbench, fio writing one file from 8 jobs, and a parallel build.
var realWorkloads = []realWorkload{
	stressNG("dentry"), stressNG("sem-sysv"), stressNG("mmap"), stressNG("flock"), stressNG("lockf"),
	stressNG("open"), stressNG("fork"), stressNG("pipe"), stressNG("futex"),
	stressNG("madvise"), stressNG("fiemap"), stressNG("fault"),
	untilDone("perf bench sched messaging", "perf bench sched messaging -g 10 -l 100", `Total time: ([0-9.]+)`),
	perfBench("futex", "hash"), perfBench("futex", "lock-pi"), perfBench("epoll", "wait"),
	untilDone("hackbench", "hackbench -g 8 -l 200", `Time: ([0-9.]+)`),
	{"fio, 8 jobs on one file", "fio", "fio", fioOneFile, func(d time.Duration, dir string) measuredRun {
		return measuredRun{args: fioOneFile(d, dir), rate: fioIOPS, unit: "IOPS"}
	}},
	{"parallel build (go build -a -p 4 std)", "go", "golang", parallelBuild, fixedBuild},
}

// parallelBuild compiles Go's standard library from scratch, four packages
// at a time, in a cache of its own, and stops it when d has passed: a real
// build's mix of exec, page faults, file creation and reads. It takes
// longer than any window here, so timeout's 124 is the expected end.
func parallelBuild(d time.Duration, dir string) []string {
	script := `GOCACHE="$1/gocache" GOFLAGS= timeout "$2" go build -a -p 4 -o /dev/null std; rc=$?; [ $rc -eq 124 ] || [ $rc -eq 0 ]`
	return []string{"sh", "-c", script, "sh", dir, fmt.Sprintf("%ds", int(d.Seconds()))}
}

// fixedBuild is the parallel build for -throughput: a fixed amount of
// work, whose wall time is the figure. net/http and what it imports: 20
// to 30 s on 2 vCPUs.
func fixedBuild(_ time.Duration, dir string) measuredRun {
	script := `GOCACHE="$1/gocache" GOFLAGS= go build -a -p 4 -o /dev/null net/http`
	return measuredRun{args: []string{"sh", "-c", script, "sh", dir}, unit: "s", label: "parallel build (go build -a -p 4 net/http)"}
}

// debianPackages name the package of the tools the loop-run workloads need.
var debianPackages = map[string]string{"perf": "linux-perf", "hackbench": "rt-tests"}

// missingTools says which of the workloads' tools are not on PATH, and how to install them: the
// bench checks before it starts rather than stop at the first workload that needs one.
func missingTools(workloads []realWorkload) error {
	var tools, pkgs []string
	for _, w := range workloads {
		if _, err := exec.LookPath(w.tool); err != nil && !slices.Contains(tools, w.tool) {
			tools = append(tools, w.tool)
			pkgs = append(pkgs, w.pkg)
		}
	}
	if len(tools) == 0 {
		return nil
	}
	return fmt.Errorf("the real workloads need %s, not installed: apt-get install %s, or leave them out with -real", strings.Join(tools, ", "), strings.Join(pkgs, " "))
}

func realWorkloadNames() []string {
	names := make([]string, len(realWorkloads))
	for i, w := range realWorkloads {
		names[i] = w.name
	}
	return names
}

// selectReal picks the real workloads whose names contain one of the
// comma-separated words of list ("all": every one, "": none).
func selectReal(list string) ([]realWorkload, error) {
	if list == "all" {
		return realWorkloads, nil
	}
	var out []realWorkload
	for word := range strings.SplitSeq(list, ",") {
		if word = strings.TrimSpace(word); word == "" {
			continue
		}
		n := len(out)
		for _, w := range realWorkloads {
			if strings.Contains(w.name, word) && !slices.ContainsFunc(out, func(o realWorkload) bool { return o.name == w.name }) {
				out = append(out, w)
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("-real %q names no workload (want words of: %s)", word, strings.Join(realWorkloadNames(), "; "))
		}
	}
	return out, nil
}

// realResult is what one real workload cost the probes, attached together
// so that each sees the same events.
type realResult struct {
	klockstat, bpftrace, empty []float64 // ns/event per round
	noStacks                   []float64 // klockstat --stack-depth 0: pairing and recording alone
	owners                     []float64 // klockstat --owners
	perf, perfDefault          []float64 // perf lock contention -b at depth 16 and at its default 8
	toBpftrace, toEmpty        []float64 // klockstat's ratios per round
	toPerf                     []float64
	ownersToDefault            []float64 // klockstat --owners / klockstat, per round
	first                      []string  // per round, the letter of the tool attached first
	events                     uint64    // klockstat's events, all rounds
	seconds                    float64
	walked                     []string
	lost                       map[string]uint64
	rescued                    uint64
}

// realProbe is one of the probes measureReal attaches.
type realProbe int

const (
	bpftraceProbe realProbe = iota
	emptyProbe
	noStacksProbe
	stacksProbe
	ownersProbe
	perfProbe        // perf lock contention -b --max-stack 16
	perfDefaultProbe // perf lock contention -b, perf's default depth 8
	probeCount
)

// attachGroup is the probes of one tool, attached one after the other, and
// the letter that names the tool in the per-round columns.
type attachGroup struct {
	letter string
	probes []realProbe
}

// attachOrders returns the order of each round. A tracepoint runs its
// programs in the order they attached, and where events are rare a
// program's cost depends on its place among the others (perf bench futex
// lock-pi, AMD EPYC: bpftrace 5.1-5.4 us per event attached first, 15-16
// us attached last; klockstat 1.8-2.1 us attached fourth, 1.1 us second).
// So the tools take turns at attaching first: the groups rotate by one
// each round.
func attachOrders(rounds int, withPerf bool) ([][]realProbe, []string) {
	groups := []attachGroup{
		{"K", []realProbe{stacksProbe, noStacksProbe, ownersProbe}},
		{"B", []realProbe{bpftraceProbe}},
		{"E", []realProbe{emptyProbe}},
	}
	if withPerf {
		groups = slices.Insert(groups, 2, attachGroup{"P", []realProbe{perfProbe, perfDefaultProbe}})
	}
	var orders [][]realProbe
	var first []string
	for round := range rounds {
		var order []realProbe
		for i := range groups {
			order = append(order, groups[(round+i)%len(groups)].probes...)
		}
		orders = append(orders, order)
		first = append(first, groups[round%len(groups)].letter)
	}
	return orders, first
}

// measureReal runs a real workload o.rounds times with klockstat (default
// settings, without stacks, with --owners), the bpftrace script
// (kstack(16)), perf lock contention -b when o.perf names one, and the
// empty program all attached, and keeps each one's cost per event from the
// kernel's BPF statistics.
func measureReal(o options, spec *lockspec.Spec, w realWorkload) (realResult, error) {
	r := realResult{lost: map[string]uint64{}}
	dir, err := os.MkdirTemp("", "klockstat-bench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	starts := map[realProbe]func() (probe, error){
		bpftraceProbe:    func() (probe, error) { return startBpftrace(16) },
		emptyProbe:       func() (probe, error) { return startEmpty() },
		noStacksProbe:    klockstatProbe(spec, 0, 65536, false),
		stacksProbe:      klockstatProbe(spec, 16, 65536, false),
		ownersProbe:      klockstatProbe(spec, 16, 65536, true),
		perfProbe:        func() (probe, error) { return startPerfContention(o.perf, 16) },
		perfDefaultProbe: func() (probe, error) { return startPerfContention(o.perf, 8) },
	}
	orders, first := attachOrders(o.rounds, o.perf != "")
	r.first = first
	for _, order := range orders {
		var (
			running []realProbe
			probes  = make([]probe, probeCount)
			err     error
		)
		for _, i := range order {
			if probes[i], err = starts[i](); err != nil {
				break
			}
			running = append(running, i)
		}
		var werr error
		start := time.Now()
		if err == nil {
			werr = runCommand(w.command(o.duration, dir), o.duration)
		}
		seconds := time.Since(start).Seconds()
		results := make([]probeResult, probeCount)
		for i := range results {
			results[i].nsPerEvent = math.NaN() // not attached
		}
		errs := []error{err, werr}
		for _, i := range slices.Backward(running) {
			var serr error
			results[i], serr = probes[i].stop()
			errs = append(errs, serr)
		}
		if err := errors.Join(errs...); err != nil {
			return r, err
		}
		kr := results[stacksProbe]
		r.klockstat = append(r.klockstat, kr.nsPerEvent)
		r.owners = append(r.owners, results[ownersProbe].nsPerEvent)
		r.ownersToDefault = append(r.ownersToDefault, results[ownersProbe].nsPerEvent/kr.nsPerEvent)
		r.noStacks = append(r.noStacks, results[noStacksProbe].nsPerEvent)
		r.bpftrace = append(r.bpftrace, results[bpftraceProbe].nsPerEvent)
		r.empty = append(r.empty, results[emptyProbe].nsPerEvent)
		r.perf = append(r.perf, results[perfProbe].nsPerEvent)
		r.perfDefault = append(r.perfDefault, results[perfDefaultProbe].nsPerEvent)
		r.toBpftrace = append(r.toBpftrace, kr.nsPerEvent/results[bpftraceProbe].nsPerEvent)
		r.toEmpty = append(r.toEmpty, kr.nsPerEvent/results[emptyProbe].nsPerEvent)
		r.toPerf = append(r.toPerf, kr.nsPerEvent/results[perfProbe].nsPerEvent)
		r.events += kr.events
		r.seconds += seconds
		r.walked = append(r.walked, kr.walked)
		r.rescued += kr.rescued
		for reason, n := range kr.lost {
			r.lost[reason] += n
		}
	}
	return r, nil
}

// runCommand runs a workload's command, output discarded, killing it if it
// outlives its duration by far.
func runCommand(args []string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*d+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var out strings.Builder
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// medianCell renders the median of v, or n/a when there is none.
func medianCell(v []float64, format string) string {
	m := median(v)
	if math.IsNaN(m) || math.IsInf(m, 0) {
		return "n/a"
	}
	return fmt.Sprintf(format, m)
}

// perRound renders ratios per round, each after the letter of the tool
// attached first that round: "K:0.91 B:1.02".
func (r realResult) perRound(ratios []float64) string {
	cells := make([]string, len(ratios))
	for i, v := range ratios {
		cells[i] = fmt.Sprintf("%s:%.2f", r.first[i], v)
	}
	return strings.Join(cells, " ")
}

func (r realResult) row(name string) string {
	cells := []string{name, fmt.Sprintf("%.0f", float64(r.events)/r.seconds),
		medianCell(r.klockstat, "%.0f"), medianCell(r.noStacks, "%.0f"), medianCell(r.owners, "%.0f"),
		medianCell(r.bpftrace, "%.0f"), medianCell(r.perf, "%.0f"), medianCell(r.perfDefault, "%.0f"), medianCell(r.empty, "%.0f"),
		medianCell(r.toBpftrace, "%.2fx"), r.perRound(r.toBpftrace), medianCell(r.toPerf, "%.2fx"), r.perRound(r.toPerf),
		medianCell(r.toEmpty, "%.1fx"), medianCell(r.ownersToDefault, "%.2fx"), strings.Join(r.walked, " "), lostCell(r.lost, r.rescued)}
	return "| " + strings.Join(cells, " | ") + " |"
}

// realTable measures every selected real workload and prints one row each,
// then the median and the largest ratio to bpftrace over them.
func realTable(o options, spec *lockspec.Spec, workloads []realWorkload) error {
	if len(workloads) == 0 {
		return nil
	}
	fmt.Printf("\n### Real workloads (%v per run, %d rounds; klockstat, klockstat without stacks, klockstat --owners, bpftrace, perf lock contention -a -b at depths 16 and 8 and the empty program attached together, the tools taking turns at attaching first)\n\n", o.duration, o.rounds)
	fmt.Println("| workload | events/s | klockstat ns/event | without stacks | with --owners | bpftrace kstack(16) ns/event | perf -b --max-stack 16 ns/event | perf -b depth 8 ns/event | empty program ns/event | klockstat / bpftrace | per round, first attached | klockstat / perf -b | per round, first attached | klockstat / empty | --owners / klockstat | stacks walked, per round | events lost (all rounds) |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | ---: | ---: | --- | --- |")
	var ratios, toPerf, owners []float64
	for _, w := range workloads {
		r, err := measureReal(o, spec, w)
		if err != nil {
			return fmt.Errorf("%s: %w", w.name, err)
		}
		fmt.Println(r.row(w.name))
		if m := median(r.toBpftrace); !math.IsNaN(m) && !math.IsInf(m, 0) {
			ratios = append(ratios, m)
		}
		if m := median(r.toPerf); !math.IsNaN(m) && !math.IsInf(m, 0) {
			toPerf = append(toPerf, m)
		}
		if m := median(r.ownersToDefault); !math.IsNaN(m) && !math.IsInf(m, 0) {
			owners = append(owners, m)
		}
	}
	if len(ratios) > 0 {
		fmt.Printf("\nklockstat / bpftrace over %d workloads: median %.2fx, largest %.2fx.\n", len(ratios), median(ratios), slices.Max(ratios))
	}
	if len(toPerf) > 0 {
		fmt.Printf("\nklockstat / perf lock contention -b --max-stack 16 over %d workloads: median %.2fx, largest %.2fx.\n", len(toPerf), median(toPerf), slices.Max(toPerf))
	}
	if len(owners) > 0 {
		fmt.Printf("\nklockstat --owners / klockstat over %d workloads: median %.2fx, largest %.2fx.\n", len(owners), median(owners), slices.Max(owners))
	}
	return nil
}
