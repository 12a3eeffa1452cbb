// Package report renders captures and their comparisons for people: terminal summaries (summary.go)
// and self-contained HTML pages, the report (html.go) and the diff (diff_html.go), drawn from one
// template set (page.go) with their tables' rows computed here (views.go) and embedded (embed.go).
package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/klockstat/klockstat/capture"
)

// SummaryOptions choose the summary's table, as perf lock contention's options do.
type SummaryOptions struct {
	Top    int                 // rows shown; <= 0 shows every group
	By     string              // how records are grouped, one of SummaryViews; "" is "caller"
	Sort   capture.GroupStat   // the order, largest first; "" is wait_total
	Fields []capture.GroupStat // the numbers shown, in this order; nil is perf's default
	Filter capture.Filter      // the records that count; the health line still tells of the whole capture
	// RawAddresses shows kernel addresses as they are. By default they are ids under AddressKey
	// (capture.HashAddresses), as the HTML report and the exports of the same key show them: a
	// summary is pasted into bug reports as often as a report is attached to one.
	RawAddresses bool
	AddressKey   []byte // nil draws a key for this summary alone
}

// DefaultFields are the numbers perf lock contention shows by default, with the part of the total
// wait spent spinning after the total.
var DefaultFields = []capture.GroupStat{capture.StatContended, capture.StatWaitTotal, capture.StatSpinTotal, capture.StatWaitMax, capture.StatAvgWait}

// summaryView is one way of grouping the summary's records: by caller (perf's default), thread (-t),
// lock (-l) or cgroup (--lock-cgroup). Another grouping, such as by lock owner, is one more entry of summaryViews.
type summaryView struct {
	name   string
	key    func(capture.Record) string
	plural string   // of what a row is: "callers"
	heads  []string // the columns after the numbers, the last one free-form text
	cells  func(g capture.Group, hashed bool) []string
}

var summaryViews = []summaryView{
	{"caller", capture.ByCaller, "callers", []string{"type", "caller"}, func(g capture.Group, _ bool) []string {
		return []string{sanitize(g.Type), sanitize(callerText(g.Caller))}
	}},
	{"thread", capture.ByTask, "threads", []string{"pid", "tid", "comm"}, func(g capture.Group, _ bool) []string {
		pid, tid, _ := strings.Cut(g.Key, " ") // capture.ByTask's key
		return []string{pid, tid, sanitize(variousIfMixed(g, capture.FieldComm, g.Comm))}
	}},
	{"lock", capture.ByLock, "locks", []string{"type", "lock", "name"}, func(g capture.Group, hashed bool) []string {
		lock := g.Lock.String()
		if hashed {
			lock = g.Lock.HashedString()
		}
		return []string{sanitize(g.Type), lock, sanitize(variousIfMixed(g, capture.FieldName, g.Name))}
	}},
	{"cgroup", capture.ByCgroup, "cgroups", []string{"cgroup"}, func(g capture.Group, _ bool) []string {
		return []string{sanitize(capture.CgroupName(g.CgroupID, g.Cgroup))}
	}},
}

// SummaryViews are the groupings SummaryOptions.By takes.
func SummaryViews() []string {
	var names []string
	for _, v := range summaryViews {
		names = append(names, v.name)
	}
	return append(names, OwnerView)
}

// variousIfMixed is value, g's field, or "various" when g merged records that differ in it.
func variousIfMixed(g capture.Group, field capture.Fields, value string) string {
	if g.Mixed.Has(field) {
		return "various"
	}
	return value
}

