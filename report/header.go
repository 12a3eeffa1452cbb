package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klockstat/klockstat/capture"
)

// The header of the page: what a reader must know before the charts. Every string in it comes from a
// capture file, and html/template escapes it.

// highlight is one of the headline numbers at the top of the page; a Symbol value is a kernel symbol.
type highlight struct {
	Label, Value, Title, Detail string
	Term                        string // the glossary entry its detail uses, or ""
	Bad, Symbol                 bool
}

// field is one line of the header's Captured, Settings and Health lists.
type field struct {
	Label, Value, Title string
	Term                string // the glossary entry its value uses, or ""
	Bad                 bool
}

func formatStart(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

// measure names what a capture's records time, for labels: waits, from the contention tracepoints, or
// whole acquire calls, fast path included, from the function probes, of which only those longer than
// the calibrated threshold are counted ("contended acquires").
type measure struct {
	Time   string `json:"time"`   // "wait", "acquire": what Total, Avg and Max are of
	Events string `json:"events"` // "waits", "contended acquires"
	Count  string `json:"-"`      // column label of the count
	Spin   bool   `json:"-"`      // the times split into spin and sleep: waits of the tracepoints, not acquires
}

func measureOf(m capture.Meta) measure {
	if m.Acquire != nil {
		return measure{Time: "acquire", Events: "contended acquires", Count: "Contended"}
	}
	return measure{Time: "wait", Events: "waits", Count: "Waits", Spin: true}
}

// holdsTimed reports whether any record has hold times.
func holdsTimed(records []capture.Record) bool {
	for _, r := range records {
		if r.HoldCount > 0 {
			return true
		}
	}
	return false
}

// highlights are the few numbers a reader should see first: how much waiting there was, where most of
// it went, and whether the capture can be trusted: of an's capture.
func highlights(an *model) []highlight {
	c, m, ms := an.c, an.c.Meta, an.ms
	types, byCaller, callers := an.types(), an.contended(), an.callers()
	locks := make(map[string]bool)
	threads := make(map[uint32]bool)
	for _, r := range c.Records {
		if r.Count == 0 {
			continue // holds only
		}
		locks[capture.ByLock(r)] = true
		threads[r.TID] = true
	}
	totals := an.totals()
	total, waits := totals.TotalNS, totals.Count
	hs := []highlight{{
		Label: "Total " + ms.Time, Value: FormatDuration(float64(total)), Title: nsTitle(total),
		Detail: fmt.Sprintf("%d %s", waits, ms.Events),
	}}
	if totals.Saturated {
		hs[0].Value, hs[0].Bad = "≥ "+hs[0].Value, true
		hs[0].Detail = "the sums exceed what 64 bits hold: the capture is corrupt"
	}
	if m.DurationNS > 0 {
		hs[0].Detail += fmt.Sprintf(", %.2f threads waiting on average", float64(total)/float64(m.DurationNS))
	}
	if h, ok := commandHighlight(c, ms); ok {
		hs = append(hs, h)
	}
	if len(types) > 0 {
		t := types[0]
		hs = append(hs, highlight{
			Label: "Top lock type", Value: t.Name,
			Detail: fmt.Sprintf("%.1f%% of the %s time, %s", 100*t.Share, ms.Time, FormatDuration(float64(t.TotalNS))),
		})
	}
	if len(byCaller) > 0 {
		g := byCaller[0]
		share := 0.0
		if total > 0 {
			share = float64(g.TotalNS) / float64(total)
		}
		hs = append(hs, highlight{
			Label: "Top caller", Value: callerText(callers[0]), Title: g.Type + " " + callerText(callers[0]), Symbol: true,
			Detail: fmt.Sprintf("%s, %.1f%% of the %s time, %s", g.Type, 100*share, ms.Time, FormatDuration(float64(g.TotalNS))),
		})
	}
	named := c.NameShares()
	contended := highlight{
		Label: "Contended locks", Value: strconv.Itoa(len(locks)), Term: "record",
		Detail: fmt.Sprintf("%d threads, %d records; of the %s time, %.1f%% on locks named by symbol or field, %.1f%% on locks named by slab cache only",
			len(threads), len(c.Records), ms.Time, 100*named.Symbol, 100*named.SlabCache),
	}
	if note := staticNote(c, c.Records); note != "" {
		contended.Detail += "; " + note
	}
	hs = append(hs, contended)
	health := highlight{Label: "Capture health", Value: "complete", Detail: "probe cost " + probeCost(m)}
	if len(m.Unseen) > 0 {
		health.Value, health.Bad = unseenTypes(m)+" waits unseen", true
		health.Detail = strings.Join(unseenLines(m), "; ") + "; " + health.Detail
	}
	if lost := m.LostTotal(); lost > 0 {
		health.Value, health.Bad = fmt.Sprintf("%d events lost", lost), true
	}
	return append(hs, health)
}

// headerFields describe what was captured, with which settings, and how healthy the capture is.
func headerFields(m capture.Meta) (captured, settings, health []field) {
	workload := "none: the whole machine for the duration"
	if len(m.Workload) > 0 {
		workload = shellJoin(m.Workload)
		if m.WorkloadExit != nil {
			workload += fmt.Sprintf(" (exit status %d)", *m.WorkloadExit)
		}
	}
	cpus := strconv.Itoa(m.CPUs)
	if m.CPUModel != "" {
		cpus += " × " + m.CPUModel
	}
	captured = []field{
		{Label: "Command", Value: shellJoin(m.CommandLine)},
		{Label: "Workload", Value: workload, Bad: m.WorkloadExit != nil && *m.WorkloadExit != 0},
		{Label: "Start", Value: formatStart(m.Start), Title: m.Start.Format(time.RFC3339Nano)},
		{Label: "Duration", Value: FormatDuration(float64(m.DurationNS)), Title: nsTitle(uint64(max(m.DurationNS, 0)))},
		{Label: "Host", Value: m.Hostname},
		{Label: "Kernel", Value: strings.TrimSpace(m.Kernel + " " + m.Arch), Title: m.KernelBuild},
		{Label: "CPUs", Value: cpus},
		{Label: "Tool", Value: strings.TrimSpace(m.Tool + " " + m.ToolVersion)},
	}

	symbols := "resolved with /proc/kallsyms"
	switch {
	case m.KallsymsRestricted:
		symbols = "not resolved: /proc/kallsyms hides addresses (kernel.kptr_restrict), frames are raw addresses"
	case m.StaticNamesFrom != "":
		symbols += ", static locks with the symbol table of " + m.StaticNamesFrom
	case m.KallsymsNoData:
		symbols += ", which lists no data symbols (CONFIG_KALLSYMS_ALL off): static locks have no names"
	}
	addresses := "real kernel addresses"
	if m.AddressesHashed {
		addresses = "hashed ids, as the kernel's %p prints them; the same address has the same id within this page"
	}
	measures, functions := "waits: lock:contention_begin to contention_end", "none: the contention tracepoints"
	var measuresTitle, functionsTitle string
	holds := "not timed (only the function probes time holds)"
	if a := m.Acquire; a != nil {
		cal := a.Calibration
		measures = fmt.Sprintf("whole acquire calls, fast path included; an acquire counts as contended above %s (%s of %d uncontended acquires: p50 %s, p99 %s, max %s)",
			FormatDuration(float64(a.ThresholdNS)), cal.Rule, cal.Samples, FormatDuration(float64(cal.P50NS)), FormatDuration(float64(cal.P99NS)), FormatDuration(float64(cal.MaxNS)))
		measuresTitle = "calibration: " + cal.Method
		functions = fmt.Sprintf("%d probed, %d skipped", len(a.Functions), len(a.Skipped))
		var lines []string
		lines = append(lines, "probed: "+listOr(a.Functions, "none"))
		for _, s := range a.Skipped {
			lines = append(lines, fmt.Sprintf("skipped %s (%s): %s", s.Function, s.Type, s.Reason))
		}
		functionsTitle = strings.Join(lines, "\n")
		holds = fmt.Sprintf("%d timed, acquire return to release; %d uncontended acquires", a.Holds, a.Uncontended)
	}
	settings = []field{
		{Label: "Probe", Value: m.Probe},
		{Label: "Measures", Value: measures, Title: measuresTitle},
		{Label: "Functions", Value: functions, Title: functionsTitle},
		{Label: "Stack depth", Value: fmt.Sprintf("%d frames", m.StackDepth)},
		{Label: "Lock types", Value: listOr(m.Types, "all")},
		{Label: "PID filter", Value: listOr(uintStrings(m.PIDs), "all processes")},
		{Label: "Comm filter", Value: cmpOr(m.Comm, "all processes")},
		{Label: "Map sizes", Value: mapSizes(m.MapSizes)},
		{Label: "Symbols", Value: symbols, Bad: m.KallsymsRestricted},
		{Label: "Addresses", Value: addresses, Term: "id"},
	}
	if m.OwnerSampleHz > 0 {
		settings = slices.Insert(settings, 4, field{Label: "Owner samples", Term: "owner-stack",
			Value: fmt.Sprintf("%d Hz per CPU, of lock owners with waiters, on their CPU", m.OwnerSampleHz)})
	}

	e := m.Events
	events := fmt.Sprintf("%d begin, %d end", e.Begin, e.End)
	if m.Acquire != nil {
		events = fmt.Sprintf("%d acquires timed, %d contended", e.Begin, e.End)
	}
	lost := "none"
	if total := m.LostTotal(); total > 0 {
		var reasons []string
		for _, l := range m.Lost {
			reasons = append(reasons, fmt.Sprintf("%s: %d", l.Reason, l.Count))
		}
		lost = fmt.Sprintf("%d (%s)", total, strings.Join(reasons, ", "))
	}
	var programs []string
	if m.ProgramsSampled() {
		events := ""
		if m.ProgramsEvents > 0 {
			events = fmt.Sprintf(" and %d of the %d lock events (%.0f%%)", m.ProgramsMeasuredEvents, m.ProgramsEvents, 100*float64(m.ProgramsMeasuredEvents)/float64(m.ProgramsEvents))
		}
		programs = append(programs, fmt.Sprintf("run statistics sampled: on for %s of the %s (%s)%s, the runs below are those counted then",
			FormatDuration(float64(m.ProgramsMeasuredNS)), FormatDuration(float64(m.DurationNS)), measuredShare(m), events))
	}
	for _, p := range m.Programs {
		programs = append(programs, fmt.Sprintf("%s: %d runs, %s, %d recursion misses", p.Name, p.RunCount, FormatDuration(float64(p.RunTimeNS)), p.RecursionMisses))
	}
	health = []field{
		{Label: "Contention events", Value: events},
		{Label: "Waits recorded", Value: fmt.Sprintf("%d, %d still in progress at the end", e.Waits, e.InProgress)},
		{Label: "Holds", Value: holds},
		{Label: "Nested", Value: fmt.Sprintf("%d waits, %d probe events rescued", e.Nested, e.Rescued), Term: "rescued",
			Title: "waits begun while another wait of the same thread or CPU was open; events that fired while our probe ran on the CPU, which the kernel skips, taken by the probe's rescue copy"},
		{Label: "Unmatched", Value: unmatched(e)},
		{Label: "Stacks", Value: fmt.Sprintf("%d walked, %d recognised without a walk, %d failed", m.Stacks.Walked, m.Stacks.Known, m.Stacks.Failed), Bad: m.Stacks.Failed > 0},
		{Label: "Lost events", Value: lost, Bad: m.LostTotal() > 0},
		{Label: "Probe cost", Value: probeCost(m), Title: strings.Join(programs, "\n")},
	}
	if unseen := unseenLines(m); len(unseen) > 0 {
		health = slices.Insert(health, 0, field{Label: "Unseen lock types", Value: strings.Join(unseen, "; "), Bad: true})
	}
	return captured, settings, health
}

// unmatched says the events without their other half, and, where there are any, how they stand
// beside the counts of "Contention events", which leave them out: an end without a begin closed a
// wait begun before the capture, a begin without an end a wait its thread left.
func unmatched(e capture.Events) string {
	text := fmt.Sprintf("%d begin, %d end", e.UnmatchedBegin, e.UnmatchedEnd)
	var why []string
	if e.UnmatchedBegin > 0 {
		why = append(why, fmt.Sprintf("%d %s whose end never came", e.UnmatchedBegin, plural(int(min(e.UnmatchedBegin, 2)), "begin", "begins")))
	}
	if e.UnmatchedEnd > 0 {
		why = append(why, fmt.Sprintf("%d %s of waits begun before the capture, not among its %d ends", e.UnmatchedEnd, plural(int(min(e.UnmatchedEnd, 2)), "end", "ends"), e.End))
	}
	if len(why) > 0 {
		text += ": " + strings.Join(why, "; ")
	}
	return text
}

func nsTitle(ns uint64) string { return strconv.FormatUint(ns, 10) + " ns" }

func listOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return strings.Join(s, ", ")
}

func cmpOr(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

func uintStrings(ns []uint32) []string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.FormatUint(uint64(n), 10)
	}
	return s
}

func mapSizes(sizes map[string]uint32) string {
	var s []string
	for _, name := range slices.Sorted(maps.Keys(sizes)) {
		s = append(s, fmt.Sprintf("%s %d", name, sizes[name]))
	}
	return listOr(s, "unknown")
}

// shellJoin quotes args the way a POSIX shell would need them, so a command line can be copied.
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=+:,./@%") == "" {
			quoted[i] = a
			continue
		}
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}
