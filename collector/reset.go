package collector

import (
	"errors"
	"fmt"
	"time"

	"github.com/cilium/ebpf"

	"github.com/klockstat/klockstat/capture"
)

// Rounds cuts one attached collector's capture into rounds, one per run of a
// sweep (`klockstat scale`): the probes are loaded and attached once, and
// between rounds the maps are read and cleared instead of detached.
//
// The aggregation maps (waits, holds, owners) are drained entry by entry
// with lookup-and-delete, so an update racing the drain lands in this round
// or the next, never in both. The per-CPU arrays (counters, histograms)
// and the programs' run statistics cannot be cleared without losing
// concurrent increments: a round is their difference from the values at
// its start, the programs' statistics counted in the parts of the
// capture's windows (runStats) that fell in the round. A round has no
// timeline (the collector's timeline spans the whole sweep and stops
// growing when Rounds starts), and a wait still open when a round ends is
// counted in the round where it ends.
type Rounds struct {
	c     *Collector
	start time.Time  // of the current round
	base  cumulative // the cumulative sources at its start
	names *keptNamer // loaded at the first round with locks to name, kept for the next
}

// Rounds stops the collector's timeline and returns its capture cut into
// rounds; Stop must not be called on c afterwards. Close the rounds, then c.
func (c *Collector) Rounds() (*Rounds, error) {
	if err := c.timeline.stopGrowing(); err != nil {
		return nil, err
	}
	return &Rounds{c: c, names: &keptNamer{kernel: c.obj.kernel}}, nil
}

// Close unloads what the rounds kept loaded between them: the lock-naming
// programs. The collector stays attached.
func (r *Rounds) Close() {
	r.names.close()
}

// Begin starts a round: what the probes aggregated since the previous
// round (klockstat's own work between runs, other processes) is dropped.
//
// The cumulative sources are read before the aggregation maps are drained,
// and End reads them after: the probes add a wait to its aggregate before
// its histogram, so a wait ending at either boundary is in the round's
// histogram whenever it is in the round's records, and a record's type
// always has a histogram.
func (r *Rounds) Begin() error {
	base, err := r.c.readCumulative()
	if err != nil {
		return err
	}
	// A lock is named at its first record (slabname.bpf.h): its name goes with the records, or
	// memory freed and reused by another cache since would keep the first cache's name. Names
	// first, so that a record made between the two keeps its own.
	if _, err := drain[uint64, lockstatSlabName](r.c.obj.maps.SlabNames); err != nil {
		return err
	}
	if err := r.c.readAggregates(&snapshot{}, true); err != nil {
		return err
	}
	if err := r.c.forgetExitedTree(); err != nil {
		return err
	}
	r.base = base
	r.start = time.Now()
	return nil
}

// End ends the round begun by Begin and returns its capture, as Stop would
// have returned it for a collector started at Begin: host, command-line and
// tool fields of the metadata are left to the caller.
func (r *Rounds) End() (*capture.Capture, error) {
	stopNS, err := monotonicNow()
	if err != nil {
		return nil, err
	}
	snap := snapshot{stopNS: stopNS, duration: time.Since(r.start)}
	stats, err := r.c.read(&snap, &r.base)
	if err != nil {
		return nil, err
	}
	in := r.c.assembly(r.start, stats)
	in.locks = r.names
	return assemble(snap, in)
}

// treeExited is TREE_EXITED in tree.bpf.h: a process of the workload's tree that has exited.
const treeExited = 2

// forgetExitedTree deletes the exited processes from the workload's tree, so that a round's
// command_pids are the processes of its own command and those still alive from before.
func (c *Collector) forgetExitedTree() error {
	if c.cfg.Scope == "" {
		return nil
	}
	m := c.obj.maps.CommandTree
	entries, err := readEntries[uint32, uint8](m)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.value != treeExited {
			continue
		}
		if err := m.Delete(e.key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("clearing the map %s: %w", m, err)
		}
	}
	return nil
}

// drain reads and deletes every entry of a hash map. The keys are listed
// first: deleting while iterating would restart the iteration.
func drain[K comparable, V any](m *ebpf.Map) ([]entry[K, V], error) {
	listed, err := readEntries[K, V](m)
	if err != nil {
		return nil, err
	}
	out := listed[:0]
	for _, e := range listed {
		err := m.LookupAndDelete(e.key, &e.value)
		if errors.Is(err, ebpf.ErrNotSupported) {
			// Linux before 5.14 has no lookup-and-delete for hash maps: the listed value, and
			// what was added to it since, lost.
			err = m.Delete(e.key)
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			continue // gone since it was listed: a thread's entry freed as it exited
		}
		if err != nil {
			return nil, fmt.Errorf("clearing the map %s: %w", m, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// drainOwners reads and deletes the owners' entries that have waits: an
// entry without is an owner whose wait began and has not ended, which its
// end looks up.
func drainOwners(m *ebpf.Map) ([]ownerEntry, error) {
	listed, err := readEntries[lockstatOwnerKey, lockstatOwnerStats](m)
	if err != nil {
		return nil, err
	}
	var out []ownerEntry
	for _, e := range listed {
		if e.value.Count == 0 {
			continue
		}
		if err := m.Delete(e.key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil, fmt.Errorf("clearing the map %s: %w", m, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// since is what the cumulative sources gained from base to now.
func (now cumulative) since(base cumulative) cumulative {
	out := cumulative{
		histogram:     subtractBuckets(now.histogram, base.histogram),
		holdHistogram: subtractBuckets(now.holdHistogram, base.holdHistogram),
		programs:      subtractPrograms(now.programs, base.programs),
		stats:         now.stats.since(base.stats),
	}
	for i := range now.counters {
		out.counters[i] = now.counters[i] - base.counters[i]
	}
	return out
}

// subtractBuckets is now - base, bucket by bucket; nil when now is.
func subtractBuckets(now, base [][]uint64) [][]uint64 {
	if now == nil {
		return nil
	}
	out := make([][]uint64, len(now))
	for i := range now {
		out[i] = make([]uint64, len(now[i]))
		for j := range now[i] {
			out[i][j] = now[i][j] - base[i][j]
		}
	}
	return out
}

// subtractPrograms is the programs' run statistics since base, which lists
// the same programs in the same order.
func subtractPrograms(now, base []capture.ProgramStats) []capture.ProgramStats {
	out := make([]capture.ProgramStats, len(now))
	for i, p := range now {
		b := base[i]
		p.RunCount -= b.RunCount
		p.RunTimeNS -= b.RunTimeNS
		p.RecursionMisses -= b.RecursionMisses
		out[i] = p
	}
	return out
}

// mapSizes are the entries of the maps a capture lists, under the names it
// lists them by.
func (c *Collector) mapSizes() map[string]uint32 {
	maps := &c.obj.maps
	sizes := map[string]uint32{
		"aggregate":    maps.Aggregate.MaxEntries(),
		"stacks":       maps.Stacks.MaxEntries(),
		"thread_waits": maps.ThreadWaits.MaxEntries(),
		"owners":       maps.Owners.MaxEntries(),
		"slab_names":   maps.SlabNames.MaxEntries(),
	}
	if c.cfg.Scope != "" {
		sizes["command_tree"] = maps.CommandTree.MaxEntries()
		sizes["tree_threads"] = maps.TreeThreads.MaxEntries()
	}
	return sizes
}
