package report

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/templates"
)

// WriteDiffHTML renders the comparison as one self-contained page, under the rules of WriteHTML's
// report: it works offline from file://, inlines ECharts, the CSS and the JavaScript, and escapes
// every string from the captures. Unless o.RawAddresses is set, kernel addresses (callers and stack
// frames kallsyms could not name) are replaced by ids under a key drawn for this page only. o.Top is
// the number of rows on a table page and of bars in the changes chart.
//
// Unlike the report, the page does not embed the captures: it is not an input of ReadInput.
func WriteDiffHTML(w io.Writer, d *Diff, o HTMLOptions) error {
	key := make([]byte, 32)
	rand.Read(key) // never fails: crypto/rand.Read crashes the program rather than return an error
	return writeDiffHTML(w, d, o, key)
}

// writeDiffHTML is WriteDiffHTML with the address-hashing key chosen by the caller.
func writeDiffHTML(w io.Writer, d *Diff, o HTMLOptions, key []byte) error {
	a, err := loadAssets()
	if err != nil {
		return err
	}
	da, err := loadDiffAssets()
	if err != nil {
		return err
	}
	if o.Top <= 0 {
		o.Top = defaultTop
	}
	if !o.RawAddresses {
		d = d.hashed(key)
	}
	p, err := newDiffPage(d, o, a, da)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := da.page.Execute(bw, p); err != nil {
		return fmt.Errorf("rendering the HTML diff: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the HTML diff: %w", err)
	}
	return nil
}

// hashed returns the diff of copies of d's captures whose addresses are hashed with key. Matching
// does not change: addresses never match, hashed or not.
func (d *Diff) hashed(key []byte) *Diff {
	c := d.captures
	if c[beforeSide].Meta.AddressesHashed && c[afterSide].Meta.AddressesHashed {
		return d
	}
	for side := range c {
		if !c[side].Meta.AddressesHashed {
			c[side] = hashedCopy(c[side], key)
		}
	}
	return Compare(c[beforeSide], c[afterSide], d.Options)
}

// diffAssets are the diff page's own template, styles and script; the rest comes from the report's
// assets.
type diffAssets struct {
	page *template.Template
	css  template.CSS
	js   template.JS
}

var loadDiffAssets = sync.OnceValues(func() (*diffAssets, error) {
	css, err := templates.DiffFS.ReadFile("diff.css")
	if err != nil {
		return nil, fmt.Errorf("loading the diff page's diff.css: %w", err)
	}
	// html/template inlines CSS as it is, so it must not end its <style> element early.
	if strings.Contains(strings.ToLower(string(css)), "</style") {
		return nil, errors.New("diff.css contains </style")
	}
	js, err := templates.DiffFS.ReadFile("diff.js")
	if err != nil {
		return nil, fmt.Errorf("loading the diff page's diff.js: %w", err)
	}
	page, err := template.New("diff.html").ParseFS(templates.DiffFS, "diff.html")
	if err != nil {
		return nil, fmt.Errorf("parsing the diff template: %w", err)
	}
	return &diffAssets{page: page, css: template.CSS(css), js: template.JS(scriptSafe(string(js)))}, nil
})

// diffPage is what diff.html renders.
type diffPage struct {
	Title, Subtitle string
	CSP             string
	CSS, DiffCSS    template.CSS
	ECharts         template.JS
	ReportJS        template.JS
	DiffJS          template.JS
	Basis           string
	Warnings        []string
	Highlights      []highlight
	Sides           []sideField
	Empty           bool
	Charts          []chart
	ChartData       template.JS
	Types           diffTable
	Rows            diffTable
	RowsJSON        template.JS
	Top             int
	AddrHashed      bool
	Tool            string
	ECVersion       string
	ECNotice        string
}

// sideField is one line of the side-by-side header: a field of both captures.
type sideField struct {
	Label         string
	Before, After field
	Differs       bool
}

