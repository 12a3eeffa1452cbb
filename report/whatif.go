package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/klockstat/klockstat/whatif"
)

// The page and the terminal summary of `klockstat whatif`: both render the rows built here once
// from the experiment's reading.

// whatifView is the reading of an experiment, formatted once for the terminal and the page.
type whatifView struct {
	Lock, ChosenBy, Source, Share, Command, Metric, Unit string
	Perturbed                                            string // what was done to the machine
	Point                                                string // where the delay ran
	Quote                                                string
	Slope                                                string
	Hold                                                 string
	Sizes                                                []whatifSizeRow
	Predictions                                          []whatifPredictionRow
	Assumption                                           string
	Notes                                                []string
}

type whatifSizeRow struct {
	Delay, Runs, TimePerWork, AddedPerWork, Throughput, Fired, Refused, Hold, HoldMin string
}

type whatifPredictionRow struct {
	Shrink, Removed, Gain, Interval string
}

// whatifShrinkNames says each of whatif.Shrinks in words.
var whatifShrinkNames = map[float64]string{0.1: "by 10%", 0.5: "by half", 1: "to nothing"}

func newWhatifView(e *whatif.Experiment, r whatif.Reading) whatifView {
	unit := e.UnitName()
	t := e.Target
	v := whatifView{
		Lock: t.Type + " " + t.Label, ChosenBy: t.ChosenBy, Source: t.Source, Command: shellJoin(e.Command), Metric: e.Metric, Unit: unit,
		Share: fmt.Sprintf("%.1f%% of the wait of %s: %d waits, %s on average", 100*t.WaitShare, t.Source, t.Waits, FormatDuration(t.MeanWaitNS)),
		Quote: e.Quote(r), Notes: r.Notes,
	}
	if len(t.Locks) > 0 {
		v.Lock += fmt.Sprintf(" (%d lock addresses)", len(t.Locks))
	}
	if len(t.Callers) > 1 {
		v.Lock += " at " + strings.Join(t.Callers, ", ")
	}
	v.Perturbed = fmt.Sprintf("the machine was perturbed on purpose: %d delays added %s in all, each at most %s, at most %s per CPU a second (the runs' highest: %.1f%% of a CPU)",
		r.Fired, FormatDuration(float64(r.AddedNS)), FormatDuration(float64(e.Bounds.MaxDelayNS)), FormatDuration(float64(e.Bounds.BudgetNS)), 100*r.AddedPerCPUSecond)
	v.Point = "each delay spins right after a waiter of the lock acquired it (lock:contention_end); on a mutex acquired in its wait loop (it slept, or spun again as the first waiter), with the mutex's wait_lock held and interrupts off"
	if e.Bounds.UnlockedOnly {
		v.Point += ", which --unlocked-only left alone"
	} else if r.Fired > 0 {
		v.Point += fmt.Sprintf(": %.0f%% of these delays", 100*r.LockedShare)
	}
	for _, s := range r.Sizes {
		row := whatifSizeRow{
			Delay: FormatDuration(float64(s.DelayNS)), Runs: strconv.Itoa(s.Runs),
			TimePerWork: formatPerWork(s.TimePerWork), AddedPerWork: formatPerWork(s.AddedPerWork), Throughput: FormatNumber(s.Throughput),
			Fired: strconv.FormatUint(s.Counters.Fired, 10), Refused: strconv.FormatUint(s.Counters.RefusedBudget+s.Counters.RefusedSpin, 10),
			Hold: FormatDuration(s.HoldMeanNS()), HoldMin: FormatDuration(float64(s.Counters.HoldMinNS)),
		}
		if s.Failed > 0 {
			row.Runs += fmt.Sprintf(" (+%d failed)", s.Failed)
		}
		v.Sizes = append(v.Sizes, row)
	}
	if f := r.Fit; f != nil {
		v.Slope = fmt.Sprintf("slope %.3f (±%.3f at %.0f%%, R² %.2f, %d runs): each us added to the lock's contended holds costs %.2f us per %s; %s per %s without delay",
			f.Slope, r.SlopeCI, 100*whatif.Confidence, f.R2, f.N, f.Slope, unit, formatPerWork(f.Intercept), unit)
	}
	if r.HoldPerWork > 0 {
		how := "ended by spinners' acquisitions"
		if !r.HoldFromSpinners {
			how = "ended at wake-ups, an upper bound"
		}
		v.Hold = fmt.Sprintf("contended hold measured without delays: %s on average (%d holds %s), %.3g contended acquisitions per %s, %s of contended hold per %s",
			FormatDuration(r.HoldMeanNS), r.HoldSamples, how, r.ContendedPerWork, unit, formatPerWork(r.HoldPerWork), unit)
	}
	for _, p := range r.Predictions {
		v.Predictions = append(v.Predictions, whatifPredictionRow{
			Shrink: whatifShrinkNames[p.Shrink], Removed: formatPerWork(p.RemovedPerWork),
			Gain: whatif.FormatGain(p.Gain), Interval: whatif.FormatGain(p.GainLo) + " to " + whatif.FormatGain(p.GainHi),
		})
	}
	v.Assumption = "the predictions extrapolate the line below zero added time: they hold while the lock stays on the critical path as its holds shrink; once another lock or resource limits the workload, the gain stops growing, so the larger shrinks are upper bounds"
	return v
}

