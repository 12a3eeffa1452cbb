package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// WriteDiffHTML renders the comparison as one self-contained page, under the rules of WriteHTML's
// report: it works offline from file://, inlines ECharts, the CSS, the JavaScript and its rows, and
// escapes every string from the captures. Unless o.RawAddresses is set, kernel addresses (callers and
// stack frames kallsyms could not name) are replaced by ids under o.AddressKey, or a key drawn for
// this page only. o.Top is the number of rows on a table page and of bars in the changes chart.
//
// Unlike the report, the page does not embed the captures: it is not an input of ReadInput.
func WriteDiffHTML(w io.Writer, d *capture.Diff, o HTMLOptions) error {
	key := o.AddressKey
	if key == nil {
		key = newKey()
	}
	return writeDiffHTML(w, d, o, key)
}

// writeDiffHTML is WriteDiffHTML with the address-hashing key chosen by the caller.
func writeDiffHTML(w io.Writer, d *capture.Diff, o HTMLOptions, key []byte) error {
	b, a := d.Captures[capture.BeforeSide].Meta, d.Captures[capture.AfterSide].Meta
	// Addresses never match across captures, hashed or not, so hashing what is shown changes no row.
	hash := !o.RawAddresses && !(b.AddressesHashed && a.AddressesHashed)
	return renderPage(w, "diff", o, func(as *assets, o HTMLOptions) (any, error) {
		return newDiffPage(d, o, as, newStrtab(hasherFor(hash, key)))
	})
}

// diffPage is what page.html's diff template renders.
type diffPage struct {
	page
	Basis  string
	Sides  []sideField
	Tables []tables
	// OwnersNote says why the lock owners are not compared when only one capture has them.
	OwnersNote string
}

// sideField is one line of the side-by-side header: a field of both captures.
type sideField struct {
	Label         string
	Before, After field
	Differs       bool
}

