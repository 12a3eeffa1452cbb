package capture

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// A diff compares two captures, before and after a change, row by row. Lock and stack addresses
// change with every boot and run, so a row is what survives a reboot: the lock type, the function of
// the caller (Frame.Func: without its offset, which moves with every kernel or module build), the
// lock's name when it is a named kernel symbol, and with DiffOptions.ByThread the thread name;
// Diff.Cgroups matches the waiters' cgroups by path, and Diff.Owners the lock owners by lock, thread
// name and stack (see OwnerDiff). Each of these is matched exactly; see rowKey for the cases that
// never match.

// DiffOptions tune Compare.
type DiffOptions struct {
	ByThread bool // keep threads apart by thread name (comm), exactly as captured
	ByCgroup bool // keep the waiters' cgroups apart, by path
	Absolute bool // compare raw totals instead of per-second rates
	Top      int  // rows in the terminal summary and in FailOver's list; <= 0 means all
}

// DiffStatus says which of the two captures a row or lock type is in.
type DiffStatus int

const (
	Matched DiffStatus = iota // in both
	New                       // only after
	Gone                      // only before
)

func (s DiffStatus) String() string {
	switch s {
	case Matched:
		return "matched"
	case New:
		return "new"
	case Gone:
		return "gone"
	}
	return "DiffStatus(" + strconv.Itoa(int(s)) + ")"
}

// DiffValues are one capture's numbers for a row or a lock type. Count and TotalNS are per second of
// capture, or raw totals when the diff is absolute (Diff.PerSecond); MeanNS and MaxNS describe single
// waits and are never scaled. All are zero on the side a row is missing from.
type DiffValues struct {
	Count   float64
	TotalNS float64
	MeanNS  float64
	MaxNS   uint64
	Records int      // capture records merged into the row
	Stack   []string // the stack of the heaviest of those records
}

// DiffRow is one row of the comparison: the waits at one call site on one kind of lock.
type DiffRow struct {
	Status DiffStatus
	Type   string
	Name   string // the lock's name ("mmap_lock", "jiffies_lock", "&kmalloc-2k (super_block.s_vfs_rename_mutex)", see GroupRows); "" merges all unnamed locks of the type
	Caller string // the caller's Frame.Func ("vm_mmap_pgoff", "xfs_ilock [xfs]"), a raw address or hashed id as captured, or "" when unknown
	Comm   string // thread name with DiffOptions.ByThread, else ""
	Cgroup string // the cgroup's path (CgroupName where unknown) in Diff.Cgroups, and in Diff.Rows with DiffOptions.ByCgroup; else ""

	Before, After DiffValues
}

// DeltaNS is the change in total wait, after minus before.
func (r DiffRow) DeltaNS() float64 { return r.After.TotalNS - r.Before.TotalNS }

// TypeDiff compares the waits on one lock type, from the captures' histograms, which also give the
// percentiles that rows cannot have: a record keeps only count, total, min and max.
type TypeDiff struct {
	Type          string
	Status        DiffStatus
	Before, After DiffValues // Records and Stack stay empty
	BeforeDist    Stats      // the distribution of single waits, not scaled
	AfterDist     Stats
}

// DeltaNS is the change in total wait, after minus before.
func (t TypeDiff) DeltaNS() float64 { return t.After.TotalNS - t.Before.TotalNS }

// Diff is the comparison of two captures made by Compare.
type Diff struct {
	Options   DiffOptions
	PerSecond bool        // Count and TotalNS are per second of capture; false with Absolute or when a capture has no duration
	Rows      []DiffRow   // by lock type, caller function and lock name (DiffOptions.ByThread: and thread name); by absolute change in total wait, largest first
	Callers   []DiffRow   // by lock type and caller function, all locks merged (Name empty); in the same order
	Locks     []DiffRow   // by lock type and lock name, all callers merged (Caller empty); in the same order
	Cgroups   []DiffRow   // by lock type and cgroup path, all locks and callers merged; in the same order
	Types     []TypeDiff  // by absolute change in total wait, largest first
	Owners    []OwnerDiff // the lock owners waits were charged to (see OwnerDiff), by absolute change in wait charged; empty unless OwnersCompared
	Captures  [2]*Capture // before and after, as compared: BeforeSide and AfterSide index them

	totals   [2]Totals // of each, unscaled
	warnings []string
}

