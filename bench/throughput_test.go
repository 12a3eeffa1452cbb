package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The outputs below are cut from the tools' own, as run on Debian 12
// (stress-ng 0.15.06, perf 6.1, rt-tests' hackbench, fio 3.33).

func TestStressNGRateReadsRealTimeRate(t *testing.T) {
	dir := t.TempDir()
	yaml := `metrics:
    - stressor: madvise
      bogo-ops: 24
      bogo-ops-per-second-usr-sys-time: 27.314972
      bogo-ops-per-second-real-time: 10.276750
      wall-clock-time: 2.335369
`
	if err := os.WriteFile(filepath.Join(dir, "metrics.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := stressNGRate(nil, dir)
	if err != nil || got != 10.27675 {
		t.Errorf("stressNGRate = %v, %v; want 10.27675", got, err)
	}
	if _, err := stressNGRate(nil, t.TempDir()); err == nil {
		t.Error("stressNGRate without metrics.yaml: no error")
	}
}

func TestPerfBenchRateReadsAverage(t *testing.T) {
	out := "[thread  1] futexes: 0x559b036f06c0 ... 0x559b036f16bc [ 2618368 ops/sec ]\n\nAveraged 1501184 operations/sec (+- 74.42%), total secs = 1\n"
	got, err := perfBenchRate([]byte(out), "")
	if err != nil || got != 1501184 {
		t.Errorf("perfBenchRate = %v, %v; want 1501184", got, err)
	}
	if _, err := perfBenchRate([]byte("[thread  1] futexes: ... [ 2618368 ops/sec ]\n"), ""); err == nil {
		t.Error("perfBenchRate without an average: no error")
	}
}

func TestRunsPerSecondDividesRunsByReportedTime(t *testing.T) {
	hackbench := runsPerSecond(`Time: ([0-9.]+)`)
	out := "Running in process mode with 8 groups\nTime: 0.300\nRunning in process mode with 8 groups\nTime: 0.200\n"
	got, err := hackbench([]byte(out), "")
	if err != nil || math.Abs(got-4) > 1e-9 {
		t.Errorf("hackbench runs/s = %v, %v; want 4 (2 runs in 0.5 s)", got, err)
	}
	// sched messaging's "Total time" must not be read as hackbench's "Time".
	if _, err := hackbench([]byte("     Total time: 0.077 [sec]\n"), ""); err == nil {
		t.Error("hackbench pattern matched sched messaging's Total time")
	}
	messaging := runsPerSecond(`Total time: ([0-9.]+)`)
	if got, err := messaging([]byte("# 20 sender and receiver processes per group\n\n     Total time: 0.125 [sec]\n"), ""); err != nil || got != 8 {
		t.Errorf("sched messaging runs/s = %v, %v; want 8", got, err)
	}
}

func TestFioIOPSReadsGroupReport(t *testing.T) {
	got, err := fioIOPS([]byte(`{"fio version": "fio-3.33", "jobs": [{"jobname": "onefile", "write": {"iops": 669224.775225}}]}`), "")
	if err != nil || got != 669224.775225 {
		t.Errorf("fioIOPS = %v, %v; want 669224.775225", got, err)
	}
	if _, err := fioIOPS([]byte(`{"jobs": [{"write": {"iops": 1}}, {"write": {"iops": 2}}]}`), ""); err == nil {
		t.Error("fioIOPS with two jobs (no group reporting): no error")
	}
}

func TestLossIsShareOfUntracedRunOfSameRound(t *testing.T) {
	rate := throughputResult{unit: "ops/s", figures: [][]float64{{100, 200}, {90, 210}}}
	if got, want := rate.loss(1), []float64{10, -5}; !approxEqual(got, want) {
		t.Errorf("rate loss = %v, want %v", got, want)
	}
	// A wall time twice as long is half the builds per second.
	wall := throughputResult{unit: "s", figures: [][]float64{{20, 30}, {40, 30}}}
	if got, want := wall.loss(1), []float64{50, 0}; !approxEqual(got, want) {
		t.Errorf("wall-time loss = %v, want %v", got, want)
	}
}

func approxEqual(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Abs(x-y) < 1e-9 })
}
