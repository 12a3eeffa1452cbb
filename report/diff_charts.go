package report

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/klockstat/klockstat/capture"
)

// The diff page's charts, drawn by the builders of charts.go.

// Colours of the two captures where one chart shows both, and of changes in the changes chart.
const (
	beforeColor = "#8c9bab"
	afterColor  = "#f28e2b"
	worseColor  = "#d64541"
	betterColor = "#3d9a50"
)

var sideNames = [2]string{"before", "after"}

// diffCharts builds the page's charts.
func diffCharts(d *capture.Diff, top int, tab *strtab) (chartSet, error) {
	per, perHole, perUnit := "", "", ""
	if d.PerSecond {
		per, perHole, perUnit = " per second of capture", " per second", "/s"
	}
	count := func(n float64) string { return strconv.FormatFloat(n, 'f', countDecimals(d), 64) }

	// The lock types of either capture, ordered by their wait in both.
	types := slices.Clone(d.Types)
	slices.SortStableFunc(types, func(x, y capture.TypeDiff) int {
		return cmp.Compare(y.Before.TotalNS+y.After.TotalNS, x.Before.TotalNS+x.After.TotalNS)
	})
	var built []builtChart
	for side := range 2 {
		var total float64
		for _, t := range types {
			total += sideOf(t, side).TotalNS
		}
		var pieces []slice
		var tips []tip
		for _, t := range types {
			if !inSide(t.Status, side) {
				continue
			}
			v, color := sideOf(t, side), typeColor(t.Type)
			share := 0.0
			if total > 0 {
				share = v.TotalNS / total
			}
			pieces = append(pieces, slice{Name: t.Type, Color: color, Value: v.TotalNS, Share: share})
			tips = append(tips, tip{Title: visible(t.Type), Color: color, Rows: [][]string{
				{"total wait", FormatDuration(v.TotalNS) + perUnit + " (" + percent(share) + ")"},
				{"waits", count(v.Count) + perUnit},
				{"average", FormatDuration(v.MeanNS)},
			}})
		}
		built = append(built, builtChart{
			chart:   chart{ID: "klockDiffDoughnut" + title(sideNames[side]), Title: title(sideNames[side]) + ": wait time by lock type", Caption: "Share of the total wait" + per + " per lock type.", Height: 320},
			options: doughnut(pieces, FormatDuration(total), "total wait"+perHole), tips: [][]tip{tips},
		})
	}

	ranges, waits, err := diffWaitRanges(d)
	if err != nil {
		return chartSet{}, err
	}
	var bars []barSeries
	histTips := make([]tip, len(ranges))
	for side, color := range []string{beforeColor, afterColor} {
		bars = append(bars, barSeries{Name: sideNames[side], Color: color, Values: waits[side]})
	}
	for i, r := range ranges {
		b, a := waits[capture.BeforeSide][i], waits[capture.AfterSide][i]
		histTips[i] = tip{Title: r.String(), Rows: [][]string{
			{"before", count(b) + " waits" + perUnit, beforeColor}, {"after", count(a) + " waits" + perUnit, afterColor},
			{"change", formatPct(capture.ChangePct(b, a))},
		}}
	}

	categories := make([]string, len(types))
	var boxes []boxSeries
	var boxTips [][]tip
	for side, color := range []string{beforeColor, afterColor} {
		s := boxSeries{Name: sideNames[side], Colors: []string{color}}
		var tips []tip
		for i, t := range types {
			categories[i] = t.Type
			if !inSide(t.Status, side) {
				s.Boxes = append(s.Boxes, nil)
				tips = append(tips, tip{Title: visible(t.Type) + " " + sideNames[side], Color: color, Rows: [][]string{{"waits", "none"}}})
				continue
			}
			dist := []capture.Stats{t.BeforeDist, t.AfterDist}[side]
			s.Boxes = append(s.Boxes, box(dist))
			tips = append(tips, distributionTip(t.Type+" "+sideNames[side], color, "waits", dist))
		}
		boxes = append(boxes, s)
		boxTips = append(boxTips, tips)
	}

	var changes []hbar
	var changeTips []tip
	for _, r := range d.Rows[:min(top, len(d.Rows))] {
		caller := callerText(tab.strings[tab.frame(r.Caller)])
		color := worseColor
		if r.DeltaNS() < 0 {
			color = betterColor
		}
		changes = append(changes, hbar{Label: caller + " · " + r.Type, Color: color, Value: r.DeltaNS(), Text: formatDelta(r.DeltaNS()) + perUnit})
		rows := [][]string{{"lock type", visible(r.Type)}, {"lock", visible(cmp.Or(r.Name, "unnamed"))}}
		if r.Comm != "" {
			rows = append(rows, []string{"thread", visible(r.Comm)})
		}
		changeTips = append(changeTips, tip{Title: visible(caller), Rows: append(rows,
			[]string{"status", r.Status.String()},
			[]string{"before", FormatDuration(r.Before.TotalNS) + perUnit},
			[]string{"after", FormatDuration(r.After.TotalNS) + perUnit},
			[]string{"change", formatDelta(r.DeltaNS()) + perUnit + " (" + rowChange(r) + ")"},
		)})
	}

	if timeline, ok := diffTimelineChart(d); ok {
		built = append(built, timeline)
	}
	histOptions, histSettings := histogram(ranges, bars, "wait time (range start)", "waits"+perUnit, true)
	changeOptions, changeSettings := hbars(changes, "change in total wait")
	return renderCharts(append(built,
		builtChart{chart: chart{ID: "klockDiffHistogram", Title: "Wait time histogram, before and after", Caption: "Waits" + per + " per power-of-two range of wait time (log scale), all lock types, the two captures overlaid.", Height: 360, Wide: true},
			options: histOptions, settings: histSettings, tips: [][]tip{histTips}},
		builtChart{chart: chart{ID: "klockDiffBox", Title: "Wait distribution by lock type, before and after", Caption: "Min, 25th percentile, median, 75th percentile and max of single waits (log scale), not scaled to time.", Height: 360, Wide: true},
			options: boxChart(categories, boxes, "wait time", false), formatters: [][2]string{{"yAxis.0.axisLabel.formatter", "axisNS"}}, tips: boxTips},
		builtChart{chart: chart{ID: "klockDiffChanges", Title: fmt.Sprintf("Top %d changes in total wait", len(changes)), Caption: "Change in total wait" + per + " per row (lock type, lock, caller): red waits more after, green less.", Height: 80 + 26*len(changes), Wide: true},
			options: changeOptions, settings: changeSettings, formatters: [][2]string{{"xAxis.0.axisLabel.formatter", "axisDelta"}}, tips: [][]tip{changeTips}},
	))
}