// The sides of a diff, as indexes of Diff.Captures.
const (
	BeforeSide = 0
	AfterSide  = 1
)

// DiffSide is one capture of a diff as an analysis of it holds it: its totals, its records grouped
// as a diff matches them, its lock types' figures and its owners grouped, each computed once by the
// analysis however many diffs and pages ask for them (report's model, one per capture). Compare takes
// the captures themselves, and computes them as it asks.
type DiffSide interface {
	Capture() *Capture
	Totals() Totals
	// HasLockFields reports whether one of the capture's records names its lock's struct field.
	HasLockFields() bool
	// RowGroups are GroupRows of the capture.
	RowGroups(fields Fields, byField bool) RowGroups
	// TypeStats are TypeStatsOf the capture's histograms.
	TypeStats() []TypeStats
	// OwnerGroups are GroupOwners of the capture.
	OwnerGroups() OwnerGroups
}

// captureSide is a capture as a side of a diff that nothing else analyses.
type captureSide struct{ c *Capture }

func (s captureSide) Capture() *Capture        { return s.c }
func (s captureSide) Totals() Totals           { return s.c.Totals() }
func (s captureSide) HasLockFields() bool      { return HasLockFields(s.c) }
func (s captureSide) TypeStats() []TypeStats   { return TypeStatsOf(s.c.Histograms) }
func (s captureSide) OwnerGroups() OwnerGroups { return GroupOwners(s.c) }
func (s captureSide) RowGroups(fields Fields, byField bool) RowGroups {
	return GroupRows(s.c, fields, byField)
}

// Compare matches the rows of two captures and compares them; see Diff. It reads the captures and
// keeps them (a page of the diff draws from them too) but does not modify them.
func Compare(b, a *Capture, o DiffOptions) *Diff {
	return CompareSides(captureSide{b}, captureSide{a}, o)
}

// CompareSides is Compare of the captures of two analyses, from the totals and groups each holds.
func CompareSides(b, a DiffSide, o DiffOptions) *Diff {
	sides := [2]DiffSide{b, a}
	d := &Diff{Options: o, Captures: [2]*Capture{b.Capture(), a.Capture()}}
	d.PerSecond = !o.Absolute && d.Captures[BeforeSide].Meta.DurationNS > 0 && d.Captures[AfterSide].Meta.DurationNS > 0
	d.warnings = mismatches(d.Captures[BeforeSide].Meta, d.Captures[AfterSide].Meta, o.Absolute)

	for side, s := range sides {
		d.totals[side] = s.Totals()
		if d.totals[side].Saturated {
			d.warnings = append(d.warnings, fmt.Sprintf("the %s capture's waits add up to more than a 64-bit number holds: it is corrupt, and its sums show as that maximum, %d", []string{"before", "after"}[side], uint64(math.MaxUint64)))
		}
	}
	d.Rows = d.compareBy(sides, rowFields(o))
	d.Callers = d.compareBy(sides, FieldType|FieldCaller)
	d.Locks = d.compareBy(sides, FieldType|FieldName)
	d.Cgroups = d.compareBy(sides, FieldType|FieldCgroup)
	d.Types = d.compareTypes(sides)
	d.Owners = d.compareOwners(sides)
	return d
}

// compareBy matches the groups of both captures that agree in fields (of FieldType, FieldName,
// FieldCaller, FieldComm and FieldCgroup), and sorts the rows by absolute change.
func (d *Diff) compareBy(sides [2]DiffSide, fields Fields) []DiffRow {
	var groups [2]RowGroups
	byField := sides[BeforeSide].HasLockFields() && sides[AfterSide].HasLockFields()
	for side, s := range sides {
		groups[side] = s.RowGroups(fields, byField)
	}
	rows := []DiffRow{}
	matched := make(map[string]int) // key -> index into rows, for the before rows that can match
	for _, g := range groups[BeforeSide].groups {
		k := groups[BeforeSide].keys[g.Key]
		if k.matchable {
			matched[g.Key] = len(rows)
		}
		rows = append(rows, DiffRow{Status: Gone, Type: k.typ, Name: k.name, Caller: k.caller, Comm: k.comm, Cgroup: k.cgroup, Before: d.values(g, BeforeSide)})
	}
	for _, g := range groups[AfterSide].groups {
		k := groups[AfterSide].keys[g.Key]
		if i, ok := matched[g.Key]; ok && k.matchable {
			rows[i].Status = Matched
			rows[i].After = d.values(g, AfterSide)
			continue
		}
		rows = append(rows, DiffRow{Status: New, Type: k.typ, Name: k.name, Caller: k.caller, Comm: k.comm, Cgroup: k.cgroup, After: d.values(g, AfterSide)})
	}
	slices.SortFunc(rows, func(x, y DiffRow) int {
		return cmp.Or(
			byChange(x.DeltaNS(), y.DeltaNS(), max(x.Before.TotalNS, x.After.TotalNS), max(y.Before.TotalNS, y.After.TotalNS)),
			strings.Compare(x.Type, y.Type), strings.Compare(x.Name, y.Name),
			strings.Compare(x.Caller, y.Caller), strings.Compare(x.Comm, y.Comm), strings.Compare(x.Cgroup, y.Cgroup),
			cmp.Compare(x.Status, y.Status),
		)
	})
	return rows
}

