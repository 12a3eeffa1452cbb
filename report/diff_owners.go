package report

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// The lock owners of a diff (capture.Diff.Owners): a section of the terminal diff and a "Blocked by"
// table of the diff page, each owner with the wait charged to it before and after and the owner's
// states as shares of that wait.

// ownersNotCompared says in one line why a diff compares no owners when one capture has them and the
// other does not; "" when both have owners, or neither (the default: nothing to say).
func ownersNotCompared(d *capture.Diff) string {
	missing := d.OwnersMissing()
	if missing[capture.BeforeSide] == missing[capture.AfterSide] {
		return ""
	}
	side := "after"
	if missing[capture.BeforeSide] {
		side = "before"
	}
	return fmt.Sprintf("Lock owners not compared: the %s capture has none (taken without --owners).", side)
}

// ownersMatchedBy completes "owners matched by".
const ownersMatchedBy = "lock type, lock name, owner thread name, what it did over the wait and owner stack (functions), or why the owner is unknown"

// writeOwnerDiff writes the owners section of the terminal diff: at most top owners (all when top <=
// 0) by absolute change in wait charged, or the line saying why owners are not compared.
func writeOwnerDiff(b *bytes.Buffer, d *capture.Diff, top int) {
	if note := ownersNotCompared(d); note != "" {
		fmt.Fprintf(b, "\n%s\n", note)
		return
	}
	if !d.OwnersCompared() {
		return
	}
	fmt.Fprintf(b, "\nblocked by: the lock owners waits were charged to%s\n", basisSuffix(d))
	shown := d.Owners
	if top > 0 && len(shown) > top {
		shown = shown[:top]
	}
	unit := ""
	if d.PerSecond {
		unit = "/s"
	}
	rows := [][]string{{"before" + unit, "after" + unit, "delta", "change", "owner state (% of wait)", "holder was", "type", "lock", "owner", "owner stack"}}
	for _, o := range shown {
		stack := o.After.Stack
		if o.Status == capture.Gone {
			stack = o.Before.Stack
		}
		rows = append(rows, []string{
			FormatDuration(o.Before.TotalNS), FormatDuration(o.After.TotalNS), formatDelta(o.DeltaNS()), statusChange(o.Status, o.Before.TotalNS, o.After.TotalNS),
			ownerStatesChange(o), cmp.Or(capture.HolderWords[o.HolderState], "-"), sanitize(o.Type), sanitize(cmp.Or(o.Name, "-")), sanitize(ownerDiffText(o)),
			ownerStackText(stack, o.StackReason, ownerDiffStates(o)),
		})
	}
	writeColumns(b, rows)
	if omitted := len(d.Owners) - len(shown); omitted > 0 {
		fmt.Fprintf(b, "... %d more %s not shown\n", omitted, plural(omitted, "owner", "owners"))
	}
	ownerStatus := func(o capture.OwnerDiff) capture.DiffStatus { return o.Status }
	fmt.Fprintf(b, "%s, matched by %s\n", matchCounts(d.Owners, ownerStatus, "owner", "owners"), ownersMatchedBy)
}

// ownerDiffText names an owner of a diff: its thread name, or why it is unknown.
func ownerDiffText(o capture.OwnerDiff) string {
	if o.Reason != "" {
		return "unknown: " + o.Reason
	}
	if o.Blocker != "" {
		return o.Blocker + " " + o.Comm
	}
	return o.Comm
}

// ownerStatesChange shows an owner's states as shares of the wait charged to it, before and after,
// the largest first: "disk_sleep 75->40%, on_cpu 25->60%"; one side's for an owner new or gone; "-"
// for an unknown owner.
func ownerStatesChange(o capture.OwnerDiff) string {
	type share struct {
		state         string
		before, after float64
	}
	var shares []share
	for _, state := range capture.OwnerStates {
		s := share{state, 100 * o.Before.Share(state), 100 * o.After.Share(state)}
		if zeroIfMissing(s.before) > 0 || zeroIfMissing(s.after) > 0 {
			shares = append(shares, s)
		}
	}
	if len(shares) == 0 {
		return "-"
	}
	slices.SortStableFunc(shares, func(x, y share) int {
		return cmp.Compare(max(zeroIfMissing(y.before), zeroIfMissing(y.after)), max(zeroIfMissing(x.before), zeroIfMissing(x.after)))
	})
	parts := make([]string, len(shares))
	for i, s := range shares {
		switch {
		case math.IsNaN(s.before):
			parts[i] = fmt.Sprintf("%s %.0f%%", s.state, s.after)
		case math.IsNaN(s.after):
			parts[i] = fmt.Sprintf("%s %.0f%%", s.state, s.before)
		default:
			parts[i] = fmt.Sprintf("%s %.0f->%.0f%%", s.state, s.before, s.after)
		}
	}
	return strings.Join(parts, ", ")
}

