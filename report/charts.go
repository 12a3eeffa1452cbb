package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/klockstat/klockstat/capture"
)

// The charts of both pages are built here, the same way: go-echarts builds each chart's options,
// which are encoded as JSON without any change (no function markers: go-echarts' own pages load
// ECharts from a CDN and turn marked strings into code, which a name from a capture could exploit).
// Where ECharts calls a function, a formatter, the chart names one of page.js's by the path of the
// option it goes in; the tooltips' texts are written here, one per point, so page.js formats nothing.

// chart is one figure of a page: a title, a caption and the element ECharts draws into.
type chart struct {
	ID, Title, Caption string
	Height             int // pixels
	Wide               bool
}

// tip is the tooltip of one point of a chart: a title and rows of label, value and an optional colour.
type tip struct {
	Title string     `json:"t"`
	Color string     `json:"c,omitempty"`
	Rows  [][]string `json:"r"`
}

// builtChart is a chart with what draws it: its options, the formatters page.js sets in them, and
// its tooltips, by series and point (an axis tooltip, which shows all series, by point in Tips[0]).
type builtChart struct {
	chart
	options    echartsChart
	formatters [][2]string // option path ("yAxis.0.axisLabel.formatter"), formatter name ("axisNS", "tip")
	tips       [][]tip
	settings   []optionSetting // options go-echarts has no field for
}

// optionSetting sets the option at Path ("yAxis.0.startValue": keys, and indexes of lists) to Value.
type optionSetting struct {
	Path  string
	Value any
}

// applySettings sets settings in a chart's options, which it returns as plain JSON values.
func applySettings(options map[string]any, settings []optionSetting) (any, error) {
	if len(settings) == 0 {
		return options, nil
	}
	b, err := json.Marshal(options)
	if err != nil {
		return nil, fmt.Errorf("encoding chart options: %w", err)
	}
	var plain any
	if err := json.Unmarshal(b, &plain); err != nil {
		return nil, fmt.Errorf("decoding chart options: %w", err)
	}
	for _, s := range settings {
		keys := strings.Split(s.Path, ".")
		at := plain
		for _, k := range keys[:len(keys)-1] {
			switch v := at.(type) {
			case map[string]any:
				at = v[k]
			case []any:
				i, err := strconv.Atoi(k)
				if err != nil || i < 0 || i >= len(v) {
					return nil, fmt.Errorf("chart option %s: no element %s", s.Path, k)
				}
				at = v[i]
			}
		}
		m, ok := at.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("chart option %s: not in an object", s.Path)
		}
		m[keys[len(keys)-1]] = s.Value
	}
	return plain, nil
}

// chartSet is what page.html's charts part renders: the figures and the JSON that draws them.
type chartSet struct {
	Figures []chart
	JSON    template.JS
}

// echartsChart is what every go-echarts chart provides: Validate completes the options, JSON returns them.
type echartsChart interface {
	Validate()
	JSON() map[string]any
}

// renderCharts encodes the charts' options, formatters and tips for page.js.
func renderCharts(built []builtChart) (chartSet, error) {
	type spec struct {
		ID         string      `json:"id"`
		Option     any         `json:"option"`
		Formatters [][2]string `json:"formatters"`
		Tips       [][]tip     `json:"tips"`
		Decal      any         `json:"readerDecal"` // over the items and series of reader types
	}
	set := chartSet{}
	specs := make([]spec, len(built))
	for i, b := range built {
		b.options.Validate()
		option, err := applySettings(b.options.JSON(), b.settings)
		if err != nil {
			return chartSet{}, fmt.Errorf("chart %s: %w", b.ID, err)
		}
		specs[i] = spec{ID: b.ID, Option: option, Formatters: append([][2]string{{"tooltip.formatter", "tip"}}, b.formatters...), Tips: b.tips, Decal: readerDecal}
		set.Figures = append(set.Figures, b.chart)
	}
	js, err := json.Marshal(specs) // escapes <, > and &: safe inside a script element
	if err != nil {
		return chartSet{}, fmt.Errorf("encoding the charts: %w", err)
	}
	set.JSON = template.JS(js)
	return set, nil
}

