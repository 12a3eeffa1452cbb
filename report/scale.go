package report

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/templates"
)

// The scaling report of a sweep (`klockstat scale`): one page with the levels, their throughput and
// wait, the culprits, and every level's report and the diff of every two levels, each rendered by
// WriteHTML and WriteDiffHTML as they would be alone. Those pages are embedded compressed, without
// their copy of ECharts: the scaling page has one, which its script puts back into a page before
// showing it in a frame.

// sweepElementID is the id of the element holding the sweep, which ReadSweepInput reads back.
const sweepElementID = "klockstat-sweep"

// echartsMark stands for the ECharts source in an embedded page.
const echartsMark = "/*klockstat:echarts*/"

// scaleAssets are the scaling page's own assets, prepared once.
type scaleAssets struct {
	page *template.Template
	css  template.CSS
	js   template.JS
	csp  string
}

var loadScaleAssets = sync.OnceValues(func() (*scaleAssets, error) {
	a, err := loadAssets()
	if err != nil {
		return nil, err
	}
	css, err := templates.FS.ReadFile("scale.css")
	if err != nil {
		return nil, fmt.Errorf("loading the scaling page's scale.css: %w", err)
	}
	js, err := templates.FS.ReadFile("js/scale.js")
	if err != nil {
		return nil, fmt.Errorf("loading the scaling page's scale.js: %w", err)
	}
	page, err := parsePageTemplates("page.html", "scale.html")
	if err != nil {
		return nil, err
	}
	s := &scaleAssets{page: page, css: a.css + "\n" + template.CSS(css), js: template.JS(scriptSafe(string(js)))}
	// The embedded pages run in frames of this page, under its policy as well as their own: it
	// allows their script too.
	s.csp = contentSecurityPolicy([]string{string(a.echarts), string(s.js), string(a.js)})
	return s, nil
})

// scalePage is what scale.html renders, around page.html's shared parts.
type scalePage struct {
	page
	Command string
	Metric  string
	Cost    string
	Levels  []scaleLevelRow
	Own     bool // the waiting shares are over the command's own threads
	// NoCulprits says why the culprit tables are empty.
	NoCulprits string
	Culprits   []culpritTable
	Charts     template.JS // the charts' ECharts options, JSON
}

// scaleLevelRow is one row of the levels table, formatted for the page and the terminal; a figure
// of several runs carries their range.
type scaleLevelRow struct {
	N                                                 int
	Runs, Throughput, Speedup, Efficiency, Wait, Wall string
	Counted, Total                                    int // runs that count, of all
	// Threads and Processes the command ran per run; Others, the wait of the processes outside
	// its tree per run; "-" where not counted or not captured.
	Threads, Processes, Others string
	Oversubscribed             bool
	// Suspect explains why the level is a suspect baseline (capture.LevelStats.BelowNext); "" if
	// it is not.
	Suspect string
	// Matched are the output lines the runs' metrics were read from, one per run that counts.
	Matched  []string
	Failures []scaleFailure
	Shown    bool // has a report
}

// spreadOf is the range of a figure over a level's runs, " (lo..hi)", when it had more than one.
func spreadOf(repeated bool, lo, hi string) string {
	if !repeated {
		return ""
	}
	return " (" + lo + ".." + hi + ")"
}

// scaleFailure is a failed run of a level.
type scaleFailure struct {
	Run    int
	Reason string
	Tail   string
}

// culpritTable is the culprits of one kind, formatted.
type culpritTable struct {
	ID, Title, What string
	Rows            []culpritRow
	Levels          []int
}

type culpritRow struct {
	Rank        int
	Type, Name  string
	Color       string
	WaitPerWork []string
	Growth      string
	InNoise     bool // the growth is inside the runs' spread
	Exponent    string
	TopFrom     string
	Spark       template.HTML
}

