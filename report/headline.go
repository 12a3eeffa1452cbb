package report

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/lockspec"
)

// waitTotals is what a summary's headline says of a set of waits: how long they were, how many
// threads waited, and the lock most of the time went to, at the caller most of its time came from.
type waitTotals struct {
	totalNS   uint64
	saturated bool // the sum stopped at what 64 bits hold (capture.Totals)
	threads   int  // threads that waited at least once
	topLock   string
	topCaller string
	topNS     uint64 // the top lock's share of totalNS
}

// waitTotalsOf sums the waits of records, whose groups by lock (capture.ByLock) are locks, and
// names their top lock and its top caller as m shows them. Holds without a contended acquire add
// nothing to the sums (their Count and TotalNS are 0), and no thread that waited.
func (m *model) waitTotalsOf(records []capture.Record, locks []capture.Group) waitTotals {
	threads := map[uint32]bool{}
	for i := range records {
		if records[i].Count > 0 {
			threads[records[i].TID] = true
		}
	}
	sums := capture.TotalsOf(records)
	t := waitTotals{totalNS: sums.TotalNS, saturated: sums.Saturated, threads: len(threads)}
	i := slices.IndexFunc(locks, func(g capture.Group) bool { return g.Count > 0 })
	if i < 0 {
		return t
	}
	top := locks[i]
	var onTop []capture.Record
	for _, r := range records {
		if r.Count > 0 && r.Type == top.Type && r.Lock == top.Lock { // capture.ByLock's key
			onTop = append(onTop, r)
		}
	}
	// The lock's label of its heaviest record, as the summary by lock shows it.
	t.topLock = records[top.Heaviest].LockLabel()
	// A lock without a name is told by its id, and said to have none rather than left a bare number.
	switch t.topLock {
	case "":
		t.topLock = m.lockText(top.Lock) + " (no name)"
	case capture.UnnamedStatic:
		t.topLock = m.lockText(top.Lock) + " (a static kernel object without a name)"
	}
	t.topCaller = m.callerLine(capture.GroupBy(onTop, capture.ByCaller)[0].Caller)
	t.topNS = top.TotalNS
	return t
}

// total is the waits' sum as text, ">=" before a saturated one.
func (t waitTotals) total() string {
	s := FormatDuration(float64(t.totalNS))
	if t.saturated {
		s = ">=" + s
	}
	return s
}

// topText names the top lock and its caller with the lock's share of the waits' total, which of
// names: "top lock mmap_lock at madvise_lock+0x81, 52.0% of the wait time".
func (t waitTotals) topText(of string) string {
	return fmt.Sprintf("top lock %s at %s, %s %s", sanitize(t.topLock), sanitize(t.topCaller), percentOf(t.topNS, t.totalNS), of)
}

// threadShare is the part of its threads' time the waits took: the waits over the capture's duration
// times the threads that waited. The capture records neither when a thread began or ended nor the
// threads that never waited: the share is exact for threads that lived through the capture, less
// than theirs for threads that lived shorter, and says nothing of the threads that never waited.
func (t waitTotals) threadShare(durationNS int64) float64 {
	if durationNS <= 0 || t.threads == 0 {
		return 0
	}
	return float64(t.totalNS) / (float64(durationNS) * float64(t.threads))
}