// WriteSummary writes the perf-lock-contention-style table of the top groups of the records o.Filter
// keeps: by caller (type and caller), thread or lock as o.By says, with the numbers o.Fields names
// (contended, total wait, max wait, avg wait by default; for the function-probe backends, acquire
// times instead of waits), sorted by o.Sort. Then, when filtered, how much the filter kept; one
// health line with events, waits, lost events (with reasons when any), and probe cost per event and
// as a share of CPU; then the capture's warnings, one per line. When there are more groups than o.Top
// it says how many were omitted. Groups of holds only, without a contended acquire, are not
// contention and are left out. It fails on options that do not Validate.
//
// Callers, types, reasons and warnings come from an untrusted file (thread names end up in them), so
// control characters are printed as '?' and cannot drive the terminal.
func WriteSummary(w io.Writer, c *capture.Capture, o SummaryOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if o.By == OwnerView {
		return writeOwnerSummary(w, c, o)
	}
	view, _ := summaryViewOf(o.By)
	if o.Sort == "" {
		o.Sort = capture.StatWaitTotal
	}
	if o.Fields == nil {
		o.Fields = DefaultFields
	}
	// Selected before hashing: the filter's addresses are the capture's.
	shown := withAddressIDs(c.Select(o.Filter), o)
	var b bytes.Buffer
	groups := slices.DeleteFunc(capture.GroupBy(shown.Records, view.key), func(g capture.Group) bool { return g.Count == 0 })
	capture.SortGroups(groups, o.Sort)
	top := groups
	if o.Top > 0 && len(groups) > o.Top {
		top = groups[:o.Top]
	}
	switch {
	case len(groups) > 0:
		writeTable(&b, top, view, o.Fields, measureOf(c.Meta), shown.Meta.AddressesHashed)
		if omitted := len(groups) - len(top); omitted > 0 {
			fmt.Fprintf(&b, "... %d more %s not shown\n", omitted, plural(omitted, strings.TrimSuffix(view.plural, "s"), view.plural))
		}
	case o.Filter.Empty():
		b.WriteString("no lock contention recorded\n")
	default:
		b.WriteString("no contention matches the filters\n")
	}
	if !o.Filter.Empty() {
		fmt.Fprintf(&b, "filters keep %d of %d records: %s of the %s waited\n", len(shown.Records), len(c.Records),
			FormatDuration(float64(totalWait(shown.Records))), FormatDuration(float64(totalWait(c.Records))))
	}
	_, err := w.Write(withHealth(&b, c.Meta))
	return err
}

// writeOwnerSummary is WriteSummary by owner: the records' filters do not apply to owners.
func writeOwnerSummary(w io.Writer, c *capture.Capture, o SummaryOptions) error {
	if !o.Filter.Empty() {
		return fmt.Errorf("--by %s takes no lock or callstack filter (-l, -S): they select records, not owners; drop them", OwnerView)
	}
	var b bytes.Buffer
	writeOwnerTable(&b, withAddressIDs(c, o), o.Top)
	_, err := w.Write(withHealth(&b, c.Meta))
	return err
}

// withAddressIDs is c as the summary shows it: unless o.RawAddresses, or c holds ids already, a copy
// whose kernel addresses are ids under o.AddressKey. c itself is left as it is: the other outputs
// are written from it.
func withAddressIDs(c *capture.Capture, o SummaryOptions) *capture.Capture {
	if o.RawAddresses || c.Meta.AddressesHashed {
		return c
	}
	key := o.AddressKey
	if key == nil {
		key = newKey()
	}
	h := *c
	h.Records = slices.Clone(c.Records)
	for i := range h.Records {
		h.Records[i].Stack = slices.Clone(h.Records[i].Stack)
	}
	h.Owners = slices.Clone(c.Owners)
	for i := range h.Owners {
		h.Owners[i].Stack = slices.Clone(h.Owners[i].Stack)
	}
	h.HashAddresses(key)
	return &h
}

// withHealth ends a summary with the capture's health line and its warnings.
func withHealth(b *bytes.Buffer, m capture.Meta) []byte {
	b.WriteString("\n")
	b.WriteString(healthLine(m))
	b.WriteString("\n")
	for _, warning := range m.Warnings {
		fmt.Fprintf(b, "warning: %s\n", sanitize(warning))
	}
	return b.Bytes()
}

// Validate fails on a grouping, sort key or field WriteSummary does not know, naming the ones it does.
func (o SummaryOptions) Validate() error {
	if _, err := summaryViewOf(o.By); err != nil && o.By != OwnerView {
		return err
	}
	if o.Sort != "" && !slices.Contains(capture.GroupStats, o.Sort) {
		return fmt.Errorf("unknown sort key %q: want one of %s", o.Sort, statList())
	}
	for _, f := range o.Fields {
		if !slices.Contains(capture.GroupStats, f) {
			return fmt.Errorf("unknown field %q: want some of %s", f, statList())
		}
	}
	return nil
}

func summaryViewOf(by string) (summaryView, error) {
	if by == "" {
		by = "caller"
	}
	for _, v := range summaryViews {
		if v.name == by {
			return v, nil
		}
	}
	return summaryView{}, fmt.Errorf("unknown grouping %q: want one of %s", by, strings.Join(SummaryViews(), ", "))
}