// rowFields are the fields the rows of Diff.Rows are matched by.
func rowFields(o DiffOptions) Fields {
	f := FieldType | FieldName | FieldCaller
	if o.ByThread {
		f |= FieldComm
	}
	if o.ByCgroup {
		f |= FieldCgroup
	}
	return f
}

// byChange orders by absolute change descending, then by the larger side descending, so rows that
// did not change are listed by weight.
func byChange(dx, dy, sizeX, sizeY float64) int {
	return cmp.Or(cmp.Compare(math.Abs(dy), math.Abs(dx)), cmp.Compare(sizeY, sizeX))
}

// rowKey is what a row is matched by.
type rowKey struct {
	typ, name, caller, comm, cgroup string
	matchable                       bool // false for a caller that is a raw address or hashed id, or a cgroup without a path
}

// RowGroups are the records of a capture merged into the rows of a diff: GroupBy's groups and, for
// each group key, the fields the key stands for.
type RowGroups struct {
	groups []Group
	keys   map[string]rowKey
}

// GroupRows merges the records of c that agree in fields into the rows of a diff.
//
// A raw address or a hashed id as caller (a frame kallsyms could not name, e.g. in a module, or
// with kernel.kptr_restrict) still merges with the same address within one capture, but never
// matches across captures, even when the value is the same: module addresses move with every load,
// and hashed ids change with every report's key. Such rows are always new or gone. An empty caller
// (no stack, or --stack-depth 0) is "unknown" and matches the unknown caller of the other capture.
//
// With byField, a slab lock's name has its struct field ("&kmalloc-2k (super_block.s_vfs_rename_mutex)"):
// the locks of one cache are told apart by field, and a field matches the same field across boots
// and kernels, where its offset and address do not. Without it (a capture from before fields) such a
// lock is its cache's, as the capture without fields can only say.
func GroupRows(c *Capture, fields Fields, byField bool) RowGroups {
	keys := make(map[string]rowKey)
	key := func(r Record) string {
		k := rowKey{typ: r.Type, matchable: true}
		if fields.Has(FieldName) {
			k.name = r.Name
			if byField && r.Field != "" {
				k.name = r.Name + " (" + r.Field + ")"
			}
		}
		if fields.Has(FieldCaller) {
			k.caller, k.matchable = matchFunc(r.Caller)
		}
		if fields.Has(FieldComm) {
			k.comm = r.Comm
		}
		if fields.Has(FieldCgroup) {
			// Ids change with every boot, paths survive; a cgroup whose path is unknown
			// merges by its id within one capture and matches nothing.
			k.cgroup = CgroupName(r.CgroupID, r.Cgroup)
			k.matchable = k.matchable && (r.Cgroup != "" || r.CgroupID == 0)
		}
		// Quoting makes the key unambiguous whatever the names hold.
		s := k.typ + " " + strconv.Quote(k.name) + " " + strconv.Quote(k.caller) + " " + strconv.Quote(k.comm) + " " + strconv.Quote(k.cgroup)
		keys[s] = k
		return s
	}
	// A record without waits (one that only times holds) has nothing to compare.
	withWaits := make([]Record, 0, len(c.Records))
	for _, r := range c.Records {
		if r.Count > 0 {
			withWaits = append(withWaits, r)
		}
	}
	return RowGroups{GroupBy(withWaits, key), keys}
}

