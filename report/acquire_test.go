package report

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/klockstat/klockstat/capture"
)

// acquireCapture is knownCapture as the fentry backend would take it: records of contended acquires,
// hold times on some (its holds of each type are returned, for deriving expected values), and a record
// of holds only, of a type that had no contended acquire.
func acquireCapture(t testing.TB) (*capture.Capture, map[string][]uint64) {
	t.Helper()
	c, _ := knownCapture(t)
	c.Meta.Probe = "fentry"
	c.Meta.Acquire = &capture.Acquire{
		ThresholdNS: 2904,
		Calibration: capture.Calibration{Method: "uncontended pipe writes", Samples: 2312, P50NS: 621, P99NS: 1452, MaxNS: 47771, Rule: "2 × p99"},
		Uncontended: 26516, Holds: 7,
		Functions: []string{"down_write_killable", "mutex_lock"},
		Skipped:   []capture.Skipped{{Function: "_raw_spin_lock", Type: "spinlock", Reason: "spinning lock " + imgCanary}},
	}
	holds := map[string][]uint64{}
	add := func(r *capture.Record, ns ...uint64) {
		for _, h := range ns {
			if r.HoldCount == 0 || h < r.HoldMinNS {
				r.HoldMinNS = h
			}
			r.HoldCount++
			r.HoldTotalNS += h
			r.HoldMaxNS = max(r.HoldMaxNS, h)
			holds[r.Type] = append(holds[r.Type], h)
		}
	}
	add(&c.Records[0], 40_000, 3_000_000)
	add(&c.Records[7], 900, 1_100)
	holdOnly := capture.Record{Type: "rwsem:R", Lock: 0xffff888104d2a0c8, Name: "mmap_lock", Comm: "ct-mmap-2", PID: 3099, TID: 3109,
		Caller: "__x64_sys_mincore+0xf8", Stack: []string{"__x64_sys_mincore+0xf8"}}
	add(&holdOnly, 2_000, 2_500, 700)
	c.Records = append(c.Records, holdOnly)
	// Records of holds only keep the type of the histograms: rwsem:R has waits here too, so take
	// them away from it to have a type with holds only.
	c.Records = slices.DeleteFunc(c.Records, func(r capture.Record) bool { return r.Type == "rwsem:R" && r.Count > 0 })
	c.Histograms = slices.DeleteFunc(c.Histograms, func(h capture.Histogram) bool { return h.Type == "rwsem:R" })
	for _, typ := range []string{"rwsem:W", "mutex", "rwsem:R"} {
		h := capture.Histogram{Type: typ}
		for _, ns := range holds[typ] {
			h.Add(ns)
		}
		c.HoldHistograms = append(c.HoldHistograms, h)
	}
	c.Sort()
	if err := c.Validate(); err != nil {
		t.Fatalf("test capture: %v", err)
	}
	return c, holds
}

func TestHTMLAcquireTimesAndHolds(t *testing.T) {
	c, holds := acquireCapture(t)
	top := len(c.Records)
	page := renderHTML(t, c, HTMLOptions{Top: top}, testKey)
	doc := parseHTML(t, page)
	d := dataOf(t, page)
	v := d.view(t, "threads")
	wantKeys := []string{"lock", "type", "caller", "stack", "comm", "count", "total", "avg", "max", "hold_count", "hold_total", "hold_avg", "hold_max", "pid", "tid", "cgroup"}
	if !slices.Equal(v.keys(), wantKeys) {
		t.Fatalf("record view columns %q, want %q", v.keys(), wantKeys)
	}
	var labels []string
	for _, col := range v.Columns {
		labels = append(labels, col.Label)
	}
	for _, label := range []string{"Contended", "Total acquire", "Avg acquire", "Max acquire", "Holds", "Total hold", "Avg hold", "Max hold"} {
		if !slices.Contains(labels, label) {
			t.Errorf("record view has no column %q", label)
		}
	}
	found := 0
	for i, r := range sortedRecords(hashed(t, c, testKey)) {
		if r.HoldCount == 0 {
			continue
		}
		found++
		want := []string{fmt.Sprint(r.HoldCount), fmt.Sprint(r.HoldTotalNS), nsText(r.HoldMeanNS()), fmt.Sprint(r.HoldMaxNS)}
		var got []string
		for _, key := range []string{"hold_count", "hold_total", "hold_avg", "hold_max"} {
			got = append(got, d.cell(t, v, key, i))
		}
		if !slices.Equal(got, want) {
			t.Errorf("holds of thread %d: %q, want %q", r.TID, got, want)
		}
		if r.Count == 0 && d.cell(t, v, "avg", i) != "0" {
			t.Errorf("average acquire of a record of holds only: %q, want 0", d.cell(t, v, "avg", i))
		}
	}
	if found != 3 {
		t.Errorf("%d rows with holds, want 3", found)
	}

	o := chartsOf(t, doc)["klockBox"].Option
	if mode := path(t, o, "legend", "selectedMode"); mode != "single" {
		t.Errorf("box legend selectedMode %v, want single: one series at a time", mode)
	}
	names := path(t, o, "xAxis", 0, "data").([]any)
	if last := names[len(names)-1]; last != "rwsem:R" {
		t.Errorf("box categories %v, want the type of holds only last", names)
	}
	for i, name := range names {
		h, ok := holds[name.(string)]
		got := path(t, o, "series", 1, "data", i, "value")
		if !ok {
			if !reflect.DeepEqual(got, []any{}) {
				t.Errorf("hold box of %s without holds: %v", name, got)
			}
			continue
		}
		sorted := slices.Sorted(slices.Values(h))
		if lo, hi := got.([]any)[0], got.([]any)[4]; lo != float64(sorted[0]) || hi != float64(sorted[len(sorted)-1]) {
			t.Errorf("hold box of %s spans %v..%v, want %d..%d", name, lo, hi, sorted[0], sorted[len(sorted)-1])
		}
	}

	text := textOf(doc)
	for _, want := range []string{
		"whole acquire calls, fast path included; an acquire counts as contended above 2.90 us (2 × p99 of 2312 uncontended acquires: p50 621 ns, p99 1.45 us, max 47.77 us)",
		"2 probed, 1 skipped", "7 timed, acquire return to release; 26516 uncontended acquires",
		"Acquire time by lock type", "callers by total acquire",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report does not say %q", want)
		}
	}
}

