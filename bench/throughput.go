package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/klockstat/klockstat/lockspec"
)

// measuredRun is a real workload in a form that reports its own throughput.
type measuredRun struct {
	args []string
	// rate reads the work done per second from the run's standard output
	// and its scratch directory. Nil: the run does a fixed amount of work,
	// and its wall time is the figure.
	rate func(stdout []byte, dir string) (float64, error)
	unit string // of the figure: the rate's, or "s" for a wall time
	// label names the run in the table where it differs from the
	// workload's run for a duration.
	label string
}

// stressNGRate reads the bogo operations per second of real time that
// stress-ng wrote to dir/metrics.yaml (--yaml): 4 workers' sum.
func stressNGRate(_ []byte, dir string) (float64, error) {
	data, err := os.ReadFile(filepath.Join(dir, "metrics.yaml"))
	if err != nil {
		return 0, fmt.Errorf("reading stress-ng's metrics: %w", err)
	}
	return firstFloat(regexp.MustCompile(`bogo-ops-per-second-real-time:\s*([0-9.]+)`), data, "stress-ng's metrics")
}

// perfBenchRate reads perf bench's "Averaged 1501184 operations/sec".
func perfBenchRate(stdout []byte, _ string) (float64, error) {
	return firstFloat(regexp.MustCompile(`Averaged\s+([0-9.]+)\s+operations/sec`), stdout, "perf bench's output")
}

// runsPerSecond reads the time each run of a repeated command reports
// (timePattern's group) and returns the runs per second of their sum.
func runsPerSecond(timePattern string) func([]byte, string) (float64, error) {
	re := regexp.MustCompile(timePattern)
	return func(stdout []byte, _ string) (float64, error) {
		var total float64
		matches := re.FindAllSubmatch(stdout, -1)
		for _, m := range matches {
			t, err := strconv.ParseFloat(string(m[1]), 64)
			if err != nil {
				return 0, fmt.Errorf("run time %q: %w", m[1], err)
			}
			total += t
		}
		if total == 0 {
			return 0, fmt.Errorf("no run time matching %s in the output", timePattern)
		}
		return float64(len(matches)) / total, nil
	}
}

// fioIOPS reads the write IOPS of fio's JSON report (--group_reporting:
// one job standing for all).
func fioIOPS(stdout []byte, _ string) (float64, error) {
	var report struct {
		Jobs []struct {
			Write struct {
				IOPS float64 `json:"iops"`
			} `json:"write"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(stdout, &report); err != nil {
		return 0, fmt.Errorf("reading fio's JSON report: %w", err)
	}
	if len(report.Jobs) != 1 {
		return 0, fmt.Errorf("fio reported %d jobs, want 1 (group reporting)", len(report.Jobs))
	}
	return report.Jobs[0].Write.IOPS, nil
}

func firstFloat(re *regexp.Regexp, data []byte, what string) (float64, error) {
	m := re.FindSubmatch(data)
	if m == nil {
		return 0, fmt.Errorf("no %s in %s", re, what)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

// runMeasured runs m and returns its figure: the rate, or the wall time in
// seconds.
func runMeasured(m measuredRun, dir string) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, m.args[0], m.args[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s: %w: %s", strings.Join(m.args, " "), err, stderr.String())
	}
	if m.rate == nil {
		return time.Since(start).Seconds(), nil
	}
	v, err := m.rate(stdout.Bytes(), dir)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", strings.Join(m.args, " "), err)
	}
	return v, nil
}

// throughputTool is one way of running a workload in the throughput table:
// untraced (start nil) or under one tool alone.
type throughputTool struct {
	name  string
	start func() (probe, error)
}

// throughputResult is one workload's figures per tool and round.
type throughputResult struct {
	unit    string
	label   string
	figures [][]float64 // [tool][round]
}

// loss is the throughput tool t cost in each round, in percent of the
// untraced run (tool 0) of the same round: 5 is 5% less work done per
// second (for a wall time, per second of it).
func (r throughputResult) loss(t int) []float64 {
	out := make([]float64, len(r.figures[t]))
	for round, v := range r.figures[t] {
		base := r.figures[0][round]
		if r.unit == "s" {
			out[round] = 100 * (1 - base/v)
		} else {
			out[round] = 100 * (1 - v/base)
		}
	}
	return out
}

// measureThroughput runs w untraced and under each tool alone, o.rounds
// times, the order rotating by one each round so that the machine's drift
// is spread over all of them.
func measureThroughput(o options, w realWorkload, tools []throughputTool) (throughputResult, error) {
	r := throughputResult{figures: make([][]float64, len(tools))}
	for round := range o.rounds {
		for i := range tools {
			t := (round + i) % len(tools)
			dir, err := os.MkdirTemp("", "klockstat-bench-")
			if err != nil {
				return r, err
			}
			m := w.measured(o.duration, dir)
			r.unit, r.label = m.unit, m.label
			v, err := runUnder(tools[t], m, dir)
			os.RemoveAll(dir)
			if err != nil {
				return r, fmt.Errorf("%s: %w", tools[t].name, err)
			}
			r.figures[t] = append(r.figures[t], v)
		}
	}
	return r, nil
}

func runUnder(t throughputTool, m measuredRun, dir string) (float64, error) {
	if t.start == nil {
		return runMeasured(m, dir)
	}
	p, err := t.start()
	if err != nil {
		return 0, err
	}
	v, werr := runMeasured(m, dir)
	if _, err := p.stop(); err != nil && werr == nil {
		werr = err
	}
	return v, werr
}

// throughputTable prints, for each workload, its own figure untraced and
// the share of it each tool costs, klockstat, perf lock contention -b and
// bpftrace each attached alone, at stack depth 16.
func throughputTable(o options, spec *lockspec.Spec, workloads []realWorkload) error {
	if len(workloads) == 0 {
		return nil
	}
	tools := []throughputTool{
		{name: "untraced"},
		{name: "klockstat", start: klockstatProbe(spec, 16, 65536, false)},
		{name: "bpftrace kstack(16)", start: func() (probe, error) { return startBpftrace(16) }},
	}
	if o.perf != "" {
		tools = append(tools, throughputTool{name: "perf lock contention -a -b --max-stack 16", start: func() (probe, error) { return startPerfContention(o.perf, 16) }})
	}
	fmt.Printf("\n### Throughput lost (%v per run, %d rounds; each tool attached alone, the runs of a round in an order rotating by one each round)\n\n", o.duration, o.rounds)
	header := "| workload | untraced (median) |"
	rule := "| --- | ---: |"
	for _, t := range tools[1:] {
		header += " " + t.name + " loss, median (per round) |"
		rule += " ---: |"
	}
	fmt.Println(header)
	fmt.Println(rule)
	for _, w := range workloads {
		r, err := measureThroughput(o, w, tools)
		if err != nil {
			return fmt.Errorf("%s: %w", w.name, err)
		}
		base := median(r.figures[0])
		figure := fmt.Sprintf("%.3g %s", base, r.unit)
		if base >= 1000 { // in full, not 1.41e+05
			figure = fmt.Sprintf("%.0f %s", base, r.unit)
		}
		name := w.name
		if r.label != "" {
			name = r.label
		}
		row := fmt.Sprintf("| %s | %s |", name, figure)
		for t := range tools[1:] {
			loss := r.loss(t + 1)
			perRound := make([]string, len(loss))
			for i, v := range loss {
				perRound[i] = fmt.Sprintf("%.1f", v)
			}
			row += fmt.Sprintf(" %s (%s) |", medianCell(loss, "%.1f%%"), strings.Join(perRound, " "))
		}
		fmt.Println(row)
	}
	return nil
}