// HasLockFields reports whether a capture names the struct fields of its slab locks: one of its
// records has a field.
func HasLockFields(c *Capture) bool {
	return slices.ContainsFunc(c.Records, func(r Record) bool { return r.Field != "" })
}

// matchFunc returns what a caller or owner frame is matched by, Frame.Func: "vm_mmap_pgoff+0xe0" ->
// "vm_mmap_pgoff", "xfs_ilock+0x4c [xfs]" -> "xfs_ilock [xfs]", so that a module rebuilt between the
// captures still matches. A raw address ("0xffffffffc0a81234") or a hashed id ("000000001a2b3c4d") is
// returned as it is, with matchable false.
func matchFunc(frame string) (fn string, matchable bool) {
	f := ParseFrame(frame)
	return f.Func(), !f.Unsymbolized()
}

// Rate scales a count or a total of one side to the diff's basis: per second of capture, or as is.
func (d *Diff) Rate(v uint64, side int) float64 {
	if !d.PerSecond {
		return float64(v)
	}
	return float64(v) * 1e9 / float64(d.Captures[side].Meta.DurationNS)
}

func (d *Diff) values(g Group, side int) DiffValues {
	return DiffValues{
		Count: d.Rate(g.Count, side), TotalNS: d.Rate(g.TotalNS, side), MeanNS: g.MeanNS(), MaxNS: g.MaxNS,
		Records: g.Records, Stack: g.Stack,
	}
}

// TypeStats are the figures of one lock type's waits, from its histogram.
type TypeStats struct {
	Type string
	Stats
}

// TypeStatsOf are the figures of the lock types of hists that had waits, in their order.
func TypeStatsOf(hists []Histogram) []TypeStats {
	var types []TypeStats
	for _, h := range hists {
		if h.Count > 0 {
			types = append(types, TypeStats{h.Type, h.Stats()})
		}
	}
	return types
}

// compareTypes compares the lock types that had waits in either capture.
func (d *Diff) compareTypes(sides [2]DiffSide) []TypeDiff {
	var types []TypeDiff
	index := make(map[string]int)
	for side, sd := range sides {
		for _, t := range sd.TypeStats() {
			i, ok := index[t.Type]
			if !ok {
				i = len(types)
				index[t.Type] = i
				types = append(types, TypeDiff{Type: t.Type, Status: New})
				if side == BeforeSide {
					types[i].Status = Gone
				}
			} else {
				types[i].Status = Matched
			}
			v := DiffValues{Count: d.Rate(t.Count, side), TotalNS: d.Rate(t.TotalNS, side), MeanNS: t.MeanNS, MaxNS: t.MaxNS}
			if side == BeforeSide {
				types[i].Before, types[i].BeforeDist = v, t.Stats
			} else {
				types[i].After, types[i].AfterDist = v, t.Stats
			}
		}
	}
	slices.SortFunc(types, func(x, y TypeDiff) int {
		return cmp.Or(
			byChange(x.DeltaNS(), y.DeltaNS(), max(x.Before.TotalNS, x.After.TotalNS), max(y.Before.TotalNS, y.After.TotalNS)),
			strings.Compare(x.Type, y.Type),
		)
	})
	return types
}

// TotalWaitChange returns the total wait of all records before and after, per second of capture
// unless the diff is absolute, and the change in percent: +Inf when before is 0 and after is not, 0
// when both are 0.
func (d *Diff) TotalWaitChange() (before, after float64, pct float64) {
	before, after = d.Rate(d.totals[BeforeSide].TotalNS, BeforeSide), d.Rate(d.totals[AfterSide].TotalNS, AfterSide)
	return before, after, ChangePct(before, after)
}

// ChangePct is the change from b to a in percent. It multiplies before it divides, so that a change
// of exactly p percent between numbers a float64 holds exactly comes out as exactly p.
func ChangePct(b, a float64) float64 {
	switch {
	case b == 0 && a == 0:
		return 0
	case b == 0:
		return math.Inf(1)
	}
	return (a - b) * 100 / b
}

// Warnings say how the two captures differ in ways that change what their numbers mean, so that
// comparing them may mislead: probe backend, stack depth, lock types, kernel, filters, lost events.
func (d *Diff) Warnings() []string { return slices.Clone(d.warnings) }