func statList() string {
	var names []string
	for _, s := range capture.GroupStats {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

// totalWait is the wait time of the records.
func totalWait(records []capture.Record) uint64 {
	var total uint64
	for _, r := range records {
		total += r.TotalNS
	}
	return total
}

// writeTable aligns the columns to their widest cell: numbers and the identifying columns to the
// right as perf does, the last one, free-form text, to the left.
func writeTable(b *bytes.Buffer, groups []capture.Group, view summaryView, fields []capture.GroupStat, ms measure, hashed bool) {
	var head []string
	for _, f := range fields {
		head = append(head, statHeading(f, ms))
	}
	rows := [][]string{append(head, view.heads...)}
	for _, g := range groups {
		var row []string
		for _, f := range fields {
			// A saturated sum is a lower bound (capture.Group.Saturated).
			atLeast := ""
			if g.Saturated && (f == capture.StatContended || f == capture.StatWaitTotal || f == capture.StatSpinTotal) {
				atLeast = ">="
			}
			switch {
			case f == capture.StatContended:
				row = append(row, atLeast+strconv.FormatUint(g.Count, 10))
			case f == capture.StatSpinTotal && !ms.Spin:
				row = append(row, "-") // acquire times are not split
			default:
				row = append(row, atLeast+FormatDuration(f.Of(g)))
			}
		}
		rows = append(rows, append(row, view.cells(g, hashed)...))
	}
	writeColumns(b, rows)
}

// statHeading is a stat's column heading as perf prints it: "contended", "total wait", "avg wait".
func statHeading(s capture.GroupStat, ms measure) string {
	switch s {
	case capture.StatContended:
		return "contended"
	case capture.StatWaitTotal:
		return "total " + ms.Time
	case capture.StatWaitMax:
		return "max " + ms.Time
	case capture.StatWaitMin:
		return "min " + ms.Time
	case capture.StatSpinTotal:
		return "spinning"
	}
	return "avg " + ms.Time
}

// writeColumns aligns a table to its widest cells: every column to the right but the last, which is
// free-form text, with a blank line under the header.
func writeColumns(b *bytes.Buffer, rows [][]string) {
	last := len(rows[0]) - 1
	widths := make([]int, last)
	for _, row := range rows {
		for i, cell := range row[:last] {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for r, row := range rows {
		for i, cell := range row[:last] {
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)))
			b.WriteString(cell)
			b.WriteString("   ")
		}
		b.WriteString(row[last])
		b.WriteString("\n")
		if r == 0 {
			b.WriteString("\n")
		}
	}
}

// healthLine tells how much of the contention the records hold and what capturing it cost, e.g.
// "1200 contention events in 10.00 s, 1190 waits (2 in progress), 7 lost (aggregation map full: 7);
// probe cost 152 ns/event, 0.01% CPU".
func healthLine(m capture.Meta) string {
	var b strings.Builder
	if a := m.Acquire; a != nil {
		fmt.Fprintf(&b, "%s: %d acquires timed in %s, %d contended (longer than %s), %d holds",
			m.Probe, m.Events.Begin, FormatDuration(float64(m.DurationNS)), m.Events.Waits, FormatDuration(float64(a.ThresholdNS)), a.Holds)
	} else {
		fmt.Fprintf(&b, "%d contention events in %s, %d waits", m.Events.Begin, FormatDuration(float64(m.DurationNS)), m.Events.Waits)
	}
	if m.Events.InProgress > 0 {
		fmt.Fprintf(&b, " (%d in progress)", m.Events.InProgress)
	}
	if lost := m.LostTotal(); lost > 0 {
		var reasons []string
		for _, l := range m.Lost {
			if l.Count > 0 {
				reasons = append(reasons, fmt.Sprintf("%s: %d", sanitize(l.Reason), l.Count))
			}
		}
		fmt.Fprintf(&b, ", %d lost (%s)", lost, strings.Join(reasons, ", "))
	}
	b.WriteString("; probe cost ")
	b.WriteString(probeCost(m))
	return b.String()
}

// minCostEvents is the fewest contention events over which the summary gives the probes' cost per
// event. The first runs of the programs find cold caches and walk each kernel stack path they have
// not met yet (later waits on a known path skip the walk, the probes' largest cost), and the
// bookkeeping runs at sched_switch and thread exits do not follow contention: over a few events
// these make the quotient meaningless (an idle machine showed 8 events at 53673 ns each, where a
// loaded one shows a few hundred). A thousand events outweigh those first runs; the total run time
// and the share of CPU are given whatever the count.
const minCostEvents = 1000

// probeCost is what the probes cost per event (in all under minCostEvents) and as a share of all CPU
// time, then what the bookkeeping programs cost per run, e.g. "152 ns/event, 0.01% CPU; 310 thread
// exits at 402 ns", or "not measured".
func probeCost(m capture.Meta) string {
	if m.ProbeRunTimeNS() == 0 {
		// The kernel only counts BPF run time while kernel.bpf_stats_enabled is 1.
		return "not measured"
	}
	var b strings.Builder
	switch n := m.Events.Begin; {
	case n >= minCostEvents:
		fmt.Fprintf(&b, "%.0f ns/event", m.ProbeNSPerEvent())
	case n > 0:
		fmt.Fprintf(&b, "%s in all (%d %s, too few for a cost per event: %d at least)",
			FormatDuration(float64(m.ProbeRunTimeNS())), n, plural(int(n), "event", "events"), minCostEvents)
	default:
		b.WriteString(FormatDuration(float64(m.ProbeRunTimeNS())))
	}
	if share := m.ProbeCPUShare() * 100; share >= 0.01 {
		fmt.Fprintf(&b, ", %.2f%% CPU", share)
	} else if share > 0 {
		b.WriteString(", <0.01% CPU")
	}
	for _, h := range m.Hooks() {
		if h.Runs > 0 {
			fmt.Fprintf(&b, "; %d %s at %s", h.Runs, hookRuns(h.Event), FormatDuration(float64(h.RunTimeNS)/float64(h.Runs)))
		}
	}
	return b.String()
}

// hookRuns names what a bookkeeping program's runs are, by its scheduler event.
func hookRuns(event string) string {
	switch event {
	case "sched_process_free":
		return "thread exits"
	case "sched_switch":
		return "context switches"
	}
	return sanitize(event) + " runs"
}

// FormatDuration renders ns in human units like perf does: "812 ns", "15.64 us", "1.04 ms", "2.50 s".
// The unit is chosen after rounding, so 999999 ns is "1.00 ms", never "1000.00 us". Negative
// durations (differences) get a minus sign.
func FormatDuration(ns float64) string {
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	if r := math.Round(ns); r < 1000 {
		if r == 0 {
			sign = ""
		}
		return fmt.Sprintf("%s%.0f ns", sign, r)
	}
	for _, unit := range []struct {
		name  string
		scale float64
	}{{"us", 1e3}, {"ms", 1e6}} {
		if v := ns / unit.scale; math.Round(v*100) < 1000*100 {
			return fmt.Sprintf("%s%.2f %s", sign, v, unit.name)
		}
	}
	return fmt.Sprintf("%s%.2f s", sign, ns/1e9)
}

// sanitize replaces what could make a terminal do more than print: control characters (ESC starts
// escape sequences), bidirectional-text controls that reorder what is shown, and invalid UTF-8.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError {
			return '?'
		}
		return r
	}, s)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// WriteDiffSummary writes the comparison for a terminal: one line per capture saying what it was,
