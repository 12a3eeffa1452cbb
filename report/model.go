package report

import (
	"io"
	"slices"
	"sync"

	"github.com/klockstat/klockstat/capture"
)

// model is the analysis of one capture that every rendering of it draws from, as pprof's Report is
// built once from a profile: the terminal summary (summary.go), the page (html.go), the diffs
// (diff_model.go) and the level pages of a scaling report (scale.go) read it and group nothing
// themselves. Each part is computed the first time a rendering asks for it, once: a summary by
// caller never pays for the page's flame graphs, and the summary and page of one run share what both
// show.
//
// Display strings stay here, beside the groups: a Group keeps the capture's caller, which the
// source lines are looked up by, and the model hashes what it shows (lockText, frameText) instead
// of a hashed copy of the records.
type model struct {
	c      *capture.Capture
	ms     measure
	hasher *capture.AddressHasher // the ids of the addresses shown; nil when shown as they are, or ids already
	hashed bool                   // the addresses shown are ids

	mu       sync.Mutex
	computed map[string]int // how often each part was computed: once, which a test holds it to
	groups   map[string]func() []capture.Group

	order      func() []int32             // the records' order on the page (capture.Order)
	contended  func() []capture.Group     // the groups by caller with a contended acquire
	callers    func() []string            // their callers as shown (frameText), Group.Caller left as it is
	types      func() []typeSummary       // the lock types with waits, by total wait
	holdTypes  func() []typeSummary       // the lock types with holds timed
	totals     func() capture.Totals      // the one sum of the waits, saturating
	split      func() commandRecords      // the records of the command's tree and the others'
	waits      func() waitTotals          // the headline's figures of all the records
	command    func() waitTotals          // the same of the command's records, under --scope system
	others     func() waitTotals          // and of the others'
	trees      func() []capture.FlameTree // the flame graphs of the waits
	ownerTree  func() ownerFlame          // the flame graph of the owners
	ownerWaits func() []uint64            // the waits of each owner row (ownRowWaits)
	owners     func() []capture.Owner     // the owners with stacks the exports write (capture.OwnerStacks)
	side       *diffSide                  // the model as a side of a diff (diff_model.go)
}

// commandRecords are a capture's records split by commandSplit; ok is false when it does not split.
type commandRecords struct {
	command, others []capture.Record
	ok              bool
}

// ownerFlame is the owners' flame graph, when the capture has owners with stacks.
type ownerFlame struct {
	tree capture.FlameTree
	ok   bool
}

// newModel prepares the analysis of c. Addresses are shown as ids under key (one drawn for this
// model when nil) unless raw or c holds ids already. c is not modified, and must not be while the
// model is used.
func newModel(c *capture.Capture, raw bool, key []byte) *model {
	hash := !raw && !c.Meta.AddressesHashed
	if hash && key == nil {
		key = newKey()
	}
	m := &model{c: c, ms: measureOf(c.Meta), hasher: hasherFor(hash, key), computed: map[string]int{}}
	m.hashed = c.Meta.AddressesHashed || m.hasher != nil
	m.groups = map[string]func() []capture.Group{}
	for _, v := range summaryViews {
		m.groups[v.name] = part(m, "groups by "+v.name, func() []capture.Group { return capture.GroupBy(c.Records, v.key) })
	}
	m.order = part(m, "order", func() []int32 { return capture.Order(c.Records) })
	m.contended = part(m, "contended", func() []capture.Group {
		// Groups of holds only (uncontended acquires) have no place in the charts of waits.
		return slices.DeleteFunc(slices.Clone(m.groups["caller"]()), func(g capture.Group) bool { return g.Count == 0 })
	})
	m.callers = part(m, "contended callers", func() []string {
		groups := m.contended()
		names := make([]string, len(groups))
		for i, g := range groups {
			names[i] = m.frameText(g.Caller)
		}
		return names
	})
	m.types = part(m, "types", func() []typeSummary { return summarizeTypes(c.Histograms) })
	m.holdTypes = part(m, "hold types", func() []typeSummary { return summarizeTypes(c.HoldHistograms) })
	m.totals = part(m, "totals", c.Totals)
	m.split = part(m, "split", func() commandRecords {
		command, others, ok := commandSplit(c)
		return commandRecords{command, others, ok}
	})
	m.waits = part(m, "waits", func() waitTotals { return m.waitTotalsOf(c.Records, m.groups["lock"]()) })
	// The parts of a split capture have groups of their own, of their records alone.
	m.command = part(m, "command waits", func() waitTotals {
		records := m.split().command
		return m.waitTotalsOf(records, capture.GroupBy(records, capture.ByLock))
	})
	m.others = part(m, "others' waits", func() waitTotals {
		records := m.split().others
		return m.waitTotalsOf(records, capture.GroupBy(records, capture.ByLock))
	})
	m.trees = part(m, "flame graphs", func() []capture.FlameTree { return capture.FlameGraphs(c.Records, c.Sources, flameNodes) })
	m.ownerTree = part(m, "owner flame graph", func() ownerFlame {
		tree, ok := capture.OwnerFlameGraph(c.Owners, c.Sources, flameNodes)
		return ownerFlame{tree, ok}
	})
	m.ownerWaits = part(m, "owner waits", func() []uint64 { return ownRowWaits(c.Owners) })
	m.owners = part(m, "owner stacks", func() []capture.Owner { return capture.OwnerStacks(c) })
	m.side = newDiffSide(m)
	return m
}

