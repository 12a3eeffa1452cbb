package capture

import "testing"

func TestMetaInCommand(t *testing.T) {
	m := Meta{Scope: ScopeSystem, CommandPIDs: []uint32{3, 40, 41, 900}}
	for pid, want := range map[uint32]bool{3: true, 41: true, 900: true, 1: false, 42: false, 901: false} {
		if got := m.InCommand(pid); got != want {
			t.Errorf("InCommand(%d) = %v, want %v", pid, got, want)
		}
	}
	if (Meta{}).InCommand(3) {
		t.Error("a capture without a workload holds a command's process")
	}
}
