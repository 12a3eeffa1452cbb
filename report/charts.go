package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"math/bits"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/klockstat/klockstat/capture"
)

// The charts are built with go-echarts, but only their options are used: go-echarts' own pages load
// ECharts from a CDN. Tooltips and axis labels are formatted by functions of report.js
// (klock.*), which read the exact numbers and the original names from the chart data JSON; the chart
// options themselves hold the names only for legends and axes, which ECharts draws on a canvas.

// typeColors are assigned to lock types in order of total wait, the same in every chart.
var typeColors = []string{
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
	"#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f5f8b", "#8cd17d",
	"#d37295", "#499894", "#86bcb6", "#f1ce63",
}

// chart is one chart of the page: a div for ECharts and the script that draws into it.
type chart struct {
	ID, Title, Caption string
	Height             int // pixels
	Wide               bool
	Script             template.JS
}

// typeSummary is one lock type's share of the wait and its distribution, from its histogram.
type typeSummary struct {
	Name    string  `json:"name"`
	Color   string  `json:"color"`
	Count   uint64  `json:"count"`
	TotalNS uint64  `json:"total_ns"`
	Share   float64 `json:"share"` // of the wait on all types
	MeanNS  float64 `json:"mean_ns"`
	MinNS   uint64  `json:"min_ns"`
	P25NS   uint64  `json:"p25_ns"`
	P50NS   uint64  `json:"p50_ns"`
	P75NS   uint64  `json:"p75_ns"`
	P95NS   uint64  `json:"p95_ns"`
	P99NS   uint64  `json:"p99_ns"`
	MaxNS   uint64  `json:"max_ns"`

	hist capture.Histogram
}

// summarizeTypes returns the types that had waits, by total wait.
func summarizeTypes(hists []capture.Histogram) []typeSummary {
	var types []typeSummary
	var total uint64
	for _, h := range hists {
		if h.Count == 0 {
			continue
		}
		s := h.Stats()
		types = append(types, typeSummary{
			Name: h.Type, Count: s.Count, TotalNS: s.TotalNS, MeanNS: s.MeanNS,
			MinNS: s.MinNS, P25NS: s.P25, P50NS: s.P50, P75NS: s.P75, P95NS: s.P95, P99NS: s.P99, MaxNS: s.MaxNS,
			hist: h,
		})
		total += s.TotalNS
	}
	slices.SortStableFunc(types, func(a, b typeSummary) int {
		return cmp.Or(cmp.Compare(b.TotalNS, a.TotalNS), cmp.Compare(b.Count, a.Count))
	})
	for i := range types {
		types[i].Color = typeColors[i%len(typeColors)]
		if total > 0 {
			types[i].Share = float64(types[i].TotalNS) / float64(total)
		}
	}
	return types
}

// waitRange is one power-of-two range [LoNS, HiNS) of the wait-time histogram chart.
type waitRange struct {
	LoNS uint64 `json:"lo_ns"`
	HiNS uint64 `json:"hi_ns"`
}

// callerSummary is one bar of the top-callers chart.
type callerSummary struct {
	Caller  string  `json:"caller"`
	Type    string  `json:"type"`
	Color   string  `json:"color"`
	Count   uint64  `json:"count"`
	TotalNS uint64  `json:"total_ns"`
	MaxNS   uint64  `json:"max_ns"`
	MeanNS  float64 `json:"mean_ns"`
}

// chartData is what the tooltips show, in the order of the charts' data. Holds has one entry per box
// chart category (Types, then the types with holds only), Count 0 where a type had no holds.
type chartData struct {
	Measure measure         `json:"measure"`
	Types   []typeSummary   `json:"types"`
	Holds   []typeSummary   `json:"holds"`
	Ranges  []waitRange     `json:"ranges"`
	Callers []callerSummary `json:"callers"`
}

// powerRange is the index of the power-of-two range holding the bucket starting at lo: 0 for [0, 1),
// p for [2^(p-1), 2^p). Buckets of the capture layout never straddle two ranges.
func powerRange(lo uint64) int { return bits.Len64(lo) }

func rangeBounds(p int) waitRange {
	switch {
	case p == 0:
		return waitRange{0, 1}
	case p == 64:
		return waitRange{1 << 63, math.MaxUint64}
	}
	return waitRange{1 << (p - 1), 1 << p}
}

