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
	// command returns the command line that runs for about d, with scratch
	// space in dir.
	command func(d time.Duration, dir string) []string
}

// untilDone repeats a command that runs for a number of loops rather than
// a time, until d has passed.
func untilDone(d time.Duration, cmd string) []string {
	return []string{"sh", "-c", fmt.Sprintf(`end=$(($(date +%%s)+%d)); while [ $(date +%%s) -lt $end ]; do %s >/dev/null || exit 1; done`, int(d.Seconds()), cmd)}
}

func stressNG(stressor string) realWorkload {
	return realWorkload{"stress-ng " + stressor, func(d time.Duration, dir string) []string {
		return []string{"stress-ng", "--" + stressor, "4", "-t", fmt.Sprint(int(d.Seconds())), "--temp-path", dir, "--quiet"}
	}}
}

func perfBench(args ...string) realWorkload {
	return realWorkload{"perf bench " + strings.Join(args, " "), func(d time.Duration, _ string) []string {
		return append([]string{"perf", "bench"}, append(args, "-r", fmt.Sprint(int(d.Seconds())))...)
	}}
}

// realWorkloads are the families of issue 10: stress-ng stressors, perf
// bench, hackbench, fio writing one file from 8 jobs, and a parallel build.
var realWorkloads = []realWorkload{
	stressNG("dentry"), stressNG("sem-sysv"), stressNG("mmap"), stressNG("flock"), stressNG("lockf"),
	stressNG("open"), stressNG("fork"), stressNG("pipe"), stressNG("futex"),
	{"perf bench sched messaging", func(d time.Duration, _ string) []string {
		return untilDone(d, "perf bench sched messaging -g 10 -l 100")
	}},
	perfBench("futex", "hash"), perfBench("futex", "lock-pi"), perfBench("epoll", "wait"),
	{"hackbench", func(d time.Duration, _ string) []string { return untilDone(d, "hackbench -g 8 -l 200") }},
	{"fio, 8 jobs on one file", func(d time.Duration, dir string) []string {
		return []string{"fio", "--name=onefile", "--filename=" + filepath.Join(dir, "fio.data"), "--size=64m", "--rw=randwrite",
			"--bs=4k", "--numjobs=8", "--time_based", fmt.Sprintf("--runtime=%d", int(d.Seconds())), "--ioengine=psync", "--output=/dev/null"}
	}},
	{"parallel build (go build -a -p 4 std)", parallelBuild},
}

