package srcline

import (
	"debug/dwarf"
	"errors"
	"fmt"
	"io"
	"slices"
)

// lineRow is the line of an address in a compile unit's line table.
type lineRow struct {
	file *dwarf.LineFile
	line int
}

// findLines runs a unit's line program once and returns the row of each of pcs: the last row at
// or before it in its sequence. A pc past the end of every sequence has none. Nothing of the
// table is kept but the rows of pcs: a kernel's line tables are over a hundred megabytes as rows.
func findLines(lr *dwarf.LineReader, pcs []uint64) (map[uint64]lineRow, error) {
	sorted := slices.Clone(pcs)
	slices.Sort(sorted)
	found := make(map[uint64]lineRow, len(pcs))
	var prev, e dwarf.LineEntry
	have := false // prev is a row of the current sequence
	for {
		err := lr.Next(&e)
		if errors.Is(err, io.EOF) {
			return found, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading a line table: %w", err)
		}
		if have && prev.Address < e.Address {
			// The pcs in [prev, e) are at prev's line.
			i, _ := slices.BinarySearch(sorted, prev.Address)
			for ; i < len(sorted) && sorted[i] < e.Address; i++ {
				found[sorted[i]] = lineRow{prev.File, prev.Line}
			}
		}
		prev, have = e, !e.EndSequence
	}
}