func newDiffPage(d *capture.Diff, o HTMLOptions, a *assets, tab *strtab) (*diffPage, error) {
	b, af := d.Captures[capture.BeforeSide].Meta, d.Captures[capture.AfterSide].Meta
	p := &diffPage{
		page:  newPage(a, "klockstat diff", sideTitle(b)+" → "+sideTitle(af), strings.TrimSpace("klockstat "+af.ToolVersion)),
		Basis: basis(d),
	}
	p.Warnings, p.WarningsTitle = d.Warnings(), "The captures differ in ways that change what the numbers mean"
	p.Empty = len(d.Rows) == 0
	p.AddrHashed = tab.hasher != nil || b.AddressesHashed && af.AddressesHashed
	p.Sides = sideFields(d, tab.hasher != nil)
	p.FooterNote = "the page does not embed the captures: keep their JSON or reports"
	p.OwnersNote = ownersNotCompared(d)
	p.Highlights = diffHighlights(d, tab)
	if p.Empty {
		return p, nil
	}
	var err error
	if p.Charts, err = diffCharts(d, o.Top, tab); err != nil {
		return nil, err
	}
	per := ""
	if d.PerSecond {
		per = " per second"
	}
	p99 := typeP99(d)
	caption := "one row per lock type, caller function and lock name"
	switch {
	case d.Options.ByThread && d.Options.ByCgroup:
		caption = "one row per lock type, caller function, lock name, thread name and cgroup path"
	case d.Options.ByThread:
		caption = "one row per lock type, caller function, lock name and thread name"
	case d.Options.ByCgroup:
		caption = "one row per lock type, caller function, lock name and cgroup path"
	}
	p.Tables = []tables{{
		ID: "diff-types", Title: "By lock type", PageSize: o.Top, Placeholder: "Filter: type, status…",
		Note: "All rows of a lock type merged, with percentiles from the lock type's histogram; sorted by absolute change in total wait. " +
			"An average above p99 (marked *) is no error: a few very long waits, fewer than 1 in 100, weigh more in the average than all the others.",
		Views: []view{typeView(d, per, tab)},
	}, {
		ID: "diff-rows", Title: "Changes", PageSize: o.Top, Placeholder: "Filter: status, type, lock, caller, frame…",
		Note: "Sorted by absolute change in total wait. A record keeps count, total, min and max of its waits but no distribution, so p99 is known per lock type only (see above).",
		Views: []view{
			rowView("rows", "By lock and caller", caption, d.Rows, d, per, p99, tab, capture.FieldName|capture.FieldCaller),
			rowView("callers", "By caller", "one row per lock type and caller function, all locks merged", d.Callers, d, per, p99, tab, capture.FieldCaller),
			rowView("locks", "By lock", "one row per lock type and lock name, all callers merged: different locks of the same name are one row", d.Locks, d, per, p99, tab, capture.FieldName),
			rowView("cgroups", "By cgroup", "one row per lock type and cgroup path of the waiters, all locks and callers merged", d.Cgroups, d, per, p99, tab, capture.FieldCgroup),
		},
	}}
	if d.OwnersCompared() {
		p.Tables = append(p.Tables, ownerDiffTables(d, o.Top, per, tab))
	}
	data := pageData{tab: tab}
	for _, t := range p.Tables {
		data.views = append(data.views, t.Views...)
	}
	if p.Data, err = data.encode(); err != nil {
		return nil, err
	}
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
func basis(d *capture.Diff) string {
	durations := fmt.Sprintf("before %s, after %s", FormatDuration(float64(d.Captures[capture.BeforeSide].Meta.DurationNS)), FormatDuration(float64(d.Captures[capture.AfterSide].Meta.DurationNS)))
	var b strings.Builder
	if d.PerSecond {
		fmt.Fprintf(&b, "Waits and total wait are per second of capture (%s), so captures of different lengths compare; average, percentiles and max are of single waits and are not scaled. ", durations)
	} else {
		fmt.Fprintf(&b, "Waits and total wait are the raw totals of each capture (%s), not scaled to their lengths. ", durations)
	}
	fmt.Fprintf(&b, "Rows are matched by lock type, caller function (without offset)%s; a caller that is a raw address or hashed id never matches, so its rows are new or gone.", matchedBy(d))
	return b.String()
}

// highlights are the headline numbers: how the total wait and the number of waits changed, the
// biggest change, and how many rows matched.
func diffHighlights(d *capture.Diff, tab *strtab) []highlight {
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
		Label: "Waits", Value: formatPct(capture.ChangePct(countB, countA)),
		Detail: fmt.Sprintf("%s%s before, %s%s after", formatCount(d, countB), per, formatCount(d, countA), per),
	})
	if len(d.Rows) > 0 {
		r := d.Rows[0]
		caller := callerText(tab.strings[tab.frame(r.Caller)])
		hs = append(hs, highlight{
			Label: "Biggest change", Value: caller, Title: r.Type + " " + caller, Symbol: true,
			Detail: fmt.Sprintf("%s%s, %s%s (%s)", r.Type, nameSuffix(r.Name), formatDelta(r.DeltaNS()), per, rowChange(r)),
		})
	}
	var counts [3]int
	for _, r := range d.Rows {
		counts[r.Status]++
	}
	hs = append(hs, highlight{
		Label: "Rows matched", Value: strconv.Itoa(counts[capture.Matched]),
		Detail: fmt.Sprintf("%d new, %d gone", counts[capture.New], counts[capture.Gone]),
	})
	return hs
}

func nameSuffix(name string) string {
	if name == "" {
		return ""
	}
	return " on " + name
}

// sideFields put the two captures' header fields (header.go) side by side, with their warnings;
// hashed says the page hashes the addresses of both.
func sideFields(d *capture.Diff, hashed bool) []sideField {
	var lists [2][]field
	for side, c := range d.Captures {
		m := c.Meta
		m.AddressesHashed = m.AddressesHashed || hashed
		captured, settings, health := headerFields(m)
		lists[side] = append(append(append(lists[side], captured...), settings...), health...)
		lists[side] = append(lists[side], field{Label: "Warnings", Value: cmp.Or(strings.Join(c.Meta.Warnings, "; "), "none"), Bad: len(c.Meta.Warnings) > 0})
	}
	var out []sideField
	for i, f := range lists[capture.BeforeSide] {
		g := lists[capture.AfterSide][i] // headerFields always returns the same labels in the same order
		out = append(out, sideField{Label: f.Label, Before: f, After: g, Differs: f.Value != g.Value})
	}
	return out
}

// formatCount renders a number of waits: per second with one decimal, raw totals as integers.
func formatCount(d *capture.Diff, n float64) string {
	if d.PerSecond {
		return strconv.FormatFloat(n, 'f', 1, 64)
	}
	return strconv.FormatFloat(n, 'f', 0, 64)
}

// The tables. A value is shown before, after, as a change and as a ratio, in four columns under one
// heading.

