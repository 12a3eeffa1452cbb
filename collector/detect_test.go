package collector

import (
	"testing"

	"github.com/klockstat/klockstat/internal/testenv"
	"github.com/klockstat/klockstat/kallsyms"
)

// TestCodeBounds checks the code ranges the loader gives the programs on
// the running kernel: every architecture we build for enters syscalls
// through one of kstackShifters, and a kernel with the contention
// tracepoints has both their iterators, which run once a second program is
// attached (the rescue copies) and must not take a caller's place in the
// keys of known paths; every kernel we support has percpu rwsems, whose
// writers' paths are found by percpu_down_write's code.
func TestCodeBounds(t *testing.T) {
	testenv.RequireRoot(t)
	k := &kernel{}
	ksyms, err := k.symbols()
	if err != nil {
		t.Fatal(err)
	}
	shiftLo, shiftHi := k.kstackShifterBounds()
	skipLo, skipHi := k.keySkipBounds()
	pdwLo, pdwHi := k.percpuDownWriteBounds()
	for _, tc := range []struct {
		name        string
		names       []string
		lo, hi      []uint64
		want        int  // found at least
		tracepoints bool // only kernels with the contention tracepoints have them
	}{
		{"kstack shifters", kstackShifters, shiftLo[:], shiftHi[:], 1, false},
		{"tracepoint machinery", keySkipped, skipLo[:], skipHi[:], 2, true},
		{"percpu rwsem writer", []string{"percpu_down_write"}, []uint64{pdwLo}, []uint64{pdwHi}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, ok := ksyms.FuncBounds("__traceiter_contention_begin"); !ok && tc.tracepoints {
				t.Skip("no contention tracepoints in this kernel")
			}
			found := 0
			for i := range tc.lo {
				if tc.lo[i] == 0 {
					continue
				}
				found++
				if tc.lo[i] > tc.hi[i] || tc.hi[i]-tc.lo[i] > kallsyms.MaxSymbolSize {
					t.Errorf("%d: [%#x, %#x) is not a function", i, tc.lo[i], tc.hi[i])
				}
			}
			if found < tc.want {
				t.Errorf("found %d of %v, want at least %d", found, tc.names, tc.want)
			}
		})
	}
}

// TestCountsSkippedRuns checks where the perf-event and kprobe backends warn
// that the kernel skips their programs uncounted: releases before 6.7, and
// those it cannot read.
func TestCountsSkippedRuns(t *testing.T) {
	for release, want := range map[string]bool{
		"5.10.0-32-cloud-amd64":      false,
		"6.1.0-56-rt-amd64":          false,
		"6.6.63":                     false,
		"6.7.0":                      true,
		"6.12.117+deb12-cloud-amd64": true,
		"6.18.44":                    true,
		"7.0-rc1":                    true,
		"":                           false,
		"linux":                      false,
	} {
		if got := countsSkippedRuns(release); got != want {
			t.Errorf("countsSkippedRuns(%q) = %v, want %v", release, got, want)
		}
	}
}
