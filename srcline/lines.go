package srcline

import (
	"cmp"
	"debug/dwarf"
	"errors"
	"fmt"
	"io"
	"slices"
)

// lineTable is the rows of one compile unit's line program, sorted by address, so that an
// address's row is found by binary search instead of by running the program again.
type lineTable struct {
	rows []lineRow
}

type lineRow struct {
	addr   uint64
	file   *dwarf.LineFile
	line   int
	endSeq bool // the first address after a sequence: no line
}

// lineTable reads the line table of the unit at cu, once.
func (im *Image) lineTable(cu dwarf.Offset, lr *dwarf.LineReader) (*lineTable, error) {
	if t, ok := im.lines[cu]; ok {
		return t, nil
	}
	t := &lineTable{}
	var e dwarf.LineEntry
	for {
		err := lr.Next(&e)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the line table of compile unit at %#x: %w", cu, err)
		}
		t.rows = append(t.rows, lineRow{addr: e.Address, file: e.File, line: e.Line, endSeq: e.EndSequence})
	}
	// A sequence's end sorts before another sequence's start at the same address, so the start
	// is the row found there. Rows of one sequence keep their order.
	slices.SortStableFunc(t.rows, func(a, b lineRow) int {
		return cmp.Or(cmp.Compare(a.addr, b.addr), cmp.Compare(boolRank(!a.endSeq), boolRank(!b.endSeq)))
	})
	im.lines[cu] = t
	return t, nil
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// find is the row of pc: the last row at or before it, unless that ends a sequence.
func (t *lineTable) find(pc uint64) (lineRow, bool) {
	if t == nil {
		return lineRow{}, false
	}
	i, _ := slices.BinarySearchFunc(t.rows, pc, func(r lineRow, pc uint64) int {
		if r.addr <= pc {
			return -1
		}
		return 1
	})
	if i == 0 || t.rows[i-1].endSeq {
		return lineRow{}, false
	}
	return t.rows[i-1], true
}
