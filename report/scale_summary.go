package report

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// ScaleSummaryOptions say how WriteScaleSummary writes a sweep.
type ScaleSummaryOptions struct {
	Top int // culprits shown
	// RowsOnly writes the two tables' rows alone, as a capture's -q: no headers, no notes.
	RowsOnly bool
	// RawAddresses shows kernel addresses as they are; by default they are ids under AddressKey,
	// as the scaling report and the exports of the same key show them.
	RawAddresses bool
	AddressKey   []byte // nil draws a key for this summary alone
}

// WriteScaleSummary writes a sweep's terminal summary: a row per level (throughput, speedup,
// efficiency, share of the command's thread time waiting, the threads and processes it ran, the
// other processes' wait), the suspect baselines, then the top lock culprits. The rows are the
// scaling report's, formatted once.
func WriteScaleSummary(w io.Writer, s *capture.Sweep, o ScaleSummaryOptions) error {
	s, hashed := displayedSweep(s, o.RawAddresses, o.AddressKey)
	an := s.Analyze()
	return writeOnce(w, func(b *bytes.Buffer) {
		notes := lineWriter{b: b, off: o.RowsOnly}
		unit := "runs/s"
		if s.Metric != "" {
			unit = "metric"
		}
		waiting := "waiting"
		if ownFigures(an) {
			waiting = "waiting (own threads)"
		}
		rows := [][]string{{"level", "runs", "throughput (" + unit + ")", "speedup", "efficiency", waiting, "threads", "processes", "others' wait", "run time", ""}}
		levels := levelRows(s, an, "x")
		var suspects []string
		for _, r := range levels {
			var marks []string
			if r.Oversubscribed {
				marks = append(marks, "oversubscribed")
			}
			if r.Suspect != "" {
				marks = append(marks, "suspect baseline")
				suspects = append(suspects, r.Suspect)
			}
			if n := len(r.Failures); n > 0 {
				marks = append(marks, fmt.Sprintf("%d failed", n))
			}
			rows = append(rows, []string{strconv.Itoa(r.N), fmt.Sprintf("%d/%d", r.Counted, r.Total), r.Throughput, r.Speedup, r.Efficiency,
				r.Wait, r.Threads, r.Processes, r.Others, r.Wall, strings.Join(marks, ", ")})
		}
		writeScaleTable(b, rows, o.RowsOnly)
		for _, r := range levels {
			for _, f := range r.Failures {
				notes.printf("level %d, run %d failed: %s", r.N, f.Run, sanitize(f.Reason))
			}
		}
		for _, text := range suspects {
			notes.printf("%s", text)
		}
		if s.Interrupted {
			notes.printf("(interrupted: the runs done until then)")
		}
		for _, w := range sweepDataWarnings(s, an) {
			fmt.Fprintf(b, "warning: %s\n", w)
		}
		b.WriteString("\n")
		notes.printf("Scaling culprits: locks whose wait per unit of work grows most from the lowest level to the highest\n")
		if len(an.Locks) == 0 {
			notes.printf("%s", noCulprits(an))
			return
		}
		head := []string{"#", "type"}
		for _, l := range s.Levels {
			head = append(head, "wait/work @"+strconv.Itoa(l.N))
		}
		rows = [][]string{append(head, "growth", "exponent", "top from", "lock")}
		levelNs := make([]int, len(s.Levels))
		for i, l := range s.Levels {
			levelNs[i] = l.N
		}
		for _, c := range culpritRows("", "", "", an.Locks, an.Levels, levelNs, o.Top, hashed).Rows {
			row := append([]string{strconv.Itoa(c.Rank), sanitize(c.Type)}, c.WaitPerWork...)
			rows = append(rows, append(row, c.Growth, c.Exponent, c.TopFrom, sanitize(c.Name)))
		}
		writeScaleTable(b, rows, o.RowsOnly)
		if !o.RowsOnly {
			fmt.Fprintf(b, "\nSweep cost: %s\n", sweepCost(s))
		}
	})
}

// writeScaleTable writes a table of the summary: every column to the right but the last, and
// without the header under RowsOnly.
func writeScaleTable(b *bytes.Buffer, rows [][]string, rowsOnly bool) {
	left := make([]bool, len(rows[0]))
	left[len(left)-1] = true
	writeAligned(b, rows, left, rowsOnly)
}

// noCulprits says why a sweep has no culprits: no level counted, no wait at all, or waits that did
// not grow per unit of work.
func noCulprits(an capture.ScaleAnalysis) string {
	counted, waited := 0, false
	for _, st := range an.Levels {
		if st.Runs > 0 {
			counted++
			waited = waited || st.WaitNS > 0
		}
	}
	switch {
	case counted == 0:
		return "No level has a run that counts: nothing to rank."
	case !waited:
		return "The command waited on no kernel lock at any level."
	case counted == 1:
		return "One level counts: a culprit needs two to grow between."
	}
	return "No lock's wait per unit of work grew from the lowest level to the highest."
}