// baseOptions are the options of every chart. The element and its size are the page's (page.html).
func baseOptions(trigger string) []charts.GlobalOpts {
	tooltip := opts.Tooltip{Show: opts.Bool(true), Trigger: trigger}
	if trigger == "axis" {
		tooltip.AxisPointer = &opts.AxisPointer{Type: "shadow"}
	}
	return []charts.GlobalOpts{charts.WithAnimation(false), charts.WithTooltipOpts(tooltip)}
}

// slice is one slice of a doughnut.
type slice struct {
	Name, Color string
	Value       float64
	Share       float64 // of the doughnut
}

// doughnut draws slices around their total, written in the hole with a subtitle.
func doughnut(slices []slice, total, subtitle string) echartsChart {
	pie := charts.NewPie()
	pie.SetGlobalOptions(append(baseOptions("item"),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Orient: "vertical", Right: "8", Top: "middle"}),
		charts.WithTitleOpts(opts.Title{
			Title: total, Subtitle: subtitle, Left: "37%", Top: "middle", TextAlign: "center",
			TitleStyle: &opts.TextStyle{FontSize: 18, Color: "#1f2328"}, SubtitleStyle: &opts.TextStyle{FontSize: 12, Color: "#656d76"},
		}),
	)...)
	data := make([]opts.PieData, len(slices))
	for i, s := range slices {
		// A label without {placeholders} is shown as it is written.
		label := &opts.Label{Show: opts.Bool(true), Formatter: strconv.FormatFloat(100*s.Share, 'f', 1, 64) + "%"}
		if s.Share < 0.01 {
			label.Show = opts.Bool(false) // its label would only pile up with others
		}
		data[i] = opts.PieData{Name: visible(s.Name), Value: s.Value, ItemStyle: &opts.ItemStyle{Color: s.Color}, Label: label}
	}
	pie.AddSeries("share", data,
		charts.WithPieChartOpts(opts.PieChart{Radius: []string{"42%", "70%"}, Center: []string{"37%", "50%"}}),
		charts.WithItemStyleOpts(opts.ItemStyle{BorderColor: "#fff", BorderWidth: 1}),
	)
	return pie
}

// boxSeries is one series of a box chart: a box per category, nil where the category has none.
type boxSeries struct {
	Name   string
	Colors []string     // per category, or one for all
	Boxes  []*[5]uint64 // min, p25, median, p75, max
}

// boxChart draws the distributions of categories on a log axis. With more than one series, a legend
// names them; single selects one series at a time.
func boxChart(categories []string, series []boxSeries, axis string, single bool) echartsChart {
	box := charts.NewBoxPlot()
	legend := opts.Legend{Show: opts.Bool(len(series) > 1), Top: "0"}
	if single {
		legend.SelectedMode = "single"
	}
	// The legend shows a series in its palette colour: its first box's.
	var colors opts.Colors
	for _, s := range series {
		if len(s.Colors) > 0 {
			colors = append(colors, s.Colors[0])
		}
	}
	box.SetGlobalOptions(append(baseOptions("item"),
		charts.WithColorsOpts(colors),
		charts.WithLegendOpts(legend),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", AxisLabel: &opts.AxisLabel{Interval: "0", HideOverlap: opts.Bool(true)}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: axis, AxisLabel: &opts.AxisLabel{}}),
		charts.WithGridOpts(opts.Grid{Left: "12", Right: "16", Top: "44", Bottom: "8", ContainLabel: opts.Bool(true)}),
	)...)
	names := make([]string, len(categories))
	for i, c := range categories {
		names[i] = visible(c)
	}
	box.SetXAxis(names)
	for _, s := range series {
		data := make([]opts.BoxPlotData, len(categories))
		for i := range categories {
			b := s.Boxes[i]
			if b == nil {
				data[i] = opts.BoxPlotData{Value: []string{}} // nothing to draw
				continue
			}
			color := s.Colors[min(i, len(s.Colors)-1)]
			// A log axis cannot show 0; a 0 ns wait is drawn at 1 ns (the tooltip says 0).
			v := make([]uint64, 5)
			for j := range v {
				v[j] = max(b[j], 1)
			}
			data[i] = opts.BoxPlotData{Value: v, ItemStyle: &opts.ItemStyle{Color: color + "40", BorderColor: color, BorderWidth: 1.5}}
		}
		box.AddSeries(s.Name, data)
	}
	return box
}

