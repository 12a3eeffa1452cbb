package collector

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/internal/testenv"
)

// TestMapMemoryMatchesKernel creates the maps of a configured object and compares the estimate
// with the memory the kernel charges for each (the memlock of its fdinfo).
func TestMapMemoryMatchesKernel(t *testing.T) {
	testenv.RequireRoot(t)
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	for _, depth := range []int{16, MaxStackDepth} {
		spec, err := loadLockstat()
		if err != nil {
			t.Fatal(err)
		}
		if err := configure(spec, Config{Spec: loadSpec(t), StackDepth: depth, MapSize: 100_000}); err != nil {
			t.Fatal(err)
		}
		for name, ms := range spec.Maps {
			if ms.MaxEntries < 100_000 {
				continue // the fixed maps: a few pages each, rounded differently by each kernel
			}
			m, err := ebpf.NewMap(ms)
			if err != nil {
				t.Fatalf("creating map %s: %v", name, err)
			}
			info, err := m.Info()
			m.Close()
			if err != nil {
				t.Fatal(err)
			}
			charged, ok := info.Memlock()
			if !ok {
				t.Fatalf("map %s: the kernel reports no memlock", name)
			}
			est := mapMemory(&ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{name: ms}}, cpus)
			// Kernels before 6.4 (6.1 in tests/vm) charge only entries times key and value, in
			// whole pages: less than they allocate, and less than the estimate.
			page := uint64(os.Getpagesize())
			if old := (uint64(ms.MaxEntries)*roundUp8(ms.KeySize+ms.ValueSize) + page - 1) / page * page; charged == old {
				if est < charged {
					t.Errorf("depth %d, map %s: estimated %d bytes, under the %d the kernel charges", depth, name, est, charged)
				}
				continue
			}
			if est < charged*9/10 || est > charged*11/10 {
				t.Errorf("depth %d, map %s: estimated %d bytes, the kernel charges %d", depth, name, est, charged)
			}
		}
	}
}

func TestParseMemAvailable(t *testing.T) {
	meminfo := "MemTotal:       32812344 kB\nMemFree:         1234567 kB\nMemAvailable:   23964908 kB\nBuffers:          123 kB\n"
	got, err := parseMemAvailable([]byte(meminfo))
	if err != nil || got != 23964908<<10 {
		t.Errorf("parseMemAvailable = %d, %v; want %d", got, err, uint64(23964908)<<10)
	}
	for _, bad := range []string{"", "MemTotal: 1 kB\n", "MemAvailable: lots kB\n"} {
		if _, err := parseMemAvailable([]byte(bad)); err == nil {
			t.Errorf("parseMemAvailable(%q) succeeded", bad)
		}
	}
}

// TestMapSizeRefused checks that the kernel's E2BIG on creating a map reads as a line about
// --map-nr-entries, and that a program too large for the verifier, also E2BIG, does not.
func TestMapSizeRefused(t *testing.T) {
	cfg := Config{MapSize: 4_000_000_000}
	mapErr := backendError{"rawtp", fmt.Errorf("loading BPF programs: map stacks: map create: %w", unix.E2BIG)}
	err := mapSizeRefused(cfg, []backendError{{"tp_btf", errors.New("no BTF")}, mapErr})
	if err == nil || !strings.HasPrefix(err.Error(), "--map-nr-entries 4000000000: the kernel refuses BPF maps this large") {
		t.Errorf("mapSizeRefused = %v, want a line about --map-nr-entries", err)
	}
	progErr := backendError{"rawtp", fmt.Errorf("loading BPF programs: %w", &ebpf.VerifierError{Cause: unix.E2BIG})}
	if err := mapSizeRefused(cfg, []backendError{progErr}); err != nil {
		t.Errorf("a program too large read as a map too large: %v", err)
	}
}
