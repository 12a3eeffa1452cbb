package capture

import (
	"errors"
	"fmt"
	"math"
)

// The limits of a capture. Validate checks them, and the readers of captures (Parse, and a report's
// page data) check them as they read, so that an input over them is refused before it takes memory.
const (
	// MaxStackDepth is the most frames a stack holds: the deepest the collector takes (its
	// --stack-depth limit, the BPF stack scratch less one).
	MaxStackDepth = 127
	// MaxFieldCandidates is the most struct fields a record lists as the lock it may be: the
	// collector keeps the best ones of a longer list.
	MaxFieldCandidates = 8
	// MaxRecords is the most records a capture holds: what fits in the 2 GiB klockstat reads of a
	// capture JSON at about 1 KiB a record (--stack-depth 16).
	MaxRecords = 1 << 21
	// MaxStringLen is the longest string of a capture, in bytes. The longest a kernel or a process
	// gives are an argument of a command line (128 KiB, MAX_ARG_STRLEN) and a cgroup path (4 KiB).
	MaxStringLen = 256 << 10
)

// Validate checks what the rest of klockstat relies on: the format version, a histogram of the current
// layout whose bucket counts add up for every lock type, and records whose numbers are consistent
// (count > 0 or hold_count > 0, min <= max <= total, in_progress <= count, the same for holds) and whose
// type has a histogram of waits if they have waits, of holds if they have holds. The error names the
// offending element, e.g. "record 12: min_ns 5 > max_ns 3".
func (c *Capture) Validate() error {
	if c.Version != FormatVersion {
		return fmt.Errorf("%w %d: this klockstat reads version %d", ErrUnsupportedVersion, c.Version, FormatVersion)
	}
	if len(c.Records) > MaxRecords {
		return tooManyRecords(len(c.Records))
	}
	if err := c.Meta.validate(); err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	types, err := histogramTypes("histogram", c.Histograms)
	if err != nil {
		return err
	}
	holdTypes, err := histogramTypes("hold histogram", c.HoldHistograms)
	if err != nil {
		return err
	}
	if c.Timeline != nil {
		if err := c.Timeline.validate(); err != nil {
			return fmt.Errorf("timeline: %w", err)
		}
	}
	for i, r := range c.Records {
		if err := r.validate(); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		if r.Count > 0 && !types[r.Type] {
			return fmt.Errorf("record %d: lock type %q has no histogram", i, r.Type)
		}
		if r.HoldCount > 0 && !holdTypes[r.Type] {
			return fmt.Errorf("record %d: lock type %q has no hold histogram", i, r.Type)
		}
	}
	for i, o := range c.Owners {
		if err := checkStrings(o.Stack, o.Type, o.Name, o.Comm, o.Reason, o.StackReason); err != nil {
			return fmt.Errorf("owner %d: %w", i, err)
		}
		if err := o.validate(); err != nil {
			return fmt.Errorf("owner %d: %w", i, err)
		}
	}
	if c.Sources != nil {
		if err := c.Sources.validate(); err != nil {
			return fmt.Errorf("sources: %w", err)
		}
	}
	for i, ch := range c.OwnerChains {
		if err := checkStrings(nil, ch.Type, ch.Name, ch.Comm, ch.EndType, ch.EndName, ch.EndComm); err != nil {
			return fmt.Errorf("owner chain %d: %w", i, err)
		}
		if err := ch.validate(); err != nil {
			return fmt.Errorf("owner chain %d: %w", i, err)
		}
	}
	return nil
}

// histogramTypes validates histograms, at most one per lock type, and returns their types.
func histogramTypes(what string, hists []Histogram) (map[string]bool, error) {
	types := make(map[string]bool, len(hists))
	for i, h := range hists {
		if err := h.validate(); err != nil {
			return nil, fmt.Errorf("%s %d (%q): %w", what, i, h.Type, err)
		}
		if types[h.Type] {
			return nil, fmt.Errorf("%s %d: second %s of lock type %q", what, i, what, h.Type)
		}
		types[h.Type] = true
	}
	return types, nil
}

func (m Meta) validate() error {
	if m.CPUs < 0 {
		return fmt.Errorf("cpus %d < 0", m.CPUs)
	}
	if m.DurationNS < 0 {
		return fmt.Errorf("duration_ns %d < 0", m.DurationNS)
	}
	if m.StackDepth < 0 {
		return fmt.Errorf("stack_depth %d < 0", m.StackDepth)
	}
	if m.StackDepth > MaxStackDepth {
		return fmt.Errorf("stack_depth %d, more than the %d klockstat takes", m.StackDepth, MaxStackDepth)
	}
	if m.ProgramsMeasuredEvents > m.ProgramsEvents {
		return fmt.Errorf("programs_measured_events %d, more than the %d programs_events", m.ProgramsMeasuredEvents, m.ProgramsEvents)
	}
	switch m.Scope {
	case "", ScopeCommand, ScopeSystem:
	default:
		return fmt.Errorf("scope %q: want %q, %q or none", m.Scope, ScopeCommand, ScopeSystem)
	}
	for i, u := range m.Unseen {
		if err := CheckTypeName(u.Type); err != nil {
			return fmt.Errorf("unseen_types[%d]: %w", i, err)
		}
		if err := checkStrings(nil, u.Reason); err != nil {
			return fmt.Errorf("unseen_types[%d]: %w", i, err)
		}
	}
	for i := 1; i < len(m.CommandPIDs); i++ {
		if m.CommandPIDs[i] <= m.CommandPIDs[i-1] {
			return fmt.Errorf("command_pids: %d after %d, not sorted and unique", m.CommandPIDs[i], m.CommandPIDs[i-1])
		}
	}
	return nil
}