// barSeries is one series of a histogram: a value per range, NaN for no bar.
type barSeries struct {
	Name, Color string
	Values      []float64
}

// histogram draws series over power-of-two ranges of time: stacked, or overlaid (the later series
// half transparent over the earlier) on a log axis, with the settings that axis needs.
func histogram(ranges []waitRange, series []barSeries, xName, yName string, overlaid bool) (echartsChart, []optionSetting) {
	bar := charts.NewBar()
	colors := make(opts.Colors, len(series))
	for i, s := range series {
		colors[i] = s.Color
	}
	y := opts.YAxis{Type: "value", Name: yName, AxisLabel: &opts.AxisLabel{}}
	var settings []optionSetting
	if overlaid {
		// Log scale: the two captures' counts can be orders of magnitude apart (more threads, fewer and
		// longer waits), and a linear axis would flatten the smaller one. Its bars rise from 1, so a
		// rate under 1/s would hang below the axis like a negative one: the axis, and the bars, start
		// at the power of ten under the smallest value instead.
		y.Type = "log"
		if floor := logFloor(series); floor < 1 {
			y.Min = floor
			settings = append(settings, optionSetting{"yAxis.0.startValue", floor})
		}
	}
	bar.SetGlobalOptions(append(baseOptions("axis"),
		charts.WithColorsOpts(colors),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "0"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: xName, NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(y),
		charts.WithGridOpts(opts.Grid{Left: "12", Right: "24", Top: "48", Bottom: "32", ContainLabel: opts.Bool(true)}),
	)...)
	labels := make([]string, len(ranges))
	for i, r := range ranges {
		labels[i] = axisDuration(r.LoNS)
	}
	bar.SetXAxis(labels)
	for _, s := range series {
		data := make([]opts.BarData, len(s.Values))
		for i, v := range s.Values {
			data[i] = opts.BarData{Value: v}
			if math.IsNaN(v) || overlaid && v == 0 {
				data[i].Value = "-" // no bar: a log axis has no 0
			}
		}
		if overlaid {
			bar.AddSeries(visible(s.Name), data,
				charts.WithBarChartOpts(opts.BarChart{BarGap: "-100%", BarCategoryGap: "18%"}),
				charts.WithItemStyleOpts(opts.ItemStyle{Opacity: opts.Float(0.6)}))
		} else {
			bar.AddSeries(visible(s.Name), data, charts.WithBarChartOpts(opts.BarChart{Stack: "all", BarCategoryGap: "12%"}))
		}
	}
	return bar, settings
}

// logFloor is the power of ten at or under the smallest positive value of series; 1 when there is none.
func logFloor(series []barSeries) float64 {
	smallest := math.Inf(1)
	for _, s := range series {
		for _, v := range s.Values {
			if v > 0 {
				smallest = min(smallest, v)
			}
		}
	}
	if math.IsInf(smallest, 1) {
		return 1
	}
	return math.Pow(10, math.Floor(math.Log10(smallest)))
}

// hbar is one bar of a horizontal bar chart, with its value written as Text at its end.
type hbar struct {
	Label, Color string
	Value        float64
	Text         string
}