// WriteScaleHTML renders a sweep as one self-contained page. It does not modify s. Addresses are
// hashed under o.AddressKey (a key drawn for this page if nil) unless o.RawAddresses, in the page, in
// every level's report and in the embedded sweep alike.
func WriteScaleHTML(w io.Writer, s *capture.Sweep, o HTMLOptions) error {
	a, sa, err := loadScalePageAssets()
	if err != nil {
		return err
	}
	if o.Top <= 0 {
		o.Top = defaultTop
	}
	if o.AddressKey == nil {
		o.AddressKey = newKey()
	}
	s, hashed := displayedSweep(s, o.RawAddresses, o.AddressKey)
	an := s.Analyze()
	p := &scalePage{
		page:    newPage(a, "klockstat scaling report", fmt.Sprintf("%d levels · %d CPUs · %s", len(s.Levels), s.CPUs, formatStart(s.Start)), strings.TrimSpace("klockstat "+s.ToolVersion)),
		Command: shellJoin(s.Command), Metric: s.Metric, Cost: sweepCost(s),
	}
	p.CSP, p.CSS, p.JS = sa.csp, sa.css, sa.js
	p.AddrHashed = hashed
	p.WarningsTitle = "Warnings"
	p.FooterNote = "the sweep is embedded: klockstat report reads this file back"
	p.Warnings = sweepWarnings(s, an)
	p.Levels = levelRows(s, an, "×")
	p.Own, p.NoCulprits = ownFigures(an), noCulprits(an)
	levels := make([]int, len(s.Levels))
	for i, l := range s.Levels {
		levels[i] = l.N
	}
	p.Culprits = []culpritTable{
		culpritRows("culprit-locks", "Locks", "lock", an.Locks, an.Levels, levels, o.Top, hashed),
		culpritRows("culprit-callers", "Callers", "caller", an.Callers, an.Levels, levels, o.Top, hashed),
	}
	charts, err := scaleCharts(s, an, hashed)
	if err != nil {
		return err
	}
	p.Charts = template.JS(charts)
	pages, err := levelPages(s, o)
	if err != nil {
		return err
	}
	sweep, err := embedSweep(s)
	if err != nil {
		return err
	}
	p.Data = pages + sweep
	return executePage(w, sa.page, "scale", p, "the scaling report")
}

// loadScalePageAssets are the assets of every page and the scaling page's, which the what-if page
// shares.
func loadScalePageAssets() (*assets, *scaleAssets, error) {
	a, err := loadAssets()
	if err != nil {
		return nil, nil, err
	}
	sa, err := loadScaleAssets()
	return a, sa, err
}