// WriteWhatifSummary writes the reading of an experiment for the terminal.
func WriteWhatifSummary(w io.Writer, e *whatif.Experiment) error {
	v := newWhatifView(e, e.Read())
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "whatif: %s, chosen as %s; %s\n", sanitize(v.Lock), sanitize(v.ChosenBy), sanitize(v.Share))
	fmt.Fprintf(bw, "%s\n%s\n\n", v.Perturbed, v.Point)
	tw := tabwriter.NewWriter(bw, 0, 0, 3, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "delay\truns\ttime/%s\tadded/%s\t%s/s\tdelays\trefused\thold (mean)\thold (min)\t\n", v.Unit, v.Unit, v.Unit)
	for _, s := range v.Sizes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.Delay, s.Runs, s.TimePerWork, s.AddedPerWork, s.Throughput, s.Fired, s.Refused, s.Hold, s.HoldMin)
	}
	tw.Flush()
	fmt.Fprintln(bw)
	for _, line := range []string{v.Slope, v.Hold} {
		if line != "" {
			fmt.Fprintln(bw, line)
		}
	}
	if len(v.Predictions) > 0 {
		fmt.Fprintf(bw, "\nif the lock's contended hold time per %s shrank:\n", v.Unit)
		tw = tabwriter.NewWriter(bw, 0, 0, 3, ' ', 0)
		fmt.Fprintf(tw, "  shrink\tremoved/%s\t%s/s\t%.0f%% interval\n", v.Unit, v.Unit, 100*whatif.Confidence)
		for _, p := range v.Predictions {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", p.Shrink, p.Removed, p.Gain, p.Interval)
		}
		tw.Flush()
		fmt.Fprintf(bw, "(%s)\n", v.Assumption)
	}
	fmt.Fprintf(bw, "\n%s\n", sanitize(v.Quote))
	for _, n := range v.Notes {
		fmt.Fprintf(bw, "note: %s\n", sanitize(n))
	}
	return bw.Flush()
}

// whatifPage is what whatif.html renders, around page.html's shared parts.
type whatifPage struct {
	page
	whatifView
	Charts template.JS
}

// loadWhatifPage parses the page's template once; its style, script and policy are the scaling
// page's.
var loadWhatifPage = sync.OnceValues(func() (*template.Template, error) {
	return parsePageTemplates("page.html", "whatif.html")
})

// whatifElementID is the id of the element holding the experiment's JSON.
const whatifElementID = "klockstat-whatif"

