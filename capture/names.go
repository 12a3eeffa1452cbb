package capture

import "strings"

// NameShares are the shares of the captured wait time, from 0 to 1, spent on locks with a name of
// each kind; all 0 when nothing was waited for.
type NameShares struct {
	// Symbol: named by a kernel symbol or the field of a known object ("jiffies_lock", "mmap_lock",
	// "rq_lock"), which tells which lock it is.
	Symbol float64
	// SlabCache: named only by the slab cache of the object holding the lock ("&CACHE"), which
	// tells what kind of object, not which lock in it.
	SlabCache float64
}

// NameShares returns the shares of the captured wait time on locks named by symbol or field, and
// by slab cache only.
func (c *Capture) NameShares() NameShares {
	var symbol, slab, total uint64
	for _, r := range c.Records {
		total += r.TotalNS
		switch {
		case strings.HasPrefix(r.Name, "&"):
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

// NamedShare is the share of the captured wait time spent on locks with a name of either kind,
// from 0 to 1; 0 when nothing was waited for.
func (c *Capture) NamedShare() float64 {
	s := c.NameShares()
	return s.Symbol + s.SlabCache
}
