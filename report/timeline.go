package report

import (
	"strconv"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/klockstat/klockstat/capture"
)

// The timeline charts: when in the window the waits ended (capture.Timeline), in the report per lock
// type and in the diff before and after on a time axis relative to each capture's window.

// timelineChart draws the wait time of each lock type per bucket of the window, stacked, with the
// command's start and end marked.
func timelineChart(tl *capture.Timeline) builtChart {
	n := tl.Buckets()
	labels := make([]string, n)
	tips := make([]tip, n)
	for b := range n {
		start := uint64(b) * tl.BucketNS
		labels[b] = FormatDuration(float64(start))
		tips[b] = tip{Title: FormatDuration(float64(start)) + " to " + FormatDuration(float64(start+tl.BucketNS))}
	}
	bar := charts.NewBar()
	var palette opts.Colors
	for _, s := range tl.Series {
		palette = append(palette, typeColor(s.Type))
	}
	bar.SetGlobalOptions(append(baseOptions("axis"),
		charts.WithColorsOpts(palette),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "0"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "time since the start of the capture", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "wait time", AxisLabel: &opts.AxisLabel{}}),
		charts.WithGridOpts(opts.Grid{Left: "12", Right: "24", Top: "48", Bottom: "32", ContainLabel: opts.Bool(true)}),
	)...)
	bar.SetXAxis(labels)
	all := make([]uint64, n)
	allWaits := make([]uint64, n)
	for i, s := range tl.Series {
		data := make([]opts.BarData, n)
		for b := range n {
			data[b] = opts.BarData{Value: s.TotalNS[b]}
			if s.Count[b] > 0 {
				all[b] += s.TotalNS[b]
				allWaits[b] += s.Count[b]
				tips[b].Rows = append(tips[b].Rows, []string{visible(s.Type), FormatDuration(float64(s.TotalNS[b])) + " in " + waitsText(s.Count[b]), typeColor(s.Type)})
			}
		}
		seriesOpts := []charts.SeriesOpts{charts.WithBarChartOpts(opts.BarChart{Stack: "all", BarCategoryGap: "8%"})}
		if i == 0 {
			seriesOpts = append(seriesOpts, commandMarks(tl)...)
		}
		bar.AddSeries(visible(s.Type), data, seriesOpts...)
	}
	for b := range n {
		tips[b].Rows = append(tips[b].Rows, []string{"all types", FormatDuration(float64(all[b])) + " in " + waitsText(allWaits[b])})
	}
	caption := "Wait time of the waits that ended in each " + FormatDuration(float64(tl.BucketNS)) + " of the capture, stacked by lock type."
	if tl.CommandStartNS != nil {
		caption += " The dashed lines mark when the command started and exited."
	}
	return builtChart{
		chart:      chart{ID: "klockTimeline", Title: "Wait time over the capture", Caption: caption, Height: 340, Wide: true},
		options:    bar,
		formatters: [][2]string{{"yAxis.0.axisLabel.formatter", "axisNS"}},
		tips:       [][]tip{tips},
	}
}

// commandMarks are the dashed lines at the buckets where the command started and exited.
func commandMarks(tl *capture.Timeline) []charts.SeriesOpts {
	var items []opts.MarkLineNameXAxisItem
	for _, m := range []struct {
		name string
		ns   *int64
	}{{"command start", tl.CommandStartNS}, {"command exit", tl.CommandEndNS}} {
		if m.ns == nil || *m.ns < 0 {
			continue
		}
		// A category axis places a mark by the index of its category.
		items = append(items, opts.MarkLineNameXAxisItem{Name: m.name, XAxis: min(int(uint64(*m.ns)/tl.BucketNS), tl.Buckets()-1)})
	}
	if len(items) == 0 {
		return nil
	}
	return []charts.SeriesOpts{
		charts.WithMarkLineNameXAxisItemOpts(items...),
		charts.WithMarkLineStyleOpts(opts.MarkLineStyle{
			Symbol:    []string{"none", "none"},
			Label:     &opts.Label{Show: opts.Bool(true), Formatter: "{b}", Position: "insideEndTop"},
			LineStyle: &opts.LineStyle{Color: "#1f2328", Type: "dashed", Width: 1.5},
		}),
	}
}

func waitsText(n uint64) string {
	if n == 1 {
		return "1 wait"
	}
	return strconv.FormatUint(n, 10) + " waits"
}

// relativeBins is how many parts of its window the diff's timeline divides each capture into.
const relativeBins = 100

// relativeWait is a capture's wait time per second in each hundredth of its window: a bucket counts in
// the hundredth its middle falls in. nil when the capture has no timeline.
func relativeWait(c *capture.Capture) []float64 {
	tl := c.Timeline
	if tl == nil || c.Meta.DurationNS <= 0 {
		return nil
	}
	bins := make([]float64, relativeBins)
	for _, s := range tl.Series {
		for b, ns := range s.TotalNS {
			mid := (float64(b) + 0.5) * float64(tl.BucketNS)
			bins[min(int(mid/float64(c.Meta.DurationNS)*relativeBins), relativeBins-1)] += float64(ns)
		}
	}
	binSeconds := float64(c.Meta.DurationNS) / relativeBins / 1e9
	for i := range bins {
		bins[i] /= binSeconds
	}
	return bins
}

// diffTimelineChart overlays the wait time per second of the two captures over their windows, each
// from its start (0 %) to its end (100 %): captures of different lengths compare by phase. It returns
// false when either capture has no timeline.
func diffTimelineChart(d *capture.Diff) (builtChart, bool) {
	var sides [2][]float64
	for side, c := range d.Captures {
		if sides[side] = relativeWait(c); sides[side] == nil {
			return builtChart{}, false
		}
	}
	labels := make([]string, relativeBins)
	tips := make([]tip, relativeBins)
	for i := range relativeBins {
		labels[i] = strconv.Itoa(i) + "%"
		tips[i] = tip{Title: strconv.Itoa(i) + "% to " + strconv.Itoa(i+1) + "% of the capture", Rows: [][]string{
			{"before", FormatDuration(sides[0][i]) + "/s", beforeColor},
			{"after", FormatDuration(sides[1][i]) + "/s", afterColor},
		}}
	}
	line := charts.NewLine()
	line.SetGlobalOptions(append(baseOptions("axis"),
		charts.WithColorsOpts(opts.Colors{beforeColor, afterColor}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "share of the capture's window", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "wait time per second", AxisLabel: &opts.AxisLabel{}}),
		charts.WithGridOpts(opts.Grid{Left: "12", Right: "24", Top: "48", Bottom: "32", ContainLabel: opts.Bool(true)}),
	)...)
	line.SetXAxis(labels)
	for side, name := range sideNames {
		data := make([]opts.LineData, relativeBins)
		for i, v := range sides[side] {
			data[i] = opts.LineData{Value: v}
		}
		line.AddSeries(name, data, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}),
			charts.WithLineStyleOpts(opts.LineStyle{Width: 2}))
	}
	return builtChart{
		chart: chart{ID: "klockDiffTimeline", Title: "Wait time over the capture, before and after", Height: 320, Wide: true,
			Caption: "Wait time per second of all lock types in each hundredth of each capture's window, from its start to its end: captures of different lengths compare by phase."},
		options: line,
		// The axis's name starts over the axis rather than centred on it, which would cut it at
		// the chart's left edge.
		settings:   []optionSetting{{"yAxis.0.nameTextStyle", map[string]any{"align": "left"}}},
		formatters: [][2]string{{"yAxis.0.axisLabel.formatter", "axisNS"}},
		tips:       [][]tip{tips},
	}, true
}
