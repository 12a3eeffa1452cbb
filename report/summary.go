// Package report renders a capture for people: a terminal summary (summary.go) and a self-contained HTML page (html.go).
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

// WriteSummary writes the perf-lock-contention-style table of the top n groups by caller
// (capture.ByCaller): contended, total wait, max wait, avg wait, type, caller; for the function-probe
// backends, acquire times instead of waits. Then one health line with events, waits, lost events (with
// reasons when any), and probe cost per event and as a share of CPU, then the capture's warnings, one
// per line. When there are more groups than n it says how many were omitted; n <= 0 shows all groups.
// Groups of holds only, without a contended acquire, are not contention and are left out.
//
// Callers, types, reasons and warnings come from an untrusted file (thread names end up in them), so
// control characters are printed as '?' and cannot drive the terminal.
func WriteSummary(w io.Writer, c *capture.Capture, n int) error {
	var b bytes.Buffer
	groups := slices.DeleteFunc(capture.GroupBy(c.Records, capture.ByCaller), func(g capture.Group) bool { return g.Count == 0 })
	shown := groups
	if n > 0 && len(groups) > n {
		shown = groups[:n]
	}
	if len(groups) == 0 {
		b.WriteString("no lock contention recorded\n")
	} else {
		writeTable(&b, shown, measureOf(c.Meta))
		if omitted := len(groups) - len(shown); omitted > 0 {
			fmt.Fprintf(&b, "... %d more %s not shown\n", omitted, plural(omitted, "caller", "callers"))
		}
	}
	b.WriteString("\n")
	b.WriteString(healthLine(c.Meta))
	b.WriteString("\n")
	for _, warning := range c.Meta.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", sanitize(warning))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeTable aligns the columns to their widest cell: numbers and the type to the right as perf does,
// the caller, which is last, to the left.
func writeTable(b *bytes.Buffer, groups []capture.Group, ms measure) {
	rows := [][]string{{"contended", "total " + ms.Time, "max " + ms.Time, "avg " + ms.Time, "type", "caller"}}
	for _, g := range groups {
		caller := sanitize(g.Caller)
		if caller == "" {
			caller = "[unknown]"
		}
		rows = append(rows, []string{
			strconv.FormatUint(g.Count, 10),
			FormatDuration(float64(g.TotalNS)),
			FormatDuration(float64(g.MaxNS)),
			FormatDuration(g.MeanNS()),
			sanitize(g.Type),
			caller,
		})
	}
	writeColumns(b, rows)
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

// probeCost is what the probes cost per event and as a share of all CPU time, e.g.
// "152 ns/event, 0.01% CPU", or "not measured".
func probeCost(m capture.Meta) string {
	if m.ProbeRunTimeNS() == 0 {
		// The kernel only counts BPF run time while kernel.bpf_stats_enabled is 1.
		return "not measured"
	}
	var b strings.Builder
	if m.Events.Begin > 0 {
		fmt.Fprintf(&b, "%.0f ns/event", m.ProbeNSPerEvent())
	} else {
		b.WriteString(FormatDuration(float64(m.ProbeRunTimeNS())))
	}
	if share := m.ProbeCPUShare() * 100; share >= 0.01 {
		fmt.Fprintf(&b, ", %.2f%% CPU", share)
	} else if share > 0 {
		b.WriteString(", <0.01% CPU")
	}
	return b.String()
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