func newDiffPage(d *Diff, o HTMLOptions, a *assets, da *diffAssets) (*diffPage, error) {
	b, af := d.captures[beforeSide].Meta, d.captures[afterSide].Meta
	p := &diffPage{
		Title:      "klockstat diff",
		Subtitle:   sideTitle(b) + " → " + sideTitle(af),
		CSS:        a.css,
		DiffCSS:    da.css,
		ECharts:    a.echarts,
		ReportJS:   a.js,
		DiffJS:     da.js,
		Basis:      d.basis(),
		Warnings:   d.warnings,
		Sides:      sideFields(d),
		Empty:      len(d.Rows) == 0,
		Top:        o.Top,
		AddrHashed: b.AddressesHashed && af.AddressesHashed,
		Tool:       strings.TrimSpace("klockstat " + af.ToolVersion),
		ECVersion:  a.echartsVersion,
		ECNotice:   a.echartsNotice,
	}
	p.Highlights = d.highlights()
	if !p.Empty {
		charts, data, err := diffCharts(d, o.Top)
		if err != nil {
			return nil, err
		}
		p.Charts, p.ChartData = charts, data
	}
	p.Types = d.typeTable()
	p.Rows = d.rowTable(o.Top)
	js, err := d.rowsJSON()
	if err != nil {
		return nil, err
	}
	p.RowsJSON = template.JS(js)

	scripts := []string{string(p.ECharts), string(p.ReportJS), string(p.DiffJS)}
	for _, ch := range p.Charts {
		scripts = append(scripts, string(ch.Script))
	}
	p.CSP = contentSecurityPolicy(scripts)
	return p, nil
}

func sideTitle(m capture.Meta) string {
	var parts []string
	for _, s := range []string{m.Hostname, m.Kernel, formatStart(m.Start), FormatDuration(float64(m.DurationNS))} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " · ")
}

// basis says what the numbers are and how rows were matched.
func (d *Diff) basis() string {
	durations := fmt.Sprintf("before %s, after %s", FormatDuration(float64(d.captures[beforeSide].Meta.DurationNS)), FormatDuration(float64(d.captures[afterSide].Meta.DurationNS)))
	var b strings.Builder
	if d.PerSecond {
		fmt.Fprintf(&b, "Waits and total wait are per second of capture (%s), so captures of different lengths compare; average, percentiles and max are of single waits and are not scaled. ", durations)
	} else {
		fmt.Fprintf(&b, "Waits and total wait are the raw totals of each capture (%s), not scaled to their lengths. ", durations)
	}
	fmt.Fprintf(&b, "Rows are matched by lock type, caller function (without offset)%s; a caller that is a raw address or hashed id never matches, so its rows are new or gone.", d.matchedBy())
	return b.String()
}

// highlights are the headline numbers: how the total wait and the number of waits changed, the
// biggest change, and how many rows matched.
func (d *Diff) highlights() []highlight {
	per := ""
	if d.PerSecond {
		per = "/s"
	}
	totalB, totalA, pct := d.TotalWaitChange()
	hs := []highlight{{
		Label: "Total wait", Value: formatPct(pct), Bad: pct > 0,
		Detail: fmt.Sprintf("%s%s before, %s%s after", FormatDuration(totalB), per, FormatDuration(totalA), per),
	}}
	var countB, countA float64
	for _, r := range d.Rows {
		countB += r.Before.Count
		countA += r.After.Count
	}
	hs = append(hs, highlight{
		Label: "Waits", Value: formatPct(changePct(countB, countA)),
		Detail: fmt.Sprintf("%s%s before, %s%s after", d.formatCount(countB), per, d.formatCount(countA), per),
	})
	if len(d.Rows) > 0 {
		r := d.Rows[0]
		hs = append(hs, highlight{
			Label: "Biggest change", Value: callerText(r.Caller), Title: r.Type + " " + callerText(r.Caller), Symbol: true,
			Detail: fmt.Sprintf("%s%s, %s%s (%s)", r.Type, nameSuffix(r.Name), formatDelta(r.DeltaNS()), per, rowChange(r)),
		})
	}
	var counts [3]int
	for _, r := range d.Rows {
		counts[r.Status]++
	}
	hs = append(hs, highlight{
		Label: "Rows matched", Value: strconv.Itoa(counts[Matched]),
		Detail: fmt.Sprintf("%d new, %d gone", counts[New], counts[Gone]),
	})
	return hs
}

