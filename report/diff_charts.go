package report

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/klockstat/klockstat/capture"
)

// The diff page's charts are built like the report's (charts.go): go-echarts options, encoded by
// chartScript, with tooltips and axis labels formatted by diff.js (klock.diff.*) from the chart data
// JSON, which holds the exact numbers and the original names.

// Colours of the two captures where one chart shows both, and of changes in the changes chart.
const (
	beforeColor = "#8c9bab"
	afterColor  = "#f28e2b"
	worseColor  = "#d64541"
	betterColor = "#3d9a50"
)

// diffTypeSide is one capture's numbers for a lock type in the charts; Count and TotalNS on the diff's
// basis (per second or raw).
type diffTypeSide struct {
	Count   float64 `json:"count"`
	TotalNS float64 `json:"total_ns"`
	Share   float64 `json:"share"` // of that capture's wait on all types
	MeanNS  float64 `json:"mean_ns"`
	MinNS   uint64  `json:"min_ns"`
	P25NS   uint64  `json:"p25_ns"`
	P50NS   uint64  `json:"p50_ns"`
	P75NS   uint64  `json:"p75_ns"`
	P99NS   uint64  `json:"p99_ns"`
	MaxNS   uint64  `json:"max_ns"`
}

// diffTypeChart is a lock type in the charts, with a side missing (null) where it had no waits.
type diffTypeChart struct {
	Name   string        `json:"name"`
	Color  string        `json:"color"`
	Before *diffTypeSide `json:"before"`
	After  *diffTypeSide `json:"after"`
}

// diffChange is one bar of the changes chart.
type diffChange struct {
	Caller  string  `json:"caller"`
	Type    string  `json:"type"`
	Name    string  `json:"name"`
	Comm    string  `json:"comm"`
	Status  string  `json:"status"`
	Before  float64 `json:"before_ns"`
	After   float64 `json:"after_ns"`
	DeltaNS float64 `json:"delta_ns"`
}

// diffChartData is what diff.js's tooltips read, in the order of the charts' data.
type diffChartData struct {
	PerSecond bool            `json:"per_second"`
	Types     []diffTypeChart `json:"types"`
	Doughnuts [2][]int        `json:"doughnuts"` // indexes into Types of the before and after doughnuts' slices
	Ranges    []waitRange     `json:"ranges"`
	Waits     [2][]float64    `json:"waits"` // waits per range, before and after
	Changes   []diffChange    `json:"changes"`
}

// diffCharts builds the page's charts and the JSON their tooltips read.
func diffCharts(d *Diff, top int) ([]chart, template.JS, error) {
	data := diffChartData{PerSecond: d.PerSecond, Types: chartTypes(d), Changes: []diffChange{}}
	for side := range 2 {
		data.Doughnuts[side] = []int{}
		for i, t := range data.Types {
			if t.side(side) != nil {
				data.Doughnuts[side] = append(data.Doughnuts[side], i)
			}
		}
	}
	var err error
	if data.Ranges, data.Waits, err = d.waitRanges(); err != nil {
		return nil, "", err
	}
	for _, r := range d.Rows[:min(top, len(d.Rows))] {
		data.Changes = append(data.Changes, diffChange{
			Caller: callerText(r.Caller), Type: r.Type, Name: r.Name, Comm: r.Comm, Status: r.Status.String(),
			Before: r.Before.TotalNS, After: r.After.TotalNS, DeltaNS: r.DeltaNS(),
		})
	}

	per := ""
	if d.PerSecond {
		per = " per second of capture"
	}
	built := []builtChart{
		{chart{ID: "klockDiffDoughnutBefore", Title: "Before: wait time by lock type", Caption: "Share of the total wait" + per + " per lock type.", Height: 320},
			diffDoughnut(d, data, beforeSide)},
		{chart{ID: "klockDiffDoughnutAfter", Title: "After: wait time by lock type", Caption: "Share of the total wait" + per + " per lock type.", Height: 320},
			diffDoughnut(d, data, afterSide)},
		{chart{ID: "klockDiffHistogram", Title: "Wait time histogram, before and after", Caption: "Waits" + per + " per power-of-two range of wait time (log scale), all lock types, the two captures overlaid.", Height: 360, Wide: true},
			diffHistogram(d, data)},
		{chart{ID: "klockDiffBox", Title: "Wait distribution by lock type, before and after", Caption: "Min, 25th percentile, median, 75th percentile and max of single waits (log scale), not scaled to time.", Height: 360, Wide: true},
			diffBox(data)},
		{chart{ID: "klockDiffChanges", Title: fmt.Sprintf("Top %d changes in total wait", len(data.Changes)), Caption: "Change in total wait" + per + " per row (lock type, lock, caller): red waits more after, green less.", Height: 80 + 26*len(data.Changes), Wide: true},
			diffChanges(data.Changes)},
	}
	return renderCharts(built, data, "diff's chart data")
}

func (t diffTypeChart) side(side int) *diffTypeSide {
	if side == beforeSide {
		return t.Before
	}
	return t.After
}

