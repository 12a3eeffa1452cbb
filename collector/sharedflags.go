package collector

import (
	"fmt"

	"github.com/klockstat/klockstat/lockspec"
)

// maxSharedFuncs is MAX_SHARED_FUNCS in lockstat.h.
const maxSharedFuncs = 64

// sharedFlagVariables hands the begin programs the functions that tell
// apart lock types sharing contention_begin flags (shared_flags.bpf.h): the
// code of each that this kernel has, the flags value it decides, the type
// it means and whether it is an internal function. An internal function
// several files include has several copies: each type gets the one closest
// to its own acquire functions. Functions the kernel lacks are left out;
// without symbols none is found, and such waits keep the first claimant's
// type.
func sharedFlagVariables(k *kernel, s *lockstatSpecs, spec *lockspec.Spec) ([]variable, error) {
	discriminators := spec.Discriminators()
	if len(discriminators) == 0 {
		return nil, nil
	}
	var (
		shared        [lockspec.MaxFlags]bool
		lo, hi        [maxSharedFuncs]uint64
		flags         [maxSharedFuncs]uint32
		types         [maxSharedFuncs]int32
		internal      [maxSharedFuncs]bool
		n             int
		ksyms, symErr = k.symbols()
		acquireAt     = map[string]uint64{} // type name -> one of its acquire functions
	)
	for _, d := range discriminators {
		shared[d.Flags] = true
		if symErr != nil {
			continue
		}
		var (
			l, h uint64
			ok   bool
		)
		if d.Internal {
			near, known := acquireAt[d.TypeName]
			if !known {
				continue
			}
			l, h, ok = ksyms.FuncBoundsNear(d.Function, near)
		} else {
			l, h, ok = ksyms.FuncBounds(d.Function)
			if ok {
				acquireAt[d.TypeName] = l
			}
		}
		if !ok {
			continue
		}
		if n == maxSharedFuncs {
			return nil, fmt.Errorf("%s: more than %d acquire and internal functions of types that share flags exist in this kernel (fewer types sharing flags, or fewer functions)", spec.Source, maxSharedFuncs)
		}
		lo[n], hi[n], flags[n], types[n], internal[n] = l, h, uint32(d.Flags), d.Type, d.Internal
		n++
	}
	return []variable{
		{s.FlagShared, shared}, {s.SharedFnLo, lo}, {s.SharedFnHi, hi},
		{s.SharedFnFlags, flags}, {s.SharedFnType, types}, {s.SharedFnInternal, internal},
	}, nil
}