func (r Record) validate() error {
	if err := CheckTypeName(r.Type); err != nil {
		return err
	}
	if err := checkStrings(r.Stack, r.Name, r.Comm, r.Caller, r.Cgroup, r.ObjectOffset, r.Field); err != nil {
		return err
	}
	if err := checkStrings(nil, r.FieldCandidates...); err != nil {
		return err
	}
	if len(r.FieldCandidates) > MaxFieldCandidates {
		return fmt.Errorf("%d field candidates, more than the %d klockstat takes", len(r.FieldCandidates), MaxFieldCandidates)
	}
	switch {
	case r.Count == 0 && r.HoldCount == 0:
		return errors.New("count and hold_count are 0")
	case r.Count == 0 && (r.TotalNS != 0 || r.MinNS != 0 || r.MaxNS != 0 || r.InProgress != 0):
		return fmt.Errorf("no waits, but total_ns %d, min_ns %d, max_ns %d, in_progress %d", r.TotalNS, r.MinNS, r.MaxNS, r.InProgress)
	case r.HoldCount == 0 && (r.HoldTotalNS != 0 || r.HoldMinNS != 0 || r.HoldMaxNS != 0):
		return fmt.Errorf("no holds, but hold_total_ns %d, hold_min_ns %d, hold_max_ns %d", r.HoldTotalNS, r.HoldMinNS, r.HoldMaxNS)
	case r.HoldMinNS > r.HoldMaxNS:
		return fmt.Errorf("hold_min_ns %d > hold_max_ns %d", r.HoldMinNS, r.HoldMaxNS)
	case r.HoldTotalNS < r.HoldMaxNS:
		return fmt.Errorf("hold_total_ns %d < hold_max_ns %d", r.HoldTotalNS, r.HoldMaxNS)
	case r.MinNS > r.MaxNS:
		return fmt.Errorf("min_ns %d > max_ns %d", r.MinNS, r.MaxNS)
	case r.TotalNS < r.MaxNS:
		return fmt.Errorf("total_ns %d < max_ns %d", r.TotalNS, r.MaxNS)
	case r.SpinNS > r.TotalNS:
		return fmt.Errorf("spin_ns %d > total_ns %d", r.SpinNS, r.TotalNS)
	case r.InProgress > r.Count:
		return fmt.Errorf("in_progress %d > count %d", r.InProgress, r.Count)
	}
	return nil
}

func (h Histogram) validate() error {
	if err := CheckTypeName(h.Type); err != nil {
		return err
	}
	if h.SubBucketBits != SubBucketBits {
		return fmt.Errorf("layout with %d sub-bucket bits, this klockstat reads %d", h.SubBucketBits, SubBucketBits)
	}
	var sum uint64
	for i, b := range h.Buckets {
		lo, hi := BucketBounds(BucketIndex(b.LoNS))
		if b.LoNS != lo || b.HiNS != hi {
			return fmt.Errorf("bucket %d: [%d, %d) is not a bucket of the layout", i, b.LoNS, b.HiNS)
		}
		if i > 0 && b.LoNS <= h.Buckets[i-1].LoNS {
			return fmt.Errorf("bucket %d: lo_ns %d not above the previous bucket's %d", i, b.LoNS, h.Buckets[i-1].LoNS)
		}
		if b.Count == 0 {
			return fmt.Errorf("bucket %d: count is 0", i)
		}
		if b.Count > math.MaxUint64-sum {
			return fmt.Errorf("bucket %d: bucket counts overflow", i)
		}
		sum += b.Count
	}
	if sum != h.Count {
		return fmt.Errorf("count %d != %d, the sum of bucket counts", h.Count, sum)
	}
	if h.Count == 0 {
		if h.TotalNS != 0 || h.MinNS != 0 || h.MaxNS != 0 {
			return fmt.Errorf("no waits, but total_ns %d, min_ns %d, max_ns %d", h.TotalNS, h.MinNS, h.MaxNS)
		}
		return nil
	}
	if h.MinNS > h.MaxNS {
		return fmt.Errorf("min_ns %d > max_ns %d", h.MinNS, h.MaxNS)
	}
	return nil
}

// tooManyRecords is the error for a capture of n records, over MaxRecords.
func tooManyRecords(n int) error {
	return fmt.Errorf("%d records, more than the %d klockstat reads (a capture of the whole system with --map-size over 2 million; capture fewer with -p, -t or --cgroup)", n, MaxRecords)
}

// checkStackDepth refuses a stack of n frames if it is deeper than MaxStackDepth.
func checkStackDepth(n int) error {
	if n > MaxStackDepth {
		return fmt.Errorf("a stack of %d frames, more than the %d klockstat takes", n, MaxStackDepth)
	}
	return nil
}

// checkStrings refuses a stack deeper than MaxStackDepth, and a frame of it or a string longer than
// MaxStringLen.
func checkStrings(stack []string, strings ...string) error {
	if err := checkStackDepth(len(stack)); err != nil {
		return err
	}
	for _, list := range [][]string{strings, stack} {
		for _, s := range list {
			if len(s) > MaxStringLen {
				return fmt.Errorf("a string of %d bytes, more than the %d of a capture's longest", len(s), MaxStringLen)
			}
		}
	}
	return nil
}