func nameSuffix(name string) string {
	if name == "" {
		return ""
	}
	return " on " + name
}

// sideFields put the two captures' header fields (header.go) side by side, with their warnings.
func sideFields(d *Diff) []sideField {
	var lists [2][]field
	for side, c := range d.captures {
		captured, settings, health := headerFields(c.Meta)
		lists[side] = append(append(append(lists[side], captured...), settings...), health...)
		lists[side] = append(lists[side], field{Label: "Warnings", Value: listOr(c.Meta.Warnings, "none"), Bad: len(c.Meta.Warnings) > 0})
	}
	var out []sideField
	for i, f := range lists[beforeSide] {
		g := lists[afterSide][i] // headerFields always returns the same labels in the same order
		out = append(out, sideField{Label: f.Label, Before: f, After: g, Differs: f.Value != g.Value})
	}
	return out
}

// formatCount renders a number of waits: per second with one decimal, raw totals as integers.
func (d *Diff) formatCount(n float64) string {
	if d.PerSecond {
		return strconv.FormatFloat(n, 'f', 1, 64)
	}
	return strconv.FormatFloat(n, 'f', 0, 64)
}

// formatRatio renders after/before: "×1.52", "new" when before is 0, "gone" when after is 0, "–"
// when both are.
func formatRatio(b, a float64) string {
	switch {
	case b == 0 && a == 0:
		return "–"
	case b == 0:
		return "new"
	case a == 0:
		return "gone"
	}
	return "×" + strconv.FormatFloat(a/b, 'f', 2, 64)
}

// changeClass marks a cell of a change: more waiting is worse.
func changeClass(delta float64) string {
	switch {
	case delta > 0:
		return "num worse"
	case delta < 0:
		return "num better"
	}
	return "num"
}

// The tables. Their columns come in groups of before, after, delta and ratio under one heading;
// the keys are shared with diff.js, which rebuilds the rows table from the JSON of all rows.

// diffColumn is one column of a diff table.
type diffColumn struct {
	Key, Label string
	Num        bool
}

// diffHeading is a heading over a group of columns, or with an empty Label a single column whose
// heading spans both header rows.
type diffHeading struct {
	Label   string
	Columns []diffColumn
}

type diffTable struct {
	ID, Title, Caption string
	Headings           []diffHeading
	Rows               [][]cell
	Total              int // rows of the whole table; Rows may hold the first page only
}

// Keys are the column keys in the order of the cells.
func (t diffTable) Keys() string {
	var keys []string
	for _, h := range t.Headings {
		for _, c := range h.Columns {
			keys = append(keys, c.Key)
		}
	}
	return strings.Join(keys, " ")
}

func single(key, label string, num bool) diffHeading {
	return diffHeading{Columns: []diffColumn{{Key: key, Label: label, Num: num}}}
}

// compared is the heading of a value shown before, after, as a change and as a ratio.
func compared(key, label string) diffHeading {
	return diffHeading{Label: label, Columns: []diffColumn{
		{Key: key + "_b", Label: "before", Num: true}, {Key: key + "_a", Label: "after", Num: true},
		{Key: key + "_d", Label: "change", Num: true}, {Key: key + "_r", Label: "ratio", Num: true},
	}}
}

// valueFormat is how the cells of one compared value are written.
type valueFormat struct {
	text, change, title func(float64) string
	additive            bool // a count or total: 0 on the side a row is missing from, where an average is unknown
}

// comparedCells are the four cells of compared: before, after, change and ratio. present says which
// sides have the value; diff.js renders them the same way.
func comparedCells(b, a float64, present [2]bool, f valueFormat) []cell {
	side := func(v float64, ok bool) cell {
		if !ok {
			return cell{Text: "–", Class: "num muted"}
		}
		return cell{Text: f.text(v), Title: f.title(v), Class: "num"}
	}
	change, ratio := cell{Text: "–", Class: "num muted"}, cell{Text: "–", Class: "num muted"}
	if f.additive || present[beforeSide] && present[afterSide] {
		change = cell{Text: f.change(a - b), Title: f.title(a - b), Class: changeClass(a - b)}
		ratio = cell{Text: formatRatio(b, a), Class: changeClass(a - b)}
	}
	return []cell{side(b, present[beforeSide]), side(a, present[afterSide]), change, ratio}
}