// FailOver reports the rows that grew most when total wait grew by more than pct percent; ok=true when within bounds.
// A growth of exactly pct percent is within bounds. The rows are those whose total wait grew, the
// largest growth first, at most Options.Top of them (all when Top <= 0).
func (d *Diff) FailOver(pct float64) (ok bool, grew []DiffRow) {
	if _, _, change := d.TotalWaitChange(); change <= pct {
		return true, nil
	}
	for _, r := range d.Rows {
		if r.DeltaNS() > 0 {
			grew = append(grew, r)
		}
	}
	// Rows are sorted by absolute change: the growing ones keep their order among themselves.
	if d.Options.Top > 0 && len(grew) > d.Options.Top {
		grew = grew[:d.Options.Top]
	}
	return false, grew
}

// mismatches are the differences between two captures' settings and circumstances that change what
// comparing their numbers means.
func mismatches(b, a Meta, absolute bool) []string {
	var w []string
	if b.Kernel != a.Kernel || b.Arch != a.Arch {
		w = append(w, fmt.Sprintf("the kernels differ (before %s, after %s): rows are matched by function name, but inlining, lock code and what a caller does may differ",
			cmp.Or(strings.TrimSpace(b.Kernel+" "+b.Arch), "unknown"), cmp.Or(strings.TrimSpace(a.Kernel+" "+a.Arch), "unknown")))
	}
	if b.Probe != a.Probe {
		w = append(w, fmt.Sprintf("the probe backends differ (before %s, after %s): they measure differently (what the probes cost, which lengthens what they time; function probes time whole acquires above a threshold, tracepoints time waits)",
			cmp.Or(b.Probe, "unknown"), cmp.Or(a.Probe, "unknown")))
	}
	if b.StackDepth != a.StackDepth {
		w = append(w, fmt.Sprintf("the stack depths differ (before %d, after %d frames): callers beyond the shallower depth are unknown there, so rows may not match",
			b.StackDepth, a.StackDepth))
	}
	if onlyB, onlyA := setDifference(b.Types, a.Types), setDifference(a.Types, b.Types); len(onlyB) > 0 || len(onlyA) > 0 {
		w = append(w, fmt.Sprintf("the captured lock types differ (only before: %s; only after: %s): the totals cover different locks, and those types show as gone or new",
			cmp.Or(strings.Join(onlyB, ", "), "none"), cmp.Or(strings.Join(onlyA, ", "), "none")))
	}
	if b.Comm != a.Comm || (len(b.PIDs) == 0) != (len(a.PIDs) == 0) {
		w = append(w, fmt.Sprintf("the process filters differ (before %s, after %s): the captures watched different processes",
			filterText(b), filterText(a)))
	}
	if b.KallsymsRestricted != a.KallsymsRestricted {
		w = append(w, "one capture has raw addresses for callers (kernel.kptr_restrict hid /proc/kallsyms): those rows cannot match and show as new or gone")
	}
	for _, s := range []struct {
		name string
		m    Meta
	}{{"before", b}, {"after", a}} {
		if lost := s.m.LostTotal(); lost > 0 {
			events := "events"
			if lost == 1 {
				events = "event"
			}
			w = append(w, fmt.Sprintf("the %s capture lost %d %s: its numbers undercount", s.name, lost, events))
		}
		if !absolute && s.m.DurationNS <= 0 {
			w = append(w, fmt.Sprintf("the %s capture has no duration: comparing raw totals, not per second", s.name))
		}
	}
	return w
}

// setDifference returns the elements of a not in b, sorted.
func setDifference(a, b []string) []string {
	var only []string
	for _, s := range a {
		if !slices.Contains(b, s) && !slices.Contains(only, s) {
			only = append(only, s)
		}
	}
	slices.Sort(only)
	return only
}

func filterText(m Meta) string {
	var f []string
	if len(m.PIDs) > 0 {
		pids := make([]string, len(m.PIDs))
		for i, pid := range m.PIDs {
			pids[i] = strconv.FormatUint(uint64(pid), 10)
		}
		f = append(f, "PIDs "+strings.Join(pids, ","))
	}
	if m.Comm != "" {
		f = append(f, "comm "+m.Comm)
	}
	return cmp.Or(strings.Join(f, ", "), "none")
}