// inSide reports whether a row or type of this status is in the capture of side.
func inSide(s capture.DiffStatus, side int) bool {
	return s == capture.Matched || s == capture.Gone && side == capture.BeforeSide || s == capture.New && side == capture.AfterSide
}

func sideOf(t capture.TypeDiff, side int) capture.DiffValues {
	if side == capture.BeforeSide {
		return t.Before
	}
	return t.After
}

// diffWaitRanges merges each capture's histograms of all types into one (capture.MergeHistograms) and
// sums them into the same power-of-two ranges. Waits are scaled like the rows: per second of capture
// unless absolute.
func diffWaitRanges(d *capture.Diff) ([]waitRange, [2][]float64, error) {
	merged := make([]capture.Histogram, 2)
	for side, c := range d.Captures {
		all := capture.Histogram{Type: "all", SubBucketBits: capture.SubBucketBits}
		for _, h := range c.Histograms {
			h.Type = all.Type
			var err error
			if all, err = capture.MergeHistograms(all, h); err != nil {
				return nil, [2][]float64{}, fmt.Errorf("merging the histograms of the %s capture: %w", sideNames[side], err)
			}
		}
		merged[side] = all
	}
	ranges, counts := waitRanges(merged)
	var waits [2][]float64
	for side := range 2 {
		waits[side] = make([]float64, len(ranges))
		for i, n := range counts[side] {
			waits[side][i] = d.Rate(n, side)
		}
	}
	return ranges, waits, nil
}
