package report

import (
	"slices"

	"github.com/klockstat/klockstat/capture"
)

// ownerView is the "Blocked by" table: the lock owners ranked by the wait charged to them (capture
// order, capture.SortOwners), with the wait split by the owner's state when each wait began. Its
// lock ids are those of the other views, so the filter box finds an owner's waiters by them.
func ownerView(owners []capture.Owner, tab *strtab) view {
	n := len(owners)
	names, types, locks, lockTitles := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	stacks, notes := make([]int32, n), make([]int32, n)
	pids, tids, counts, totals := make([]uint64, n), make([]uint64, n), make([]uint64, n), make([]uint64, n)
	states := make([][]uint64, len(capture.OwnerStates))
	for i := range states {
		states[i] = make([]uint64, n)
	}
	for i, o := range owners {
		names[i] = tab.str(ownerText(o))
		types[i] = tab.str(o.Type)
		locks[i], lockTitles[i] = lockTexts(tab, o.Name, o.Lock)
		pids[i], tids[i], counts[i], totals[i] = uint64(o.PID), uint64(o.TID), o.Count, o.TotalNS
		stacks[i], notes[i] = -1, tab.str(o.StackReason)
		if len(o.Stack) > 0 {
			stacks[i] = tab.stack(o.Stack)
		}
		for _, s := range o.States {
			if k := slices.Index(capture.OwnerStates, s.State); k >= 0 {
				states[k][i] = s.TotalNS
			}
		}
	}
	lock := textColumn("lock", "Lock", "mono", locks)
	lock.titles = lockTitles
	pid, tid := intColumn("pid", "PID", pids), intColumn("tid", "TID", tids)
	pid.Search, tid.Search = true, true
	cols := []column{textColumn("owner", "Owner", "", names), pid, tid, textColumn("type", "Type", "", types), lock,
		sum(intColumn("count", "Waits", counts)), sum(nsColumn("total", "Wait charged", totals))}
	labels := map[string]string{
		capture.OwnerOnCPU: "On CPU", capture.OwnerRunnable: "Runnable", capture.OwnerSleeping: "Sleeping",
		capture.OwnerDiskSleep: "Uninterruptible (D)", capture.OwnerOther: "Other",
	}
	for k, state := range capture.OwnerStates {
		c := sum(nsColumn(state, labels[state], states[k]))
		c.Group = "Owner's state as the wait began"
		cols = append(cols, c)
	}
	cols = append(cols, column{Key: "stack", Label: "Owner's stack", Kind: kindStack, text: stacks},
		textColumn("stack_reason", "Why no stack", "", notes))
	return view{ID: "owners", Title: "Blocked by", Caption: "the lock owners, by the wait charged to them: each wait to the owner found when it began, " +
		"and to the owner's kernel stack as it first left its CPU holding the lock",
		Rows: n, SortKey: "total", Columns: cols}
}

// hashedOwners is owners with their locks and frames hashed as tab hashes the rest of the page.
func hashedOwners(owners []capture.Owner, tab *strtab) []capture.Owner {
	if tab.hasher == nil {
		return owners
	}
	out := slices.Clone(owners)
	for i := range out {
		out[i].Lock = tab.hasher.ID(out[i].Lock)
		out[i].Stack = slices.Clone(out[i].Stack)
		for j, f := range out[i].Stack {
			out[i].Stack[j] = tab.hasher.Frame(f)
		}
	}
	return out
}
