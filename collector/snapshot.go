package collector

import (
	"time"

	"github.com/klockstat/klockstat/capture"
)

// snapshot is what the BPF maps and the system held when the probes
// stopped, as plain values: Stop reads it (read.go), and assemble turns it
// into a capture without touching the kernel, so that the arithmetic of
// the read-out is tested from fixed snapshots.
type snapshot struct {
	// stopNS is CLOCK_MONOTONIC when the probes stopped: waits still
	// open are charged up to it.
	stopNS   uint64
	duration time.Duration // the capture's window

	counters      [lockstatCounterCNT_MAX]uint64 // summed over the CPUs
	waits         []aggregateEntry               // the aggregate map
	holds         []aggregateEntry               // the hold aggregate map; none for tracepoint backends
	histogram     [][]uint64                     // per lock type, the buckets of capture.NumBuckets
	holdHistogram [][]uint64                     // likewise; nil for tracepoint backends
	threadWaits   []lockstatWaitSlot             // the per-thread wait map's slots
	spinWaits     []lockstatCpuWaits             // the per-CPU waits, one per possible CPU
	// threadNames names the threads of the waits still open (openWaits)
	// by thread id: the kernel writes a thread's name when a wait ends.
	threadNames map[uint32]string
	owners      []ownerEntry // the owners map; none without --owners
	// ownerSamples and ownerChains are the owner_samples and owner_chains maps; none without
	// --owners.
	ownerSamples []ownerSampleEntry
	ownerChains  []chainEntry
	// stacks holds the frames' addresses of every stack an entry above
	// refers to, by stack id: zero-padded to the stack map's value size.
	stacks   map[uint64][]uint64
	programs []capture.ProgramStats // one per attached program, in attach order
	// commandPIDs are the tgids of the workload's process tree, in the map's order; none
	// without a workload.
	commandPIDs []uint32
	tree        treeStats // the threads of the tree
	// slabNames are the slab caches of the locks inside slab objects, by lock address, as the
	// programs named them at the locks' first records (slabname.bpf.h).
	slabNames map[uint64]string
	timeline  *capture.Timeline
	// mapSizes are the entries of the maps the capture lists, owners
	// included, under the names the capture lists them by.
	mapSizes map[string]uint32
	// cgroups lists the cgroup hierarchy at the end, to name the records'
	// cgroups by (cgroupPaths.name).
	cgroups cgroupListing
}

// entry is one entry of a hash map.
type entry[K, V any] struct {
	key   K
	value V
}

// aggregateEntry is one entry of an aggregation map: waits or holds of a
// thread on a lock from one stack.
type aggregateEntry = entry[lockstatWaitKey, lockstatWaitStats]

// ownerEntry is one entry of the owners map: waits charged to a lock's
// owner.
type ownerEntry = entry[lockstatOwnerKey, lockstatOwnerStats]

// openWaits returns the wait slots still open at stopNS, of the threads
// and of the CPUs' spinning waits: taken, begun no later than stopNS, and
// not marked to be skipped.
func openWaits(threads []lockstatWaitSlot, spins []lockstatCpuWaits, stopNS uint64) []lockstatWaitSlot {
	var open []lockstatWaitSlot
	take := func(s lockstatWaitSlot) {
		if s.Lock != 0 && s.Skip == 0 && s.Ts != 0 && s.Ts <= stopNS {
			open = append(open, s)
		}
	}
	for _, s := range threads {
		take(s)
	}
	for _, cw := range spins {
		for i := 0; i < int(cw.Depth) && i < len(cw.Slot); i++ {
			take(cw.Slot[i])
		}
	}
	return open
}

// treeStats are the processes and threads the workload's tree ran over a capture or round.
type treeStats struct {
	processes, threads uint64 // processes added, threads that ran
	threadNS           uint64 // their time alive, summed
}