// executePage renders the template name of t with data into w, buffered; what names the page in
// errors.
func executePage(w io.Writer, t *template.Template, name string, data any, what string) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := t.ExecuteTemplate(bw, name, data); err != nil {
		return fmt.Errorf("rendering %s: %w", what, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	return nil
}

// displayedSweep is s as it is shown: unless raw, a copy whose captures have their addresses as ids
// under key (capture.Capture.Hashed), the rest shared with s. The ids are of one kind across a
// sweep: a capture hashed before (a sweep JSON written hashed in part) cannot be shown raw, so the
// others are hashed too; hashed says whether they are.
func displayedSweep(s *capture.Sweep, raw bool, key []byte) (*capture.Sweep, bool) {
	hashed := !raw || slices.ContainsFunc(runCaptures(s), func(c *capture.Capture) bool { return c.Meta.AddressesHashed })
	if !hashed {
		return s, false
	}
	if key == nil {
		key = newKey()
	}
	shown := *s
	shown.Levels = slices.Clone(s.Levels)
	for i := range shown.Levels {
		l := &shown.Levels[i]
		l.Runs = slices.Clone(l.Runs)
		for j := range l.Runs {
			if r := &l.Runs[j]; r.Capture != nil {
				r.Capture = r.Capture.Hashed(key)
			}
		}
	}
	return &shown, true
}

// ownFigures reports whether every level with runs has the command's own figures, its tree's waits
// over its threads' time.
func ownFigures(an capture.ScaleAnalysis) bool {
	counted := false
	for _, st := range an.Levels {
		if st.Runs > 0 {
			if !st.Own {
				return false
			}
			counted = true
		}
	}
	return counted
}

// runCaptures are the captures of the sweep's runs, level by level.
func runCaptures(s *capture.Sweep) []*capture.Capture {
	var out []*capture.Capture
	for _, l := range s.Levels {
		for _, r := range l.Runs {
			if r.Capture != nil {
				out = append(out, r.Capture)
			}
		}
	}
	return out
}

// sweepWarnings are what the page says first: an interrupted sweep, failed runs, and
// sweepDataWarnings.
func sweepWarnings(s *capture.Sweep, an capture.ScaleAnalysis) []string {
	out := sweepDataWarnings(s, an)
	if s.Interrupted {
		out = append(out, "The sweep was interrupted: the report shows the runs done until then.")
	}
	failed := 0
	for _, l := range s.Levels {
		for _, r := range l.Runs {
			if !r.OK() {
				failed++
			}
		}
	}
	if failed > 0 {
		out = append(out, fmt.Sprintf("%d %s failed and %s not counted: see the levels table.", failed, plural(failed, "run", "runs"), plural(failed, "is", "are")))
	}
	if !strings.Contains(strings.Join(s.Command, " "), "{N}") {
		out = append(out, "The command has no {N}: every level ran the same command, unless it reads KLOCKSTAT_LEVEL.")
	}
	return out
}

// sweepDataWarnings say that the sweep's figures are wrong, which the summary says too: waits that
// add up to more than a uint64 holds, runs of different kernels or architectures.
func sweepDataWarnings(s *capture.Sweep, an capture.ScaleAnalysis) []string {
	var out []string
	if an.Saturated {
		out = append(out, fmt.Sprintf("The sweep's waits add up to more than a 64-bit number holds: it is corrupt, and its sums show as that maximum, %d.", uint64(math.MaxUint64)))
	}
	if k := s.Kernels(); len(k) > 1 {
		out = append(out, fmt.Sprintf("The runs were captured on %d different kernels or architectures (%s): their figures do not compare.", len(k), sanitize(strings.Join(k, ", "))))
	}
	return out
}

// sweepCost says what the sweep took beyond its runs.
func sweepCost(s *capture.Sweep) string {
	runs := 0
	for _, l := range s.Levels {
		runs += len(l.Runs)
	}
	if runs == 0 {
		return "start-up " + FormatDuration(float64(s.Cost.StartNS))
	}
	return fmt.Sprintf("start-up %s once (probes loaded and attached); %s per run between runs (maps read and cleared, capture assembled)",
		FormatDuration(float64(s.Cost.StartNS)), FormatDuration(float64(s.Cost.BetweenNS)/float64(runs)))
}

// levelRows formats the levels for the page and the terminal alike; times is the sign of a speedup,
// "×" on the page, "x" on a terminal.
func levelRows(s *capture.Sweep, an capture.ScaleAnalysis, times string) []scaleLevelRow {
	rows := make([]scaleLevelRow, len(s.Levels))
	base := slices.IndexFunc(an.Levels, func(st capture.LevelStats) bool { return st.Runs > 0 })
	for i, l := range s.Levels {
		st := an.Levels[i]
		row := scaleLevelRow{N: l.N, Oversubscribed: st.Oversubscribed, Runs: fmt.Sprintf("%d of %d", st.Runs, len(l.Runs)), Shown: st.Runs > 0,
			Throughput: "-", Speedup: "-", Efficiency: "-", Wait: "-", Wall: "-", Threads: "-", Processes: "-", Others: "-", Counted: st.Runs, Total: len(l.Runs)}
		if st.Runs > 0 {
			b := an.Levels[base]
			ideal := float64(st.N) / float64(b.N)
			repeated := st.Runs > 1
			row.Throughput = FormatNumber(st.Throughput) + spreadOf(repeated, FormatNumber(st.ThroughputLo), FormatNumber(st.ThroughputHi))
			speedup := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + times }
			row.Speedup = speedup(st.Speedup) + spreadOf(repeated, speedup(st.ThroughputLo/b.Throughput), speedup(st.ThroughputHi/b.Throughput))
			row.Efficiency = percent(st.Efficiency) + spreadOf(repeated, percent(st.ThroughputLo/b.Throughput/ideal), percent(st.ThroughputHi/b.Throughput/ideal))
			row.Wait = percent(st.WaitShare) + spreadOf(repeated, percent(st.WaitShareLo), percent(st.WaitShareHi))
			row.Wall = FormatDuration(float64(st.WallNS))
			if st.Threads > 0 {
				row.Threads, row.Processes = strconv.FormatFloat(st.Threads, 'f', -1, 64), strconv.FormatFloat(st.Processes, 'f', -1, 64)
			}
			if st.Others {
				row.Others = FormatDuration(float64(st.OthersWaitNS) / float64(st.Runs))
			}
		}
		if st.BelowNext > 0 {
			row.Suspect = fmt.Sprintf("Level %d made %s per instance, %.1f%s less than level %d: the speedups measured from it are superlinear. "+
				"Likely an I/O-bound baseline (its instance waited on the disk, e.g. in fsync, which more instances overlap) or a noisy one "+
				"(other load during its run); rerun with --repeat 3, or read the scaling from level %d on.",
				l.N, FormatNumber(st.Throughput/float64(st.N)), st.BelowNext, times, st.NextN, st.NextN)
		}
		for j, r := range l.Runs {
			if r.OK() && r.Matched != "" {
				row.Matched = append(row.Matched, fmt.Sprintf("run %d: %s", j+1, r.Matched))
			}
			if !r.OK() {
				reason := r.Failed
				switch {
				case reason == "" && r.Metric != nil && *r.Metric == 0:
					reason = "the metric is 0: no work to scale"
				case reason == "":
					reason = "no capture"
				}
				row.Failures = append(row.Failures, scaleFailure{Run: j + 1, Reason: reason, Tail: strings.Join(r.Tail, "\n")})
			}
		}
		rows[i] = row
	}
	return rows
}