// the total wait before and after, the warnings, then the top rows by absolute change in total wait
// (top <= 0 shows all) and how many rows were matched, new and gone. Strings from the captures are
// sanitized as WriteSummary does.
func WriteDiffSummary(w io.Writer, d *capture.Diff, top int) error {
	return writeOnce(w, func(b *bytes.Buffer) { writeDiffSummary(b, d, top) })
}

// writeOnce writes what fill writes in one write, so that a failing writer gets all or nothing.
func writeOnce(w io.Writer, fill func(*bytes.Buffer)) error {
	var b bytes.Buffer
	fill(&b)
	_, err := w.Write(b.Bytes())
	return err
}

func writeDiffSummary(b *bytes.Buffer, d *capture.Diff, top int) {
	for side, name := range []string{"before", "after"} {
		fmt.Fprintf(b, "%-6s  %s\n", name, sanitize(captureLine(d.Captures[side].Meta)))
	}
	totalB, totalA, pct := d.TotalWaitChange()
	fmt.Fprintf(b, "total wait%s: %s -> %s (%s)\n", basisSuffix(d), FormatDuration(totalB), FormatDuration(totalA), formatPct(pct))
	for _, warning := range d.Warnings() {
		fmt.Fprintf(b, "warning: %s\n", sanitize(warning))
	}
	b.WriteString("\n")

	shown := d.Rows
	if top > 0 && len(shown) > top {
		shown = shown[:top]
	}
	if len(d.Rows) == 0 {
		b.WriteString("no lock contention recorded in either capture\n")
	} else {
		writeColumns(b, rowsTable(d, shown))
		if omitted := len(d.Rows) - len(shown); omitted > 0 {
			fmt.Fprintf(b, "... %d more %s not shown\n", omitted, plural(omitted, "row", "rows"))
		}
	}
	rowStatus := func(r capture.DiffRow) capture.DiffStatus { return r.Status }
	fmt.Fprintf(b, "\n%s, matched by lock type, caller function%s\n", matchCounts(d.Rows, rowStatus, "row", "rows"), matchedBy(d))
	writeOwnerDiff(b, d, top)
}

