package report

import (
	"fmt"

	"github.com/klockstat/klockstat/capture"
)

// The diff of two captures is a rendering of their two models: capture.CompareSides matches the
// rows from what each model holds (its totals, its records grouped as a diff matches them, its lock
// types' figures, its owners grouped), each computed once per model however many diffs and pages ask
// for it. A level of a scaling report is in several diffs, and its summary, page and diffs share one
// model.

// diffSide is a model as a side of a diff (capture.DiffSide).
type diffSide struct {
	m          *model
	lockFields func() bool
	owners     func() capture.OwnerGroups
	rows       map[rowsKey]func() capture.RowGroups // under m.mu, one part for each grouping a diff asks for
}

// rowsKey is one way a diff groups the records (capture.GroupRows).
type rowsKey struct {
	fields  capture.Fields
	byField bool
}

func newDiffSide(m *model) *diffSide {
	return &diffSide{
		m:          m,
		lockFields: part(m, "lock fields", func() bool { return capture.HasLockFields(m.c) }),
		owners:     part(m, "owner groups", func() capture.OwnerGroups { return capture.GroupOwners(m.c) }),
		rows:       map[rowsKey]func() capture.RowGroups{},
	}
}

func (s *diffSide) Capture() *capture.Capture        { return s.m.c }
func (s *diffSide) Totals() capture.Totals           { return s.m.totals() }
func (s *diffSide) HasLockFields() bool              { return s.lockFields() }
func (s *diffSide) OwnerGroups() capture.OwnerGroups { return s.owners() }

// TypeStats are the model's lock types with waits, the figures of their histograms computed once
// for the page's charts and the diffs alike.
func (s *diffSide) TypeStats() []capture.TypeStats {
	types := s.m.types()
	stats := make([]capture.TypeStats, len(types))
	for i, t := range types {
		stats[i] = capture.TypeStats{Type: t.Name, Stats: t.Stats}
	}
	return stats
}

func (s *diffSide) RowGroups(fields capture.Fields, byField bool) capture.RowGroups {
	k := rowsKey{fields, byField}
	s.m.mu.Lock()
	rows := s.rows[k]
	if rows == nil {
		rows = part(s.m, fmt.Sprintf("diff rows by fields %#x, by struct field %t", k.fields, k.byField), func() capture.RowGroups {
			return capture.GroupRows(s.m.c, k.fields, k.byField)
		})
		s.rows[k] = rows
	}
	s.m.mu.Unlock()
	return rows()
}

// compare is the diff of the captures of before and after.
func compare(before, after *model, o capture.DiffOptions) *capture.Diff {
	return capture.CompareSides(before.side, after.side, o)
}

// Compare is the diff of the captures of two analyses (see capture.Compare), matched from what each
// analysis holds: an analysis in several diffs, or also rendered as a summary or a page, groups its
// records once. WriteDiffHTML and WriteDiffSummary render it.
func Compare(before, after *Analysis, o capture.DiffOptions) *capture.Diff {
	return compare(before.m, after.m, o)
}