func culpritRows(id, title, what string, cs []capture.Culprit, stats []capture.LevelStats, levels []int, top int, hashed bool) culpritTable {
	t := culpritTable{ID: id, Title: title, What: what, Levels: levels}
	for i, c := range cs[:min(top, len(cs))] {
		row := culpritRow{Rank: i + 1, Type: c.Type, Name: culpritName(c, hashed), Color: typeColor(c.Type), Growth: "+" + FormatDuration(c.Growth), Exponent: "-", TopFrom: "-"}
		if c.Growth < 0 {
			row.Growth = "-" + FormatDuration(-c.Growth)
		}
		if c.InNoise {
			row.Growth += " (in the noise)"
			row.InNoise = true
		}
		for j, v := range c.WaitPerWork {
			row.WaitPerWork = append(row.WaitPerWork, formatPerWork(v)+spreadOf(stats[j].Runs > 1, formatPerWork(c.WaitPerWorkLo[j]), formatPerWork(c.WaitPerWorkHi[j])))
		}
		if !math.IsNaN(c.Exponent) {
			row.Exponent = strconv.FormatFloat(c.Exponent, 'f', 2, 64)
		}
		if c.TopFrom > 0 {
			row.TopFrom = strconv.Itoa(c.TopFrom)
		}
		row.Spark = sparkline(c.WaitPerWork, row.Color)
		t.Rows = append(t.Rows, row)
	}
	return t
}

// culpritName is how a culprit is shown: a lock's name, id or address, a caller's frame.
func culpritName(c capture.Culprit, hashed bool) string {
	switch {
	case c.Caller:
		return callerText(c.Name)
	case c.Name != "":
		return c.Name
	case hashed:
		return c.Lock.HashedString()
	}
	return c.Lock.String()
}

