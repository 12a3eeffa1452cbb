package collector

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/capture"
)

// DefaultOwnerSampleHz is the rate lock owners are sampled at on each CPU while others wait for a
// lock they hold (--owner-sample-hz): prime, so that samples do not fall in step with the timer
// tick (100, 250, 1000 Hz) or with a workload's own period.
const DefaultOwnerSampleHz = 997

// ownerSampleEntry is one entry of the owner_samples map: samples of one owner of one lock on its
// CPU at one stack.
type ownerSampleEntry = entry[lockstatOwnerSampleKey, uint64]

// chainEntry is one entry of the owner_chains map: waits charged to one owner while it waited, by
// the end of the chain.
type chainEntry = entry[lockstatChainKey, lockstatChainStats]

// ownerSampler is the software cpu-clock perf events, one per online CPU, that run owner_sample
// (ownersample.bpf.h). A perf event with a BPF program set through its ioctl (not a BPF link,
// which needs Linux 5.15) keeps it until the event is closed: on every kernel of the matrix.
type ownerSampler struct {
	hz     int
	events []*os.File
}

// startOwnerSampler opens a cpu-clock perf event at hz on every online CPU and sets prog on it.
func startOwnerSampler(prog *ebpf.Program, hz int) (*ownerSampler, error) {
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, fmt.Errorf("counting the CPUs to sample lock owners on: %w", err)
	}
	s := &ownerSampler{hz: hz}
	for cpu := range cpus {
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: unix.PERF_COUNT_SW_CPU_CLOCK,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Sample: uint64(hz),
			Bits:   unix.PerfBitFreq | unix.PerfBitDisabled,
		}
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if errors.Is(err, unix.ENODEV) {
			continue // a possible CPU that is not online
		}
		if errors.Is(err, unix.EINVAL) {
			s.close()
			return nil, fmt.Errorf("opening a %d Hz cpu-clock perf event on CPU %d (above kernel.perf_event_max_sample_rate? lower --owner-sample-hz, or 0 for none): %w", hz, cpu, err)
		}
		if err != nil {
			s.close()
			return nil, fmt.Errorf("opening a cpu-clock perf event on CPU %d to sample lock owners (--owner-sample-hz 0 for none): %w", cpu, err)
		}
		event := os.NewFile(uintptr(fd), fmt.Sprintf("cpu-clock:%d", cpu))
		s.events = append(s.events, event)
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog.FD()); err != nil {
			s.close()
			return nil, fmt.Errorf("setting %s on the cpu-clock perf event of CPU %d: %w", prog, cpu, err)
		}
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			s.close()
			return nil, fmt.Errorf("enabling the cpu-clock perf event of CPU %d: %w", cpu, err)
		}
	}
	if len(s.events) == 0 {
		return nil, errors.New("no online CPU to sample lock owners on")
	}
	return s, nil
}

// rate is the sampler's rate, 0 for none (nil).
func (s *ownerSampler) rate() int {
	if s == nil {
		return 0
	}
	return s.hz
}

// close stops the samples; nil-safe.
func (s *ownerSampler) close() {
	if s == nil {
		return
	}
	for _, e := range s.events {
		e.Close()
	}
	s.events = nil
}

// readOwnerFacts reads the owners' samples and chains into snap, and deletes them when drained
// (a round of Rounds).
func readOwnerFacts(m *lockstatMaps, snap *snapshot, drained bool) error {
	var err error
	if drained {
		if snap.ownerSamples, err = drain[lockstatOwnerSampleKey, uint64](m.OwnerSamples); err != nil {
			return err
		}
		snap.ownerChains, err = drain[lockstatChainKey, lockstatChainStats](m.OwnerChains)
		return err
	}
	if snap.ownerSamples, err = readEntries[lockstatOwnerSampleKey, uint64](m.OwnerSamples); err != nil {
		return err
	}
	snap.ownerChains, err = readEntries[lockstatChainKey, lockstatChainStats](m.OwnerChains)
	return err
}

// ownerSamples symbolizes the owners' samples.
func (b *builder) ownerSamples(entries []ownerSampleEntry) ([]capture.OwnerSample, error) {
	var out []capture.OwnerSample
	for _, e := range entries {
		if int(e.key.Type) >= len(b.spec.Types) {
			return nil, fmt.Errorf("an owner sample of lock type %d, of %d types captured", e.key.Type, len(b.spec.Types))
		}
		stack, err := b.stack(e.key.Stack)
		if err != nil {
			return nil, err
		}
		out = append(out, capture.OwnerSample{
			Type: b.spec.Types[e.key.Type].Name, Lock: capture.Addr(e.key.Lock), TID: e.key.Tid, Stack: stack, Count: e.value,
		})
	}
	return out, nil
}

