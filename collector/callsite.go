package collector

import (
	"fmt"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/kallsyms"
)

// CallSite is the address in the running kernel of a frame as a capture writes it: a vmlinux
// function and offset ("do_renameat2+0x221"), which name the same call site in another boot, or a
// raw address, taken as of this boot. A frame in a module or hashed cannot be placed.
func CallSite(tab *kallsyms.Table, frame string) (uint64, error) {
	f := capture.ParseFrame(frame)
	switch {
	case f.Kind == capture.FrameAddress:
		return uint64(f.Address), nil
	case f.Kind != capture.FrameSymbol:
		return 0, fmt.Errorf("frame %q: neither a function and offset nor an address", frame)
	case f.Module != "":
		return 0, fmt.Errorf("frame %q: in module %s, which klockstat cannot place", frame, f.Module)
	}
	lo, hi, ok := tab.FuncBounds(f.Function)
	if !ok {
		return 0, fmt.Errorf("frame %q: no function %s in /proc/kallsyms (another kernel, or addresses hidden by kernel.kptr_restrict)", frame, f.Function)
	}
	if lo+f.Offset >= hi {
		return 0, fmt.Errorf("frame %q: offset past the end of %s in this kernel (another build)", frame, f.Function)
	}
	return lo + f.Offset, nil
}
