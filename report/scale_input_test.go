package report

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
)

// sweepPage is a scaling report whose sweep element holds the gzip of head followed by n bytes
// of fill, written as it streams: a page of kilobytes whose sweep inflates to gigabytes.
func sweepPage(t testing.TB, head string, fill byte, n int64, truncate bool) []byte {
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	io.WriteString(zw, head)
	if _, err := io.Copy(zw, io.LimitReader(repeatReader(fill), n)); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	data := z.Bytes()
	if truncate {
		data = data[:len(data)/2]
	}
	return []byte(`<!DOCTYPE html><script type="text/plain" id="` + sweepElementID + `" data-encoding="gzip+base64">` +
		base64.StdEncoding.EncodeToString(data) + `</script>`)
}

// TestReadSweepBounded: a scaling page's sweep inflates under the limits of a report's page data,
// refused as soon as it breaks one, never held whole.
func TestReadSweepBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		page  []byte
		limit int64
		want  string
	}{
		{"a string of 64 MiB", sweepPage(t, `{"sweep_version":1,"tool":"`, 'a', 64<<20, false), MaxInputSize,
			"the scaling report's sweep holds a string longer than 262144 bytes"},
		{"a list of 64 Mi elements", sweepPage(t, `{"sweep_version":1,"levels":[0`, ',', 64<<20, false), MaxInputSize,
			"the scaling report's sweep holds more than 2097152 elements in one list"},
		{"64 MiB of blank space over a limit of 16", sweepPage(t, `{"sweep_version":1,"levels":[`, ' ', 64<<20, false), 16 << 20,
			"the scaling report's sweep inflates to more than 16 MiB, the most klockstat reads; read the sweep JSON"},
		{"truncated", sweepPage(t, `{"sweep_version":1,"levels":[`, ' ', 1<<20, true), MaxInputSize,
			"the scaling report's sweep is truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, ok, err := readSweep(tc.page, tc.limit)
			runtime.ReadMemStats(&after)
			if !ok || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (a sweep: %v), want %q", err, ok, tc.want)
			}
			if a := after.TotalAlloc - before.TotalAlloc; a > 32<<20 {
				t.Errorf("reading it allocated %d MiB", a>>20)
			}
		})
	}
}

// A forged sweep whose waits overflow, or whose runs are of different kernels, is written with a
// warning on the page and in the summary, never with wrapped sums.
func TestScaleForgedNumbersWarned(t *testing.T) {
	s := scaleSweep(t)
	for _, l := range s.Levels {
		for _, r := range l.Runs {
			if r.Capture != nil && len(r.Capture.Records) > 0 {
				r.Capture.Records[0].TotalNS = math.MaxUint64
			}
		}
	}
	last := s.Levels[len(s.Levels)-1].Runs[0].Capture
	last.Meta.Kernel, last.Meta.Arch = "6.1.0-other", "arm64"
	var sum bytes.Buffer
	if err := WriteScaleSummary(&sum, s, ScaleSummaryOptions{Top: 5}); err != nil {
		t.Fatal(err)
	}
	page := string(writeScale(t, s, HTMLOptions{}))
	for _, want := range []string{"add up to more than a 64-bit number holds: it is corrupt", "different kernels or architectures", "6.1.0-other arm64"} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("the summary does not say %q:\n%s", want, sum.String())
		}
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

// wideSweep is a sweep of levels 1 to n, runs runs each, of scaleSweep's level-1 capture.
func wideSweep(t testing.TB, n, runs int) *capture.Sweep {
	base := scaleSweep(t)
	var enc bytes.Buffer
	if err := base.Levels[0].Runs[0].Capture.Write(&enc); err != nil {
		t.Fatal(err)
	}
	base.Levels = nil
	for level := 1; level <= n; level++ {
		l := capture.SweepLevel{N: level}
		for range runs {
			c, err := capture.Parse(enc.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			metric := float64(1000 * level)
			l.Runs = append(l.Runs, capture.SweepRun{Argv: []string{"work"}, WallNS: 1e9, Metric: &metric, Capture: c})
		}
		base.Levels = append(base.Levels, l)
	}
	return base
}

// A page of many levels holds the diffs of each level with the lowest and with the next, not of
// every two levels, whose number grows as the square of the levels.
func TestScaleHTMLManyLevelsDiffs(t *testing.T) {
	pages := scalePages(t, writeScale(t, wideSweep(t, 16, 1), HTMLOptions{}))
	if len(pages.Levels) != 16 || len(pages.Diffs) != 15+14 {
		t.Fatalf("%d level pages and %d diffs, want 16 and 29", len(pages.Levels), len(pages.Diffs))
	}
	for _, d := range pages.Diffs {
		if d.A != 1 && d.B != d.A+1 {
			t.Errorf("the diff of levels %d and %d, neither the lowest nor neighbours", d.A, d.B)
		}
	}
}

// FuzzReadSweep reads forged sweeps and scaling pages within a small limit: refused or read, never
// a panic, and what is read analyses to numbers a page can hold.
func FuzzReadSweep(f *testing.F) {
	s := scaleSweep(f)
	f.Add(writeScale(f, s, HTMLOptions{}))
	var js bytes.Buffer
	if err := s.Write(&js); err != nil {
		f.Fatal(err)
	}
	f.Add(js.Bytes())
	f.Add(sweepPage(f, `{"sweep_version":1,"levels":[`, ' ', 1<<10, false))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, ok, err := readSweep(data, 1<<20)
		if err != nil || !ok {
			return
		}
		if _, err := json.Marshal(s.Analyze()); err != nil {
			t.Errorf("the analysis does not encode: %v", err)
		}
	})
}

// The largest metric a sweep takes (capture.MaxSweepMetric) reads with a unit, not an exponent.
func TestFormatNumberUpToTheLargestMetric(t *testing.T) {
	for v, want := range map[float64]string{999: "999", 1500: "1.5k", 2.5e9: "2.5G", 3e12: "3T", 4e15: "4P", capture.MaxSweepMetric: "1E"} {
		if got := FormatNumber(v); got != want {
			t.Errorf("FormatNumber(%g) = %q, want %q", v, got, want)
		}
	}
}
