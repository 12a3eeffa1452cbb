package report

import (
	"fmt"
	"strconv"

	"github.com/klockstat/klockstat/capture"
)

// The tables' first pages are rendered here, so the report reads without JavaScript; the page's script
// then rebuilds every view from the embedded capture, with sorting, filtering and paging. Column keys
// are shared with report.js (the data-col attributes), which must know each of them.

// column is one column of a report table.
type column struct {
	Key, Label string
	Num        bool
}

// cell is one table cell: Text shown, Title as its tooltip (the exact value of a rounded one), Class
// "num" for numbers, "mono" for kernel symbols and ids, "muted" for placeholders.
type cell struct {
	Text, Title, Class string
	IsStack            bool
	Stack              []string // frames of the stack column, innermost first
}

// table is one view of the records.
type table struct {
	ID, Title, Caption string
	Columns            []column
	Rows               [][]cell
	Total              int // rows of the whole view; Rows holds the first page
}

// The tables' columns: the numbers of waits (or contended acquires) and, when holds were timed, of
// holds, after what identifies a row and before its stack.
func recordColumns(ms measure, holds bool) []column {
	return withNumbers([]column{
		{Key: "lock", Label: "Lock"}, {Key: "type", Label: "Type"}, {Key: "comm", Label: "Thread"},
		{Key: "pid", Label: "PID", Num: true}, {Key: "tid", Label: "TID", Num: true},
	}, ms, holds, column{Key: "caller", Label: "Caller"}, column{Key: "stack", Label: "Stack"})
}

func callerColumns(ms measure, holds bool) []column {
	return withNumbers([]column{
		{Key: "caller", Label: "Caller"}, {Key: "type", Label: "Type"}, {Key: "lock", Label: "Lock"},
		{Key: "comm", Label: "Thread"}, {Key: "records", Label: "Records", Num: true},
	}, ms, holds, column{Key: "stack", Label: "Heaviest stack"})
}

func lockColumns(ms measure, holds bool) []column {
	return withNumbers([]column{
		{Key: "lock", Label: "Lock"}, {Key: "type", Label: "Type"}, {Key: "caller", Label: "Caller"},
		{Key: "comm", Label: "Thread"}, {Key: "records", Label: "Records", Num: true},
	}, ms, holds, column{Key: "stack", Label: "Heaviest stack"})
}

func withNumbers(head []column, ms measure, holds bool, tail ...column) []column {
	cols := append(head,
		column{Key: "count", Label: ms.Count, Num: true}, column{Key: "total", Label: "Total " + ms.Time, Num: true},
		column{Key: "avg", Label: "Avg " + ms.Time, Num: true}, column{Key: "max", Label: "Max " + ms.Time, Num: true})
	if holds {
		cols = append(cols,
			column{Key: "hold_count", Label: "Holds", Num: true}, column{Key: "hold_total", Label: "Total hold", Num: true},
			column{Key: "hold_avg", Label: "Avg hold", Num: true}, column{Key: "hold_max", Label: "Max hold", Num: true})
	}
	return append(cols, tail...)
}

// row holds the values of one table row, a record or a group, ready for any column.
type row struct {
	lock, lockTitle, typ, comm, caller string
	lockVarious, commVarious           bool
	callerVarious                      bool
	pid, tid                           uint32
	records                            int
	count, total, max                  uint64
	mean                               float64
	holdCount, holdTotal, holdMax      uint64
	holdMean                           float64
	stack                              []string
}

