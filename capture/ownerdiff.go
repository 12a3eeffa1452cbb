package capture

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The owners of a diff are matched as its rows are, by what survives a rerun: thread ids and lock
// addresses change with every run, so an owner is its lock type, the lock's name, the owner's thread
// name (comm) and the functions of its stack (offsets dropped, which move with every kernel build)
// with where it was seen (on its CPU, sampled, or leaving it), or the reason it has no stack; an owner that could not be known is its lock type, lock name and
// that reason. Entries of one capture that agree in all of these are merged before comparing: the
// same thread name holding the lock under other thread ids, or other locks of the same name. A
// stack with a frame that is a raw address or a hashed id merges with the same stack within one
// capture but never matches across captures, as a caller does (see GroupRows).

// OwnerDiff compares the waits charged to one owner of a diff, the entries of Capture.Owners that
// agree in what owners are matched by.
type OwnerDiff struct {
	Status      DiffStatus
	Type        string
	Name        string   // the lock's name; "" merges the unnamed locks of the type
	Comm        string   // the owner's thread name; "" for an unknown owner
	Reason      string   // why the owner is unknown; "" for a known owner
	Stack       []string // the functions of the owner's stack, innermost first, offsets dropped; raw addresses and ids as captured; empty when none
	StackReason string   // why a known owner has no stack, as captured
	Where       string   // where the stack was seen, on or off the owner's CPU (Owner.Where)
	HolderState string   // what the owner did over its share of the waits (Owner.HolderState); "" when not split
	Blocker     string   // how a thread that woke the waiters blocked them (Owner.Blocker); "" for an owner the lock recorded

	Before, After OwnerDiffValues
}

// OwnerDiffValues are one capture's numbers for an owner of a diff, scaled as DiffValues are: per
// second of capture, or raw totals when the diff is absolute. All are zero on the side an owner is
// missing from.
type OwnerDiffValues struct {
	Count   float64 // waits charged
	TotalNS float64 // wait charged
	// States is the wait charged while the owner was in each state of OwnerStates, in that order;
	// nil for an unknown owner, and on the side an owner is missing from.
	States  []float64
	Entries int      // entries of Capture.Owners merged
	Stack   []string // the stack of the heaviest of those entries, as captured (with offsets)
}

// Share is the part of the wait charged (0 to 1) while the owner was in state; NaN where it is
// unknown: an unknown owner, a side the owner is missing from, or no wait charged.
func (v OwnerDiffValues) Share(state string) float64 {
	i := slices.Index(OwnerStates, state)
	if v.States == nil || v.TotalNS == 0 || i < 0 {
		return math.NaN()
	}
	return v.States[i] / v.TotalNS
}

// DeltaNS is the change in wait charged, after minus before.
func (o OwnerDiff) DeltaNS() float64 { return o.After.TotalNS - o.Before.TotalNS }

// OwnersCompared says whether Diff.Owners compares the owners of the two captures: both have owners
// (captured with --owners). Otherwise OwnersMissing says which do not.
func (d *Diff) OwnersCompared() bool {
	missing := d.OwnersMissing()
	return !missing[BeforeSide] && !missing[AfterSide]
}

// OwnersMissing says, by side (BeforeSide, AfterSide), which captures have no owners.
func (d *Diff) OwnersMissing() [2]bool {
	return [2]bool{len(d.Captures[BeforeSide].Owners) == 0, len(d.Captures[AfterSide].Owners) == 0}
}

// ownerKey is what an owner is matched by.
type ownerKey struct {
	typ, name, comm, reason, stackReason, where, holder, blocker string
	stack                                                        []string
	matchable                                                    bool // false for a stack with a raw address or hashed id
}

// String is the key of the entries to merge: quoting makes it unambiguous whatever the names hold.
func (k ownerKey) String() string {
	var b strings.Builder
	b.WriteString(k.typ)
	for _, s := range append([]string{k.name, k.comm, k.reason, k.stackReason, k.where, k.holder, k.blocker}, k.stack...) {
		b.WriteString(" ")
		b.WriteString(strconv.Quote(s))
	}
	return b.String()
}

// keyOf is what owner o is matched by.
func keyOf(o Owner) ownerKey {
	k := ownerKey{typ: o.Type, name: o.Name, comm: o.Comm, reason: o.Reason, stackReason: o.StackReason, where: o.Where,
		holder: o.HolderState, blocker: o.Blocker, matchable: true}
	for _, f := range o.Stack {
		fn, matchable := matchFunc(f)
		k.stack = append(k.stack, fn)
		k.matchable = k.matchable && matchable
	}
	return k
}