// comparedValues are one value of the rows of a table, before and after; NaN where a row is missing
// from a side.
type comparedValues struct {
	before, after []float64
	additive      bool // a count or a total: 0 on the side a row is missing from, where an average is unknown
}

func newCompared(n int, additive bool) *comparedValues {
	return &comparedValues{before: make([]float64, n), after: make([]float64, n), additive: additive}
}

// set sets row i's values; present says which sides have one.
func (c *comparedValues) set(i int, b, a float64, present [2]bool) {
	c.before[i], c.after[i] = b, a
	if !present[capture.BeforeSide] {
		c.before[i] = missing
	}
	if !present[capture.AfterSide] {
		c.after[i] = missing
	}
}

// columns are the four columns of the value: kind is how before and after are shown (kindNS,
// kindMeanNS or kindNum with decimals), unit that of the change ("ns" or "num").
func (c *comparedValues) columns(key, group, kind, unit string, decimals int) []column {
	n := len(c.before)
	delta, ratio := make([]float64, n), make([]float64, n)
	for i := range n {
		b, a := c.before[i], c.after[i]
		if c.additive {
			b, a = zeroIfMissing(b), zeroIfMissing(a)
		}
		delta[i], ratio[i] = a-b, ratioOf(b, a)
	}
	side := func(suffix, label string, values []float64) column {
		return column{Key: key + suffix, Label: label, Group: group, Kind: kind, Decimals: decimals, floats: values}
	}
	return []column{
		side("_b", "before", c.before), side("_a", "after", c.after),
		{Key: key + "_d", Label: "change", Group: group, Kind: kindDelta, Unit: unit, Decimals: decimals, floats: delta},
		{Key: key + "_r", Label: "ratio", Group: group, Kind: kindRatio, floats: ratio},
	}
}