// hbars draws labelled bars across a value axis named axis, with the settings they need. Where one
// bar dwarfs the others, the others still show: each is at least a few pixels long, and its value
// is written at its end.
func hbars(bars []hbar, axis string) (echartsChart, []optionSetting) {
	bar := charts.NewBar()
	bar.SetGlobalOptions(append(baseOptions("item"),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: axis, NameLocation: "middle", NameGap: 28, AxisLabel: &opts.AxisLabel{}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Inverse: opts.Bool(true), AxisLabel: &opts.AxisLabel{Interval: "0", Width: 300, Overflow: "truncate"}}),
		// Room on both sides for the values written at the bars' ends.
		charts.WithGridOpts(opts.Grid{Left: "12", Right: "80", Top: "8", Bottom: "28", ContainLabel: opts.Bool(true)}),
	)...)
	labels := make([]string, len(bars))
	data := make([]opts.BarData, len(bars))
	for i, b := range bars {
		labels[i] = visible(b.Label)
		// A label without {placeholders} is shown as it is written. It is right of its bar, a
		// decrease's too (from the zero line): left of the longest decrease it would lie over the
		// category's label.
		data[i] = opts.BarData{Value: b.Value, ItemStyle: &opts.ItemStyle{Color: b.Color},
			Label: &opts.Label{Show: opts.Bool(true), Position: "right", Formatter: b.Text, Color: "#1f2328"}}
	}
	bar.SetXAxis(labels).XYReversal()
	bar.AddSeries(axis, data, charts.WithBarChartOpts(opts.BarChart{BarCategoryGap: "28%"}))
	return bar, []optionSetting{{"series.0.barMinHeight", 3}}
}

// The report's charts.

// typeSummary is one lock type's share of the wait and its distribution, from its histogram.
type typeSummary struct {
	Name  string
	Color string
	Share float64 // of the wait on all types
	capture.Stats
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
		types = append(types, typeSummary{Name: h.Type, Stats: h.Stats(), hist: h})
		total += h.TotalNS
	}
	slices.SortStableFunc(types, func(a, b typeSummary) int {
		return cmp.Or(cmp.Compare(b.TotalNS, a.TotalNS), cmp.Compare(b.Count, a.Count))
	})
	for i := range types {
		types[i].Color = typeColor(types[i].Name)
		if total > 0 {
			types[i].Share = float64(types[i].TotalNS) / float64(total)
		}
	}
	return types
}

// box is the box a box chart draws of a distribution.
func box(s capture.Stats) *[5]uint64 {
	return &[5]uint64{s.MinNS, s.P25, s.P50, s.P75, s.MaxNS}
}

// distributionTip is the tooltip of a box.
func distributionTip(title, color, events string, s capture.Stats) tip {
	f := func(ns uint64) string { return FormatDuration(float64(ns)) }
	rows := [][]string{
		{events, strconv.FormatUint(s.Count, 10)},
		{"min", f(s.MinNS)}, {"p25", f(s.P25)}, {"median", f(s.P50)}, {"p75", f(s.P75)},
		{"p95", f(s.P95)}, {"p99", f(s.P99)}, {"max", f(s.MaxNS)}, {"mean", FormatDuration(s.MeanNS)},
	}
	if s.MeanNS > float64(s.P99) {
		rows = append(rows, []string{"mean > p99", "a few very long waits"})
	}
	return tip{Title: visible(title), Color: color, Rows: rows}
}

// meanAboveP99 explains a distribution whose mean is above its 99th percentile.
func meanAboveP99(s capture.Stats) string {
	return fmt.Sprintf("The average (%s) is above p99 (%s): fewer than 1 in 100 waits, up to %s long, weigh more in it than all the others.",
		FormatDuration(s.MeanNS), FormatDuration(float64(s.P99)), FormatDuration(float64(s.MaxNS)))
}

// waitRange is one power-of-two range [LoNS, HiNS) of a histogram chart.
type waitRange struct {
	LoNS, HiNS uint64
}

func (r waitRange) String() string {
	return "[" + FormatDuration(float64(r.LoNS)) + ", " + FormatDuration(float64(r.HiNS)) + ")"
}

// powerRange is the index of the power-of-two range holding the bucket starting at lo: 0 for [0, 1),
// p for [2^(p-1), 2^p). Buckets of the capture layout never straddle two ranges.
func powerRange(lo uint64) int { return bits.Len64(lo) }