// part is a part of m that compute computes once, the first time it is asked for. Parts may be
// asked for from several goroutines, but those that show addresses (lockText, frameText) share the
// hasher, which is for one goroutine at a time.
func part[T any](m *model, name string, compute func() T) func() T {
	return sync.OnceValue(func() T {
		m.mu.Lock()
		m.computed[name]++
		m.mu.Unlock()
		return compute()
	})
}

// addresses are how the model shows kernel addresses, in every rendering and export of it.
func (m *model) addresses() capture.AddressText {
	return capture.AddressText{Hasher: m.hasher, Hashed: m.hashed}
}

// lockText is a lock's address as the model shows it: an id, or the address.
func (m *model) lockText(a capture.Addr) string { return m.addresses().Lock(a) }

// frameText is a frame or caller as the model shows it: a raw address as its id.
func (m *model) frameText(f string) string { return m.addresses().Frame(f) }

// frameTexts are the frames of a stack as the model shows them: stack itself, or a copy with its raw
// addresses as ids.
func (m *model) frameTexts(stack []string) []string { return m.addresses().Frames(stack) }

// callerLine is a caller as a summary shows it, the source line and inlined functions after it when
// the capture has them.
func (m *model) callerLine(caller string) string {
	return callerText(m.frameText(caller)) + capture.SourceText(m.c.Sources.Lines(caller))
}

// selected is the model of the records o's filters keep: m itself when they keep every record, else
// the model of that other capture, its addresses shown as m's are.
func (m *model) selected(o SummaryOptions) *model {
	s := o.Select(m.c)
	if s == m.c {
		return m
	}
	sm := newModel(s, true, nil)
	sm.hasher, sm.hashed = m.hasher, m.hashed
	return sm
}

// Analysis is a capture analysed once for the summary and the page of one run of klockstat, which
// render from it: what both show (the groups by caller, the totals, the callers' ids) is computed
// once.
type Analysis struct{ m *model }

// Analyze prepares the analysis of c. Addresses are shown as ids under key (one drawn for this
// analysis when nil) unless raw or c holds ids already, in every rendering of it: the options of
// those renderings say nothing of addresses. c is not modified, and must not be while the analysis
// is used.
func Analyze(c *capture.Capture, raw bool, key []byte) *Analysis {
	return &Analysis{newModel(c, raw, key)}
}

// WriteHTML is WriteHTML of the analysis.
func (a *Analysis) WriteHTML(w io.Writer, o HTMLOptions) error { return a.m.writeHTML(w, o) }

// WriteSummary is WriteSummary of the analysis.
func (a *Analysis) WriteSummary(w io.Writer, o SummaryOptions) error { return a.m.writeSummary(w, o) }

// Select is the analysis of the records o's filters keep, which the exports of a summary of o write:
// a itself when they keep every record, else that of the records kept, its addresses shown as a's
// are.
func (a *Analysis) Select(o SummaryOptions) *Analysis {
	if s := a.m.selected(o); s != a.m {
		return &Analysis{s}
	}
	return a
}

// Capture is the capture analysed; the exports (export.Analysis) write it.
func (a *Analysis) Capture() *capture.Capture { return a.m.c }

// Addresses are how the analysis shows kernel addresses: the exports name a lock by the id the page
// and the summary name it by.
func (a *Analysis) Addresses() capture.AddressText { return a.m.addresses() }

// OwnerStacks are capture.OwnerStacks of the capture, computed once for every export.
func (a *Analysis) OwnerStacks() []capture.Owner { return a.m.owners() }