// parallelBuild compiles Go's standard library from scratch, four packages
// at a time, in a cache of its own, and stops it when d has passed: a real
// build's mix of exec, page faults, file creation and reads. It takes
// longer than any window here, so timeout's 124 is the expected end.
func parallelBuild(d time.Duration, dir string) []string {
	script := `GOCACHE="$1/gocache" GOFLAGS= timeout "$2" go build -a -p 4 -o /dev/null std; rc=$?; [ $rc -eq 124 ] || [ $rc -eq 0 ]`
	return []string{"sh", "-c", script, "sh", dir, fmt.Sprintf("%ds", int(d.Seconds()))}
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

// realResult is what one real workload cost the three probes, attached
// together so that each sees the same events.
type realResult struct {
	klockstat, bpftrace, empty []float64 // ns/event per round
	noStacks                   []float64 // klockstat --stack-depth 0: pairing and recording alone
	owners                     []float64 // klockstat --owners
	toBpftrace, toEmpty        []float64 // klockstat's ratios per round
	ownersToDefault            []float64 // klockstat --owners / klockstat, per round
	events                     uint64    // klockstat's events, all rounds
	seconds                    float64
	walked                     []string
	lost                       map[string]uint64
	rescued                    uint64
}

// measureReal runs a real workload o.rounds times with klockstat (default
// settings), klockstat without stacks, the bpftrace script (kstack(16)) and
// the empty program all attached, and keeps each one's cost per event from
// the kernel's BPF statistics.
func measureReal(o options, spec *lockspec.Spec, w realWorkload) (realResult, error) {
	r := realResult{lost: map[string]uint64{}}
	dir, err := os.MkdirTemp("", "klockstat-bench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	// A tracepoint runs its programs in the order they attached, and where
	// events are rare a program's cost depends on its place among the
	// others (perf bench futex lock-pi, AMD EPYC: bpftrace 5.1-5.4 us per
	// event attached first, 15-16 us attached last; klockstat 1.8-2.1 us
	// attached fourth, 1.1 us second). So the order alternates between
	// rounds: bpftrace first in odd rounds, klockstat's probes first in
	// even ones.
	const bpftrace, empty, noStacks, stacks, owners = 0, 1, 2, 3, 4
	starts := []func() (probe, error){
		bpftrace: func() (probe, error) { return startBpftrace(16) },
		empty:    func() (probe, error) { return startEmpty() },
		noStacks: klockstatProbe(spec, 0, 65536, false),
		stacks:   klockstatProbe(spec, 16, 65536, false),
		owners:   klockstatProbe(spec, 16, 65536, true),
	}
	for round := range o.rounds {
		order := []int{bpftrace, empty, noStacks, stacks, owners}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		var (
			running []int
			probes  = make([]probe, len(starts))
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
		results := make([]probeResult, len(starts))
		errs := []error{err, werr}
		for _, i := range slices.Backward(running) {
			var serr error
			results[i], serr = probes[i].stop()
			errs = append(errs, serr)
		}
		if err := errors.Join(errs...); err != nil {
			return r, err
		}
		br, er, nr, kr, or := results[bpftrace], results[empty], results[noStacks], results[stacks], results[owners]
		r.klockstat = append(r.klockstat, kr.nsPerEvent)
		r.owners = append(r.owners, or.nsPerEvent)
		r.ownersToDefault = append(r.ownersToDefault, or.nsPerEvent/kr.nsPerEvent)
		r.noStacks = append(r.noStacks, nr.nsPerEvent)
		r.bpftrace = append(r.bpftrace, br.nsPerEvent)
		r.empty = append(r.empty, er.nsPerEvent)
		r.toBpftrace = append(r.toBpftrace, kr.nsPerEvent/br.nsPerEvent)
		r.toEmpty = append(r.toEmpty, kr.nsPerEvent/er.nsPerEvent)
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

func (r realResult) row(name string) string {
	cell := func(v []float64, format string) string {
		m := median(v)
		if math.IsNaN(m) || math.IsInf(m, 0) {
			return "n/a"
		}
		return fmt.Sprintf(format, m)
	}
	perRound := make([]string, len(r.toBpftrace))
	for i, v := range r.toBpftrace {
		perRound[i] = fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("| %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", name, float64(r.events)/r.seconds,
		cell(r.klockstat, "%.0f"), cell(r.noStacks, "%.0f"), cell(r.owners, "%.0f"), cell(r.bpftrace, "%.0f"), cell(r.empty, "%.0f"),
		cell(r.toBpftrace, "%.2fx"), strings.Join(perRound, " "), cell(r.toEmpty, "%.1fx"), cell(r.ownersToDefault, "%.2fx"), strings.Join(r.walked, " "), lostCell(r.lost, r.rescued))
}

// realTable measures every selected real workload and prints one row each,
// then the median and the largest ratio to bpftrace over them.
func realTable(o options, spec *lockspec.Spec, workloads []realWorkload) error {
	fmt.Printf("\n### Real workloads (%v per run, %d rounds; klockstat, klockstat without stacks, klockstat --owners, bpftrace and the empty program attached together, bpftrace first in odd rounds and last in even ones)\n\n", o.duration, o.rounds)
	fmt.Println("| workload | events/s | klockstat ns/event | without stacks | with --owners | bpftrace kstack(16) ns/event | empty program ns/event | klockstat / bpftrace | per round, bpftrace first then last | klockstat / empty | --owners / klockstat | stacks walked, per round | events lost (all rounds) |")
	fmt.Println("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- | --- |")
	var ratios, owners []float64
	for _, w := range workloads {
		r, err := measureReal(o, spec, w)
		if err != nil {
			return fmt.Errorf("%s: %w", w.name, err)
		}
		fmt.Println(r.row(w.name))
		if m := median(r.toBpftrace); !math.IsNaN(m) && !math.IsInf(m, 0) {
			ratios = append(ratios, m)
		}
		if m := median(r.ownersToDefault); !math.IsNaN(m) && !math.IsInf(m, 0) {
			owners = append(owners, m)
		}
	}
	if len(ratios) > 0 {
		fmt.Printf("\nklockstat / bpftrace over %d workloads: median %.2fx, largest %.2fx.\n", len(ratios), median(ratios), slices.Max(ratios))
	}
	if len(owners) > 0 {
		fmt.Printf("\nklockstat --owners / klockstat over %d workloads: median %.2fx, largest %.2fx.\n", len(owners), median(owners), slices.Max(owners))
	}
	return nil
}
