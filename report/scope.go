package report

import (
	"fmt"

	"github.com/klockstat/klockstat/capture"
)

// The split of a capture of a workload (klockstat -- COMMAND) into the waits of the command's process
// tree and the others': under --scope system the page says the command's share in its header, and
// each table row whose waits they are.

// commandSplit parts the records of a capture of every process while a workload ran
// (capture.ScopeSystem) into the workload's process tree's and the others'; ok is false for any
// other capture, which holds the workload's waits only or cannot tell them apart.
func commandSplit(c *capture.Capture) (command, others []capture.Record, ok bool) {
	m := c.Meta
	if m.Scope != capture.ScopeSystem {
		return nil, nil, false
	}
	for _, r := range c.Records {
		if m.InCommand(r.PID) {
			command = append(command, r)
		} else {
			others = append(others, r)
		}
	}
	return command, others, true
}

// splitCommand is the wait time of a capture of a workload under --scope system, split between the
// processes of the command's tree and the others; ok is false for any other capture.
func splitCommand(c *capture.Capture) (split whose, ok bool) {
	if c.Meta.Scope != capture.ScopeSystem {
		return whose{}, false
	}
	for i := range c.Records {
		split.add(&c.Records[i], &c.Meta)
	}
	return split, true
}

// scopeField is the header's line on whose waits a capture of a workload holds; ok is false for a
// capture without a workload's scope.
func scopeField(c *capture.Capture, ms measure) (f field, ok bool) {
	m := c.Meta
	switch m.Scope {
	case capture.ScopeCommand:
		return field{Label: "Scope", Term: "scope", Value: fmt.Sprintf("the command's process tree only (%d %s): other processes' %s were not captured",
			len(m.CommandPIDs), plural(len(m.CommandPIDs), "process", "processes"), ms.Events)}, true
	case capture.ScopeSystem:
		s, _ := splitCommand(c)
		n := len(m.CommandPIDs)
		return field{Label: "Scope", Term: "scope", Value: fmt.Sprintf("every process; the command's process tree (%d %s) had %.1f%% of the %s time, column Whose tells its rows",
			n, plural(n, "process", "processes"), 100*s.share(), ms.Time)}, true
	}
	return field{}, false
}

// commandHighlight is the headline of the command's share under --scope system; ok is false for
// any other capture.
func commandHighlight(c *capture.Capture, ms measure) (h highlight, ok bool) {
	s, ok := splitCommand(c)
	if !ok {
		return highlight{}, false
	}
	n := len(c.Meta.CommandPIDs)
	return highlight{
		Label: "The command's share", Value: fmt.Sprintf("%.1f%%", 100*s.share()), Term: "scope",
		Detail: fmt.Sprintf("%s of the %s time in the %d %s of its tree, %s in other processes",
			FormatDuration(s.commandNS), ms.Time, n, plural(n, "process", "processes"), FormatDuration(s.otherNS)),
	}, true
}

// whose is the wait time of a row of a view, or of the whole capture, split between the command's
// processes and the others'.
type whose struct {
	// Summed as floats: a share is what they are for, and they cannot wrap.
	commandNS, otherNS float64
	command, other     bool // the row has records of the command's processes, of others
}

// share is the command's part of the wait time, 0 with no wait at all.
func (w whose) share() float64 {
	if w.commandNS+w.otherNS == 0 {
		return 0
	}
	return w.commandNS / (w.commandNS + w.otherNS)
}

// text is the row's value in the column Whose: "command" or "other" when its records are all of
// one side, else the command's share of its wait time.
func (w whose) text() string {
	switch {
	case !w.other:
		return "command"
	case !w.command:
		return "other"
	case w.commandNS+w.otherNS == 0:
		return "command and other"
	}
	return fmt.Sprintf("command %.0f%%", 100*w.share())
}

// add counts record r, of a capture of metadata m, in the row.
func (w *whose) add(r *capture.Record, m *capture.Meta) {
	if m.InCommand(r.PID) {
		w.command, w.commandNS = true, w.commandNS+float64(r.TotalNS)
	} else {
		w.other, w.otherNS = true, w.otherNS+float64(r.TotalNS)
	}
}

// addWhoseColumns adds the column Whose after the column Thread of the page's views under --scope
// system: threads has one row per record, in order; the other views' rows are groups of a key.
func addWhoseColumns(c *capture.Capture, tab *strtab, threads *view, order []int32, grouped []groupedView) {
	m := &c.Meta
	if m.Scope != capture.ScopeSystem {
		return
	}
	values := make([]int32, len(order))
	for i, ri := range order {
		var w whose
		w.add(&c.Records[ri], m)
		values[i] = tab.str(w.text())
	}
	threads.insertAfter("comm", textColumn("whose", "Whose", "", values))
	for _, g := range grouped {
		rows := map[string]whose{}
		for i := range c.Records {
			k := g.key(c.Records[i])
			w := rows[k]
			w.add(&c.Records[i], m)
			rows[k] = w
		}
		values := make([]int32, len(g.groups))
		for i, group := range g.groups {
			values[i] = tab.str(rows[group.Key].text())
		}
		g.view.insertAfter("comm", textColumn("whose", "Whose", "", values))
	}
}

// groupedView is a view of groups (groupView) with the groups and their key.
type groupedView struct {
	view   *view
	groups []capture.Group
	key    func(capture.Record) string
}
