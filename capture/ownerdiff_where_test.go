package capture_test

import (
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
)

// TestCompareOwnerStacksWhere matches an owner's sampled stack across captures by its functions,
// whatever their offsets, and keeps apart the same functions seen on and off the owner's CPU.
func TestCompareOwnerStacksWhere(t *testing.T) {
	owner := func(where string, samples uint64, stack ...string) capture.Owner {
		return capture.Owner{Type: "rwsem:W", Lock: 0x10, Name: "&ext4_inode_cache", Comm: "fio", PID: 1, TID: 2, Stack: stack,
			Where: where, Samples: samples, Count: 1, TotalNS: 1000}
	}
	b := capturetest.Of(t, 1e9, capturetest.Rec("rwsem:W", "&ext4_inode_cache", "ext4_buffered_write_iter+0x68", "fio", 1, 3, 0x10, 500))
	a := capturetest.Of(t, 1e9, capturetest.Rec("rwsem:W", "&ext4_inode_cache", "ext4_buffered_write_iter+0x6c", "fio", 1, 3, 0x10, 500))
	b.Owners = []capture.Owner{owner(capture.OwnerStackOnCPU, 5, "copy_folio_from_iter_atomic+0xcd", "generic_perform_write+0x114")}
	a.Owners = []capture.Owner{
		owner(capture.OwnerStackOnCPU, 9, "copy_folio_from_iter_atomic+0xd1", "generic_perform_write+0x118"),
		owner(capture.OwnerStackOffCPU, 0, "copy_folio_from_iter_atomic+0xd1", "generic_perform_write+0x118"),
	}
	d := capture.Compare(b, a, capture.DiffOptions{})
	var matched, added int
	for _, o := range d.Owners {
		switch {
		case o.Status == capture.Matched && o.Where == capture.OwnerStackOnCPU && o.Stack[0] == "copy_folio_from_iter_atomic":
			matched++
		case o.Status == capture.New && o.Where == capture.OwnerStackOffCPU:
			added++
		}
	}
	if matched != 1 || added != 1 || len(d.Owners) != 2 {
		t.Errorf("owners %+v: want the sampled stack matched by its functions, the one off CPU new", d.Owners)
	}
}