func TestHTMLWaitsHaveNoHoldColumns(t *testing.T) {
	c, _ := knownCapture(t)
	page := renderHTML(t, c, HTMLOptions{}, testKey)
	doc := parseHTML(t, page)
	for _, v := range dataOf(t, page).Views {
		if slices.ContainsFunc(v.keys(), func(k string) bool { return strings.HasPrefix(k, "hold_") }) {
			t.Errorf("view %s has hold columns without holds: %q", v.ID, v.keys())
		}
	}
	text := textOf(doc)
	if !strings.Contains(text, "not timed (only the function probes time holds)") || !strings.Contains(text, "waits: lock:contention_begin to contention_end") {
		t.Error("the header does not say what a tracepoint capture measured")
	}
	if len(path(t, chartsOf(t, doc)["klockBox"].Option, "series").([]any)) != 1 {
		t.Error("box chart of a capture without holds has a hold series")
	}
}

func TestWriteSummaryAcquireTimes(t *testing.T) {
	c, _ := acquireCapture(t)
	out := summary(t, c, 0)
	if !strings.HasPrefix(out, "contended") || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "total acquire") {
		t.Errorf("summary header does not name acquire times:\n%s", out)
	}
	if strings.Contains(out, "rwsem:R") {
		t.Errorf("a group of holds only is shown as contention:\n%s", out)
	}
	m := c.Meta
	want := fmt.Sprintf("fentry: %d acquires timed in 3.01 s, %d contended (longer than 2.90 us), 7 holds", m.Events.Begin, m.Events.Waits)
	if !strings.Contains(out, "\n"+want) {
		t.Errorf("health line does not say %q:\n%s", want, out)
	}
}

// TestBrowserHolds opens a report with hold times: the tables rebuilt by report.js show them, sort by
// them, and the box chart switches to holds and back, all without an error on the page.
func TestBrowserHolds(t *testing.T) {
	c, _ := acquireCapture(t)
	ctx := browser(t, c, HTMLOptions{Top: len(c.Records)})
	waitRows(t, ctx, "table-locks", len(c.Records))
	do(t, ctx, "sorting by total hold", chromedp.Click(chromedp.CSS(`#table-locks th[data-col="hold_total"]`)))
	var totals []uint64
	for _, r := range c.Records {
		totals = append(totals, r.HoldTotalNS)
	}
	slices.Sort(totals)
	slices.Reverse(totals)
	var want []string
	for _, ns := range totals {
		want = append(want, FormatDuration(float64(ns)))
	}
	if got := shownColumn(t, ctx, "table-locks", "hold_total"); !slices.Equal(got, want) {
		t.Errorf("by total hold: %q, want %q", got, want)
	}
	// The record of holds only has no acquire time to average.
	comms, avgs := shownColumn(t, ctx, "table-locks", "comm"), shownColumn(t, ctx, "table-locks", "avg")
	if i := slices.Index(comms, "ct-mmap-2"); i < 0 || avgs[i] != "0 ns" {
		t.Errorf("average acquire of the thread with holds only: threads %q, averages %q", comms, avgs)
	}
	do(t, ctx, "showing the callers", chromedp.Click(chromedp.CSS(`.tab[data-view="callers"]`)))
	if got := shownColumn(t, ctx, "table-locks", "hold_count"); !slices.Contains(got, "3") {
		t.Errorf("callers' holds %q, want the 3 holds of __x64_sys_mincore+0xf8", got)
	}
	shown := func() string {
		return eval[string](t, ctx, `(() => {
			const chart = echarts.getInstanceByDom(document.getElementById("klockBox"));
			const sel = chart.getOption().legend[0].selected;
			return Object.keys(sel).filter((k) => sel[k]).join(",");
		})()`)
	}
	if got := shown(); got != "acquire" {
		t.Errorf("box chart shows %q first, want acquire", got)
	}
	for _, series := range []string{"hold", "acquire"} {
		eval[bool](t, ctx, fmt.Sprintf(`(() => {
			echarts.getInstanceByDom(document.getElementById("klockBox")).dispatchAction({type: "legendSelect", name: %q});
			return true;
		})()`, series))
		if got := shown(); got != series {
			t.Errorf("box chart shows %q after selecting %s", got, series)
		}
	}
}
