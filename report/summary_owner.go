package report

import (
	"bytes"
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// OwnerView is the summary grouping (SummaryOptions.By) of the waits by the lock owner they were
// charged to: capture.Owners, not the records, so perf's sort keys and fields do not apply.
const OwnerView = "owner"

// writeOwnerTable writes the owners, the wait charged to them largest first, with the owner's
// states when the waits began as shares of that wait.
func writeOwnerTable(b *bytes.Buffer, m *model, top int) {
	c := m.c
	if len(c.Owners) == 0 {
		b.WriteString("no lock owners in this capture: capture with --owners\n")
		return
	}
	owners := c.Owners
	if top > 0 && len(owners) > top {
		owners = owners[:top]
	}
	rows := [][]string{{"waits", "total wait", "owner state", "type", "lock", "name", "owner", "owner stack"}}
	waits := m.ownerWaits()
	for i, o := range owners {
		lock := m.lockText(o.Lock)
		name := cmp.Or(sanitize(o.Name), "-")
		rows = append(rows, []string{strconv.FormatUint(waits[i], 10), FormatDuration(float64(o.TotalNS)), ownerStates(o),
			sanitize(o.Type), lock, name, sanitize(ownerText(o)), ownerStackText(m.frameTexts(o.Stack), o.StackReason, ownerStatesOf(o))})
	}
	writeColumns(b, rows)
	if omitted := len(c.Owners) - len(owners); omitted > 0 {
		fmt.Fprintf(b, "... %d more %s not shown\n", omitted, plural(omitted, "owner", "owners"))
	}
}

// writeCriticalSections writes, for each known owner, the wait charged to it over all its stacks,
// the share of it with a stack, its top critical-section stack (on its CPU, sampled, or where it
// left it) with that stack's share, and whom it waited for in turn.
func writeCriticalSections(b *bytes.Buffer, m *model, top int) {
	c := m.c
	var totals []capture.OwnerTotal
	for _, t := range capture.OwnerTotals(c.Owners) {
		if t.Reason == "" {
			totals = append(totals, t)
		}
	}
	if len(totals) == 0 {
		return
	}
	shown := totals
	if top > 0 && len(shown) > top {
		shown = shown[:top]
	}
	b.WriteString("\n")
	rows := [][]string{{"wait charged", "with a stack", "owner", "type", "name", "top critical-section stack", "blocked in turn by"}}
	for _, t := range shown {
		first := c.Owners[t.Entries[0]]
		stack := "-"
		for _, i := range t.Entries {
			if o := c.Owners[i]; len(o.Stack) > 0 {
				stack = fmt.Sprintf("%s%.0f%%: %s", whereText(o), 100*float64(o.TotalNS)/float64(t.TotalNS), ownerStackText(m.frameTexts(o.Stack), "", nil))
				break
			}
		}
		rows = append(rows, []string{FormatDuration(float64(t.TotalNS)), fmt.Sprintf("%.0f%%", 100*float64(t.StackNS)/float64(t.TotalNS)),
			sanitize(ownerText(first)), sanitize(t.Type), cmp.Or(sanitize(first.Name), "-"), stack, chainText(m, t)})
	}
	writeColumns(b, rows)
	if omitted := len(totals) - len(shown); omitted > 0 {
		fmt.Fprintf(b, "... %d more %s not shown\n", omitted, plural(omitted, "owner thread", "owner threads"))
	}
}

// whereText says where an owner's stack was seen, and on how many samples a sampled one rests. A
// stack the owner left its CPU at is said "preempted" when it stayed runnable there over the share:
// "off CPU" would read as asleep.
func whereText(o capture.Owner) string {
	switch o.Where {
	case capture.OwnerStackOnCPU:
		return fmt.Sprintf("on CPU (%d %s) ", o.Samples, plural(int(o.Samples), "sample", "samples"))
	case capture.OwnerStackOffCPU:
		if o.HolderState == capture.HolderRunnable {
			return capture.HolderWords[capture.HolderRunnable] + " "
		}
		return "off CPU "
	case capture.BlockerStackAcquire:
		return "taking it "
	case capture.BlockerStackWake:
		return "waking them "
	}
	return ""
}

// chainText names the end of the owner's largest wait chain, with its share of the owner's wait;
// "-" when the owner was not seen waiting.
func chainText(m *model, t capture.OwnerTotal) string {
	for _, ch := range m.c.OwnerChains { // largest first
		if ch.Type != t.Type || ch.Lock != t.Lock || ch.TID != t.TID {
			continue
		}
		s := fmt.Sprintf("%s %s held by %s/%d (%.0f%%)", sanitize(ch.EndType), cmp.Or(sanitize(ch.EndName), m.lockText(ch.EndLock)),
			cmp.Or(sanitize(ch.EndComm), "?"), ch.EndTID, 100*float64(ch.TotalNS)/float64(t.TotalNS))
		if ch.Cycle {
			s = "a cycle: " + s
		}
		return s
	}
	return "-"
}

// ownerText names an owner: thread name, pid/tid, or why it is unknown; a blocker of a lock that
// records no owner with how it blocked the waits ("writer stress-ng 12/14").
func ownerText(o capture.Owner) string {
	if o.Reason != "" {
		return "unknown: " + o.Reason
	}
	if o.Blocker != "" {
		return fmt.Sprintf("%s %s %d/%d", o.Blocker, o.Comm, o.PID, o.TID)
	}
	return fmt.Sprintf("%s %d/%d", o.Comm, o.PID, o.TID)
}

// wakeFunctions are the scheduler's wakeup path and the wait queue's, on top of the stack a
// blocker had as it woke a waiter: try_to_wake_up calls the sched_waking tracepoint.
var wakeFunctions = map[string]bool{
	"try_to_wake_up": true, "wake_up_process": true, "wake_up_q": true, "wake_up_state": true,
	"percpu_rwsem_wake_function": true, "__wake_up_common": true, "__wake_up_common_lock": true,
	"__wake_up": true, "__wake_up_locked": true, "rcuwait_wake_up": true, "autoremove_wake_function": true,
	"default_wake_function": true, "woken_wake_function": true,
}

// withoutWakeup is stack without the wakeup's frames on top of it.
func withoutWakeup(stack []string) []string {
	for len(stack) > 1 && wakeFunctions[capture.ParseFrame(stack[0]).Function] {
		stack = stack[1:]
	}
	return stack
}

// ownerStates shows an owner's states as shares of the wait charged to it, largest first: "on_cpu
// 62%, runnable 38%"; "-" for an unknown owner.
func ownerStates(o capture.Owner) string {
	if len(o.States) == 0 || o.TotalNS == 0 {
		return "-"
	}
	var parts []string
	for _, s := range o.States {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", s.State, 100*float64(s.TotalNS)/float64(o.TotalNS)))
	}
	return strings.Join(parts, ", ")
}

// ownerStackFrames is how many frames of an owner's stack the summary shows, below the scheduler's.
const ownerStackFrames = 3

// ownerStackText shows where an owner was as it left its CPU holding the lock: the first frames of
// its stack below the scheduler's own, innermost first; or why it has none; "-" when neither.
func ownerStackText(stack []string, reason string, states []string) string {
	frames := withoutWakeup(stack)
	for len(frames) > 1 && (strings.HasPrefix(frames[0], "__schedule+") || strings.HasPrefix(frames[0], "schedule+")) {
		frames = frames[1:]
	}
	switch {
	case len(frames) > 0:
		shown := make([]string, 0, ownerStackFrames)
		for _, f := range frames[:min(len(frames), ownerStackFrames)] {
			shown = append(shown, sanitize(f))
		}
		return strings.Join(shown, " < ")
	case reason != "":
		return "none: " + stackReasonText(reason, states)
	}
	return "-"
}
