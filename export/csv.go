package export

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// csvHeader names the columns of WriteCSV: perf lock contention's first (contended, total wait,
// max wait, avg wait, type, caller), then the rest of a record. Times are integer nanoseconds.
var csvHeader = []string{
	"contended", "total_wait_ns", "max_wait_ns", "avg_wait_ns", "type", "caller",
	"min_wait_ns", "in_progress", "spin_ns", "lock", "lock_name", "comm", "pid", "tid",
	"hold_count", "hold_total_ns", "hold_min_ns", "hold_max_ns", "stack", "cgroup_id", "cgroup",
	"kind", "owner_where", "owner_samples", "object_offset", "field", "field_candidates",
	"lock_static", "holder_state", "blocker",
}

// WriteCSV writes c as CSV, one row per record with waits, in the capture's order: RFC 4180, with a
// header, CRLF line ends and fields quoted where they need it. avg_wait_ns is rounded down, as perf does;
// spin_ns is the part of total_wait_ns spent spinning; stack is the record's frames, innermost first, joined by " <- "; cgroup_id and cgroup, last so that older readers' columns stay where they were, the waiter's cgroup. With a function-probe backend
// the wait columns hold acquire times, as in the capture. kind is "wait" for these rows; with
// --owners, rows of kind "owner" follow, one per owner's stack: the waits charged to the owner
// (contended) and their wait (total_wait_ns) at that stack, the owner as lock, comm, pid and tid,
// owner_where (on_cpu, sampled, or off_cpu) and owner_samples (the samples an on_cpu stack rests
// on); a reader summing waits takes the rows of kind "wait" only. object_offset, field and
// field_candidates (space-separated) are a slab lock's offset in its object and its struct field, a
// guess among the candidates when there are several (docs/lock-names.md). lock_static is "static"
// for a lock in the kernel image's static data that no symbol names (capture.UnnamedStatic), which
// lock_name then leaves empty. holder_state (on_cpu, runnable, off_cpu; empty when not split) is
// what an owner did over its row's share of the waits, blocker (writer, reader, releaser) how a
// thread that woke the waiters of a lock recording no owner blocked them.
//
// Text fields come from processes (thread names) and the kernel: their control characters are
// replaced as in every export (printableText), and a spreadsheet runs a cell that starts with =, +, -
// or @ as a formula (a tab or a carriage return too, which are replaced); such a field is written
// with a leading ' (OWASP's advice against CSV injection), which spreadsheets show and do not evaluate.
func WriteCSV(w io.Writer, a Analysis) error {
	c, addrs := a.Capture(), a.Addresses()
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	if err := cw.Write(csvHeader); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for _, r := range c.Records {
		if r.Count == 0 {
			continue
		}
		row := []string{
			u(r.Count), u(r.TotalNS), u(r.MaxNS), u(r.TotalNS / r.Count), csvText(r.Type), csvText(addrs.Frame(r.Caller)),
			u(r.MinNS), u(r.InProgress), u(r.SpinNS), addrs.Lock(r.Lock), csvText(r.Name), csvText(r.Comm), u(uint64(r.PID)), u(uint64(r.TID)),
			u(r.HoldCount), u(r.HoldTotalNS), u(r.HoldMinNS), u(r.HoldMaxNS), csvText(stackText(addrs, r.Stack)),
			u(r.CgroupID), csvText(r.Cgroup), "wait", "", "",
			csvText(r.ObjectOffset), csvText(r.Field), csvText(strings.Join(r.FieldCandidates, " ")),
			staticMark(r), "", "",
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("writing CSV: %w", err)
		}
	}
	for _, o := range a.OwnerStacks() {
		row := []string{
			u(o.Count), u(o.TotalNS), "", u(o.TotalNS / o.Count), csvText(o.Type), "",
			"", "", "", addrs.Lock(o.Lock), csvText(o.Name), csvText(o.Comm), u(uint64(o.PID)), u(uint64(o.TID)),
			"", "", "", "", csvText(stackText(addrs, o.Stack)), "", "", "owner", o.Where, u(o.Samples), "", "", "",
			"", o.HolderState, o.Blocker,
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("writing CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	return nil
}

// csvText is a text field made safe for a terminal and a spreadsheet: printable, and never read as a
// formula.
func csvText(s string) string {
	s = printableText(s)
	if s != "" && strings.ContainsRune("=+-@", rune(s[0])) {
		return "'" + s
	}
	return s
}
