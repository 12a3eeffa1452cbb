package collector

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// maxStackDepth is the verifier's bound on the BPF stack of a program and the functions it calls
// (MAX_BPF_STACK), each frame rounded up to stackFrameAlign.
const (
	maxStackDepth   = 512
	stackFrameAlign = 32
)

// TestStackDepthWithinVerifierLimit checks, without a kernel, what the verifier checks as it
// loads a program: its stack and that of the deepest bpf_loop callback it passes add up, frame by
// frame rounded to 32 bytes, to at most 512. Only kernels with the function-probe backends load
// the programs that come nearest, and this host has none: 6.1's verifier refused them at 544.
func TestStackDepthWithinVerifierLimit(t *testing.T) {
	for name, load := range map[string]func() (*ebpf.CollectionSpec, error){
		"lockstat": loadLockstat,
		"delay":    loadDelay,
		"names":    loadNames,
	} {
		spec, err := load()
		if err != nil {
			t.Fatalf("loading the %s collection spec: %v", name, err)
		}
		for _, p := range spec.Programs {
			depth := programStackDepth(p.Instructions)
			t.Logf("%s/%s: %d bytes", name, p.Name, depth)
			if depth > maxStackDepth {
				t.Errorf("%s/%s: a stack of %d bytes with its callees, past the verifier's %d", name, p.Name, depth, maxStackDepth)
			}
		}
	}
}

// programStackDepth is the stack of the program in insns with its deepest callee's, as the
// verifier counts it. insns holds the program, then the functions it references, each starting
// at an instruction that carries the function's symbol.
func programStackDepth(insns asm.Instructions) int {
	frames := map[string]int{}
	var order []string
	current := ""
	// Registers holding the frame pointer: a pointer to the stack passed to a helper is made by
	// copying it and adding a negative offset.
	fpCopies := map[asm.Register]bool{}
	for _, ins := range insns {
		if sym := ins.Symbol(); sym != "" {
			current = sym
			order = append(order, sym)
			clear(fpCopies)
		}
		depth := 0
		switch {
		case (ins.OpCode.Class().IsLoad() || ins.OpCode.Class().IsStore()) && (ins.Src == asm.RFP || ins.Dst == asm.RFP):
			depth = -int(ins.Offset)
		case ins.OpCode.ALUOp() == asm.Add && ins.OpCode.Source() == asm.ImmSource && fpCopies[ins.Dst]:
			depth = -int(ins.Constant)
		}
		frames[current] = max(frames[current], depth)
		if ins.OpCode.Class().IsALU() || ins.OpCode.Class().IsLoad() {
			fpCopies[ins.Dst] = ins.OpCode.ALUOp() == asm.Mov && ins.OpCode.Source() == asm.RegSource && ins.Src == asm.RFP
		}
	}
	frame := func(n int) int { return (max(n, 1) + stackFrameAlign - 1) / stackFrameAlign * stackFrameAlign }
	if len(order) == 0 {
		return 0
	}
	deepest := 0
	for _, callee := range order[1:] {
		deepest = max(deepest, frame(frames[callee]))
	}
	return frame(frames[order[0]]) + deepest
}
