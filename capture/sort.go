package capture

import (
	"cmp"
	"slices"
	"strings"
)

// Sort orders the records by TotalNS descending, then by type, caller, lock, pid and tid, so that
// equal captures encode to equal bytes whatever order the collector met the records in.
func (c *Capture) Sort() {
	slices.SortFunc(c.Records, func(a, b Record) int { return compareRecords(&a, &b) })
}

// compareRecords is the order of Sort. Records equal in every field Sort names (possible when they
// differ only in the deeper stack) are ordered by the remaining fields, so the order is total. It
// takes pointers: a record is some 270 bytes, copied twice a comparison when passed by value.
func compareRecords(a, b *Record) int {
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

// Order returns the indexes of records in the order of Sort, leaving records as they are. The
// indexes are sorted beside their records' TotalNS, which almost always decides: a comparison then
// reads neither record, scattered in memory.
func Order(records []Record) []int32 {
	keyed := make([]orderKey, len(records))
	for i := range records {
		keyed[i] = orderKey{records[i].TotalNS, int32(i)}
	}
	slices.SortFunc(keyed, func(a, b orderKey) int {
		if c := cmp.Compare(b.totalNS, a.totalNS); c != 0 {
			return c
		}
		return compareRecords(&records[a.index], &records[b.index])
	})
	order := make([]int32, len(records))
	for i, k := range keyed {
		order[i] = k.index
	}
	return order
}

// orderKey is a record's index in Order with its first key.
type orderKey struct {
	totalNS uint64
	index   int32
}
