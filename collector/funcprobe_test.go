package collector

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// TestWalkProgramsCallNoLoop checks what lets the function probes load
// before Linux 5.17: the return programs they use there call no bpf_loop
// and reference no callback (a kernel without bpf_loop does not count a
// callback as a subprogram and refuses the program).
func TestWalkProgramsCallNoLoop(t *testing.T) {
	s := typedSpecs(t)
	for _, ps := range []*ebpf.ProgramSpec{s.FexitAcquireWalk, s.KretprobeAcquireWalk} {
		n := 0
		for _, ins := range ps.Instructions {
			if ins.IsBuiltinCall() && ins.Constant == int64(asm.FnLoop) || ins.IsLoadOfFunctionPointer() {
				n++
			}
		}
		if n != 0 {
			t.Errorf("%s: %d bpf_loop calls or callback references, want none", ps.Name, n)
		}
	}
}

// typedSpecs returns the embedded BPF object's specs, as bpf2go typed them.
func typedSpecs(t *testing.T) *lockstatSpecs {
	t.Helper()
	spec, err := loadLockstat()
	if err != nil {
		t.Fatal(err)
	}
	s, err := specsOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
