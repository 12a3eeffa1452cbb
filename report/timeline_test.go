package report

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"github.com/klockstat/klockstat/capture"
)

// withTimeline gives c a timeline of buckets buckets of bucketNS that holds exactly the waits of its
// records, record i in bucket i*7 modulo buckets, and the command's start and exit at the given
// offsets.
func withTimeline(c *capture.Capture, buckets int, bucketNS uint64, start, exit int64) *capture.Capture {
	tl := &capture.Timeline{BucketNS: bucketNS, CommandStartNS: &start, CommandEndNS: &exit}
	series := map[string]int{}
	for i, r := range c.Records {
		if r.Count == 0 {
			continue
		}
		k, ok := series[r.Type]
		if !ok {
			k = len(tl.Series)
			series[r.Type] = k
			tl.Series = append(tl.Series, capture.TimelineSeries{Type: r.Type, Count: make([]uint64, buckets), TotalNS: make([]uint64, buckets)})
		}
		b := i * 7 % buckets
		tl.Series[k].Count[b] += r.Count
		tl.Series[k].TotalNS[b] += r.TotalNS
	}
	c.Timeline = tl
	return c
}

func TestReportTimeline(t *testing.T) {
	c, _ := knownCapture(t)
	withTimeline(c, 120, 1<<25, 1_000_000, int64(c.Meta.DurationNS)-50_000_000)
	page := renderHTML(t, c, HTMLOptions{RawAddresses: true}, testKey)
	doc := checkNoInjection(t, page, 4)
	spec, ok := chartsOf(t, doc)["klockTimeline"]
	if !ok {
		t.Fatal("a capture with a timeline has no timeline chart")
	}
	series := path(t, spec.Option, "series").([]any)
	if len(series) != len(c.Timeline.Series) {
		t.Fatalf("%d series, want one per type of the timeline (%d)", len(series), len(c.Timeline.Series))
	}
	for i, s := range c.Timeline.Series {
		if name := path(t, series[i], "name"); name != visible(s.Type) {
			t.Errorf("series %d is %q, want %q", i, name, s.Type)
		}
		data := path(t, series[i], "data").([]any)
		for b, ns := range s.TotalNS {
			if v := path(t, data[b], "value").(float64); v != float64(ns) {
				t.Errorf("%s, bucket %d: %v ns drawn, want %d", s.Type, b, v, ns)
			}
		}
	}
	// The command's start and exit, at the buckets they fell in.
	marks := path(t, series[0], "markLine", "data").([]any)
	want := []float64{float64(*c.Timeline.CommandStartNS / (1 << 25)), float64(*c.Timeline.CommandEndNS / (1 << 25))}
	if len(marks) != 2 || path(t, marks[0], "xAxis") != want[0] || path(t, marks[1], "xAxis") != want[1] {
		t.Errorf("command marks %v, want at buckets %v", marks, want)
	}

	// The embedded capture keeps the timeline.
	back, err := ReadInput(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Timeline, c.Timeline) {
		t.Errorf("the report's capture has timeline %+v, want %+v", back.Timeline, c.Timeline)
	}

	// No timeline, no chart: a capture without one says nothing about when its waits ended.
	c.Timeline = nil
	if _, ok := chartsOf(t, parseHTML(t, renderHTML(t, c, HTMLOptions{}, testKey)))["klockTimeline"]; ok {
		t.Error("a capture without a timeline has a timeline chart")
	}
}

func TestDiffTimeline(t *testing.T) {
	before, _ := knownCapture(t)
	after, _ := knownCapture(t)
	after.Meta.DurationNS *= 2
	withTimeline(before, 100, 1<<25, 0, 0)
	withTimeline(after, 200, 1<<25, 0, 0)
	d := capture.Compare(before, after, capture.DiffOptions{})
	spec, ok := chartsOf(t, parseHTML(t, renderDiff(t, d, HTMLOptions{})))["klockDiffTimeline"]
	if !ok {
		t.Fatal("a diff of captures with timelines has no timeline chart")
	}
	for side, s := range path(t, spec.Option, "series").([]any) {
		c := d.Captures[side]
		var drawn float64
		for _, p := range path(t, s, "data").([]any) {
			drawn += path(t, p, "value").(float64)
		}
		// Each hundredth is drawn as wait per second: back to nanoseconds, they are the capture's wait.
		var want float64
		for _, s := range c.Timeline.Series {
			for _, ns := range s.TotalNS {
				want += float64(ns)
			}
		}
		if got := drawn * float64(c.Meta.DurationNS) / relativeBins / 1e9; math.Abs(got-want) > want*1e-9 {
			t.Errorf("%s: the relative timeline adds up to %v ns, want %v", sideNames[side], got, want)
		}
	}
	d.Captures[1].Timeline = nil
	if _, ok := chartsOf(t, parseHTML(t, renderDiff(t, d, HTMLOptions{})))["klockDiffTimeline"]; ok {
		t.Error("a diff with a side without a timeline has a timeline chart")
	}
}

func TestBrowserTimeline(t *testing.T) {
	c, _ := knownCapture(t)
	withTimeline(c, 120, 1<<25, 1_000_000, 3_000_000_000)
	ctx := browser(t, c, HTMLOptions{})
	checkChartsDrawn(t, ctx, []string{"klockTimeline"})
	// Every tooltip of the timeline names its types as text, the hostile ones too.
	tips := eval[string](t, ctx, `(() => {
		const el = document.getElementById("klockTimeline"), chart = echarts.getInstanceByDom(el);
		let text = "";
		for (let i = 0; i < 120; i++) {
			chart.dispatchAction({type: "showTip", seriesIndex: 0, dataIndex: i});
			for (const tip of el.querySelectorAll("div")) text += tip.textContent + "\n";
		}
		return text;
	})()`)
	for _, want := range []string{scriptBreak, funcType, "all types"} {
		if !bytes.Contains([]byte(tips), []byte(want)) {
			t.Errorf("no timeline tooltip shows %q", want)
		}
	}
	checkNoMarkup(t, ctx)

	t.Run("diff", func(t *testing.T) {
		after, _ := knownCapture(t)
		withTimeline(after, 200, 1<<25, 0, 0)
		dctx := diffBrowser(t, capture.Compare(c, after, capture.DiffOptions{}), HTMLOptions{})
		checkChartsDrawn(t, dctx, []string{"klockDiffTimeline"})
		checkNoMarkup(t, dctx)
	})
}