// holdSummaries summarises the hold histograms for the box chart's categories: the wait types, then
// the types with holds only, whose names it returns.
func holdSummaries(types []typeSummary, holdHists []capture.Histogram) ([]typeSummary, []string) {
	byType := map[string]typeSummary{}
	for _, t := range summarizeTypes(holdHists) {
		byType[t.Name] = t
	}
	var holds []typeSummary
	var holdOnly []string
	for _, t := range types {
		h := byType[t.Name]
		h.Name, h.Color = t.Name, t.Color
		holds = append(holds, h)
		delete(byType, t.Name)
	}
	for i, h := range summarizeTypes(holdHists) {
		if _, ok := byType[h.Name]; ok {
			h.Color = typeColors[(len(types)+i)%len(typeColors)]
			holds = append(holds, h)
			holdOnly = append(holdOnly, h.Name)
		}
	}
	return holds, holdOnly
}

// buildCharts builds the four charts and the JSON their tooltips read. byCaller holds the groups with
// waits only; holdHists the histograms of hold times, if any.
func buildCharts(types []typeSummary, holdHists []capture.Histogram, byCaller []capture.Group, top int, ms measure) ([]chart, template.JS, error) {
	data := chartData{Measure: ms, Types: types, Holds: []typeSummary{}, Callers: []callerSummary{}}
	var holdOnly []string
	if len(holdHists) > 0 {
		data.Holds, holdOnly = holdSummaries(types, holdHists)
	}
	colors := make(map[string]string, len(types))
	for _, t := range types {
		colors[t.Name] = t.Color
	}
	for _, g := range byCaller[:min(top, len(byCaller))] {
		data.Callers = append(data.Callers, callerSummary{
			Caller: callerText(g.Caller), Type: g.Type, Color: colors[g.Type],
			Count: g.Count, TotalNS: g.TotalNS, MaxNS: g.MaxNS, MeanNS: g.MeanNS(),
		})
	}
	var counts [][]uint64 // counts[type][range - lowest]
	data.Ranges, counts = waitRanges(types)

	built := []builtChart{
		{chart{ID: "klockDoughnut", Title: title(ms.Time + " time by lock type"), Caption: fmt.Sprintf("Share of the total %s time per lock type.", ms.Time), Height: 340},
			doughnutChart(types, ms)},
		{chart{ID: "klockBox", Title: title(ms.Time + " distribution by lock type"), Caption: boxCaption(ms, len(data.Holds) > 0), Height: 340},
			boxChart(types, data.Holds, holdOnly, ms)},
		{chart{ID: "klockHistogram", Title: title(ms.Time + " time histogram"), Caption: fmt.Sprintf("Number of %s per power-of-two range of %s time, all locks, stacked by lock type.", ms.Events, ms.Time), Height: 360, Wide: true},
			histogramChart(types, data.Ranges, counts, ms)},
		{chart{ID: "klockCallers", Title: fmt.Sprintf("Top %d callers by total %s", len(data.Callers), ms.Time), Caption: "Callers (first frame outside the lock functions) per lock type, coloured by lock type.", Height: 80 + 26*len(data.Callers), Wide: true},
			callersChart(data.Callers, ms)},
	}
	return renderCharts(built, data, "chart data")
}

// builtChart is a chart with the ECharts options that draw it.
type builtChart struct {
	chart
	options echartsChart
}

// renderCharts writes each chart's drawing script and encodes data, which
// the page's script reads, for a script element.
func renderCharts(built []builtChart, data any, what string) ([]chart, template.JS, error) {
	out := make([]chart, len(built))
	for i, b := range built {
		script, err := chartScript(b.ID, b.options)
		if err != nil {
			return nil, "", err
		}
		out[i] = b.chart
		out[i].Script = template.JS(script)
	}
	js, err := json.Marshal(data) // escapes <, > and &: safe inside a script element
	if err != nil {
		return nil, "", fmt.Errorf("encoding the %s: %w", what, err)
	}
	return out, template.JS(js), nil
}

// waitRanges sums each type's histogram into power-of-two ranges, from the lowest to the highest range
// with waits, so empty ranges in between show as gaps.
func waitRanges(types []typeSummary) ([]waitRange, [][]uint64) {
	lowest, highest := 64, 0
	for _, t := range types {
		for _, b := range t.hist.Buckets {
			lowest, highest = min(lowest, powerRange(b.LoNS)), max(highest, powerRange(b.LoNS))
		}
	}
	if lowest > highest {
		return []waitRange{}, make([][]uint64, len(types))
	}
	ranges := make([]waitRange, 0, highest-lowest+1)
	for p := lowest; p <= highest; p++ {
		ranges = append(ranges, rangeBounds(p))
	}
	counts := make([][]uint64, len(types))
	for i, t := range types {
		counts[i] = make([]uint64, len(ranges))
		for _, b := range t.hist.Buckets {
			counts[i][powerRange(b.LoNS)-lowest] += b.Count
		}
	}
	return ranges, counts
}

// echartsChart is what every go-echarts chart provides: Validate completes the options, JSON returns them.
type echartsChart interface {
	Validate()
	JSON() map[string]any
}

