package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// ownerView is the "Blocked by" table: the lock owners ranked by the wait charged to them (capture
// order, capture.SortOwners), with the wait split by the owner's state when each wait began. An owner
// has a row per stack it was seen at: sampled on its CPU in its critical section (at sampleHz), or
// as it left its CPU holding the lock, preempted or blocked; each with what the owner did over its
// share of the waits (capture.Owner.HolderState: preempted rows stand out in a colour of their own),
// its share of the owner's wait, and the owner's wait chains, the threads it waited for in turn. Its lock ids are those of the other views, so the
// filter box finds an owner's waiters by them, and its column "Waiters" leads to their records
// (links).
func ownerView(owners []capture.Owner, waits []uint64, chains []capture.OwnerChain, sampleHz int, tab *strtab, links *ownerLinks) view {
	n := len(owners)
	names, types, locks, lockTitles := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	stacks, notes, wheres, chained, holders := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	pids, tids, counts, totals, samples := make([]uint64, n), make([]uint64, n), make([]uint64, n), make([]uint64, n), make([]uint64, n)
	shares := make([]float64, n)
	states := make([][]uint64, len(capture.OwnerStates))
	for i := range states {
		states[i] = make([]uint64, n)
	}
	ownerNS := map[string]uint64{}
	for _, t := range capture.OwnerTotals(owners) {
		ownerNS[t.Key()] = t.TotalNS
	}
	chainTexts := ownerChainTexts(chains, ownerNS, tab)
	none := tab.str("")
	for i, o := range owners {
		names[i] = tab.str(ownerText(o))
		types[i] = tab.str(o.Type)
		locks[i], lockTitles[i] = lockTexts(tab, o.Name, o.Lock)
		pids[i], tids[i], counts[i], totals[i], samples[i] = uint64(o.PID), uint64(o.TID), waits[i], o.TotalNS, o.Samples
		stacks[i], notes[i], wheres[i], chained[i], holders[i] = -1, tab.str(stackReasonText(o.StackReason, ownerStatesOf(o))), none, none, none
		if o.HolderState == capture.HolderOnCPU && o.StackReason == capture.OwnerStackRan {
			// Its share went by while it ran: the states as the waits began say nothing of it.
			notes[i] = tab.str("the owner ran on its CPU over this share, and was not sampled there (a critical section shorter than the sampling period, or sampling off)")
		}
		if h, ok := capture.HolderWords[o.HolderState]; ok {
			holders[i] = tab.str(h)
		}
		if len(o.Stack) > 0 {
			stacks[i] = tab.stack(o.Stack)
		}
		if w, ok := ownerWhereLabels[o.Where]; ok {
			wheres[i] = tab.str(w)
		}
		if text, ok := chainTexts[o.Key()]; ok {
			chained[i] = tab.str(text)
		}
		if total := ownerNS[o.Key()]; total > 0 {
			shares[i] = 100 * float64(o.TotalNS) / float64(total)
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
	charged := sum(nsColumn("total", "Wait charged", totals))
	charged.Term = "charged"
	share := column{Key: "share", Label: "Share of the owner's wait (%)", Kind: kindNum, Decimals: 1, Term: "owner-stack", floats: shares}
	where := textColumn("where", "Where", "", wheres)
	where.Term = "owner-stack"
	sampled := sum(intColumn("samples", "Samples", samples))
	sampled.Term = "owner-stack"
	chain := textColumn("chain", "Blocked in turn by", "prose", chained)
	chain.Term = "owner-chain"
	// A status column: each value its own colour (page.css, td.status-*).
	holder := holderColumn(holders)
	// The owner's stack, or why there is none, before the states: a screen 1400 pixels wide shows
	// them without scrolling.
	cols := []column{textColumn("owner", "Owner", "", names), textColumn("type", "Type", "", types), lock,
		links.toWaiters(owners), sum(intColumn("count", "Waits", counts)), charged,
		stackColumn("Owner's stack", "owner-stack", stacks), textColumn("stack_reason", "Why no stack", "prose", notes), holder, where, share, sampled, chain}
	for k, state := range capture.OwnerStates {
		c := sum(nsColumn(state, ownerStateLabels[state], states[k]))
		c.Group, c.Term = "Owner's state as the wait began", "owner-state"
		cols = append(cols, c)
	}
	cols = append(cols, pid, tid)
	sampling := "not sampled on its CPU"
	if sampleHz > 0 {
		sampling = fmt.Sprintf("sampled on its CPU at %d Hz while others waited", sampleHz)
	}
	return view{ID: "owners", Title: "Blocked by", Caption: "the lock owners, by the wait charged to them: each wait to the owner found when it began, " +
		"and to the owner's kernel stacks in its critical section, " + sampling + ", or as it left its CPU holding the lock, " +
		"split by what the owner did over the wait: on its CPU, preempted (runnable, not running) or off its CPU",
		Rows: n, SortKey: "total", Columns: cols}
}

// ownRowWaits are the waits of each owner's row: its own Count, but for the stacks an owner was
// sampled at, which each carry all the waits their wait was spread from
// (capture.SpreadOwnerSamples), those waits shared out by the samples, the remainder to the most
// sampled, so that an owner's rows add up to its waits instead of repeating them.
func ownRowWaits(owners []capture.Owner) []uint64 {
	waits := make([]uint64, len(owners))
	sampled := map[string][]int{} // an owner's sampled rows, by its key
	for i, o := range owners {
		waits[i] = o.Count
		if o.Where == capture.OwnerStackOnCPU && o.Samples > 0 {
			sampled[o.Key()] = append(sampled[o.Key()], i)
		}
	}
	for _, rows := range sampled {
		var n, count, given uint64
		top := rows[0]
		for _, i := range rows {
			n += owners[i].Samples
			count = max(count, owners[i].Count)
			if owners[i].Samples > owners[top].Samples {
				top = i
			}
		}
		for _, i := range rows {
			waits[i] = count * owners[i].Samples / n
			given += waits[i]
		}
		waits[top] += count - given
	}
	return waits
}

// ownerWhereLabels say where an owner's stack was seen (capture.Owner.Where).
var ownerWhereLabels = map[string]string{
	capture.OwnerStackOnCPU:     "on CPU (sampled)",
	capture.OwnerStackOffCPU:    "off CPU (left it)",
	capture.BlockerStackAcquire: "taking the lock (its path to it)",
	capture.BlockerStackWake:    "waking the waiter (releasing the lock)",
}

// holderColumn is the column of what owners did over their share of the waits (capture.HolderWords), its
// preempted rows in a colour of their own: in Blocked by and in the diff's.
func holderColumn(holders []int32) column {
	return column{Key: "holder", Label: "Holder was", Kind: kindStatus, Term: "owner-holder", text: holders}
}

// ownerChainTexts says, by owner (capture.Owner.Key), whom each owner waited for in turn while
// waits were charged to it: the end of each chain, and its share of the owner's wait (ownerNS).
func ownerChainTexts(chains []capture.OwnerChain, ownerNS map[string]uint64, tab *strtab) map[string]string {
	parts := map[string][]string{}
	for _, c := range chains {
		k := capture.Owner{Type: c.Type, Lock: c.Lock, TID: c.TID}.Key()
		text, title := lockTexts(tab, c.EndName, c.EndLock)
		lock := tab.strings[title]
		if c.EndName != "" {
			lock = tab.strings[text] + " (" + lock + ")"
		}
		s := fmt.Sprintf("%s %s held by %s (tid %d)", c.EndType, lock, cmp.Or(c.EndComm, "a thread"), c.EndTID)
		if c.Depth > 1 {
			s += fmt.Sprintf(", %d owners down", c.Depth)
		}
		if total := ownerNS[k]; total > 0 {
			s += fmt.Sprintf(": %.1f%% of its wait", 100*float64(c.TotalNS)/float64(total))
		}
		if c.Cycle {
			s = "a cycle, back to " + s
			if c.InProgress > 0 {
				s += fmt.Sprintf(", %d %s still open at the end of the capture: a deadlock?", c.InProgress, plural(int(c.InProgress), "wait", "waits"))
			}
		}
		parts[k] = append(parts[k], s)
	}
	out := map[string]string{}
	for k, p := range parts {
		out[k] = strings.Join(p, "; ")
	}
	return out
}

// lockKey is what an owner and the records of its waiters share: the lock's type and address.
type lockKey struct {
	typ  string
	lock capture.Addr
}

// ownerLinks link the rows of "Blocked by" and the rows of the waiters (the records, and the locks
// they merge into), both ways, by lock: an owner's row leads to the records of the waits on its lock,
// a record's to the owners of its lock. Each lock with owners is a key, numbered in the owners' order.
type ownerLinks struct {
	keys    map[lockKey]int32
	threads []int    // per key, the threads that waited on the lock, in the records
	owner   []int32  // per key, the name of the lock's first owner (a thread, or why it is unknown)
	owners  []int    // per key, the distinct owners
	lock    []string // per key, the lock named for a sentence: "rwsem:W mmap_lock (lock 1a2b…)"
	tab     *strtab
}

func newOwnerLinks(owners []capture.Owner, records []capture.Record, tab *strtab) *ownerLinks {
	l := &ownerLinks{keys: map[lockKey]int32{}, tab: tab}
	named := map[lockKey]map[string]bool{}
	for _, o := range owners {
		k := lockKey{o.Type, o.Lock}
		if _, ok := l.keys[k]; !ok {
			l.keys[k] = int32(len(l.lock))
			text, title := lockTexts(tab, o.Name, o.Lock)
			name := o.Type + " " + tab.strings[title]
			if o.Name != "" {
				name = o.Type + " " + tab.strings[text] + " (" + tab.strings[title] + ")"
			}
			l.lock = append(l.lock, name)
			l.threads, l.owner, l.owners = append(l.threads, 0), append(l.owner, tab.str(ownerText(o))), append(l.owners, 0)
			named[k] = map[string]bool{}
		}
		named[k][ownerText(o)] = true
	}
	for k, names := range named {
		l.owners[l.keys[k]] = len(names)
	}
	type thread struct {
		key      int32
		pid, tid uint32
	}
	seen := map[thread]bool{}
	for _, r := range records {
		k, ok := l.keys[lockKey{r.Type, r.Lock}]
		if t := (thread{k, r.PID, r.TID}); ok && !seen[t] {
			seen[t] = true
			l.threads[k]++
		}
	}
	return l
}

// toWaiters is the column of "Blocked by" that leads from each owner to the records of its lock.
func (l *ownerLinks) toWaiters(owners []capture.Owner) column {
	keys := make([]int32, len(owners))
	for i, o := range owners {
		keys[i] = l.keys[lockKey{o.Type, o.Lock}]
		if l.threads[keys[i]] == 0 {
			keys[i] = -1
		}
	}
	link := &columnLink{Target: "threads", None: [2]int32{l.tab.str("none recorded"),
		l.tab.str("no record of a wait on this lock: the waits were lost, or are still open at the end of the capture")}}
	for k, n := range l.threads {
		link.Labels = append(link.Labels, l.tab.str(fmt.Sprintf("%d %s", n, plural(n, "thread", "threads"))))
		link.Titles = append(link.Titles, l.tab.str("The waits on "+l.lock[k]))
	}
	return column{Key: "waiters", Label: "Waiters", Kind: kindLink, Link: link, Term: "owner", text: keys}
}

// toOwners is a column of the waiters' rows that leads from each to the owners of its lock: n rows,
// row i's lock being key(i).
func (l *ownerLinks) toOwners(n int, key func(i int) lockKey) column {
	keys := make([]int32, n)
	for i := range keys {
		k, ok := l.keys[key(i)]
		if !ok {
			k = -1
		}
		keys[i] = k
	}
	link := &columnLink{Target: "owners", None: [2]int32{l.tab.str("none recorded"),
		l.tab.str("no owner was charged with a wait on this lock: its waits were still open at the end of the capture, or their owners were lost")}}
	for k, name := range l.owner {
		if l.owners[k] > 1 {
			name = l.tab.str(fmt.Sprintf("%d owners", l.owners[k]))
		}
		link.Labels = append(link.Labels, name)
		link.Titles = append(link.Titles, l.tab.str("The owners of "+l.lock[k]))
	}
	return column{Key: "blocked_by", Label: "Blocked by", Kind: kindLink, Link: link, Term: "owner", text: keys}
}

// ownerStateLabels head the columns of the owner states in the report and the diff.
var ownerStateLabels = map[string]string{
	capture.OwnerOnCPU: "On CPU", capture.OwnerRunnable: "Runnable", capture.OwnerSleeping: "Sleeping",
	capture.OwnerDiskSleep: "Uninterruptible (D)", capture.OwnerOther: "Other",
}

// ownerStatesOf are the states an owner was in as waits charged to it began.
func ownerStatesOf(o capture.Owner) []string {
	var states []string
	for _, s := range o.States {
		if s.Count > 0 {
			states = append(states, s.State)
		}
	}
	return states
}

// stackReasonText says why an owner has no stack (reason, of capture.OwnerStackReasons) in words
// that agree with the states it was in as the waits began. The kernel side gives
// capture.OwnerStackRan when it never saw the owner leave a CPU holding the lock after the waits
// began, which for an owner that was runnable or asleep as they began does not mean it stayed on
// one: it had left its CPU before, and once back on one it kept it until it released the lock.
func stackReasonText(reason string, states []string) string {
	if reason != capture.OwnerStackRan {
		return reason
	}
	var off []string
	onCPU := false
	for _, s := range capture.OwnerStates {
		switch {
		case !slices.Contains(states, s):
		case s == capture.OwnerOnCPU:
			onCPU = true
		default:
			off = append(off, ownerStateLabels[s])
		}
	}
	switch {
	case len(off) == 0:
		return reason
	case onCPU:
		return fmt.Sprintf("the owner was not seen leaving a CPU holding the lock after the waits began: on its CPU as some began, already off it (%s) as others did", strings.Join(off, ", "))
	}
	return fmt.Sprintf("the owner was already off its CPU (%s) as the waits began, and once back on one kept it until it released the lock: a stack is taken only as an owner leaves a CPU", strings.Join(off, ", "))
}

// hashedChains is chains with their locks hashed as tab hashes the rest of the page.
func hashedChains(chains []capture.OwnerChain, tab *strtab) []capture.OwnerChain {
	if tab.hasher == nil {
		return chains
	}
	out := slices.Clone(chains)
	for i := range out {
		out[i].Lock, out[i].EndLock = tab.hasher.ID(out[i].Lock), tab.hasher.ID(out[i].EndLock)
	}
	return out
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
