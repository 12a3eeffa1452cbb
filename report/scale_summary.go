package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// WriteScaleSummary writes a sweep's terminal summary: a row per level (throughput, speedup,
// efficiency, share of thread time waiting), then the top lock culprits, at most top.
func WriteScaleSummary(w io.Writer, s *capture.Sweep, top int) error {
	an := s.Analyze()
	return writeOnce(w, func(b *bytes.Buffer) {
		unit := "runs/s"
		if s.Metric != "" {
			unit = "metric"
		}
		rows := [][]string{{"level", "runs", "throughput (" + unit + ")", "speedup", "efficiency", "waiting", "run time", ""}}
		for i, st := range an.Levels {
			row := []string{strconv.Itoa(st.N), fmt.Sprintf("%d/%d", st.Runs, len(s.Levels[i].Runs)), "-", "-", "-", "-", "-"}
			if st.Runs > 0 {
				row = []string{row[0], row[1], FormatNumber(st.Throughput), strconv.FormatFloat(st.Speedup, 'f', 2, 64) + "x",
					percent(st.Efficiency), percent(st.WaitShare), FormatDuration(float64(st.WallNS))}
			}
			var notes []string
			if st.Oversubscribed {
				notes = append(notes, "oversubscribed")
			}
			if st.Failed > 0 {
				notes = append(notes, fmt.Sprintf("%d failed", st.Failed))
			}
			rows = append(rows, append(row, strings.Join(notes, ", ")))
		}
		writeColumns(b, rows)
		if s.Interrupted {
			b.WriteString("(interrupted: the runs done until then)\n")
		}
		for _, w := range sweepDataWarnings(s, an) {
			fmt.Fprintf(b, "warning: %s\n", w)
		}
		b.WriteString("\nScaling culprits: locks whose wait per unit of work grows most from the lowest level to the highest\n\n")
		if len(an.Locks) == 0 {
			b.WriteString("No lock contention was recorded.\n")
			return
		}
		head := []string{"#", "type"}
		for _, l := range s.Levels {
			head = append(head, "wait/work @"+strconv.Itoa(l.N))
		}
		rows = [][]string{append(head, "growth", "exponent", "top from", "lock")}
		for i, c := range an.Locks[:min(top, len(an.Locks))] {
			row := []string{strconv.Itoa(i + 1), sanitize(c.Type)}
			for _, v := range c.WaitPerWork {
				row = append(row, formatPerWork(v))
			}
			exp, from := "-", "-"
			if !math.IsNaN(c.Exponent) {
				exp = strconv.FormatFloat(c.Exponent, 'f', 2, 64)
			}
			if c.TopFrom > 0 {
				from = strconv.Itoa(c.TopFrom)
			}
			rows = append(rows, append(row, formatPerWork(c.Growth), exp, from, sanitize(culpritName(c, c.Lock != 0 && hashedSweep(s)))))
		}
		writeColumns(b, rows)
		fmt.Fprintf(b, "\nSweep cost: %s\n", sweepCost(s))
	})
}

// hashedSweep reports whether the sweep's captures have their addresses hashed.
func hashedSweep(s *capture.Sweep) bool {
	for _, l := range s.Levels {
		for _, r := range l.Runs {
			if r.Capture != nil {
				return r.Capture.Meta.AddressesHashed
			}
		}
	}
	return false
}