// chartTypes are the lock types of either capture, ordered by their wait in both, so that a type has
// the same colour in every chart.
func chartTypes(d *Diff) []diffTypeChart {
	types := slices.Clone(d.Types)
	slices.SortStableFunc(types, func(x, y TypeDiff) int {
		return cmp.Compare(y.Before.TotalNS+y.After.TotalNS, x.Before.TotalNS+x.After.TotalNS)
	})
	var totals [2]float64
	for _, t := range types {
		totals[beforeSide] += t.Before.TotalNS
		totals[afterSide] += t.After.TotalNS
	}
	out := make([]diffTypeChart, len(types))
	for i, t := range types {
		out[i] = diffTypeChart{Name: t.Type, Color: typeColors[i%len(typeColors)]}
		if t.Status != New {
			out[i].Before = typeSide(t.Before, t.BeforeDist, totals[beforeSide])
		}
		if t.Status != Gone {
			out[i].After = typeSide(t.After, t.AfterDist, totals[afterSide])
		}
	}
	return out
}

func typeSide(v DiffValues, s capture.Stats, total float64) *diffTypeSide {
	ts := &diffTypeSide{
		Count: v.Count, TotalNS: v.TotalNS, MeanNS: s.MeanNS,
		MinNS: s.MinNS, P25NS: s.P25, P50NS: s.P50, P75NS: s.P75, P99NS: s.P99, MaxNS: s.MaxNS,
	}
	if total > 0 {
		ts.Share = v.TotalNS / total
	}
	return ts
}

// waitRanges merges each capture's histograms of all types into one (capture.MergeHistograms) and
// sums it into power-of-two ranges, the same ranges for both, from the lowest to the highest with
// waits in either. Waits are scaled like the rows: per second of capture unless absolute.
func (d *Diff) waitRanges() ([]waitRange, [2][]float64, error) {
	var merged [2]capture.Histogram
	lowest, highest := 64, 0
	for side, c := range d.captures {
		all := capture.Histogram{Type: "all", SubBucketBits: capture.SubBucketBits}
		for _, h := range c.Histograms {
			h.Type = all.Type
			var err error
			if all, err = capture.MergeHistograms(all, h); err != nil {
				return nil, [2][]float64{}, fmt.Errorf("merging the histograms of the %s capture: %w", []string{"before", "after"}[side], err)
			}
		}
		merged[side] = all
		for _, b := range all.Buckets {
			lowest, highest = min(lowest, powerRange(b.LoNS)), max(highest, powerRange(b.LoNS))
		}
	}
	waits := [2][]float64{{}, {}}
	if lowest > highest {
		return []waitRange{}, waits, nil
	}
	ranges := make([]waitRange, 0, highest-lowest+1)
	for p := lowest; p <= highest; p++ {
		ranges = append(ranges, rangeBounds(p))
	}
	for side, h := range merged {
		counts := make([]uint64, len(ranges))
		for _, b := range h.Buckets {
			counts[powerRange(b.LoNS)-lowest] += b.Count
		}
		waits[side] = make([]float64, len(ranges))
		for i, n := range counts {
			waits[side][i] = d.rate(n, side)
		}
	}
	return ranges, waits, nil
}

func diffDoughnut(d *Diff, data diffChartData, side int) echartsChart {
	formatter := []string{"klock.diff.tooltip.doughnutBefore", "klock.diff.tooltip.doughnutAfter"}[side]
	var total float64
	var pieces []opts.PieData
	for _, i := range data.Doughnuts[side] {
		t := data.Types[i]
		s := t.side(side)
		total += s.TotalNS
		slice := opts.PieData{Name: chartText(t.Name), Value: s.TotalNS, ItemStyle: &opts.ItemStyle{Color: t.Color}}
		if s.Share < 0.01 {
			slice.Label = &opts.Label{Show: opts.Bool(false)} // its label would only pile up with others
		}
		pieces = append(pieces, slice)
	}
	subtitle := "total wait"
	if d.PerSecond {
		subtitle = "total wait per second"
	}
	pie := charts.NewPie()
	pie.SetGlobalOptions(append(baseOptions(opts.Tooltip{Trigger: "item", Formatter: opts.FuncOpts(formatter)}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Orient: "vertical", Right: "8", Top: "middle"}),
		charts.WithTitleOpts(opts.Title{
			Title: FormatDuration(total), Subtitle: subtitle, Left: "36%", Top: "middle", TextAlign: "center",
			TitleStyle: &opts.TextStyle{FontSize: 18, Color: "#1f2328"}, SubtitleStyle: &opts.TextStyle{FontSize: 12, Color: "#656d76"},
		}),
	)...)
	pie.AddSeries("wait time", pieces,
		charts.WithPieChartOpts(opts.PieChart{Radius: []string{"42%", "70%"}, Center: []string{"36%", "50%"}}),
		charts.WithLabelOpts(opts.Label{Show: opts.Bool(true), Formatter: string(opts.FuncOpts("klock.label.share"))}),
		charts.WithItemStyleOpts(opts.ItemStyle{BorderColor: "#fff", BorderWidth: 1}),
	)
	return pie
}