// ownerGroup is the entries of one capture's owners that share a key, summed.
type ownerGroup struct {
	key          ownerKey
	count, total uint64
	states       []uint64 // by OwnerStates
	entries      int
	heaviest     int // index into the capture's owners of the entry with the most wait charged
}

// OwnerGroups are the owners of a capture merged as a diff matches them.
type OwnerGroups struct{ groups []ownerGroup }

// GroupOwners merges the owners of c that share what a diff matches owners by, in the order their
// keys first appear.
func GroupOwners(c *Capture) OwnerGroups {
	var groups []ownerGroup
	index := make(map[string]int)
	for i, o := range c.Owners {
		k := keyOf(o)
		s := k.String()
		gi, ok := index[s]
		if !ok {
			gi = len(groups)
			index[s] = gi
			groups = append(groups, ownerGroup{key: k, states: make([]uint64, len(OwnerStates)), heaviest: i})
		}
		g := &groups[gi]
		g.count, _ = AddSaturating(g.count, o.Count)
		g.total, _ = AddSaturating(g.total, o.TotalNS)
		for _, st := range o.States {
			if j := slices.Index(OwnerStates, st.State); j >= 0 {
				g.states[j], _ = AddSaturating(g.states[j], st.TotalNS)
			}
		}
		g.entries++
		if o.TotalNS > c.Owners[g.heaviest].TotalNS {
			g.heaviest = i
		}
	}
	return OwnerGroups{groups}
}

// ownerValues are group g of side's owners as the diff shows them.
func (d *Diff) ownerValues(g ownerGroup, side int) OwnerDiffValues {
	v := OwnerDiffValues{Count: d.Rate(g.count, side), TotalNS: d.Rate(g.total, side), Entries: g.entries,
		Stack: nonNil(d.Captures[side].Owners[g.heaviest].Stack)}
	if g.key.reason == "" {
		v.States = make([]float64, len(g.states))
		for i, ns := range g.states {
			v.States[i] = d.Rate(ns, side)
		}
	}
	return v
}

// compareOwners matches the owners of both captures, when both have owners, and sorts them by
// absolute change in wait charged.
func (d *Diff) compareOwners(sides [2]DiffSide) []OwnerDiff {
	owners := []OwnerDiff{}
	if !d.OwnersCompared() {
		return owners
	}
	before, after := sides[BeforeSide].OwnerGroups().groups, sides[AfterSide].OwnerGroups().groups
	diffOf := func(k ownerKey, status DiffStatus) OwnerDiff {
		return OwnerDiff{Status: status, Type: k.typ, Name: k.name, Comm: k.comm, Reason: k.reason, Stack: nonNil(k.stack), StackReason: k.stackReason,
			Where: k.where, HolderState: k.holder, Blocker: k.blocker}
	}
	matched := make(map[string]int) // key -> index into owners, for the before owners that can match
	for _, g := range before {
		if g.key.matchable {
			matched[g.key.String()] = len(owners)
		}
		o := diffOf(g.key, Gone)
		o.Before = d.ownerValues(g, BeforeSide)
		owners = append(owners, o)
	}
	for _, g := range after {
		if i, ok := matched[g.key.String()]; ok && g.key.matchable {
			owners[i].Status = Matched
			owners[i].After = d.ownerValues(g, AfterSide)
			continue
		}
		o := diffOf(g.key, New)
		o.After = d.ownerValues(g, AfterSide)
		owners = append(owners, o)
	}
	slices.SortFunc(owners, func(x, y OwnerDiff) int {
		return cmp.Or(
			byChange(x.DeltaNS(), y.DeltaNS(), max(x.Before.TotalNS, x.After.TotalNS), max(y.Before.TotalNS, y.After.TotalNS)),
			strings.Compare(x.Type, y.Type), strings.Compare(x.Name, y.Name), strings.Compare(x.Comm, y.Comm),
			strings.Compare(x.Reason, y.Reason), slices.Compare(x.Stack, y.Stack), strings.Compare(x.StackReason, y.StackReason),
			strings.Compare(x.Where, y.Where), strings.Compare(x.HolderState, y.HolderState), strings.Compare(x.Blocker, y.Blocker),
			cmp.Compare(x.Status, y.Status),
		)
	})
	return owners
}
