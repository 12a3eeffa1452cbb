package capture

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// MaxOwnerChain is how many owners past a wait's own owner a wait chain follows: the kernel side's
// MAX_CHAIN (collector/include/lockstat.h).
const MaxOwnerChain = 4

// OwnerChain is the waits charged to one owner of one lock while that owner itself waited for
// another lock: the waiter was blocked by a chain, waiter -> owner -> ... -> the chain's end, the
// thread holding the lock the last owner of the chain waited for. A chain that came back to one of
// its threads is a cycle: a deadlock, or one in the making.
type OwnerChain struct {
	Type    string `json:"type"` // the waits' lock type
	Lock    Addr   `json:"lock"`
	Name    string `json:"name"` // the lock's name, as its records have it
	TID     uint32 `json:"tid"`  // the waits' owner, which waited in turn
	Comm    string `json:"comm"` // its thread name (untrusted)
	EndType string `json:"end_type"`
	EndLock Addr   `json:"end_lock"` // the lock the chain's last owner waited for
	EndName string `json:"end_name"`
	EndTID  uint32 `json:"end_tid"`  // the thread holding it: the end of the chain
	EndComm string `json:"end_comm"` // its thread name (untrusted); "" when not known
	// Depth is how many owners the chain went through, the waits' own included: 1 for waiter ->
	// owner -> end; at most MaxOwnerChain.
	Depth int    `json:"depth"`
	Cycle bool   `json:"cycle"` // the chain came back to one of its threads
	Count uint64 `json:"count"` // waits charged
	// InProgress counts the waits still open when the capture stopped, charged up to then: a cycle
	// among them outlasted the capture.
	InProgress uint64 `json:"in_progress"`
	TotalNS    uint64 `json:"total_ns"`
}

// SortOwnerChains orders chains by the wait charged to them, largest first (ties: waits, then lock
// and threads).
func SortOwnerChains(chains []OwnerChain) {
	slices.SortStableFunc(chains, func(a, b OwnerChain) int {
		return cmp.Or(cmp.Compare(b.TotalNS, a.TotalNS), cmp.Compare(b.Count, a.Count),
			cmp.Compare(a.Type, b.Type), cmp.Compare(a.Lock, b.Lock), cmp.Compare(a.TID, b.TID),
			cmp.Compare(a.EndType, b.EndType), cmp.Compare(a.EndLock, b.EndLock), cmp.Compare(a.EndTID, b.EndTID),
			cmp.Compare(a.Depth, b.Depth))
	})
}

func (c OwnerChain) validate() error {
	if err := CheckTypeName(c.Type); err != nil {
		return err
	}
	if err := CheckTypeName(c.EndType); err != nil {
		return fmt.Errorf("end: %w", err)
	}
	switch {
	case c.Count == 0:
		return errors.New("count is 0")
	case c.InProgress > c.Count:
		return fmt.Errorf("%d waits in progress of %d", c.InProgress, c.Count)
	case c.TID == 0 || c.EndTID == 0:
		return errors.New("no owner thread, or no thread at the end")
	case c.Depth < 1 || c.Depth > MaxOwnerChain:
		return fmt.Errorf("depth %d out of range (want 1 to %d)", c.Depth, MaxOwnerChain)
	}
	return nil
}