func nsCellTitle(ns float64) string { return strconv.FormatFloat(ns, 'f', 1, 64) + " ns" }

func (d *Diff) unit() string {
	if d.PerSecond {
		return " per second"
	}
	return ""
}

func (d *Diff) typeTable() diffTable {
	t := diffTable{
		ID: "diff-types", Title: "By lock type",
		Caption: "all rows of a lock type merged, with percentiles from the lock type's histogram; sorted by absolute change in total wait",
		Headings: []diffHeading{
			single("type", "Type", false), single("status", "Status", false),
			compared("total", "Total wait"+d.unit()), compared("count", "Waits"+d.unit()),
			compared("avg", "Average wait"), compared("p99", "p99 wait"), compared("max", "Max wait"),
		},
		Total: len(d.Types),
	}
	for _, ty := range d.Types {
		present := [2]bool{ty.Status != New, ty.Status != Gone}
		cells := []cell{{Text: ty.Type}, statusCell(ty.Status)}
		cells = append(cells, comparedCells(ty.Before.TotalNS, ty.After.TotalNS, present, totalFormat)...)
		cells = append(cells, comparedCells(ty.Before.Count, ty.After.Count, present, d.counts())...)
		cells = append(cells, comparedCells(ty.Before.MeanNS, ty.After.MeanNS, present, waitFormat)...)
		cells = append(cells, comparedCells(float64(ty.BeforeDist.P99), float64(ty.AfterDist.P99), present, waitFormat)...)
		cells = append(cells, comparedCells(float64(ty.Before.MaxNS), float64(ty.After.MaxNS), present, waitFormat)...)
		t.Rows = append(t.Rows, cells)
	}
	return t
}

var (
	// waitFormat writes a single wait: an average, a percentile, a maximum.
	waitFormat = valueFormat{text: FormatDuration, change: formatDelta, title: nsCellTitle}
	// totalFormat writes a total wait.
	totalFormat = valueFormat{text: FormatDuration, change: formatDelta, title: nsCellTitle, additive: true}
)

func (d *Diff) counts() valueFormat {
	delta := func(n float64) string {
		s := d.formatCount(n)
		if n > 0 {
			s = "+" + s
		}
		return s
	}
	return valueFormat{text: d.formatCount, change: delta, title: d.formatCount, additive: true}
}

func statusCell(s DiffStatus) cell {
	return cell{Text: s.String(), Class: "status-" + s.String()}
}

// rowHeadings are the headings of the rows table; diff.js knows every key.
func (d *Diff) rowHeadings() []diffHeading {
	h := []diffHeading{single("status", "Status", false), single("type", "Type", false), single("lock", "Lock", false)}
	if d.Options.ByThread {
		h = append(h, single("comm", "Thread", false))
	}
	return append(h, single("caller", "Caller", false),
		compared("total", "Total wait"+d.unit()), compared("count", "Waits"+d.unit()), compared("avg", "Average wait"),
		single("p99", "p99 wait", false), single("stack", "Heaviest stack", false))
}

// rowTable renders the first n rows; diff.js renders the others from the JSON of all rows.
func (d *Diff) rowTable(n int) diffTable {
	caption := "one row per lock type, caller function and lock name"
	if d.Options.ByThread {
		caption = "one row per lock type, caller function, lock name and thread name"
	}
	t := diffTable{ID: "diff-rows", Title: "By lock and caller", Caption: caption + "; sorted by absolute change in total wait", Headings: d.rowHeadings(), Total: len(d.Rows)}
	p99 := d.typeP99()
	for _, r := range d.Rows[:min(n, len(d.Rows))] {
		present := [2]bool{r.Status != New, r.Status != Gone}
		cells := []cell{statusCell(r.Status), {Text: r.Type}, rowLockCell(r.Name)}
		if d.Options.ByThread {
			cells = append(cells, cell{Text: r.Comm})
		}
		cells = append(cells, cell{Text: callerText(r.Caller), Class: "mono"})
		cells = append(cells, comparedCells(r.Before.TotalNS, r.After.TotalNS, present, totalFormat)...)
		cells = append(cells, comparedCells(r.Before.Count, r.After.Count, present, d.counts())...)
		cells = append(cells, comparedCells(r.Before.MeanNS, r.After.MeanNS, present, waitFormat)...)
		cells = append(cells, cell{Text: "per type", Title: p99Title(r.Type, p99[r.Type]), Class: "muted"})
		cells = append(cells, cell{IsStack: true, Stack: r.heaviestStack()})
		t.Rows = append(t.Rows, cells)
	}
	return t
}

