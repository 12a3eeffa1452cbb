package collector

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// mapMemoryShare is the part of the available memory the maps may take: BPF maps are kernel
// memory, never swapped, all of it allocated when the map is created. At 100 million entries the
// kernel spent over a minute allocating 22 GB, with soft lockups, before any of it was used.
const mapMemoryShare = 4 // a quarter

// checkMapMemory refuses a --map-nr-entries whose maps would take more than a quarter of the memory
// available, or more than half of what klockstat's memory cgroup allows it, before any map is
// created. Without /proc/meminfo it checks nothing. The estimate is of the largest object the
// configuration may load: the hold maps are full size only under the function-probe backends, which
// "auto" may fall back to, hence "up to".
func (c Config) checkMapMemory() error {
	avail, err := availableMemory()
	if err != nil {
		return nil
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("counting the possible CPUs: %w", err)
	}
	headroom, inCgroup := memoryCgroupHeadroom()
	return c.refuseMapMemory(cpus, avail, headroom, inCgroup)
}

// refuseMapMemory is checkMapMemory's rule for a machine of cpus possible CPUs with avail bytes
// available, and, if inCgroup, cgroupHeadroom bytes left under its memory cgroups' limits. A
// cgroup's limit is hard: maps past it are refused with ENOMEM, or get klockstat killed by the
// cgroup's OOM killer as the kernel allocates them, so the rest of the headroom is kept for
// klockstat itself (the kernel's BTF it reads takes tens of MiB), the programs and the estimate's error.
func (c Config) refuseMapMemory(cpus int, avail, cgroupHeadroom uint64, inCgroup bool) error {
	need, err := c.mapBytes(cpus)
	if err != nil {
		return err
	}
	if need > avail/mapMemoryShare {
		return fmt.Errorf("--map-nr-entries %d: the BPF maps would take up to %s of kernel memory, more than a quarter of the %s available: give a smaller --map-nr-entries",
			c.MapSize, mebibytes(need), mebibytes(avail))
	}
	if inCgroup && need > cgroupHeadroom/2 {
		fix := "raise the memory limit of klockstat's cgroup"
		// Maps of a quarter of the headroom: a capture that gives this size passes the rule
		// again, although the kernel memory of earlier runs still counts against the cgroup.
		if fit := fittingMapSize(c, cgroupHeadroom/2, cpus); fit > 0 {
			fix = fmt.Sprintf("give --map-nr-entries %d, or %s", fit, fix)
		}
		return fmt.Errorf("--map-nr-entries %d: the BPF maps would take up to %s of kernel memory, more than half of the %s klockstat's memory cgroup allows it: %s",
			c.MapSize, mebibytes(need), mebibytes(cgroupHeadroom), fix)
	}
	return nil
}

// mapBytes estimates the kernel memory of the largest object the configuration may load, on a
// machine of cpus possible CPUs.
func (c Config) mapBytes(cpus int) (uint64, error) {
	spec, err := loadLockstat()
	if err != nil {
		return 0, fmt.Errorf("reading the embedded BPF object: %w", err)
	}
	if err := configure(spec, c); err != nil {
		return 0, err
	}
	return mapMemory(spec, cpus), nil
}

// mapMemory estimates the kernel memory the maps of spec take once created, as the kernel counts
// it (htab_map_mem_usage, array_map_mem_usage): a hash map preallocates max_entries elements and
// one spare per possible CPU, each a 48-byte header with the key and the value rounded up to 8
// bytes, and a power-of-two table of 16-byte buckets; an array holds its values, once per CPU if
// per-CPU.
func mapMemory(spec *ebpf.CollectionSpec, cpus int) uint64 {
	const (
		htabElemHeader = 48
		bucketSize     = 16
	)
	var total uint64
	for _, m := range spec.Maps {
		n, key, value := uint64(m.MaxEntries), roundUp8(m.KeySize), roundUp8(m.ValueSize)
		switch m.Type {
		case ebpf.Hash, ebpf.LRUHash:
			total += (n+uint64(cpus))*(htabElemHeader+key+value) + bucketSize*nextPow2(n)
		case ebpf.PerCPUHash:
			total += (n+uint64(cpus))*(htabElemHeader+key+8+value*uint64(cpus)) + bucketSize*nextPow2(n)
		case ebpf.PerCPUArray:
			total += n * value * uint64(cpus)
		default:
			total += n * value
		}
	}
	return total
}

func roundUp8(n uint32) uint64 { return (uint64(n) + 7) &^ 7 }

// nextPow2 is the smallest power of two at or above n, at least 1.
func nextPow2(n uint64) uint64 {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len64(n-1)
}

// availableMemory reads MemAvailable from /proc/meminfo, in bytes.
func availableMemory() (uint64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	return parseMemAvailable(data)
}

// parseMemAvailable finds "MemAvailable: N kB" in the text of /proc/meminfo.
func parseMemAvailable(meminfo []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) == 3 && string(fields[0]) == "MemAvailable:" && string(fields[2]) == "kB" {
			kb, err := strconv.ParseUint(string(fields[1]), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("MemAvailable in /proc/meminfo: %w", err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no MemAvailable in /proc/meminfo")
}

// mebibytes formats a size for a message.
func mebibytes(n uint64) string {
	if n >= 10<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", (n+(1<<20)-1)>>20)
}

// mapSizeRefused turns the kernel's refusal to create a map of --map-nr-entries entries (E2BIG: too many
// entries, or entries times their size past 4 GiB) into a line about --map-nr-entries; nil when no
// backend failed for that. A program the verifier finds too large fails with E2BIG too, and is not
// a map's.
func mapSizeRefused(cfg Config, failed []backendError) error {
	for _, f := range failed {
		var ve *ebpf.VerifierError
		if errors.Is(f.err, unix.E2BIG) && !errors.As(f.err, &ve) {
			return fmt.Errorf("--map-nr-entries %d: the kernel refuses BPF maps this large (%w): give a smaller --map-nr-entries", cfg.MapSize, f.err)
		}
	}
	return nil
}

// keepHeapInCgroup sets the Go runtime's soft memory limit to what klockstat's memory cgroups leave
// it once the maps are made, so that the garbage collector, not the cgroup's OOM killer, bounds
// the heap: reading the kernel's BTF and kallsyms makes tens of MiB of garbage, which the collector
// would otherwise let grow to twice the live heap. Outside a memory cgroup it does nothing.
func (c Config) keepHeapInCgroup() {
	headroom, inCgroup := memoryCgroupHeadroom()
	if !inCgroup {
		return
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return
	}
	need, err := c.mapBytes(cpus)
	if err != nil || need >= headroom {
		return
	}
	// The headroom is what the cgroup allows beyond what klockstat uses now, its own memory among it.
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	limit := int64(headroom-need) + int64(m.Sys-m.HeapReleased)
	if limit < debug.SetMemoryLimit(-1) {
		debug.SetMemoryLimit(limit)
	}
}
