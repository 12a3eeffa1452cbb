package report

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
)

// countingWriter counts what is written to it, so the benchmark measures rendering, not a buffer.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

func BenchmarkWriteHTML(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		c := syntheticCapture(n)
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var w countingWriter
			for b.Loop() {
				w.n = 0
				if err := WriteHTML(&w, c, HTMLOptions{Top: defaultTop}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(w.n)/1e6, "MB/report")
		})
	}
}

// BenchmarkReportCommand runs `klockstat report` on saved captures as a user would, for what an
// in-process benchmark cannot see: the peak memory of the whole process, reading the JSON, building
// and writing the page. It compares the time with Python's json.load and json.dump of the same file
// (x-python), the yardstick of the report's scale goals: at most 0.4 at 100,000 records, and at
// most 200 MiB. The captures share their stacks as real ones do (syntheticCapture);
// stacks=distinct gives each record a stack of its own, the worst case.
func BenchmarkReportCommand(b *testing.B) {
	bin := testenv.Build(b, ".")
	timeBin, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		b.Logf("no /usr/bin/time (apt-get install time), no peak-RSS-MiB: %v", err)
	}
	dir := b.TempDir()
	for _, shape := range []struct {
		name      string
		records   int
		synthesis func(n int) *capture.Capture
	}{
		{"records=1000", 1_000, syntheticCapture},
		{"records=100000", 100_000, syntheticCapture},
		{"records=100000/stacks=distinct", 100_000, func(n int) *capture.Capture { return syntheticCaptureOf(n, n) }},
		{"records=1000000", 1_000_000, syntheticCapture},
	} {
		b.Run(shape.name, func(b *testing.B) {
			in := filepath.Join(dir, "capture.json")
			f, err := os.Create(in)
			if err != nil {
				b.Fatal(err)
			}
			if err := shape.synthesis(shape.records).Write(f); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			defer os.Remove(in)
			python := pythonJSONTime(b, in, filepath.Join(dir, "python.json"))
			out := filepath.Join(dir, "report.html")
			var peakKiB int64 // b.Loop starts the clock: the synthesis and Python are not timed
			for b.Loop() {
				peakKiB = max(peakKiB, runMeasured(b, timeBin, dir, bin, "report", in, "-o", out, "-q"))
			}
			st, err := os.Stat(out)
			if err != nil {
				b.Fatal(err)
			}
			if timeBin != "" {
				b.ReportMetric(float64(peakKiB)/1024, "peak-RSS-MiB")
			}
			b.ReportMetric(float64(st.Size())/(1<<20), "MiB/report")
			if python > 0 {
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/python.Seconds(), "x-python")
			}
		})
	}
}

// runMeasured runs the command args and returns its peak resident memory in KiB, as /usr/bin/time
// (timeBin) measures it, or 0 without timeBin. The benchmark cannot read the peak from its own child's
// rusage: Go starts a child with CLONE_VM, sharing the benchmark's memory until the exec, and the
// kernel charges the high-water mark of that memory (the benchmark's synthetic capture) to the child.
// /usr/bin/time forks its child without sharing, from a process of a few MiB.
func runMeasured(b *testing.B, timeBin, dir string, args ...string) int64 {
	b.Helper()
	var peak string
	if timeBin != "" {
		peak = filepath.Join(dir, "peak-rss")
		args = append([]string{timeBin, "-f", "%M", "-o", peak}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v: %v\n%s", cmd.Args, err, msg)
	}
	if peak == "" {
		return 0
	}
	text, err := os.ReadFile(peak)
	if err != nil {
		b.Fatal(err)
	}
	kib, err := strconv.ParseInt(strings.TrimSpace(string(text)), 10, 64)
	if err != nil {
		b.Fatalf("%s: %q is not a size in KiB: %v", timeBin, text, err)
	}
	return kib
}

// pythonJSONTime is how long python3 takes to json.load the file in and json.dump it to out, or 0
// without python3.
func pythonJSONTime(b *testing.B, in, out string) time.Duration {
	b.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		b.Logf("no python3: %v", err)
		return 0
	}
	script := fmt.Sprintf("import json; json.dump(json.load(open(%q)), open(%q, 'w'))", in, out)
	start := time.Now()
	if msg, err := exec.Command("python3", "-c", script).CombinedOutput(); err != nil {
		b.Fatalf("python3: %v\n%s", err, msg)
	}
	defer os.Remove(out)
	return time.Since(start)
}

// BenchmarkFlameGraphs lays out the flame graphs of a report, the part of WriteHTML that runs beside
// the interning of the records.
func BenchmarkFlameGraphs(b *testing.B) {
	c := syntheticCapture(100_000)
	b.ReportAllocs()
	for b.Loop() {
		if trees := capture.FlameGraphs(c.Records, c.Sources, flameNodes); len(trees) == 0 {
			b.Fatal("no flame graphs")
		}
	}
}