func (r row) cell(key string) cell {
	switch key {
	case "lock":
		if r.lockVarious {
			return various
		}
		return cell{Text: r.lock, Title: r.lockTitle, Class: "mono"}
	case "type":
		return cell{Text: r.typ}
	case "comm":
		if r.commVarious {
			return various
		}
		return cell{Text: r.comm}
	case "pid":
		return cell{Text: strconv.FormatUint(uint64(r.pid), 10), Class: "num"}
	case "tid":
		return cell{Text: strconv.FormatUint(uint64(r.tid), 10), Class: "num"}
	case "records":
		return cell{Text: strconv.Itoa(r.records), Class: "num"}
	case "count":
		return cell{Text: strconv.FormatUint(r.count, 10), Class: "num"}
	case "total":
		return cell{Text: FormatDuration(float64(r.total)), Title: nsTitle(r.total), Class: "num"}
	case "avg":
		return cell{Text: FormatDuration(r.mean), Title: fmt.Sprintf("%.1f ns", r.mean), Class: "num"}
	case "max":
		return cell{Text: FormatDuration(float64(r.max)), Title: nsTitle(r.max), Class: "num"}
	case "hold_count":
		return cell{Text: strconv.FormatUint(r.holdCount, 10), Class: "num"}
	case "hold_total":
		return cell{Text: FormatDuration(float64(r.holdTotal)), Title: nsTitle(r.holdTotal), Class: "num"}
	case "hold_avg":
		return cell{Text: FormatDuration(r.holdMean), Title: fmt.Sprintf("%.1f ns", r.holdMean), Class: "num"}
	case "hold_max":
		return cell{Text: FormatDuration(float64(r.holdMax)), Title: nsTitle(r.holdMax), Class: "num"}
	case "caller":
		if r.callerVarious {
			return various
		}
		return cell{Text: callerText(r.caller), Class: "mono"}
	case "stack":
		return cell{IsStack: true, Stack: r.stack}
	}
	panic("report: unknown table column " + key)
}

// various marks a group column whose records differ.
var various = cell{Text: "various", Class: "muted"}

func newTable(id, title, caption string, columns []column, rows []row, total int) table {
	t := table{ID: id, Title: title, Caption: caption, Columns: columns, Total: total}
	for _, r := range rows {
		cells := make([]cell, len(columns))
		for i, c := range columns {
			cells[i] = r.cell(c.Key)
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}

// recordTable shows the top records of total records, sorted by total wait.
func recordTable(top []capture.Record, total int, columns []column, lockLabel func(string, capture.Addr) (string, string)) table {
	var rows []row
	for _, r := range top {
		lock, title := lockLabel(r.Name, r.Lock)
		rows = append(rows, row{
			lock: lock, lockTitle: title, typ: r.Type, comm: r.Comm, caller: r.Caller,
			pid: r.PID, tid: r.TID, records: 1,
			count: r.Count, total: r.TotalNS, max: r.MaxNS, mean: r.MeanNS(), stack: r.Stack,
			holdCount: r.HoldCount, holdTotal: r.HoldTotalNS, holdMax: r.HoldMaxNS, holdMean: r.HoldMeanNS(),
		})
	}
	return newTable("threads", "By thread", "one row per lock, thread, call stack and lock type", columns, rows, total)
}

// groupTable shows the first n groups. Its first column must be what the groups are keyed by; any other
// lock, thread or caller column says "various" when the group's records differ in it (capture.Group
// leaves the field empty then).
func groupTable(id, title, caption string, columns []column, groups []capture.Group, n int, lockLabel func(string, capture.Addr) (string, string)) table {
	key := columns[0].Key
	var rows []row
	for _, g := range groups[:min(n, len(groups))] {
		merged := g.Records > 1
		lock, lockTitle := lockLabel(g.Name, g.Lock)
		rows = append(rows, row{
			lock: lock, lockTitle: lockTitle, typ: g.Type, comm: g.Comm, caller: g.Caller,
			lockVarious:   merged && key != "lock" && g.Lock == 0 && g.Name == "",
			commVarious:   merged && g.Comm == "",
			callerVarious: merged && key != "caller" && g.Caller == "",
			records:       g.Records, count: g.Count, total: g.TotalNS, max: g.MaxNS, mean: g.MeanNS(), stack: g.Stack,
			holdCount: g.HoldCount, holdTotal: g.HoldTotalNS, holdMax: g.HoldMaxNS, holdMean: g.HoldMeanNS(),
		})
	}
	return newTable(id, title, caption, columns, rows, len(groups))
}

// callerText shows a missing caller (no stack, or a stack of lock functions only) as perf does.
func callerText(caller string) string {
	if caller == "" {
		return "[unknown]"
	}
	return caller
}

// lockLabeler returns how the table names a lock: its symbol when known, else its id; the title always
// holds the id, which tells lock instances of the same name apart.
func lockLabeler(hashed bool) func(name string, lock capture.Addr) (text, title string) {
	return func(name string, lock capture.Addr) (string, string) {
		id := lock.String()
		if hashed {
			id = lock.HashedString()
		}
		if name == "" {
			return id, "lock " + id
		}
		return name, "lock " + id
	}
}