// functionMarkers is how go-echarts marks JavaScript in options: opts.FuncOpts wraps code in "__f__",
// and its renderer deletes each marker with the quote next to it, turning the JSON string into code.
var functionMarkers = regexp.MustCompile(`(__f__")|("__f__)|(__f__)`)

// chartScript is the script that draws c into the element with the given id. It does what go-echarts'
// RenderSnippet does, except that the options are encoded with encoding/json's HTML escaping, so no
// "<", ">" or "&" of a name reaches the page unescaped, not even inside a script.
func chartScript(id string, c echartsChart) (string, error) {
	c.Validate()
	option, err := json.Marshal(c.JSON())
	if err != nil {
		return "", fmt.Errorf("encoding the options of chart %s: %w", id, err)
	}
	option = functionMarkers.ReplaceAll(option, nil)
	return scriptSafe(fmt.Sprintf("echarts.init(document.getElementById(%q)).setOption(%s);", id, option)), nil
}

// chartText keeps a name from a capture from turning into code: a name containing go-echarts' function
// marker "__f__" would end its JSON string early once the markers are removed (see chartScript). A
// zero-width space, which the canvas does not show, splits the marker; the tooltips show the original
// names from the chart data.
func chartText(s string) string {
	for strings.Contains(s, "__f__") {
		s = strings.ReplaceAll(s, "__f__", "__f\u200b__")
	}
	return s
}

// baseOptions are the options of every chart. The element and its size are the page's (report.html).
func baseOptions(tooltip opts.Tooltip) []charts.GlobalOpts {
	tooltip.Show = opts.Bool(true)
	return []charts.GlobalOpts{charts.WithAnimation(false), charts.WithTooltipOpts(tooltip)}
}

// title capitalises a chart title's first letter.
func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

func boxCaption(ms measure, holds bool) string {
	c := fmt.Sprintf("Min, 25th percentile, median, 75th percentile and max of single %s (log scale).", ms.Events)
	if holds {
		c += " The legend switches to hold times: acquire return to release."
	}
	return c
}

func doughnutChart(types []typeSummary, ms measure) echartsChart {
	var total uint64
	for _, t := range types {
		total += t.TotalNS
	}
	pie := charts.NewPie()
	pie.SetGlobalOptions(append(baseOptions(opts.Tooltip{Trigger: "item", Formatter: opts.FuncOpts("klock.tooltip.doughnut")}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Orient: "vertical", Right: "8", Top: "middle"}),
		// The total in the hole of the doughnut.
		charts.WithTitleOpts(opts.Title{
			Title: FormatDuration(float64(total)), Subtitle: "total " + ms.Time, Left: "38%", Top: "middle", TextAlign: "center",
			TitleStyle: &opts.TextStyle{FontSize: 18, Color: "#1f2328"}, SubtitleStyle: &opts.TextStyle{FontSize: 12, Color: "#656d76"},
		}),
	)...)
	data := make([]opts.PieData, len(types))
	for i, t := range types {
		data[i] = opts.PieData{Name: chartText(t.Name), Value: t.TotalNS, ItemStyle: &opts.ItemStyle{Color: t.Color}}
		if t.Share < 0.01 {
			data[i].Label = &opts.Label{Show: opts.Bool(false)} // its label would only pile up with others
		}
	}
	pie.AddSeries(ms.Time+" time", data,
		charts.WithPieChartOpts(opts.PieChart{Radius: []string{"42%", "70%"}, Center: []string{"38%", "50%"}}),
		charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Formatter: string(opts.FuncOpts("klock.label.share"))}),
		charts.WithItemStyleOpts(opts.ItemStyle{BorderColor: "#fff", BorderWidth: 1}),
	)
	return pie
}