// sparkline draws values as a small SVG line, from the lowest level to the highest.
func sparkline(values []float64, color string) template.HTML {
	const w, h = 96.0, 24.0
	hi := 0.0
	for _, v := range values {
		hi = max(hi, v)
	}
	var pts []string
	for i, v := range values {
		x := w / 2
		if len(values) > 1 {
			x = 2 + float64(i)*(w-4)/float64(len(values)-1)
		}
		y := h - 2
		if hi > 0 {
			y = h - 2 - v/hi*(h-4)
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
	}
	return template.HTML(fmt.Sprintf(`<svg class="spark" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="wait per unit of work by level"><polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/></svg>`,
		w, h, w, h, template.HTMLEscapeString(color), strings.Join(pts, " ")))
}

// formatPerWork writes a wait per unit of work, which is below a nanosecond where the work is
// millions of operations: those keep two decimals.
func formatPerWork(ns float64) string {
	if ns > 0 && ns < 0.995 {
		return strconv.FormatFloat(ns, 'f', 2, 64) + " ns"
	}
	return FormatDuration(ns)
}

// FormatNumber writes a throughput with three significant digits and a k, M, G, T, P or E suffix.
func FormatNumber(v float64) string {
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(v) >= u.div {
			return strconv.FormatFloat(v/u.div, 'g', 3, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// topLockLines is how many locks the chart of wait share by lock draws.
const topLockLines = 5

// scaleCharts are the ECharts options of the page's three charts, as JSON.
func scaleCharts(s *capture.Sweep, an capture.ScaleAnalysis, hashed bool) (string, error) {
	levels := make([]string, len(an.Levels))
	var measured, ideal []any
	base := -1
	for i, st := range an.Levels {
		levels[i] = strconv.Itoa(st.N)
		if st.Runs > 0 && base < 0 {
			base = i
		}
	}
	for _, st := range an.Levels {
		if st.Runs == 0 {
			measured, ideal = append(measured, nil), append(ideal, nil)
			continue
		}
		measured = append(measured, round3(st.Throughput))
		b := an.Levels[base]
		ideal = append(ideal, round3(b.Throughput*float64(st.N)/float64(b.N)))
	}
	unit := "runs/s"
	if s.Metric != "" {
		unit = "metric"
	}
	axis := func(name string, percent bool) map[string]any {
		a := map[string]any{"type": "value", "name": name}
		if percent {
			a["axisLabel"] = map[string]any{"formatter": "{value}%"}
		}
		return a
	}
	category := map[string]any{"type": "category", "name": "level", "data": levels}
	throughput := map[string]any{
		"tooltip": map[string]any{"trigger": "axis"},
		"legend":  map[string]any{"top": 0},
		"grid":    map[string]any{"left": 60, "right": 50, "top": 40, "bottom": 40},
		"xAxis":   category, "yAxis": axis(unit, false),
		"series": []any{
			map[string]any{"name": "measured", "type": "line", "data": measured, "symbolSize": 8, "connectNulls": true},
			map[string]any{"name": "ideal (linear)", "type": "line", "data": ideal, "lineStyle": map[string]any{"type": "dashed"}, "symbol": "none", "connectNulls": true},
		},
	}
	var typeSeries []any
	for j, t := range an.Types {
		var data []any
		for _, st := range an.Levels {
			data = append(data, round3(100*st.TypeShares[j]))
		}
		typeSeries = append(typeSeries, map[string]any{"name": t, "type": "bar", "stack": "wait", "data": data, "itemStyle": typeItemStyle(t)})
	}
	byType := map[string]any{
		"tooltip": map[string]any{"trigger": "axis"}, "legend": map[string]any{"top": 0, "type": "scroll"},
		"grid":  map[string]any{"left": 60, "right": 50, "top": 40, "bottom": 40},
		"xAxis": category, "yAxis": axis("% of thread time", true), "series": nonNilAny(typeSeries),
	}
	var lockSeries []any
	for _, c := range an.Locks[:min(topLockLines, len(an.Locks))] {
		var data []any
		for i, st := range an.Levels {
			data = append(data, round3(100*st.WaitShare*c.Share[i]))
		}
		lockSeries = append(lockSeries, map[string]any{"name": c.Type + " " + culpritName(c, hashed), "type": "line", "data": data, "symbolSize": 7})
	}
	byLock := map[string]any{
		"tooltip": map[string]any{"trigger": "axis"}, "legend": map[string]any{"top": 0, "type": "scroll"},
		"grid":  map[string]any{"left": 60, "right": 50, "top": 40, "bottom": 40},
		"xAxis": category, "yAxis": axis("% of thread time", true), "series": nonNilAny(lockSeries),
	}
	b, err := json.Marshal(map[string]any{"scale-throughput": throughput, "scale-types": byType, "scale-locks": byLock})
	if err != nil {
		return "", fmt.Errorf("encoding the scaling charts: %w", err)
	}
	return scriptSafe(string(b)), nil
}

func nonNilAny(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}

// round3 keeps three decimals, enough for a chart and a third of the JSON.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// embeddedPages are the level reports and the diffs of two levels (diffPairs), each page's HTML
// without ECharts, gzip-compressed and base64-encoded.
type embeddedPages struct {
	Levels []embeddedPage `json:"levels"`
	Diffs  []embeddedPage `json:"diffs"`
}

type embeddedPage struct {
	A    int    `json:"a"`           // the level, or the diff's before
	B    int    `json:"b,omitempty"` // the diff's after
	Page string `json:"page"`
}

// levelPages renders the embedded pages, with o's key so that every page names a lock by one id.
func levelPages(s *capture.Sweep, o HTMLOptions) (template.HTML, error) {
	a, err := loadAssets()
	if err != nil {
		return "", err
	}
	var shown []capture.SweepLevel
	var models []*model // of the levels shown, which their page and their diffs render
	pages := embeddedPages{Levels: []embeddedPage{}, Diffs: []embeddedPage{}}
	for _, l := range s.Levels {
		r := l.Representative()
		if r == nil {
			continue
		}
		// One model per level: its captures hold ids already, or are shown raw.
		m := newModel(r.Capture, true, nil)
		page, err := embedPage(a, func(w io.Writer) error { return m.writeHTML(w, o) })
		if err != nil {
			return "", fmt.Errorf("level %d: %w", l.N, err)
		}
		pages.Levels = append(pages.Levels, embeddedPage{A: l.N, Page: page})
		shown, models = append(shown, l), append(models, m)
	}
	for i, before := range shown {
		for j, after := range shown[i+1:] {
			if !diffPair(len(shown), i, i+1+j) {
				continue
			}
			d := compare(models[i], models[i+1+j], capture.DiffOptions{Top: o.Top})
			page, err := embedPage(a, func(w io.Writer) error { return writeDiffHTML(w, d, o, o.AddressKey) })
			if err != nil {
				return "", fmt.Errorf("diff of levels %d and %d: %w", before.N, after.N, err)
			}
			pages.Diffs = append(pages.Diffs, embeddedPage{A: before.N, B: after.N, Page: page})
		}
	}
	b, err := json.Marshal(pages)
	if err != nil {
		return "", fmt.Errorf("encoding the level pages: %w", err)
	}
	// JSON of base64 strings and numbers: nothing HTML treats specially.
	return template.HTML(`<script type="application/json" id="klockstat-scale-pages">` + string(b) + `</script>`), nil
}

// maxAllPairsLevels is the most levels whose every two levels the page holds the diff of. The diffs
// are most of a page's size (a 64-level sweep held 2016 of them, 77 MB): beyond it, the page holds
// those of each level with the lowest and with the next, and scale.js says how to get the others.
const maxAllPairsLevels = 8

// diffPair reports whether the page holds the diff of the shown levels i < j of n.
func diffPair(n, i, j int) bool {
	return n <= maxAllPairsLevels || i == 0 || j == i+1
}

// embedPage renders a page with write and returns it without its ECharts, compressed.
func embedPage(a *assets, write func(io.Writer) error) (string, error) {
	var page bytes.Buffer
	if err := write(&page); err != nil {
		return "", err
	}
	html := page.String()
	src := "<script>" + string(a.echarts) + "</script>"
	if !strings.Contains(html, src) {
		return "", errors.New("the page has no ECharts element to take out")
	}
	html = strings.Replace(html, src, "<script>"+echartsMark+"</script>", 1)
	var out bytes.Buffer
	if err := compress(&out, strings.NewReader(html)); err != nil {
		return "", err
	}
	return out.String(), nil
}

// embedSweep is the element holding the sweep's JSON, compressed.
func embedSweep(s *capture.Sweep) (template.HTML, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(s.Write(pw)) }()
	var out bytes.Buffer
	fmt.Fprintf(&out, `<script type="text/plain" id="%s" data-encoding="gzip+base64">`, sweepElementID)
	if err := compress(&out, pr); err != nil {
		return "", fmt.Errorf("embedding the sweep: %w", err)
	}
	out.WriteString("</script>")
	return template.HTML(out.String()), nil
}

// readSweep reads a sweep JSON or the sweep a scaling report embeds, inflating at most limit bytes.
func readSweep(data []byte, limit int64) (*capture.Sweep, bool, error) {
	data = trimLeading(data)
	if len(data) > 0 && data[0] == '{' {
		if !capture.IsSweep(data) {
			return nil, false, nil
		}
		s, err := capture.ParseSweep(data)
		return s, true, err
	}
	// A page without the element's id anywhere is no scaling report; one with it is read as a
	// browser finds it, which may still fail.
	if !bytes.Contains(data, []byte(`id="`+sweepElementID+`"`)) {
		return nil, false, nil
	}
	content, err := embeddedElement(data, sweepElementID)
	if err != nil {
		return nil, true, err
	}
	raw, err := base64.StdEncoding.AppendDecode(nil, bytes.TrimSpace(content))
	if err != nil {
		return nil, true, fmt.Errorf("the scaling report's sweep is not base64: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, true, fmt.Errorf("the scaling report's sweep is not gzip: %w", err)
	}
	// The limits of a report's page data, checked while inflating: a bomb is refused before it is
	// held, and the blank space klockstat does not write is dropped.
	bounded := &pageDataReader{r: zr, limit: limit, what: "the scaling report's sweep", instead: "read the sweep JSON the report was made from (klockstat scale --json)"}
	inflated, err := io.ReadAll(bounded)
	switch {
	case bounded.err != nil:
		return nil, true, bounded.err
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, true, errors.New("the scaling report's sweep is truncated: its compressed data ends early (a download or copy cut short?); read the whole page, or the sweep JSON")
	case err != nil:
		return nil, true, fmt.Errorf("inflating the scaling report's sweep: %w", err)
	}
	s, err := capture.ParseSweep(inflated)
	return s, true, err
}