// ownerDiffTables is the diff page's "Blocked by" section.
func ownerDiffTables(d *capture.Diff, top int, per string, tab *strtab) tables {
	return tables{
		ID: "diff-owners", Title: "Blocked by", PageSize: top, Placeholder: "Filter: status, type, lock, owner, frame…",
		Note: "The lock owners waits were charged to, matched by " + ownersMatchedBy + ": thread ids and lock addresses change with every run. " +
			"Sorted by absolute change in wait charged; the owner's states are shares of the wait charged to it, in percent.",
		Views: []view{ownerDiffView(d, per, tab)},
	}
}

// ownerDiffView is the table of the owners of a diff: wait and waits charged before and after, and
// for each state an owner was found in, its share of the wait charged before and after, and the
// change in points.
func ownerDiffView(d *capture.Diff, per string, tab *strtab) view {
	n := len(d.Owners)
	statuses, types, locks, lockTitles, owners, stacks, notes := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	holders := make([]int32, n)
	total, count := newCompared(n, true), newCompared(n, true)
	shares := make([]*comparedValues, len(capture.OwnerStates))
	for k := range shares {
		shares[k] = newCompared(n, false)
	}
	for i, o := range d.Owners {
		present := [2]bool{o.Status != capture.New, o.Status != capture.Gone}
		statuses[i], types[i], owners[i], notes[i] = tab.str(o.Status.String()), tab.str(o.Type), tab.str(ownerDiffText(o)), tab.str(stackReasonText(o.StackReason, ownerDiffStates(o)))
		locks[i], lockTitles[i] = lockNameTexts(tab, o.Name)
		holders[i] = tab.str(capture.HolderWords[o.HolderState])
		stack := o.After.Stack
		if o.Status == capture.Gone {
			stack = o.Before.Stack
		}
		stacks[i] = -1
		if len(stack) > 0 {
			stacks[i] = tab.stack(stack)
		}
		total.set(i, o.Before.TotalNS, o.After.TotalNS, present)
		count.set(i, o.Before.Count, o.After.Count, present)
		for k, state := range capture.OwnerStates {
			shares[k].set(i, 100*o.Before.Share(state), 100*o.After.Share(state), present)
		}
	}
	lock := textColumn("lock", "Lock", "mono", locks)
	lock.titles = lockTitles
	// The owner's stack, or why there is none, before the numbers: a screen 1400 pixels wide shows
	// what tells the rows apart.
	cols := []column{statusColumn(statuses), textColumn("type", "Type", "", types), lock, textColumn("owner", "Owner", "", owners),
		holderColumn(holders), stackColumn("Owner's heaviest stack", "owner-stack", stacks), textColumn("stack_reason", "Why no stack", "prose", notes)}
	charged := total.columns("total", "Wait charged"+per, kindMeanNS, "ns", 0)
	charged[0].Term = "charged"
	cols = append(cols, charged...)
	// The states' shares next to the wait they divide, before the number of waits.
	for k, state := range capture.OwnerStates {
		if !slices.ContainsFunc(shares[k].before, positive) && !slices.ContainsFunc(shares[k].after, positive) {
			continue // no owner was found in this state: three columns of zeros and dashes
		}
		// A ratio of shares says less than their difference in points: before, after and change only,
		// uncoloured, as a share that grows is no worse than one that shrinks.
		stateCols := shares[k].columns(state, ownerStateLabels[state]+", % of wait", kindNum, "points", 1)[:3]
		stateCols[0].Term = "owner-state"
		cols = append(cols, stateCols...)
	}
	cols = append(cols, count.columns("count", "Waits charged"+per, kindNum, "num", countDecimals(d))...)
	return view{ID: "owner-changes", Title: "Blocked by", Caption: "one row per lock type, lock name, owner thread name and owner stack, or reason the owner is unknown", Rows: n, Columns: cols}
}

func positive(v float64) bool { return v > 0 }

// ownerDiffStates are the states an owner of a diff was in as waits charged to it began, on either side.
func ownerDiffStates(o capture.OwnerDiff) []string {
	var states []string
	for _, state := range capture.OwnerStates {
		if zeroIfMissing(o.Before.Share(state)) > 0 || zeroIfMissing(o.After.Share(state)) > 0 {
			states = append(states, state)
		}
	}
	return states
}
