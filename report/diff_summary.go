package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// WriteDiffSummary writes the comparison for a terminal: one line per capture saying what it was,
// the total wait before and after, the warnings, then the top rows by absolute change in total wait
// (top <= 0 shows all) and how many rows were matched, new and gone. Strings from the captures are
// sanitized as WriteSummary does.
func WriteDiffSummary(w io.Writer, d *Diff, top int) error {
	var b bytes.Buffer
	for side, name := range []string{"before", "after"} {
		fmt.Fprintf(&b, "%-6s  %s\n", name, sanitize(captureLine(d.captures[side].Meta)))
	}
	totalB, totalA, pct := d.TotalWaitChange()
	fmt.Fprintf(&b, "total wait%s: %s -> %s (%s)\n", d.basisSuffix(), FormatDuration(totalB), FormatDuration(totalA), formatPct(pct))
	for _, warning := range d.warnings {
		fmt.Fprintf(&b, "warning: %s\n", sanitize(warning))
	}
	b.WriteString("\n")

	shown := d.Rows
	if top > 0 && len(shown) > top {
		shown = shown[:top]
	}
	if len(d.Rows) == 0 {
		b.WriteString("no lock contention recorded in either capture\n")
	} else {
		writeColumns(&b, d.rowsTable(shown))
		if omitted := len(d.Rows) - len(shown); omitted > 0 {
			fmt.Fprintf(&b, "... %d more %s not shown\n", omitted, plural(omitted, "row", "rows"))
		}
	}
	var counts [3]int
	for _, r := range d.Rows {
		counts[r.Status]++
	}
	fmt.Fprintf(&b, "\n%d matched, %d new, %d gone %s, matched by lock type, caller function%s\n",
		counts[Matched], counts[New], counts[Gone], plural(counts[Gone], "row", "rows"), d.matchedBy())
	_, err := w.Write(b.Bytes())
	return err
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
func (d *Diff) basisSuffix() string {
	if d.PerSecond {
		return " per second of capture"
	}
	return ""
}

// matchedBy completes "rows matched by lock type, caller function".
func (d *Diff) matchedBy() string {
	s := ", lock name"
	if d.Options.ByThread {
		s += ", thread name"
	}
	return s
}

// WriteDiffRows writes rows of d as WriteDiffSummary's table does, e.g. those FailOver returns.
func WriteDiffRows(w io.Writer, d *Diff, rows []DiffRow) error {
	var b bytes.Buffer
	writeColumns(&b, d.rowsTable(rows))
	_, err := w.Write(b.Bytes())
	return err
}

// rowsTable is the header and the rows of the terminal table.
func (d *Diff) rowsTable(rows []DiffRow) [][]string {
	unit := ""
	if d.PerSecond {
		unit = "/s"
	}
	header := []string{"before" + unit, "after" + unit, "delta", "change", "avg before", "avg after", "type", "lock"}
	if d.Options.ByThread {
		header = append(header, "thread")
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
		table = append(table, append(cells, sanitize(callerText(r.Caller))))
	}
	return table
}

// rowChange is a row's change in total wait in percent, or whether it is new or gone.
func rowChange(r DiffRow) string {
	switch r.Status {
	case New:
		return "new"
	case Gone:
		return "gone"
	}
	return formatPct(changePct(r.Before.TotalNS, r.After.TotalNS))
}

func meanText(v DiffValues) string {
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