// WriteWhatifHTML renders an experiment as one self-contained page: the lock, what was done to the
// machine, the runs, the fit drawn over them, the predictions and the quote. The experiment is
// embedded as JSON.
func WriteWhatifHTML(w io.Writer, e *whatif.Experiment) error {
	a, sa, err := loadScalePageAssets()
	if err != nil {
		return err
	}
	tmpl, err := loadWhatifPage()
	if err != nil {
		return err
	}
	r := e.Read()
	p := &whatifPage{
		page:       newPage(a, "klockstat what-if", fmt.Sprintf("%s · %d CPUs · %s · %s", e.CPUModel, e.CPUs, e.Kernel, e.Start.UTC().Format(time.DateTime+" UTC")), strings.TrimSpace("klockstat "+e.ToolVersion)),
		whatifView: newWhatifView(e, r),
	}
	p.CSP, p.CSS, p.JS = sa.csp, sa.css, sa.js
	p.WarningsTitle = "Read with care"
	p.Warnings = r.Notes
	p.FooterNote = "the experiment is embedded as JSON"
	charts, err := whatifChart(e, r)
	if err != nil {
		return err
	}
	p.Charts = template.JS(charts)
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding the experiment: %w", err)
	}
	p.Data = template.HTML(`<script type="application/json" id="` + whatifElementID + `">` + scriptSafe(string(data)) + `</script>`)
	return executePage(w, tmpl, "whatif", p, "the what-if page")
}

// whatifChart is the ECharts option of the fit: every run's point, in us, the fitted line over the
// points (solid) and extrapolated to the hold removed entirely (dashed), and the predictions.
func whatifChart(e *whatif.Experiment, r whatif.Reading) (string, error) {
	us := func(ns float64) float64 { return round3(ns / 1e3) }
	points := make([]any, 0, len(r.Points))
	hiX := 0.0
	for _, pt := range r.Points {
		points = append(points, []any{us(pt.AddedPerWork), us(pt.TimePerWork), FormatDuration(float64(pt.DelayNS))})
		hiX = math.Max(hiX, pt.AddedPerWork)
	}
	// Points are line series without their line: the pages' ECharts bundle has no scatter chart.
	dots := func(name, symbol string, size int, data []any) map[string]any {
		return map[string]any{"name": name, "type": "line", "data": data, "symbol": symbol, "symbolSize": size, "showSymbol": true, "lineStyle": map[string]any{"opacity": 0}}
	}
	series := []any{dots("runs", "circle", 9, points)}
	if f := r.Fit; f != nil {
		line := []any{[]any{0, us(f.Intercept)}, []any{us(hiX), us(f.Intercept + f.Slope*hiX)}}
		series = append(series, map[string]any{"name": fmt.Sprintf("fit, slope %.2f", f.Slope), "type": "line", "data": line, "symbol": "none"})
		if r.HoldPerWork > 0 {
			lo := -r.HoldPerWork
			extra := []any{[]any{us(lo), us(f.Intercept + f.Slope*lo)}, []any{0, us(f.Intercept)}}
			series = append(series, map[string]any{"name": "extrapolated", "type": "line", "data": extra, "symbol": "none", "lineStyle": map[string]any{"type": "dashed"}})
			var preds []any
			for _, p := range r.Predictions {
				x := -p.RemovedPerWork
				preds = append(preds, []any{us(x), us(f.Intercept + f.Slope*x), whatifShrinkNames[p.Shrink]})
			}
			series = append(series, dots("predictions", "diamond", 12, nonNilAny(preds)))
		}
	}
	unit := e.UnitName()
	option := map[string]any{
		"tooltip": map[string]any{"trigger": "item"},
		"legend":  map[string]any{"top": 0},
		"grid":    map[string]any{"left": 70, "right": 40, "top": 40, "bottom": 50},
		"xAxis":   map[string]any{"type": "value", "name": "hold time added per " + unit + " (us)", "nameLocation": "middle", "nameGap": 30},
		"yAxis":   map[string]any{"type": "value", "name": "time per " + unit + " (us)", "scale": true},
		"series":  series,
	}
	b, err := json.Marshal(map[string]any{"whatif-fit": option})
	if err != nil {
		return "", fmt.Errorf("encoding the whatif chart: %w", err)
	}
	return scriptSafe(string(b)), nil
}