func zeroIfMissing(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// ratioOf is after / before as kindRatio holds it: NaN where unknown or both are 0, -1 from 0.
func ratioOf(b, a float64) float64 {
	switch {
	case math.IsNaN(b) || math.IsNaN(a) || b == 0 && a == 0:
		return missing
	case b == 0:
		return -1
	}
	return a / b
}

// countDecimals are the decimals of a number of waits: per second with one, raw totals as integers.
func countDecimals(d *capture.Diff) int {
	if d.PerSecond {
		return 1
	}
	return 0
}

func typeView(d *capture.Diff, per string, tab *strtab) view {
	n := len(d.Types)
	names, statuses := make([]int32, n), make([]int32, n)
	total, count, mean, p99, maxWait := newCompared(n, true), newCompared(n, true), newCompared(n, false), newCompared(n, false), newCompared(n, false)
	// An average above p99 looks like an error: it is a few very long waits, which say so.
	meanNotes := [2][]int32{make([]int32, n), make([]int32, n)}
	for i, t := range d.Types {
		for side, dist := range []capture.Stats{t.BeforeDist, t.AfterDist} {
			meanNotes[side][i] = -1
			if inSide(t.Status, side) && dist.MeanNS > float64(dist.P99) {
				meanNotes[side][i] = tab.str(meanAboveP99(dist))
			}
		}
		present := [2]bool{t.Status != capture.New, t.Status != capture.Gone}
		names[i], statuses[i] = tab.str(t.Type), tab.str(t.Status.String())
		total.set(i, t.Before.TotalNS, t.After.TotalNS, present)
		count.set(i, t.Before.Count, t.After.Count, present)
		mean.set(i, t.Before.MeanNS, t.After.MeanNS, present)
		p99.set(i, float64(t.BeforeDist.P99), float64(t.AfterDist.P99), present)
		maxWait.set(i, float64(t.Before.MaxNS), float64(t.After.MaxNS), present)
	}
	cols := []column{textColumn("type", "Type", "", names), statusColumn(statuses)}
	cols = append(cols, total.columns("total", "Total wait"+per, kindMeanNS, "ns", 0)...)
	cols = append(cols, count.columns("count", "Waits"+per, kindNum, "num", countDecimals(d))...)
	means := mean.columns("avg", "Average wait", kindMeanNS, "ns", 0)
	means[0].titles, means[1].titles = meanNotes[capture.BeforeSide], meanNotes[capture.AfterSide]
	means[0].Term = "p99"
	p99s := p99.columns("p99", "p99 wait", kindMeanNS, "ns", 0)
	p99s[0].Term = "p99"
	cols = append(cols, means...)
	cols = append(cols, p99s...)
	cols = append(cols, maxWait.columns("max", "Max wait", kindMeanNS, "ns", 0)...)
	return view{ID: "types", Title: "By lock type", Caption: "all rows of a lock type merged", Rows: n, Columns: cols}
}

// rowView shows rows of the diff keyed by fields (of capture.FieldName, FieldCaller), with a thread
// column when the diff keeps threads apart.
func rowView(id, title, caption string, rows []capture.DiffRow, d *capture.Diff, per string, p99 map[string]string, tab *strtab, fields capture.Fields) view {
	n := len(rows)
	statuses, types, locks, lockTitles, comms, callers := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	cgroups := make([]int32, n)
	p99s, p99Titles, stacks := make([]int32, n), make([]int32, n), make([]int32, n)
	total, count, mean := newCompared(n, true), newCompared(n, true), newCompared(n, false)
	perType := tab.str("per type")
	for i, r := range rows {
		present := [2]bool{r.Status != capture.New, r.Status != capture.Gone}
		statuses[i], types[i], comms[i], cgroups[i] = tab.str(r.Status.String()), tab.str(r.Type), tab.str(r.Comm), tab.str(r.Cgroup)
		locks[i], lockTitles[i] = lockNameTexts(tab, r.Name)
		callers[i] = tab.str(callerText(tab.strings[tab.frame(r.Caller)]))
		p99s[i], p99Titles[i] = perType, tab.str(p99[r.Type])
		stack := r.After.Stack
		if r.Status == capture.Gone {
			stack = r.Before.Stack
		}
		stacks[i] = tab.stack(stack)
		total.set(i, r.Before.TotalNS, r.After.TotalNS, present)
		count.set(i, r.Before.Count, r.After.Count, present)
		mean.set(i, r.Before.MeanNS, r.After.MeanNS, present)
	}
	cols := []column{statusColumn(statuses), textColumn("type", "Type", "", types)}
	if fields.Has(capture.FieldCgroup) || d.Options.ByCgroup && fields.Has(capture.FieldName|capture.FieldCaller) {
		cols = append(cols, textColumn("cgroup", "Cgroup", "", cgroups))
	}
	if fields.Has(capture.FieldName) {
		lock := textColumn("lock", "Lock", "mono", locks)
		lock.titles = lockTitles
		cols = append(cols, lock)
	}
	if d.Options.ByThread && fields.Has(capture.FieldName|capture.FieldCaller) {
		cols = append(cols, textColumn("comm", "Thread", "", comms))
	}
	if fields.Has(capture.FieldCaller) {
		cols = append(cols, textColumn("caller", "Caller", "mono", callers))
	}
	// The stack before the numbers: a screen 1400 pixels wide shows what tells the rows apart.
	cols = append(cols, stackColumn("Heaviest stack", "heaviest-stack", stacks))
	cols = append(cols, total.columns("total", "Total wait"+per, kindMeanNS, "ns", 0)...)
	cols = append(cols, count.columns("count", "Waits"+per, kindNum, "num", countDecimals(d))...)
	cols = append(cols, mean.columns("avg", "Average wait", kindMeanNS, "ns", 0)...)
	p99Column := textColumn("p99", "p99 wait", "", p99s)
	p99Column.titles = p99Titles
	cols = append(cols, p99Column)
	return view{ID: id, Title: title, Caption: caption, Rows: n, Columns: cols}
}

// statusColumn is the column that says whether a row is in both captures, or new or gone.
func statusColumn(statuses []int32) column {
	return column{Key: "status", Label: "Status", Kind: kindStatus, Term: "status", text: statuses}
}

// lockNameTexts are a diff's lock name and its tooltip: a diff matches locks by name, and merges
// the locks without one.
func lockNameTexts(tab *strtab, name string) (text, title int32) {
	if name == "" {
		return tab.str("unnamed"), tab.str("all lock instances without a kernel symbol")
	}
	return tab.str(name), -1
}

// typeP99 returns, by lock type, the tooltip of a row's p99 cell: a record keeps no distribution, so
// only its lock type's p99 is known.
func typeP99(d *capture.Diff) map[string]string {
	p99 := make(map[string]string, len(d.Types))
	for _, t := range d.Types {
		before, after := "none", "none"
		if t.Status != capture.New {
			before = FormatDuration(float64(t.BeforeDist.P99))
		}
		if t.Status != capture.Gone {
			after = FormatDuration(float64(t.AfterDist.P99))
		}
		p99[t.Type] = fmt.Sprintf("p99 of all %s waits: %s before, %s after", t.Type, before, after)
	}
	return p99
}