// matchCounts says how many of a diff's rows or owners matched, were new and gone: "3 matched, 1
// new, 1 gone rows".
func matchCounts[T any](items []T, status func(T) capture.DiffStatus, one, many string) string {
	var counts [3]int
	for _, x := range items {
		counts[status(x)]++
	}
	return fmt.Sprintf("%d matched, %d new, %d gone %s", counts[capture.Matched], counts[capture.New], counts[capture.Gone], plural(counts[capture.Gone], one, many))
}

// captureLine says in one line which capture this is: host, kernel, duration and command line.
func captureLine(m capture.Meta) string {
	var parts []string
	for _, s := range []string{m.Hostname, m.Kernel, FormatDuration(float64(m.DurationNS)), shellJoin(m.CommandLine)} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " · ")
}

// basisSuffix names what the totals are: " per second of capture" or "".
func basisSuffix(d *capture.Diff) string {
	if d.PerSecond {
		return " per second of capture"
	}
	return ""
}

// matchedBy completes "rows matched by lock type, caller function".
func matchedBy(d *capture.Diff) string {
	s := ", lock name"
	if d.Options.ByThread {
		s += ", thread name"
	}
	if d.Options.ByCgroup {
		s += ", cgroup path"
	}
	return s
}

// WriteDiffRows writes rows of d as WriteDiffSummary's table does, e.g. those FailOver returns.
func WriteDiffRows(w io.Writer, d *capture.Diff, rows []capture.DiffRow) error {
	var b bytes.Buffer
	writeColumns(&b, rowsTable(d, rows))
	_, err := w.Write(b.Bytes())
	return err
}

// rowsTable is the header and the rows of the terminal table.
func rowsTable(d *capture.Diff, rows []capture.DiffRow) [][]string {
	unit := ""
	if d.PerSecond {
		unit = "/s"
	}
	header := []string{"before" + unit, "after" + unit, "delta", "change", "avg before", "avg after", "type", "lock"}
	if d.Options.ByThread {
		header = append(header, "thread")
	}
	if d.Options.ByCgroup {
		header = append(header, "cgroup")
	}
	table := [][]string{append(header, "caller")}
	for _, r := range rows {
		cells := []string{
			FormatDuration(r.Before.TotalNS), FormatDuration(r.After.TotalNS), formatDelta(r.DeltaNS()), rowChange(r),
			meanText(r.Before), meanText(r.After), sanitize(r.Type), sanitize(cmpOr(r.Name, "-")),
		}
		if d.Options.ByThread {
			cells = append(cells, sanitize(r.Comm))
		}
		if d.Options.ByCgroup {
			cells = append(cells, sanitize(r.Cgroup))
		}
		table = append(table, append(cells, sanitize(callerText(r.Caller))))
	}
	return table
}

// rowChange is a row's change in total wait in percent, or whether it is new or gone.
func rowChange(r capture.DiffRow) string {
	return statusChange(r.Status, r.Before.TotalNS, r.After.TotalNS)
}

// statusChange is the change from before to after of a row or an owner of a diff in percent, or
// whether it is new or gone.
func statusChange(status capture.DiffStatus, before, after float64) string {
	switch status {
	case capture.New:
		return "new"
	case capture.Gone:
		return "gone"
	}
	return formatPct(capture.ChangePct(before, after))
}

func meanText(v capture.DiffValues) string {
	if v.Records == 0 {
		return "-"
	}
	return FormatDuration(v.MeanNS)
}

// formatPct renders a change in percent with its sign: "+12.5%", "-40.0%", "+0.0%", "from 0". A
// growth of 1000% or more reads better as a factor: "×11.0", "×1212".
func formatPct(pct float64) string {
	switch factor := 1 + pct/100; {
	case math.IsInf(pct, 1):
		return "from 0"
	case factor >= 100:
		return fmt.Sprintf("×%.0f", factor)
	case factor >= 11:
		return fmt.Sprintf("×%.1f", factor)
	}
	return fmt.Sprintf("%+.1f%%", pct)
}

// formatDelta renders a change in nanoseconds with its sign: "+1.20 ms", "-812 ns", "0 ns".
func formatDelta(ns float64) string {
	s := FormatDuration(ns)
	if !strings.HasPrefix(s, "-") && s != "0 ns" {
		s = "+" + s
	}
	return s
}