func diffHistogram(d *Diff, data diffChartData) echartsChart {
	name := "waits"
	if d.PerSecond {
		name = "waits per second"
	}
	bar := charts.NewBar()
	bar.SetGlobalOptions(append(baseOptions(opts.Tooltip{Trigger: "axis", Formatter: opts.FuncOpts("klock.diff.tooltip.histogram"), AxisPointer: &opts.AxisPointer{Type: "shadow"}}),
		charts.WithColorsOpts(opts.Colors{beforeColor, afterColor}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "wait time (range start)", NameLocation: "middle", NameGap: 28}),
		// Log scale: the two captures' counts can be orders of magnitude apart (more threads, fewer and
		// longer waits), and a linear axis would flatten the smaller one.
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: name, AxisLabel: &opts.AxisLabel{}}),
		charts.WithGridOpts(opts.Grid{Left: "12", Right: "24", Top: "48", Bottom: "32", ContainLabel: opts.Bool(true)}),
	)...)
	labels := make([]string, len(data.Ranges))
	for i, r := range data.Ranges {
		labels[i] = axisDuration(r.LoNS)
	}
	bar.SetXAxis(labels)
	for side, name := range []string{"before", "after"} {
		values := make([]opts.BarData, len(data.Ranges))
		for i, n := range data.Waits[side] {
			values[i] = opts.BarData{Value: n}
			if n == 0 {
				values[i].Value = "-" // no bar: a log axis has no 0
			}
		}
		// The after bars are drawn over the before bars, half transparent, so both stay visible.
		bar.AddSeries(name, values,
			charts.WithBarChartOpts(opts.BarChart{BarGap: "-100%", BarCategoryGap: "18%"}),
			charts.WithItemStyleOpts(opts.ItemStyle{Opacity: opts.Float(0.6)}))
	}
	return bar
}

func diffBox(data diffChartData) echartsChart {
	box := charts.NewBoxPlot()
	box.SetGlobalOptions(append(baseOptions(opts.Tooltip{Trigger: "item", Formatter: opts.FuncOpts("klock.diff.tooltip.box")}),
		charts.WithColorsOpts(opts.Colors{beforeColor, afterColor}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", AxisLabel: &opts.AxisLabel{Interval: "0", HideOverlap: opts.Bool(true)}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "wait time", AxisLabel: &opts.AxisLabel{Formatter: opts.FuncOpts("klock.axisNS")}}),
		charts.WithGridOpts(opts.Grid{Left: "12", Right: "16", Top: "48", Bottom: "8", ContainLabel: opts.Bool(true)}),
	)...)
	names := make([]string, len(data.Types))
	for i, t := range data.Types {
		names[i] = chartText(t.Name)
	}
	box.SetXAxis(names)
	for side, name := range []string{"before", "after"} {
		color := []string{beforeColor, afterColor}[side]
		values := make([]opts.BoxPlotData, len(data.Types))
		for i, t := range data.Types {
			s := t.side(side)
			if s == nil {
				values[i] = opts.BoxPlotData{Value: []string{}} // no box: the type had no waits in this capture
				continue
			}
			// A log axis cannot show 0; a 0 ns wait is drawn at 1 ns (the tooltip says 0).
			v := []uint64{max(s.MinNS, 1), max(s.P25NS, 1), max(s.P50NS, 1), max(s.P75NS, 1), max(s.MaxNS, 1)}
			values[i] = opts.BoxPlotData{Value: v, ItemStyle: &opts.ItemStyle{Color: color + "40", BorderColor: color, BorderWidth: 1.5}}
		}
		box.AddSeries(name, values)
	}
	return box
}

func diffChanges(changes []diffChange) echartsChart {
	bar := charts.NewBar()
	bar.SetGlobalOptions(append(baseOptions(opts.Tooltip{Trigger: "item", Formatter: opts.FuncOpts("klock.diff.tooltip.changes")}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "change in total wait", NameLocation: "middle", NameGap: 28, AxisLabel: &opts.AxisLabel{Formatter: opts.FuncOpts("klock.diff.axisDelta")}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Inverse: opts.Bool(true), AxisLabel: &opts.AxisLabel{Interval: "0", Width: 300, Overflow: "truncate"}}),
		charts.WithGridOpts(opts.Grid{Left: "12", Right: "40", Top: "8", Bottom: "28", ContainLabel: opts.Bool(true)}),
	)...)
	labels := make([]string, len(changes))
	values := make([]opts.BarData, len(changes))
	for i, c := range changes {
		labels[i] = chartText(c.Caller + " · " + c.Type)
		color := worseColor
		if c.DeltaNS < 0 {
			color = betterColor
		}
		values[i] = opts.BarData{Value: c.DeltaNS, ItemStyle: &opts.ItemStyle{Color: color}}
	}
	bar.SetXAxis(labels).XYReversal()
	bar.AddSeries("change", values, charts.WithBarChartOpts(opts.BarChart{BarCategoryGap: "28%"}))
	return bar
}
