// Package report renders captures and their comparisons for people: terminal summaries (summary.go)
// and self-contained HTML pages, the report (html.go) and the diff (diff_html.go), drawn from one
// template set (page.go) with their tables' rows computed here (views.go) and embedded (embed.go).
package report

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/termsafe"
)

// SummaryOptions choose the summary's table, as perf lock contention's options do.
type SummaryOptions struct {
	Top int    // rows shown; <= 0 shows every group
	By  string // how records are grouped, one of SummaryViews; "" is "caller"
	// Sort is the order, largest first; "" is wait_total.
	Sort capture.GroupStat
	// Fields are the numbers shown: perf's in this order before the columns that say what a row is,
	// klockstat's own (spin_total) after them, so that perf's columns keep perf's places; nil is
	// DefaultFields.
	Fields []capture.GroupStat
	// The filters keep the records that count; the health line still tells of the whole capture.
	Filter  capture.Filter // locks and stack substrings
	Types   []string       // lock types, as perf's -Y names them (TypeFilterMatches); nil keeps all
	TIDs    []uint32       // threads; nil keeps all
	Cgroups []string       // cgroup paths, each with its descendants; nil keeps all
	// Separator, when not "", writes separated values as perf's -x does: a "# output:" header of the
	// columns, rows of raw numbers (nanoseconds), and "# " before every other line.
	Separator string
	// RowsOnly writes the rows alone, as perf's -q: no header, nothing after the rows.
	RowsOnly bool
	// RawAddresses shows kernel addresses as they are. By default they are ids under AddressKey
	// (capture.HashAddresses), as the HTML report and the exports of the same key show them: a
	// summary is pasted into bug reports as often as a report is attached to one.
	RawAddresses bool
	AddressKey   []byte // nil draws a key for this summary alone
	// Saved is the file the capture is in, its path as the user wrote it: the JSON or HTML report
	// a capture wrote, or the input of klockstat report; "" when it is in none. The next steps
	// that read the capture again name it.
	Saved string
}

// DefaultFields are the numbers perf lock contention shows by default, then klockstat's part of the
// total wait spent spinning, which the summary shows after perf's columns.
var DefaultFields = []capture.GroupStat{capture.StatContended, capture.StatWaitTotal, capture.StatWaitMax, capture.StatAvgWait, capture.StatSpinTotal}

// perfStat reports whether perf lock contention has the stat: its columns come first.
func perfStat(s capture.GroupStat) bool { return s != capture.StatSpinTotal }

// TypeFilterMatches reports whether a lock type matches a value of perf's -Y (--type-filter): the
// type itself, or a type without its ":R" or ":W" ("rwsem" is rwsem:R and rwsem:W), or perf's
// other name of the per-CPU rw semaphore, "percpu-rwmem", for pcpu-sem.
func TypeFilterMatches(lockType, value string) bool {
	if value == "percpu-rwmem" {
		value = "pcpu-sem"
	}
	base, _, _ := strings.Cut(lockType, ":")
	return lockType == value || base == value
}

// filtered reports whether a filter of o leaves records out.
func (o SummaryOptions) filtered() bool {
	return !o.Filter.Empty() || o.Types != nil || o.TIDs != nil || o.Cgroups != nil
}

// Select is c with only the records the filters of o keep; c itself when they keep every record.
func (o SummaryOptions) Select(c *capture.Capture) *capture.Capture {
	s := c.Select(o.Filter)
	if o.Types == nil && o.TIDs == nil && o.Cgroups == nil {
		return s
	}
	kept := *s
	kept.Records = slices.DeleteFunc(slices.Clone(s.Records), func(r capture.Record) bool { return !o.keeps(r) })
	return &kept
}

// keeps reports whether the type, thread and cgroup filters keep r.
func (o SummaryOptions) keeps(r capture.Record) bool {
	switch {
	case o.Types != nil && !slices.ContainsFunc(o.Types, func(t string) bool { return TypeFilterMatches(r.Type, t) }):
		return false
	case o.TIDs != nil && !slices.Contains(o.TIDs, r.TID):
		return false
	}
	return o.Cgroups == nil || slices.ContainsFunc(o.Cgroups, func(path string) bool {
		path = strings.TrimSuffix(path, "/")
		return r.Cgroup == path || strings.HasPrefix(r.Cgroup, path+"/") || path == ""
	})
}

