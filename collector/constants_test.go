package collector

import (
	"testing"

	"github.com/klockstat/klockstat/lockspec"
)

// TestConstantsMatchTheBPFObject checks the limits of lockstat.h that Go
// repeats against the BPF object they were compiled into, without root.
func TestConstantsMatchTheBPFObject(t *testing.T) {
	s := typedSpecs(t)
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"MAX_LEVELS (scratch entries)", s.Scratch.MaxEntries, maxLevels},
		{"MAX_TYPES * HIST_BUCKETS (histogram entries)", s.Histogram.MaxEntries, MaxTypes * histBuckets},
		{"MAX_TYPES * HIST_BUCKETS (hold histogram entries)", s.HoldHistogram.MaxEntries, MaxTypes * histBuckets},
		{"MAX_KSTACK_SHIFTERS (kstack_shifter_lo bytes)", s.KstackShifterLo.Size(), 8 * maxKstackShifters},
		{"MAX_KSTACK_SHIFTERS (kstack_shifter_hi bytes)", s.KstackShifterHi.Size(), 8 * maxKstackShifters},
		{"MAX_KEY_SKIP (key_skip_lo bytes)", s.KeySkipLo.Size(), 8 * maxKeySkip},
		{"MAX_KEY_SKIP (key_skip_hi bytes)", s.KeySkipHi.Size(), 8 * maxKeySkip},
		{"MAX_FLAGS (flag_type bytes)", s.FlagType.Size(), 4 * lockspec.MaxFlags},
		{"MAX_CGROUP_FILTERS (cgroup_filter entries)", s.CgroupFilter.MaxEntries, MaxCgroups},
		{"CNT_MAX (counters entries)", s.Counters.MaxEntries, uint32(lockstatCounterCNT_MAX)},
	} {
		if c.got != c.want {
			t.Errorf("%s: the BPF object has %d, Go assumes %d", c.name, c.got, c.want)
		}
	}
}
