package capture

import (
	"cmp"
	"slices"
	"strings"
)

// Sort orders the records by TotalNS descending, then by type, caller, lock, pid and tid, so that
// equal captures encode to equal bytes whatever order the collector met the records in.
func (c *Capture) Sort() {
	slices.SortFunc(c.Records, compareRecords)
}

// compareRecords is the order of Sort. Records equal in every field Sort names (possible when they
// differ only in the deeper stack) are ordered by the remaining fields, so the order is total.
func compareRecords(a, b Record) int {
	// The first key almost always decides, so the others are compared only on a tie (cmp.Or would
	// compare them all, stacks included).
	if c := cmp.Compare(b.TotalNS, a.TotalNS); c != 0 {
		return c
	}
	return cmp.Or(
		strings.Compare(a.Type, b.Type),
		strings.Compare(a.Caller, b.Caller),
		cmp.Compare(a.Lock, b.Lock),
		cmp.Compare(a.PID, b.PID),
		cmp.Compare(a.TID, b.TID),
		slices.Compare(a.Stack, b.Stack),
		cmp.Compare(b.Count, a.Count),
		cmp.Compare(a.MaxNS, b.MaxNS),
		cmp.Compare(a.MinNS, b.MinNS),
		cmp.Compare(a.InProgress, b.InProgress),
		strings.Compare(a.Name, b.Name),
		strings.Compare(a.Comm, b.Comm),
	)
}

// Order returns the indexes of records in the order of Sort, leaving records as they are.
func Order(records []Record) []int32 {
	order := make([]int32, len(records))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return compareRecords(records[a], records[b]) })
	return order
}