// boxChart draws one box per type of single waits and, when holds were timed, a second series of
// hold times over the same categories (holds, then the types with holds only), one series shown at a
// time: the legend switches between them.
func boxChart(types, holds []typeSummary, holdOnly []string, ms measure) echartsChart {
	box := charts.NewBoxPlot()
	legend := opts.Legend{Show: opts.Bool(false)}
	axis := ms.Time + " time"
	if len(holds) > 0 {
		legend = opts.Legend{Show: opts.Bool(true), SelectedMode: "single", Top: "0", Data: []string{ms.Time, "hold"}}
		axis = "time"
	}
	box.SetGlobalOptions(append(baseOptions(opts.Tooltip{Trigger: "item", Formatter: opts.FuncOpts("klock.tooltip.box")}),
		charts.WithLegendOpts(legend),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", AxisLabel: &opts.AxisLabel{Interval: "0", HideOverlap: opts.Bool(true)}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: axis, AxisLabel: &opts.AxisLabel{Formatter: opts.FuncOpts("klock.axisNS")}}),
		charts.WithGridOpts(opts.Grid{Left: "12", Right: "16", Top: "40", Bottom: "8", ContainLabel: opts.Bool(true)}),
	)...)
	var names []string
	for _, t := range types {
		names = append(names, chartText(t.Name))
	}
	for _, name := range holdOnly {
		names = append(names, chartText(name))
	}
	series := func(summaries []typeSummary) []opts.BoxPlotData {
		data := make([]opts.BoxPlotData, len(names))
		for i := range names {
			data[i] = opts.BoxPlotData{Name: names[i], Value: []string{"-", "-", "-", "-", "-"}} // nothing to draw
			if i >= len(summaries) || summaries[i].Count == 0 {
				continue
			}
			t := summaries[i]
			// A log axis cannot show 0; a 0 ns wait is drawn at 1 ns (the tooltip says 0).
			values := []uint64{t.MinNS, t.P25NS, t.P50NS, t.P75NS, t.MaxNS}
			for j := range values {
				values[j] = max(values[j], 1)
			}
			data[i] = opts.BoxPlotData{Name: names[i], Value: values, ItemStyle: &opts.ItemStyle{Color: t.Color + "40", BorderColor: t.Color, BorderWidth: 1.5}}
		}
		return data
	}
	box.SetXAxis(names).AddSeries(ms.Time, series(types))
	if len(holds) > 0 {
		box.AddSeries("hold", series(holds))
	}
	return box
}

func histogramChart(types []typeSummary, ranges []waitRange, counts [][]uint64, ms measure) echartsChart {
	bar := charts.NewBar()
	colors := make(opts.Colors, len(types))
	for i, t := range types {
		colors[i] = t.Color
	}
	bar.SetGlobalOptions(append(baseOptions(opts.Tooltip{Trigger: "axis", Formatter: opts.FuncOpts("klock.tooltip.histogram"), AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithColorsOpts(colors),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "0"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: ms.Time + " time (range start)", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: ms.Events, AxisLabel: &opts.AxisLabel{}}),
		charts.WithGridOpts(opts.Grid{Left: "12", Right: "24", Top: "48", Bottom: "32", ContainLabel: opts.Bool(true)}),
	)...)
	labels := make([]string, len(ranges))
	for i, r := range ranges {
		labels[i] = axisDuration(r.LoNS)
	}
	bar.SetXAxis(labels)
	for i, t := range types {
		data := make([]opts.BarData, len(ranges))
		for j, n := range counts[i] {
			data[j] = opts.BarData{Value: n}
		}
		bar.AddSeries(chartText(t.Name), data, charts.WithBarChartOpts(opts.BarChart{Stack: "waits", BarCategoryGap: "12%"}))
	}
	return bar
}

func callersChart(callers []callerSummary, ms measure) echartsChart {
	bar := charts.NewBar()
	bar.SetGlobalOptions(append(baseOptions(opts.Tooltip{Trigger: "item", Formatter: opts.FuncOpts("klock.tooltip.callers")}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "total " + ms.Time, NameLocation: "middle", NameGap: 28, AxisLabel: &opts.AxisLabel{Formatter: opts.FuncOpts("klock.axisNS")}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Inverse: opts.Bool(true), AxisLabel: &opts.AxisLabel{Interval: "0", Width: 300, Overflow: "truncate"}}),
		charts.WithGridOpts(opts.Grid{Left: "12", Right: "40", Top: "8", Bottom: "28", ContainLabel: opts.Bool(true)}),
	)...)
	labels := make([]string, len(callers))
	data := make([]opts.BarData, len(callers))
	for i, c := range callers {
		labels[i] = chartText(c.Caller)
		data[i] = opts.BarData{Value: c.TotalNS, ItemStyle: &opts.ItemStyle{Color: c.Color}}
	}
	bar.SetXAxis(labels).XYReversal()
	bar.AddSeries("total "+ms.Time, data, charts.WithBarChartOpts(opts.BarChart{BarCategoryGap: "28%"}))
	return bar
}

// axisDuration renders a power-of-two range start briefly for an axis label: "512 ns", "1 us", "4.1 us",
// "131 us", "1 ms". report.js labels value axes the same way (klock.axisNS).
func axisDuration(ns uint64) string {
	v, unit := float64(ns), "ns"
	for _, u := range []struct {
		name  string
		scale float64
	}{{"us", 1e3}, {"ms", 1e6}, {"s", 1e9}} {
		if float64(ns) >= u.scale {
			v, unit = float64(ns)/u.scale, u.name
		}
	}
	s := strconv.FormatFloat(v, 'f', 0, 64)
	if v < 10 {
		s = strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0")
	}
	return s + " " + unit
}