// summaryView is one way of grouping the summary's records: by caller (perf's default), thread (-t),
// lock (-l) or cgroup (--lock-cgroup). Another grouping, such as by lock owner, is one more entry of summaryViews.
type summaryView struct {
	name   string
	key    func(capture.Record) string
	plural string   // of what a row is: "callers"
	heads  []string // the columns that say what a row is, in perf's order
	// textFrom is the first of heads that is text, aligned to the left as perf does; the columns
	// before it, numbers and types, go to the right.
	textFrom int
	// cells are the columns that say what group g is, as m shows them; lines adds what a terminal
	// shows after a caller, its source line and inlined functions, which separated values leave out.
	cells func(m *model, g capture.Group, heaviest *capture.Record, lines bool) []string
}

var summaryViews = []summaryView{
	{"caller", capture.ByCaller, "callers", []string{"type", "caller"}, 1, func(m *model, g capture.Group, _ *capture.Record, lines bool) []string {
		caller := callerText(m.frameText(g.Caller))
		if lines {
			caller = m.callerLine(g.Caller)
		}
		return []string{sanitize(g.Type), sanitize(caller)}
	}},
	{"thread", capture.ByTask, "threads", []string{"pid", "tid", "comm"}, 2, func(_ *model, g capture.Group, _ *capture.Record, _ bool) []string {
		pid, tid, _ := strings.Cut(g.Key, " ") // capture.ByTask's key
		return []string{pid, tid, cmp.Or(sanitize(variousIfMixed(g, capture.FieldComm, g.Comm)), "-")}
	}},
	// perf -l: "address symbol (type)".
	// The name of a lock in a slab object has its offset and struct field, as the report's table:
	// "&kmalloc-2k+0x408 (super_block.s_vfs_rename_mutex?)".
	{"lock", capture.ByLock, "locks", []string{"lock", "name", "type"}, 1, func(m *model, g capture.Group, heaviest *capture.Record, _ bool) []string {
		return []string{m.lockText(g.Lock), cmp.Or(sanitize(variousIfMixed(g, capture.FieldName, heaviest.LockLabel())), "-"), sanitize(g.Type)}
	}},
	{"cgroup", capture.ByCgroup, "cgroups", []string{"cgroup"}, 0, func(_ *model, g capture.Group, _ *capture.Record, _ bool) []string {
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

// WriteSummary opens with a headline (headlineLines) and writes the perf-lock-contention-style table of the top groups of the records the
// filters of o keep: by caller (type and caller), thread or lock as o.By says, with the numbers
// o.Fields names (contended, total wait, max wait, avg wait, then spinning, by default; for the
// function-probe backends, acquire times instead of waits), sorted by o.Sort. Then, when filtered,
// how much the filters kept; one health line with events, waits, lost events (with reasons when
// any), and probe cost per event and as a share of CPU; then the lock types the kernel could not
// show, with why (unseenLines), and the capture's warnings, one per line.
// When there are more groups than o.Top it says how many were omitted. Groups of holds only, without
// a contended acquire, are not contention and are left out. It closes with the next commands that
// fit what was captured (nextSteps). o.RowsOnly leaves all but the rows out; o.Separator writes
// separated values instead of aligned columns, without the headline and next steps, which are for
// people. It fails on options that do not Validate.
//
// Callers, types, reasons and warnings come from an untrusted file (thread names end up in them), so
// control characters are printed as '?' and cannot drive the terminal.
func WriteSummary(w io.Writer, c *capture.Capture, o SummaryOptions) error {
	return newModel(c, o.RawAddresses, o.AddressKey).writeSummary(w, o)
}

// writeSummary is WriteSummary of m's capture, its addresses shown as m shows them.
func (m *model) writeSummary(w io.Writer, o SummaryOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if o.By == OwnerView {
		return m.writeOwnerSummary(w, o)
	}
	view, _ := summaryViewOf(o.By)
	if o.Sort == "" {
		o.Sort = capture.StatWaitTotal
	}
	if o.Fields == nil {
		o.Fields = DefaultFields
	}
	// Selected as they are, not as ids: the filter's addresses are the capture's.
	shown := m.selected(o)
	var b bytes.Buffer
	groups := slices.DeleteFunc(slices.Clone(shown.groups[view.name]()), func(g capture.Group) bool { return g.Count == 0 })
	capture.SortGroups(groups, o.Sort)
	top := groups
	if o.Top > 0 && len(groups) > o.Top {
		top = groups[:o.Top]
	}
	notes := lineWriter{b: &b, prefix: commentPrefix(o.Separator), off: o.RowsOnly}
	people := lineWriter{b: &b, off: o.RowsOnly || o.Separator != ""}
	writeHeadline(people, shown, o.filtered())
	switch {
	case len(groups) > 0:
		writeTable(&b, shown, top, view, o)
		if omitted := len(groups) - len(top); omitted > 0 {
			notes.printf("... %d more %s not shown", omitted, plural(omitted, strings.TrimSuffix(view.plural, "s"), view.plural))
		}
	case !o.filtered():
		notes.printf("no lock contention recorded")
	case filtersUnseen(m.c.Meta, o.Types):
		notes.printf("no contention matches the filters, and %s waits cannot be seen on this kernel (below)", unseenTypes(m.c.Meta))
	default:
		notes.printf("no contention matches the filters")
	}
	if o.filtered() {
		notes.printf("filters keep %d of %d records: %s of the %s waited", len(shown.c.Records), len(m.c.Records),
			totalText(shown.totals()), totalText(m.totals()))
	}
	if note := staticNote(m.c, shown.c.Records); note != "" {
		notes.printf("%s", sanitize(note))
	}
	writeHealth(notes, m.c)
	writeNextSteps(people, nextSteps(m, o))
	_, err := w.Write(b.Bytes())
	return err
}

// totalText is a sum of waits, ">=" before one that saturated.
func totalText(t capture.Totals) string {
	s := FormatDuration(float64(t.TotalNS))
	if t.Saturated {
		s = ">=" + s
	}
	return s
}

// writeHeadline writes the headline's lines and a blank line.
func writeHeadline(l lineWriter, m *model, filtered bool) {
	lines := headlineLines(m, filtered)
	for _, line := range lines {
		l.printf("%s", line)
	}
	if len(lines) > 0 && !l.off {
		l.b.WriteString("\n")
	}
}

// lineWriter writes the lines of a summary around its table: after prefix ("# " between separated
// values), or not at all when off (perf's -q).
type lineWriter struct {
	b      *bytes.Buffer
	prefix string
	off    bool
}

func (l lineWriter) printf(format string, args ...any) {
	if l.off {
		return
	}
	l.b.WriteString(l.prefix)
	fmt.Fprintf(l.b, format, args...)
	l.b.WriteString("\n")
}

// commentPrefix is what the lines of a summary that are not rows start with: perf's "# " when the
// summary is separated values, so that a reader of them can skip what is not a row.
func commentPrefix(separator string) string {
	if separator != "" {
		return "# "
	}
	return ""
}

// writeOwnerSummary is writeSummary by owner: the records' filters do not apply to owners.
func (m *model) writeOwnerSummary(w io.Writer, o SummaryOptions) error {
	switch {
	case o.filtered():
		return fmt.Errorf("--by %s takes no lock, type, thread, cgroup or callstack filter (-L, -Y, --tid, -G, -S): they select records, not owners; drop them", OwnerView)
	case o.Separator != "":
		return fmt.Errorf("--by %s is a table of owners' stacks and states, not separated values: drop -x", OwnerView)
	}
	var b, table bytes.Buffer
	lines := lineWriter{b: &b, off: o.RowsOnly}
	writeHeadline(lines, m, false)
	writeOwnerTable(&table, m, o.Top)
	if o.RowsOnly {
		b.Write(ownerRows(table.Bytes()))
	} else {
		b.Write(table.Bytes())
		writeCriticalSections(&b, m, o.Top)
	}
	writeHealth(lines, m.c)
	writeNextSteps(lines, nextSteps(m, o))
	_, err := w.Write(b.Bytes())
	return err
}

// ownerRows is the rows of an owner table alone: not its header and blank line, nor a last line
// that says how many owners are not shown.
func ownerRows(table []byte) []byte {
	_, rows, ok := bytes.Cut(table, []byte("\n\n"))
	if !ok {
		return nil // no owners: a line that says so
	}
	if i := bytes.LastIndexByte(rows[:len(rows)-1], '\n'); bytes.HasPrefix(rows[i+1:], []byte("... ")) {
		rows = rows[:i+1]
	}
	return rows
}

// writeHealth ends a summary with the capture's health line and its warnings, after a blank line.
func writeHealth(l lineWriter, c *capture.Capture) {
	if l.off {
		return
	}
	l.b.WriteString("\n")
	l.printf("%s", healthLine(c.Meta, len(c.Records)))
	for _, line := range unseenLines(c.Meta) {
		l.printf("%s", line)
	}
	for _, warning := range c.Warnings() {
		l.printf("warning: %s", sanitize(warning))
	}
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

// writeTable writes the groups' rows under their header: perf's numbers, the columns that say what
// a row is, then klockstat's numbers. Aligned, numbers and identifying columns go to the right as
// perf does, free-form text to the left; separated values (o.Separator) give the numbers raw, times
// in nanoseconds. An aligned table by caller gives each caller its source line and inlined functions
// when the capture has them; separated values keep perf's caller column.
func writeTable(b *bytes.Buffer, m *model, groups []capture.Group, view summaryView, o SummaryOptions) {
	ms := m.ms
	var perf, own []capture.GroupStat
	for _, f := range o.Fields {
		if perfStat(f) {
			perf = append(perf, f)
		} else {
			own = append(own, f)
		}
	}
	separated := o.Separator != ""
	head := slices.Concat(statHeadings(perf, ms), view.heads, statHeadings(own, ms))
	rows := [][]string{head}
	for _, g := range groups {
		cells := view.cells(m, g, &m.c.Records[g.Heaviest], !separated)
		if separated {
			for i := range cells {
				cells[i] = strings.ReplaceAll(cells[i], o.Separator, "?") // one cell, however it is named
			}
		}
		rows = append(rows, slices.Concat(statCells(g, perf, ms, separated), cells, statCells(g, own, ms, separated)))
	}
	if separated {
		writeSeparated(b, rows, o.Separator, o.RowsOnly)
		return
	}
	left := make([]bool, len(head))
	for i := view.textFrom; i < len(view.heads); i++ {
		left[len(perf)+i] = true
	}
	writeAligned(b, rows, left, o.RowsOnly)
}

// statCells are a group's numbers: formatted as perf formats them, or raw (a count, nanoseconds).
func statCells(g capture.Group, stats []capture.GroupStat, ms measure, raw bool) []string {
	var cells []string
	for _, f := range stats {
		// A saturated sum is a lower bound (capture.Group.Saturated); raw numbers stay numbers.
		atLeast := ""
		if !raw && g.Saturated && (f == capture.StatContended || f == capture.StatWaitTotal || f == capture.StatSpinTotal) {
			atLeast = ">="
		}
		switch {
		case f == capture.StatContended:
			cells = append(cells, atLeast+strconv.FormatUint(g.Count, 10))
		case f == capture.StatSpinTotal && !ms.Spin:
			cells = append(cells, "-") // acquire times are not split
		case raw:
			cells = append(cells, strconv.FormatFloat(math.Round(f.Of(g)), 'f', 0, 64))
		default:
			cells = append(cells, atLeast+FormatDuration(f.Of(g)))
		}
	}
	return cells
}

func statHeadings(stats []capture.GroupStat, ms measure) []string {
	var heads []string
	for _, f := range stats {
		heads = append(heads, statHeading(f, ms))
	}
	return heads
}

// writeSeparated writes a table as perf's -x does: the header as a "# output:" line, unless
// rowsOnly, then the rows, cells separated by sep and a space.
func writeSeparated(b *bytes.Buffer, rows [][]string, sep string, rowsOnly bool) {
	for r, row := range rows {
		if r == 0 {
			if rowsOnly {
				continue
			}
			b.WriteString("# output: ")
		}
		b.WriteString(strings.Join(row, sep+" "))
		b.WriteString("\n")
	}
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
	left := make([]bool, len(rows[0]))
	left[len(left)-1] = true
	writeAligned(b, rows, left, false)
}

// writeAligned aligns a table to its widest cells, the columns left says to the left and the others
// to the right, three spaces apart, with a blank line under the header, or without the header when
// rowsOnly. The last column, if to the left, is not padded.
func writeAligned(b *bytes.Buffer, rows [][]string, left []bool, rowsOnly bool) {
	last := len(rows[0]) - 1
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for r, row := range rows {
		if r == 0 && rowsOnly {
			continue
		}
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			switch {
			case !left[i]:
				b.WriteString(pad + cell)
			case i < last:
				b.WriteString(cell + pad)
			default:
				b.WriteString(cell)
			}
			if i < last {
				b.WriteString("   ")
			}
		}
		b.WriteString("\n")
		if r == 0 {
			b.WriteString("\n")
		}
	}
}

// healthLine tells how much of the contention the records hold and what capturing it cost, e.g.
// "1200 contention events in 10.00 s, 1190 waits (2 in progress), 7 lost (aggregation map full: 7);
// probe cost 152 ns/event, 0.01% CPU". The counts are the kernel's events, the rest of a summary its
// records: a capture of no records says that none holds the waits counted.
func healthLine(m capture.Meta, records int) string {
	var b strings.Builder
	if a := m.Acquire; a != nil {
		fmt.Fprintf(&b, "%s: %d acquires timed in %s, %d contended (longer than %s), %d holds",
			m.Probe, m.Events.Begin, FormatDuration(float64(m.DurationNS)), m.Events.Waits, FormatDuration(float64(a.ThresholdNS)), a.Holds)
	} else {
		fmt.Fprintf(&b, "%d contention events in %s, %d waits", m.Events.Begin, FormatDuration(float64(m.DurationNS)), m.Events.Waits)
	}
	if records == 0 && m.Events.Waits > 0 {
		b.WriteString(", none of them in the records")
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

// minCostEvents is the fewest contention events measured (capture.Meta.ProbeEventsMeasured: the
// events of the statistics' windows when they were sampled) over which the summary gives the
// probes' cost per event. The first runs of the programs find cold caches and walk each kernel
// stack path they have not met yet (later waits on a known path skip the walk, the probes' largest
// cost), and the bookkeeping runs at sched_switch and thread exits do not follow contention: over a
// few events these make the quotient meaningless (an idle machine showed 8 events at 53673 ns
// each, where a loaded one shows a few hundred). A thousand events outweigh those first runs; the
// total run time and the share of CPU are given whatever the count.
const minCostEvents = 1000

// probeCost is what the probes cost per event (in all under minCostEvents) and as a share of all CPU
// time, then what the bookkeeping programs cost per run, e.g. "152 ns/event, 0.01% CPU; 310 thread
// exits at 402 ns", "no run counted in the 10% of the time sampled", or "not measured". When the
// statistics were sampled (docs/cost.md), the runs counted are those of the samples, and it says
// so: "152 ns/event, 0.01% CPU, sampled 10% of the time; 31 sampled thread exits at 402 ns".
func probeCost(m capture.Meta) string {
	if m.ProbeRunTimeNS() == 0 {
		if m.ProgramsSampled() {
			// A quiet machine: its few events all came while the statistics were off.
			return fmt.Sprintf("no run counted in the %s of the time sampled", measuredShare(m))
		}
		// The kernel only counts BPF run time while kernel.bpf_stats_enabled is 1.
		return "not measured"
	}
	total, runs := "in all", ""
	if m.ProgramsSampled() {
		total, runs = "in the samples", "sampled "
	}
	var b strings.Builder
	switch n := m.ProbeEventsMeasured(); {
	case n >= minCostEvents:
		fmt.Fprintf(&b, "%.0f ns/event", m.ProbeNSPerEvent())
	case n > 0:
		fmt.Fprintf(&b, "%s %s (%d %s, too few for a cost per event: %d at least)",
			FormatDuration(float64(m.ProbeRunTimeNS())), total, n, plural(int(n), "event", "events"), minCostEvents)
	default:
		b.WriteString(FormatDuration(float64(m.ProbeRunTimeNS())))
	}
	if share := m.ProbeCPUShare() * 100; share >= 0.01 {
		fmt.Fprintf(&b, ", %.2f%% CPU", share)
	} else if share > 0 {
		b.WriteString(", <0.01% CPU")
	}
	if m.ProgramsSampled() {
		fmt.Fprintf(&b, ", sampled %s of the time", measuredShare(m))
	}
	for _, h := range m.Hooks() {
		if h.Runs > 0 {
			fmt.Fprintf(&b, "; %d %s%s at %s", h.Runs, runs, hookRuns(h.Event, h.Runs), FormatDuration(float64(h.RunTimeNS)/float64(h.Runs)))
		}
	}
	return b.String()
}

// measuredShare is the part of the capture its programs' statistics counted, e.g. "10%".
func measuredShare(m capture.Meta) string {
	share := 100 * float64(m.ProgramsMeasured()) / float64(m.Duration())
	if share < 1 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", share)
}

// hookRuns names what a bookkeeping program's runs are, by its scheduler event.
func hookRuns(event string, n uint64) string {
	switch event {
	case "sched_process_free":
		return plural(int(n), "thread exit", "thread exits")
	case "sched_switch":
		return plural(int(n), "context switch", "context switches")
	case "sched_process_fork":
		return plural(int(n), "fork", "forks")
	}
	return sanitize(event) + plural(int(n), " run", " runs")
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

// sanitize makes a string of the capture safe for the terminal.
func sanitize(s string) string { return termsafe.String(s) }

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