// rowLockCell names the lock of a row: its symbol, or, for the unnamed locks merged in a row, "unnamed".
func rowLockCell(name string) cell {
	if name == "" {
		return cell{Text: "unnamed", Title: "all lock instances without a kernel symbol", Class: "muted"}
	}
	return cell{Text: name, Class: "mono"}
}

// heaviestStack is the stack of the heaviest record on the row's later side.
func (r DiffRow) heaviestStack() []string {
	if r.Status == Gone {
		return r.Before.Stack
	}
	return r.After.Stack
}

// typeP99 returns the p99 wait of every lock type before and after, nil where the type had no waits.
func (d *Diff) typeP99() map[string][2]*uint64 {
	p99 := make(map[string][2]*uint64, len(d.Types))
	for _, t := range d.Types {
		var v [2]*uint64
		if t.Status != New {
			v[beforeSide] = &t.BeforeDist.P99
		}
		if t.Status != Gone {
			v[afterSide] = &t.AfterDist.P99
		}
		p99[t.Type] = v
	}
	return p99
}

// p99Title is the tooltip of a row's p99 cell: a record keeps no distribution, so only its lock
// type's p99 is known.
func p99Title(typ string, p99 [2]*uint64) string {
	side := func(v *uint64) string {
		if v == nil {
			return "none"
		}
		return FormatDuration(float64(*v))
	}
	return fmt.Sprintf("p99 of all %s waits: %s before, %s after", typ, side(p99[beforeSide]), side(p99[afterSide]))
}

// diffRowSide and diffRowJSON are a row as diff.js reads it.
type diffRowSide struct {
	Count   float64 `json:"count"`
	TotalNS float64 `json:"total_ns"`
	MeanNS  float64 `json:"mean_ns"`
	MaxNS   uint64  `json:"max_ns"`
}

type diffRowJSON struct {
	Status string       `json:"status"`
	Type   string       `json:"type"`
	Name   string       `json:"name"`
	Caller string       `json:"caller"`
	Comm   string       `json:"comm"`
	Before *diffRowSide `json:"before"` // null on the side the row is missing from
	After  *diffRowSide `json:"after"`
	P99    [2]*uint64   `json:"p99"` // of the lock type, before and after
	Stack  []string     `json:"stack"`
}

// rowsJSON encodes all rows for diff.js. encoding/json escapes <, > and &, so the result cannot end
// the page's script element early.
func (d *Diff) rowsJSON() ([]byte, error) {
	p99 := d.typeP99()
	side := func(v DiffValues, present bool) *diffRowSide {
		if !present {
			return nil
		}
		return &diffRowSide{Count: v.Count, TotalNS: v.TotalNS, MeanNS: v.MeanNS, MaxNS: v.MaxNS}
	}
	rows := make([]diffRowJSON, len(d.Rows))
	for i, r := range d.Rows {
		rows[i] = diffRowJSON{
			Status: r.Status.String(), Type: r.Type, Name: r.Name, Caller: r.Caller, Comm: r.Comm,
			Before: side(r.Before, r.Status != New), After: side(r.After, r.Status != Gone),
			P99: p99[r.Type], Stack: nonNilStrings(r.heaviestStack()),
		}
	}
	js, err := json.Marshal(struct {
		PerSecond bool          `json:"per_second"`
		ByThread  bool          `json:"by_thread"`
		Rows      []diffRowJSON `json:"rows"`
	}{d.PerSecond, d.Options.ByThread, rows})
	if err != nil {
		return nil, fmt.Errorf("encoding the diff's rows: %w", err)
	}
	return js, nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