// headlineLines are the lines a summary opens with, of c's records as the summary shows them
// (filtered, addresses as ids): total wait over the capture's duration, the threads waiting on
// average (the total wait over the duration), and the top lock and caller. With a workload, the
// part of its threads' time they spent waiting (waitTotals.threadShare); a capture of the
// workload's processes only says that the waits are the command's, and one of every process
// splits the command's waits from the others' on a second line. None when nothing waited.
func headlineLines(m *model, filtered bool) []string {
	c, ms := m.c, m.ms
	all := m.waits()
	if all.threads == 0 {
		return nil
	}
	subject := ""
	if c.Meta.Scope == capture.ScopeCommand {
		subject = "the command's "
	}
	if filtered {
		subject += "waits the filters keep: "
	} else if subject != "" {
		subject += "waits: "
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%stotal %s %s", subject, ms.Time, all.total())
	if d := c.Meta.DurationNS; d > 0 {
		fmt.Fprintf(&b, " in %s, %s threads %s on average", FormatDuration(float64(d)), threadsText(float64(all.totalNS)/float64(d)), ongoing(ms))
	}
	split := m.split().ok
	switch {
	case c.Meta.Scope == capture.ScopeCommand:
		b.WriteString(threadShareText("its", all, c.Meta.DurationNS, ms))
	case split:
		b.WriteString(threadShareText("the command's", m.command(), c.Meta.DurationNS, ms))
	case len(c.Meta.Workload) > 0:
		b.WriteString(" (every process's: this capture does not tell the command's apart)")
	}
	b.WriteString("; " + all.topText("of the "+ms.Time+" time"))
	lines := []string{b.String()}
	if split {
		lines = append(lines, splitLine(m, all.totalNS))
	}
	if l := preemptedLine(c.Owners); l != "" {
		lines = append(lines, l)
	}
	if l := blockerLine(m); l != "" {
		lines = append(lines, l)
	}
	return lines
}

// blockerLine names what blocked the waits on the lock with the most wait charged to blockers
// (capture.Owner.Blocker: the threads that woke the waiters of a lock that records no owner), its
// top blocker and where: "blocked by the writer stress-ng 12/14 at locks_start, its path to the lock:
// 35% of the 28.90 s of waits on pcpu-sem:R 0000000000001234, 97% by the 12 threads that woke
// them". "" when no wait was charged to a blocker.
func blockerLine(m *model) string {
	type lockKey struct {
		typ  string
		lock capture.Addr
	}
	waits, blocked := map[lockKey]uint64{}, map[lockKey]uint64{}
	for _, o := range m.c.Owners {
		k := lockKey{o.Type, o.Lock}
		waits[k] += o.TotalNS
		if o.Blocker != "" {
			blocked[k] += o.TotalNS
		}
	}
	var top lockKey
	for k, ns := range blocked {
		if ns > blocked[top] || (ns == blocked[top] && (k.typ < top.typ || (k.typ == top.typ && k.lock < top.lock))) {
			top = k
		}
	}
	if blocked[top] == 0 {
		return ""
	}
	var first *capture.OwnerTotal
	threads := 0
	totals := capture.OwnerTotals(m.c.Owners)
	for i, t := range totals {
		if t.Type != top.typ || t.Lock != top.lock || m.c.Owners[t.Entries[0]].Blocker == "" {
			continue
		}
		threads++
		if first == nil {
			first = &totals[i]
		}
	}
	o := m.c.Owners[first.Entries[0]]
	at := ""
	for _, i := range first.Entries {
		if e := m.c.Owners[i]; len(e.Stack) > 0 {
			at = fmt.Sprintf(" at %s%s", sanitize(blockerAt(m.frameTexts(e.Stack))), blockerWhereTexts[e.Where])
			break
		}
	}
	return fmt.Sprintf("blocked by the %s%s: %s of the %s of waits on %s %s, %s by the %d %s that woke them",
		sanitize(ownerText(o)), at, percentOf(first.TotalNS, waits[top]), FormatDuration(float64(waits[top])),
		sanitize(top.typ), m.lockText(top.lock), percentOf(blocked[top], waits[top]), threads, plural(threads, "thread", "threads"))
}

// blockerWhereTexts say which of a blocker's stacks the headline names it at.
var blockerWhereTexts = map[string]string{
	capture.BlockerStackAcquire: ", its path to the lock",
	capture.BlockerStackWake:    ", releasing the lock",
}

// lockFunctions is the built-in catalogue of lock types: the functions blockerAt skips, the types
// sleepingLock tells apart.
var lockFunctions = sync.OnceValues(lockspec.Default)

// blockerAt is the function a blocker's stack shows it at: the caller of the lock's functions,
// below the wakeup's; the first frame's function when the catalogue has no lock function in it.
func blockerAt(stack []string) string {
	stack = withoutWakeup(stack)
	i := 0
	if spec, err := lockFunctions(); err == nil {
		i = max(spec.Caller(stack), 0)
	}
	return capture.ParseFrame(stack[i]).Function
}

// preemptedShare is the share of the wait charged to lock owners that they spent runnable but not
// running from which the headline names lock-holder preemption: then the waits are as much the
// scheduler's doing as the lock's.
const preemptedShare = 0.2

// preemptedLine says how much of the wait charged to known owners they spent preempted, when it is
// at least preemptedShare of it: "holders were preempted for 62% of the wait: lock-holder
// preemption (on CPU 20%, off CPU 18%)". "" otherwise, or when no wait was split by what its owner
// did (a capture without --owners, or from before the split).
func preemptedLine(owners []capture.Owner) string {
	h := capture.SplitByHolder(owners)
	if h.SplitNS() == 0 || h.RunnableShare() < preemptedShare {
		return ""
	}
	return fmt.Sprintf("holders were preempted for %.0f%% of the wait: lock-holder preemption (on CPU %s, off CPU %s of the %s charged to lock owners)",
		100*h.RunnableShare(), percentOf(h.OnCPUNS, h.SplitNS()), percentOf(h.OffCPUNS, h.SplitNS()), FormatDuration(float64(h.SplitNS())))
}

// threadShareText is the headline's part on the time of whose threads that waited, spent waiting:
// "; the command's 2 threads that waited spent 5.2% of their time waiting".
func threadShareText(whose string, t waitTotals, durationNS int64, ms measure) string {
	switch {
	case t.threads == 0:
		return fmt.Sprintf("; %s threads did not wait", whose)
	case durationNS <= 0:
		return ""
	}
	return fmt.Sprintf("; %s %d %s that waited spent %.1f%% of their time %s", whose, t.threads, plural(t.threads, "thread", "threads"),
		100*t.threadShare(durationNS), ongoing(ms))
}

// splitLine parts the waits of a capture of every process into the command's and the others': the
// total of each, its share of totalNS and its top lock.
func splitLine(m *model, totalNS uint64) string {
	part := func(whose string, t waitTotals) string {
		s := fmt.Sprintf("%s %s %s (%s)", whose, m.ms.Time, t.total(), percentOf(t.totalNS, totalNS))
		if t.threads > 0 {
			s += ", " + t.topText("of it")
		}
		return s
	}
	return part("the command's", m.command()) + "; " + part("the others'", m.others())
}

// threadsText is a number of threads on average: "1.30", "<0.01" for a few waits rather than none.
func threadsText(n float64) string {
	if n > 0 && n < 0.005 {
		return "<0.01"
	}
	return fmt.Sprintf("%.2f", n)
}

// ongoing is the verb of what the records time: "waiting", or "acquiring" for the function-probe
// backends.
func ongoing(ms measure) string {
	if ms.Time == "acquire" {
		return "acquiring"
	}
	return "waiting"
}

// percentOf is part as a percentage of whole: "52.0%"; "0.0%" of nothing.
func percentOf(part, whole uint64) string {
	if whole == 0 {
		return "0.0%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}
