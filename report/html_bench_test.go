package report

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
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
// (x-python), the yardstick of the report's scale goals: at most 0.5 at 100,000 records.
func BenchmarkReportCommand(b *testing.B) {
	bin := testenv.Build(b, ".")
	dir := b.TempDir()
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		in := filepath.Join(dir, fmt.Sprintf("capture-%d.json", n))
		f, err := os.Create(in)
		if err != nil {
			b.Fatal(err)
		}
		if err := syntheticCapture(n).Write(f); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		python := pythonJSONTime(b, in, filepath.Join(dir, "python.json"))
		out := filepath.Join(dir, fmt.Sprintf("report-%d.html", n))
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			var peakKiB int64
			for b.Loop() {
				cmd := exec.Command(bin, "report", in, "-o", out, "-q")
				if msg, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %v\n%s", cmd.Args, err, msg)
				}
				peakKiB = max(peakKiB, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
			}
			st, err := os.Stat(out)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(peakKiB)/1024, "peak-RSS-MiB")
			b.ReportMetric(float64(st.Size())/(1<<20), "MiB/report")
			if python > 0 {
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/python.Seconds(), "x-python")
			}
		})
		os.Remove(in)
	}
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
		if trees := capture.FlameGraphs(c.Records, flameNodes); len(trees) == 0 {
			b.Fatal("no flame graphs")
		}
	}
}
