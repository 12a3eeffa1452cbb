package capture

import "strings"

// NameShares are the shares of the captured wait time, from 0 to 1, spent on locks with a name of
// each kind; all 0 when nothing was waited for.
type NameShares struct {
	// Symbol: named by a kernel symbol or the field of a known object ("jiffies_lock", "mmap_lock",
	// "rq_lock"), or a slab lock whose one struct field BTF found ("ext4_inode_info.vfs_inode.i_rwsem"),
	// which tells which lock it is.
	Symbol float64
	// SlabCache: named only by the slab cache of the object holding the lock ("&CACHE"), or with
	// a guess among several fields, which tells what kind of object, not surely which lock in it.
	SlabCache float64
}

// NameShares returns the shares of the captured wait time on locks named by symbol or field, and
// by slab cache only.
func (c *Capture) NameShares() NameShares {
	var symbol, slab, total uint64
	for _, r := range c.Records {
		total += r.TotalNS
		switch {
		case strings.HasPrefix(r.Name, "&") && !r.FieldKnown():
			slab += r.TotalNS
		case r.Name != "":
			symbol += r.TotalNS
		}
	}
	if total == 0 {
		return NameShares{}
	}
	return NameShares{Symbol: float64(symbol) / float64(total), SlabCache: float64(slab) / float64(total)}
}

// FieldKnown reports whether the record's lock is one struct field, not a guess among several.
func (r Record) FieldKnown() bool {
	return r.Field != "" && len(r.FieldCandidates) == 0
}

// FieldLabel is the struct field of the lock as the report shows it beside the name:
// "super_block.s_vfs_rename_mutex", with "?" when it is a guess among FieldCandidates; "" when
// there is none.
func (r Record) FieldLabel() string {
	if r.Field == "" || r.FieldKnown() {
		return r.Field
	}
	return r.Field + "?"
}

// ObjectLabel is the name with the lock's offset in its slab object, where it is known:
// "&kmalloc-2k+0x408"; the name otherwise.
func (r Record) ObjectLabel() string {
	if r.ObjectOffset == "" {
		return r.Name
	}
	return r.Name + "+" + r.ObjectOffset
}

// UnnamedStatic is the label of a static kernel object without a name (Record.Static, no Name).
const UnnamedStatic = "static (unnamed)"

// LockLabel is the lock as a line of text names it: "&kmalloc-2k+0x408
// (super_block.s_vfs_rename_mutex?)", "jiffies_lock", UnnamedStatic, or "" for a lock without a
// name.
func (r Record) LockLabel() string {
	if f := r.FieldLabel(); f != "" {
		return r.ObjectLabel() + " (" + f + ")"
	}
	if r.Name == "" && r.Static {
		return UnnamedStatic
	}
	return r.ObjectLabel()
}

// StaticUnnamed are the static kernel objects among records that have no name (Record.Static):
// how many locks, and their share of the records' wait time, from 0 to 1.
func StaticUnnamed(records []Record) (locks int, share float64) {
	seen := map[Addr]bool{}
	var unnamed uint64
	total := TotalsOf(records).TotalNS
	for _, r := range records {
		if r.Static && r.Name == "" {
			unnamed, _ = AddSaturating(unnamed, r.TotalNS)
			seen[r.Lock] = true
		}
	}
	if total > 0 {
		share = float64(unnamed) / float64(total)
	}
	return len(seen), share
}
