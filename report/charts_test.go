package report

import (
	"math"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
)

// TestDiffHistogramNoHangingBars: the diff's log-scale histogram of rates under one wait per second
// starts its axis, and its bars, at the power of ten under the smallest rate, not at 1, from which
// smaller bars would hang down like negative ones.
func TestDiffHistogramNoHangingBars(t *testing.T) {
	// 100 s captures of a few waits: rates of 0.01 to 0.03 per second.
	b := capturetest.Of(t, 100e9, capturetest.Rec("mutex", "", "f+0x1", "a", 1, 1, 0xffff888100000000, 1_000, 1_100, 90_000))
	a := capturetest.Of(t, 100e9, capturetest.Rec("mutex", "", "f+0x1", "a", 1, 1, 0xffff888100000000, 1_000, 5_000_000))
	spec := chartsOf(t, parseHTML(t, renderDiff(t, capture.Compare(b, a, capture.DiffOptions{}), HTMLOptions{})))["klockDiffHistogram"]
	y := path(t, spec.Option, "yAxis", 0)
	floor, _ := path(t, y, "min").(float64)
	start, _ := path(t, y, "startValue").(float64)
	if path(t, y, "type") != "log" || floor <= 0 || start != floor {
		t.Fatalf("y axis %v: want a log axis whose min and startValue are the same positive value", y)
	}
	smallest := math.Inf(1)
	for s := range 2 {
		for _, d := range path(t, spec.Option, "series", s, "data").([]any) {
			if v, ok := path(t, d, "value").(float64); ok && v > 0 {
				smallest = min(smallest, v)
			}
		}
	}
	if smallest >= 1 || floor > smallest || floor*10 <= smallest {
		t.Errorf("axis starts at %v for a smallest rate of %v: want the power of ten under it", floor, smallest)
	}
}

// TestCallerBarsReadable: where one caller dwarfs the others, every bar of the top callers is still
// seen: at least a few pixels long, with its value written at its end.
func TestCallerBarsReadable(t *testing.T) {
	c := capturetest.Of(t, 1e9,
		capturetest.Rec("mutex", "", "big+0x1", "a", 1, 1, 0xffff888100000000, 900_000_000),
		capturetest.Rec("mutex", "", "small+0x1", "a", 1, 2, 0xffff888100000040, 1_000),
		capturetest.Rec("spinlock", "", "tiny+0x1", "a", 1, 3, 0xffff888100000080, 10))
	option := chartsOf(t, parseHTML(t, renderHTML(t, c, HTMLOptions{}, testKey)))["klockCallers"].Option
	if h, _ := path(t, option, "series", 0, "barMinHeight").(float64); h < 1 {
		t.Errorf("barMinHeight %v: a small bar next to a big one would not show", h)
	}
	data := path(t, option, "series", 0, "data").([]any)
	if len(data) != 3 {
		t.Fatalf("%d bars, want 3", len(data))
	}
	for _, d := range data {
		v := path(t, d, "value").(float64)
		if path(t, d, "label", "show") != true || path(t, d, "label", "formatter") != FormatDuration(v) {
			t.Errorf("bar of %v ns: label %v, want %q shown", v, path(t, d, "label"), FormatDuration(v))
		}
	}
}

// TestMeanAboveP99Explained: an average above p99, which looks like an error, says why (a few very
// long waits), in the diff's table of lock types and in the report's distribution tooltip; an
// ordinary one says nothing.
func TestMeanAboveP99Explained(t *testing.T) {
	waits := []uint64{1_000_000_000} // one very long wait among many short ones
	for range 300 {
		waits = append(waits, 1_000)
	}
	skewed := capturetest.Of(t, 1e9,
		capturetest.Rec("mutex", "", "f+0x1", "a", 1, 1, 0xffff888100000000, waits...),
		capturetest.Rec("spinlock", "", "g+0x1", "a", 1, 1, 0xffff888100000040, 1_000, 1_200, 1_100))
	var mutex, spinlock capture.Stats
	for _, h := range skewed.Histograms {
		switch h.Type {
		case "mutex":
			mutex = h.Stats()
		case "spinlock":
			spinlock = h.Stats()
		}
	}
	if mutex.MeanNS <= float64(mutex.P99) || spinlock.MeanNS > float64(spinlock.P99) {
		t.Fatalf("fixture: mutex mean %v p99 %v, spinlock mean %v p99 %v", mutex.MeanNS, mutex.P99, spinlock.MeanNS, spinlock.P99)
	}

	d := dataOf(t, renderDiff(t, capture.Compare(skewed, skewed, capture.DiffOptions{}), HTMLOptions{}))
	types := d.view(t, "types")
	for row := range types.Rows {
		typ := d.cell(t, types, "type", row)
		for _, key := range []string{"avg_b", "avg_a"} {
			title := d.title(t, types, key, row)
			switch typ {
			case "mutex":
				if title != meanAboveP99(mutex) {
					t.Errorf("mutex %s: title %q, want %q", key, title, meanAboveP99(mutex))
				}
			default:
				if title != "" {
					t.Errorf("%s %s: title %q on an average under p99", typ, key, title)
				}
			}
		}
	}

	tips := chartsOf(t, parseHTML(t, renderHTML(t, skewed, HTMLOptions{}, testKey)))["klockBox"].Tips[0]
	for _, tip := range tips {
		last := tip.Rows[len(tip.Rows)-1]
		if noted := last[0] == "mean > p99"; noted != (tip.Title == "mutex") {
			t.Errorf("box tooltip of %s ends with %q", tip.Title, last)
		}
	}
}