// waitRanges sums each histogram into power-of-two ranges, the same for all, from the lowest to the
// highest range with waits, so empty ranges in between show as gaps.
func waitRanges(hists []capture.Histogram) ([]waitRange, [][]uint64) {
	lowest, highest := 64, 0
	for _, h := range hists {
		for _, b := range h.Buckets {
			lowest, highest = min(lowest, powerRange(b.LoNS)), max(highest, powerRange(b.LoNS))
		}
	}
	counts := make([][]uint64, len(hists))
	if lowest > highest {
		return []waitRange{}, counts
	}
	ranges := make([]waitRange, 0, highest-lowest+1)
	for p := lowest; p <= highest; p++ {
		switch {
		case p == 0:
			ranges = append(ranges, waitRange{0, 1})
		case p == 64:
			ranges = append(ranges, waitRange{1 << 63, math.MaxUint64})
		default:
			ranges = append(ranges, waitRange{1 << (p - 1), 1 << p})
		}
	}
	for i, h := range hists {
		counts[i] = make([]uint64, len(ranges))
		for _, b := range h.Buckets {
			counts[i][powerRange(b.LoNS)-lowest] += b.Count
		}
	}
	return ranges, counts
}

// reportCharts builds the report's four charts of an's capture, top callers in the callers' chart.
func reportCharts(an *model, top int) (chartSet, error) {
	types, holdHists, timeline, byCaller, callers, ms := an.types(), an.c.HoldHistograms, an.c.Timeline, an.contended(), an.callers(), an.ms
	var total uint64
	slices := make([]slice, len(types))
	hists := make([]capture.Histogram, len(types))
	var doughnutTips []tip
	waited := make(map[string]bool, len(types))
	for i, t := range types {
		waited[t.Name] = true
		total += t.TotalNS
		slices[i] = slice{Name: t.Name, Color: t.Color, Value: float64(t.TotalNS), Share: t.Share}
		hists[i] = t.hist
		doughnutTips = append(doughnutTips, tip{Title: visible(t.Name), Color: t.Color, Rows: [][]string{
			{"total " + ms.Time, FormatDuration(float64(t.TotalNS)) + " (" + percent(t.Share) + ")"},
			{ms.Events, strconv.FormatUint(t.Count, 10)},
			{"average", FormatDuration(t.MeanNS)},
		}})
	}

	// The box chart: one box per type of single waits and, when holds were timed, a second series of
	// hold times over the same categories (the wait types, then the types with holds only), one
	// series shown at a time.
	var categories []string
	waits := boxSeries{Name: ms.Time}
	var waitTips, holdTips []tip
	for _, t := range types {
		categories = append(categories, t.Name)
		waits.Colors = append(waits.Colors, t.Color)
		waits.Boxes = append(waits.Boxes, box(t.Stats))
		waitTips = append(waitTips, distributionTip(t.Name, t.Color, ms.Events, t.Stats))
	}
	series := []boxSeries{waits}
	axis := ms.Time + " time"
	if len(holdHists) > 0 {
		holds := boxSeries{Name: "hold"}
		byType := map[string]typeSummary{}
		for _, h := range an.holdTypes() {
			byType[h.Name] = h
		}
		for _, h := range an.holdTypes() {
			if !waited[h.Name] {
				categories = append(categories, h.Name)
			}
		}
		for i, name := range categories {
			color := typeColor(name)
			holds.Colors = append(holds.Colors, color)
			h, ok := byType[name]
			if !ok {
				holds.Boxes = append(holds.Boxes, nil)
				holdTips = append(holdTips, tip{Title: visible(name), Color: color, Rows: [][]string{{"holds", "none timed"}}})
				continue
			}
			holds.Boxes = append(holds.Boxes, box(h.Stats))
			holdTips = append(holdTips, distributionTip(name, color, "holds", h.Stats))
			if i >= len(waits.Boxes) {
				waits.Boxes = append(waits.Boxes, nil)
				waits.Colors = append(waits.Colors, color)
				waitTips = append(waitTips, tip{Title: visible(name), Color: color, Rows: [][]string{{ms.Events, "none"}}})
			}
		}
		series = []boxSeries{waits, holds}
		axis = "time"
	}

	ranges, counts := waitRanges(hists)
	bars := make([]barSeries, len(types))
	for i, t := range types {
		bars[i] = barSeries{Name: t.Name, Color: t.Color, Values: make([]float64, len(ranges))}
		for j, n := range counts[i] {
			bars[i].Values[j] = float64(n)
		}
	}
	histTips := make([]tip, len(ranges))
	for j, r := range ranges {
		var all uint64
		histTips[j] = tip{Title: r.String()}
		for i, t := range types {
			if n := counts[i][j]; n > 0 {
				all += n
				histTips[j].Rows = append(histTips[j].Rows, []string{visible(t.Name), strconv.FormatUint(n, 10), t.Color})
			}
		}
		histTips[j].Rows = append(histTips[j].Rows, []string{"all types", strconv.FormatUint(all, 10) + " " + ms.Events})
	}

	var callerBars []hbar
	var callerTips []tip
	for i, g := range byCaller[:min(top, len(byCaller))] {
		callerBars = append(callerBars, hbar{Label: callerText(callers[i]), Color: typeColor(g.Type), Value: float64(g.TotalNS), Text: FormatDuration(float64(g.TotalNS))})
		callerTips = append(callerTips, tip{Title: visible(callerText(callers[i])), Rows: [][]string{
			{"lock type", visible(g.Type)},
			{"total " + ms.Time, FormatDuration(float64(g.TotalNS))},
			{ms.Events, strconv.FormatUint(g.Count, 10)},
			{"average", FormatDuration(g.MeanNS())},
			{"max", FormatDuration(float64(g.MaxNS))},
		}})
	}

	boxCaption := fmt.Sprintf("Min, 25th percentile, median, 75th percentile and max of single %s (log scale).", ms.Events)
	if len(holdHists) > 0 {
		boxCaption += " The legend switches to hold times: acquire return to release."
	}
	histOptions, histSettings := histogram(ranges, bars, ms.Time+" time (range start)", ms.Events, false)
	callerOptions, callerSettings := hbars(callerBars, "total "+ms.Time)
	built := []builtChart{
		{chart: chart{ID: "klockDoughnut", Title: title(ms.Time + " time by lock type"), Caption: fmt.Sprintf("Share of the total %s time per lock type.", ms.Time), Height: 340},
			options: doughnut(slices, FormatDuration(float64(total)), "total "+ms.Time), tips: [][]tip{doughnutTips}},
		{chart: chart{ID: "klockBox", Title: title(ms.Time + " distribution by lock type"), Caption: boxCaption, Height: 340},
			options: boxChart(categories, series, axis, len(series) > 1), formatters: [][2]string{{"yAxis.0.axisLabel.formatter", "axisNS"}}, tips: [][]tip{waitTips, holdTips}},
		{chart: chart{ID: "klockHistogram", Title: title(ms.Time + " time histogram"), Caption: fmt.Sprintf("Number of %s per power-of-two range of %s time, all locks, stacked by lock type.", ms.Events, ms.Time), Height: 360, Wide: true},
			options: histOptions, settings: histSettings, tips: [][]tip{histTips}},
		{chart: chart{ID: "klockCallers", Title: fmt.Sprintf("Top %d callers by total %s", len(callerBars), ms.Time), Caption: "Callers (first frame outside the lock functions) per lock type, coloured by lock type.", Height: 80 + 26*len(callerBars), Wide: true},
			options: callerOptions, settings: callerSettings, formatters: [][2]string{{"xAxis.0.axisLabel.formatter", "axisNS"}}, tips: [][]tip{callerTips}},
	}
	if timeline != nil && len(timeline.Series) > 0 {
		// After the doughnut and the box chart, before the histogram.
		built = append(built[:2], append([]builtChart{timelineChart(timeline)}, built[2:]...)...)
	}
	return renderCharts(built)
}

func percent(share float64) string { return strconv.FormatFloat(100*share, 'f', 1, 64) + "%" }

// title capitalises a chart title's first letter.
func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// axisDuration renders a power-of-two range start briefly for an axis label: "512 ns", "1 us", "4.1 us",
// "131 us", "1 ms". page.js labels value axes the same way (axisNS).
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