// ownerChains builds the chains of the owner_chains entries and of the waits still open at stopNS,
// charged up to then, whose owner was waiting. Threads are named after the owners and open waits
// that name them; locks later, by nameOwners.
func (b *builder) ownerChains(entries []chainEntry, open []lockstatWaitSlot, stopNS uint64, owners []capture.Owner, threadNames map[uint32]string) ([]capture.OwnerChain, error) {
	byKey := map[lockstatChainKey]int{}
	var chains []capture.OwnerChain
	add := func(k lockstatChainKey, count, inProgress, total uint64) error {
		i, ok := byKey[k]
		if !ok {
			if int(k.Type) >= len(b.spec.Types) || int(k.EndType) >= len(b.spec.Types) {
				return fmt.Errorf("a wait chain of lock types %d and %d, of %d types captured", k.Type, k.EndType, len(b.spec.Types))
			}
			i = len(chains)
			byKey[k] = i
			chains = append(chains, capture.OwnerChain{
				Type: b.spec.Types[k.Type].Name, Lock: capture.Addr(k.Lock), TID: k.Tid,
				EndType: b.spec.Types[k.EndType].Name, EndLock: capture.Addr(k.EndLock), EndTID: k.EndTid,
				Depth: int(k.Depth), Cycle: k.Cycle != 0,
			})
		}
		c := &chains[i]
		c.Count += count
		c.InProgress += inProgress
		c.TotalNS += total
		return nil
	}
	for _, e := range entries {
		if e.value.Count == 0 {
			continue // made by a charge that failed
		}
		if err := add(e.key, e.value.Count, 0, e.value.TotalNs); err != nil {
			return nil, err
		}
	}
	for _, s := range open {
		// A chain followed again while the owner stayed (chain_again) is charged since then.
		from := s.OwnerFrom
		if s.ChainFrom != 0 {
			from = s.ChainFrom
		}
		if lockstatOwnerReason(s.OwnerReason) != lockstatOwnerReasonOWNER_KNOWN || s.ChainDepth == 0 || from > stopNS {
			continue
		}
		k := lockstatChainKey{Lock: s.Lock, EndLock: s.ChainLock, Tid: s.OwnerTid, EndTid: s.ChainTid,
			Type: uint32(s.Type), EndType: uint16(s.ChainType), Depth: s.ChainDepth, Cycle: s.ChainCycle}
		if err := add(k, 1, 1, stopNS-from); err != nil {
			return nil, err
		}
	}
	names := maps.Clone(threadNames)
	if names == nil {
		names = map[uint32]string{}
	}
	// A thread's name is read as each of its entries is made, so a thread that named itself while
	// it owned locks has entries under both names: it is named after the one with the most wait.
	largest := map[uint32]uint64{}
	for _, o := range owners {
		if o.TID != 0 && o.Comm != "" && (names[o.TID] == "" || o.TotalNS > largest[o.TID]) {
			names[o.TID], largest[o.TID] = o.Comm, o.TotalNS
		}
	}
	for i := range chains {
		chains[i].Comm, chains[i].EndComm = names[chains[i].TID], names[chains[i].EndTID]
	}
	capture.SortOwnerChains(chains)
	return chains, nil
}

// sampleOwners starts sampling the owners on their CPU at hz with obj's owner_sample, unless hz is
// 0, and lists the program's run statistics on att, as those of a hook of its own (cpu-clock): its
// runs follow the clock, not contention. A kernel that refuses the perf events is a warning, not a
// failure: the owners keep the stacks they have as they leave their CPU.
func sampleOwners(hz int, obj *object, att *attachment) {
	if hz <= 0 {
		return
	}
	prog := obj.program(obj.progs.OwnerSample)
	s, err := startOwnerSampler(prog, hz)
	if err != nil {
		att.warnings = append(att.warnings, fmt.Sprintf("lock owners not sampled on their CPU: only the stacks they leave it at are known: %v", err))
		return
	}
	att.sampler = s
	att.probes = append(att.probes, probe{name: obj.progs.OwnerSample.Name, prog: prog, hook: "cpu-clock"})
}

// nameChains names the chains' locks as the records name them, as nameOwners does the owners'.
func nameChains(chains []capture.OwnerChain, records []capture.Record) {
	names := recordLockNames(records)
	for i := range chains {
		chains[i].Name, chains[i].EndName = names[chains[i].Lock], names[chains[i].EndLock]
	}
}

// MaxOwnerSampleHz bounds --owner-sample-hz below the kernel's default
// kernel.perf_event_max_sample_rate, which the kernel lowers when samples take too long.
const MaxOwnerSampleHz = 10000
