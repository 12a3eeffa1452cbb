package report

import (
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// The report's views of the records (views.go): by thread, one row per record, and the records merged
// by caller or by lock.

// Columns of a view, each holding one value per row.

func textColumn(key, label, class string, values []int32) column {
	return column{Key: key, Label: label, Kind: kindText, Class: class, Term: columnTerms[key], text: values}
}

// columnTerms are the glossary entries of the columns by key, where one explains them.
var columnTerms = map[string]string{
	"lock": "lock-name", "caller": "caller", "records": "record", "spin": "spinning", "status": "status",
	"blocked_by": "owner", "owner": "owner", "waiters": "owner", "stack_reason": "owner-stack", "p99": "p99",
	"hold_count": "hold", "hold_total": "hold", "hold_avg": "hold", "hold_max": "hold", "whose": "scope",
}

// stackColumn is a column of kernel stacks: term is its glossary entry.
func stackColumn(label, term string, values []int32) column {
	return column{Key: "stack", Label: label, Kind: kindStack, Term: term, text: values}
}

func intColumn(key, label string, values []uint64) column {
	return column{Key: key, Label: label, Kind: kindInt, Term: columnTerms[key], ints: values}
}

func nsColumn(key, label string, values []uint64) column {
	return column{Key: key, Label: label, Kind: kindNS, Term: columnTerms[key], ints: values}
}

func meanColumn(key, label string, values []float64) column {
	return column{Key: key, Label: label, Kind: kindMeanNS, Term: columnTerms[key], floats: values}
}

// ref makes a column take its values from the embedded records' field.
func ref(c column, field string) column {
	c.Ref, c.text, c.ints = field, nil, nil
	return c
}

func sum(c column) column {
	c.Sum = true
	return c
}

// numbers are the columns of the waits (or contended acquires) and, when holds were timed, of the
// holds, of rows with the given sums and extremes.
type numbers struct {
	count, total, spin, max       []uint64
	mean                          []float64
	holdCount, holdTotal, holdMax []uint64
	holdMean                      []float64
}

func newNumbers(n int) *numbers {
	return &numbers{
		count: make([]uint64, n), total: make([]uint64, n), spin: make([]uint64, n), max: make([]uint64, n), mean: make([]float64, n),
		holdCount: make([]uint64, n), holdTotal: make([]uint64, n), holdMax: make([]uint64, n), holdMean: make([]float64, n),
	}
}

func (n *numbers) columns(ms measure, holds bool) []column {
	cols := []column{sum(intColumn("count", ms.Count, n.count)), sum(nsColumn("total", "Total "+ms.Time, n.total))}
	if ms.Spin {
		cols = append(cols, sum(nsColumn("spin", "Spinning", n.spin)))
	}
	cols = append(cols, meanColumn("avg", "Avg "+ms.Time, n.mean), nsColumn("max", "Max "+ms.Time, n.max))
	if holds {
		cols = append(cols,
			sum(intColumn("hold_count", "Holds", n.holdCount)), sum(nsColumn("hold_total", "Total hold", n.holdTotal)),
			meanColumn("hold_avg", "Avg hold", n.holdMean), nsColumn("hold_max", "Max hold", n.holdMax))
	}
	return cols
}

// lockTexts name a lock in a table: its symbol when known, else its id; the title always holds the id,
// which tells lock instances of the same name apart.
func lockTexts(tab *strtab, name string, lock capture.Addr) (text, title int32) {
	shown := tab.lockID(lock)
	if name == "" {
		return tab.str(shown), tab.str("lock " + shown)
	}
	return tab.str(name), tab.str("lock " + shown)
}

// recordLockTexts name a record's lock in a table: LockLabel, its slab offset and struct field
// with the name, or its id; when other locks of the capture share the label (five &task_struct,
// two siglock of one command), the id follows it, visibly: a title alone does not tell rows apart
// at a glance. The title holds the id, and the candidates of a guessed field.
func recordLockTexts(tab *strtab, r *capture.Record, records []capture.Record) (text, title int32) {
	label := r.LockLabel()
	if label == "" {
		return lockTexts(tab, "", r.Lock)
	}
	shown := tab.lockID(r.Lock)
	if tab.sharedLabels(records)[label] {
		label += " · " + shown
	}
	t := "lock " + shown
	if len(r.FieldCandidates) > 0 {
		t += "; the struct field is a guess among " + strings.Join(r.FieldCandidates, ", ")
	}
	return tab.str(label), tab.str(t)
}

// lockID is a lock's id as the page shows it: its address, or its hashed id when hashing.
func (t *strtab) lockID(lock capture.Addr) string {
	id := t.lock(lock)
	if t.hasher != nil {
		return id.HashedString()
	}
	return id.String()
}

// sharedLabels returns the lock labels (Record.LockLabel) that several locks of the records
// share, found on the first call: a page shows the records of one capture.
func (t *strtab) sharedLabels(records []capture.Record) map[string]bool {
	if t.shared != nil {
		return t.shared
	}
	t.shared = map[string]bool{}
	first := map[string]capture.Addr{}
	for i := range records {
		label := records[i].LockLabel()
		if label == "" || t.shared[label] {
			continue
		}
		if lock, ok := first[label]; !ok {
			first[label] = records[i].Lock
		} else if lock != records[i].Lock {
			t.shared[label] = true
		}
	}
	return t.shared
}

// callerText shows a missing caller (no stack, or a stack of lock functions only) as perf does.
func callerText(caller string) string {
	if caller == "" {
		return "[unknown]"
	}
	return caller
}

// callerCell is the index of a caller's text in a table: callerText, then its source line and
// inlined functions when the capture has them ("do_renameat2+0x221 → lock_rename, fs/namei.c:3012").
func (t *strtab) callerCell(caller string) int32 {
	return t.str(callerText(caller) + capture.SourceText(t.sources.Lines(caller)))
}

// recordView shows every record, in the order of capture.Sort: records[order[i]] is row i, and the
// embedded records' row i too, from which most columns take their values.
func recordView(records []capture.Record, order []int32, fields *recordFields, tab *strtab, ms measure, holds bool) view {
	n := len(order)
	locks, lockTitles, callers, cgroups := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	num := newNumbers(n)
	for i, ri := range order {
		r := &records[ri]
		locks[i], lockTitles[i] = recordLockTexts(tab, r, records)
		cgroups[i] = tab.str(capture.CgroupName(r.CgroupID, r.Cgroup))
		callers[i] = tab.callerCell(tab.strings[fields.Caller[i]])
		num.mean[i], num.holdMean[i] = r.MeanNS(), r.HoldMeanNS()
	}
	lock := textColumn("lock", "Lock", "mono", locks)
	lock.titles = lockTitles
	pid, tid := ref(intColumn("pid", "PID", nil), "pid"), ref(intColumn("tid", "TID", nil), "tid")
	pid.Search, tid.Search = true, true
	// What tells the rows apart first, the numbers next, and the process ids and cgroup last: a
	// screen 1400 pixels wide shows the stack without scrolling.
	cols := []column{lock, ref(textColumn("type", "Type", "", nil), "type"), textColumn("caller", "Caller", "mono", callers),
		ref(stackColumn("Stack", "stack", nil), "stack"), ref(textColumn("comm", "Thread", "", nil), "comm")}
	for _, c := range num.columns(ms, holds) {
		switch c.Key {
		case "count", "hold_count":
			c = ref(c, map[string]string{"count": "count", "hold_count": "hold_count"}[c.Key])
		case "total", "spin", "max", "hold_total", "hold_max":
			c = ref(c, map[string]string{"total": "total_ns", "spin": "spin_ns", "max": "max_ns", "hold_total": "hold_total_ns", "hold_max": "hold_max_ns"}[c.Key])
		}
		c.Sum = false // a record's numbers are the kernel's, not sums of ours
		cols = append(cols, c)
	}
	cols = append(cols, pid, tid, textColumn("cgroup", "Cgroup", "", cgroups))
	return view{ID: "threads", Title: "By thread", Caption: "one row per lock, thread, call stack and lock type", Rows: n, SortKey: "total", Columns: cols}
}

// groupView shows groups of records keyed by a lock (capture.FieldLock), a caller
// (capture.FieldCaller) or a cgroup (capture.FieldCgroup), which is its first column. Any other lock, thread or caller column says
// "various" where the group's records differ in it; a lock column of locks that differ but share a
// name shows the name, with a title that says so.
func groupView(id, title, caption string, key capture.Fields, groups []capture.Group, records []capture.Record, tab *strtab, ms measure, holds bool) view {
	n := len(groups)
	locks, lockTitles, types, comms, callers, stacks := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	cgroups := make([]int32, n)
	merged := make([]uint64, n)
	num := newNumbers(n)
	v := view{ID: id, Title: title, Caption: caption, Rows: n, SortKey: "total"}
	for i, g := range groups {
		switch {
		case !g.Mixed.Has(capture.FieldLock):
			// One lock: its records agree in its name and field.
			locks[i], lockTitles[i] = recordLockTexts(tab, &records[g.Heaviest], records)
		case !g.Mixed.Has(capture.FieldName) && g.Name != "":
			locks[i], lockTitles[i] = tab.str(g.Name), tab.str("several locks named "+g.Name)
		default:
			locks[i], lockTitles[i] = -1, -1
		}
		types[i], comms[i], callers[i] = tab.str(g.Type), tab.str(g.Comm), -1
		if g.Mixed.Has(capture.FieldComm) {
			comms[i] = -1
		}
		cgroups[i] = tab.str(capture.CgroupName(g.CgroupID, g.Cgroup))
		if g.Mixed.Has(capture.FieldCgroup) {
			cgroups[i] = -1
		}
		if !g.Mixed.Has(capture.FieldCaller) {
			callers[i] = tab.callerCell(tab.strings[tab.frame(g.Caller)])
		}
		stacks[i] = tab.stack(records[g.Heaviest].Stack)
		merged[i] = uint64(g.Records)
		num.count[i], num.total[i], num.spin[i], num.max[i], num.mean[i] = g.Count, g.TotalNS, g.SpinNS, g.MaxNS, g.MeanNS()
		num.holdCount[i], num.holdTotal[i], num.holdMax[i], num.holdMean[i] = g.HoldCount, g.HoldTotalNS, g.HoldMaxNS, g.HoldMeanNS()
		if g.Saturated {
			v.Saturated = append(v.Saturated, i)
		}
	}
	lock := textColumn("lock", "Lock", "mono", locks)
	lock.titles = lockTitles
	caller := textColumn("caller", "Caller", "mono", callers)
	head := []column{lock, textColumn("type", "Type", "", types), caller}
	switch key {
	case capture.FieldCaller:
		head = []column{caller, textColumn("type", "Type", "", types), lock}
	case capture.FieldCgroup:
		head = []column{textColumn("cgroup", "Cgroup", "", cgroups), textColumn("type", "Type", "", types), lock, caller}
	}
	v.Columns = append(head, stackColumn("Heaviest stack", "heaviest-stack", stacks), textColumn("comm", "Thread", "", comms))
	v.Columns = append(v.Columns, num.columns(ms, holds)...)
	v.Columns = append(v.Columns, intColumn("records", "Records", merged))
	return v
}
