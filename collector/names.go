package collector

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// lockNames names locks the programs left unnamed, from the kernel's objects as they are at the
// end of the capture (names.bpf.c): another process's mmap_lock or siglock, a CPU's runqueue
// lock, a memory zone's lock, a node's LRU lock. It returns the names it found by address, and
// warnings for what this kernel cannot name, the kernel's refusal of the naming program among
// them; an error means the names could not be looked up at all.
func (k *kernel) lockNames(addrs []uint64) (map[uint64]string, []string, error) {
	p, err := k.loadNamer(len(addrs))
	if err != nil {
		return nil, nil, err
	}
	defer p.close()
	return p.lockNames(addrs)
}

// namerProgs is the lock-naming program loaded, for up to capacity locks a capture; or, where
// the kernel refused it, the refusal, which names nothing and says why once a capture.
type namerProgs struct {
	objs     namesObjects
	capacity int
	refused  error
	warnings []string // what this kernel cannot name
}

// loadNamer loads the lock-naming program for captures of up to capacity locks to name. A
// kernel that refuses it is not an error: the capture goes on without those names and says so.
func (k *kernel) loadNamer(capacity int) (*namerProgs, error) {
	spec, err := loadNames()
	if err != nil {
		return nil, fmt.Errorf("reading the embedded BPF object: %w", err)
	}
	return k.loadNamerSpec(spec, capacity)
}

// loadNamerSpec is loadNamer of an object read already: a test gives one the kernel refuses.
func (k *kernel) loadNamerSpec(spec *ebpf.CollectionSpec, capacity int) (*namerProgs, error) {
	types, err := k.types()
	if err != nil {
		return nil, err
	}
	p := &namerProgs{capacity: capacity, warnings: k.namingWarnings(types)}
	var specs namesSpecs
	if err := spec.Assign(&specs); err != nil {
		return nil, fmt.Errorf("BPF object does not match its generated code (stale? run go generate ./...): %w", err)
	}
	specs.Labels.MaxEntries = uint32(capacity)
	opts := &ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{KernelTypes: types}}
	if err := spec.LoadAndAssign(&p.objs, opts); err != nil {
		// The process's limits are not the kernel's refusal: they say so as they are.
		if errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) || errors.Is(err, unix.ENOMEM) {
			return nil, fmt.Errorf("loading the lock-naming program: %w", err)
		}
		p.refused = refusal(specs.NameTaskLocks, err)
	}
	return p, nil
}

// namingWarnings says which locks this kernel's objects cannot name, whether or not the naming
// program loads.
func (k *kernel) namingWarnings(types *btf.Spec) []string {
	var warnings []string
	if ok, err := hasBTF[*btf.Struct](k, "cfs_rq"); err == nil && ok {
		var rq *btf.Struct
		if err := types.TypeByName("cfs_rq", &rq); err == nil && !hasMember(rq, "rq") {
			warnings = append(warnings, "runqueue locks are not named: the kernel was built without CONFIG_FAIR_GROUP_SCHED")
		}
	}
	if ok, err := hasBTF[*btf.Struct](k, "mem_cgroup_per_node"); err == nil && !ok {
		warnings = append(warnings, "memory zone and LRU locks are not named: the kernel was built without CONFIG_MEMCG, through which they are found")
	}
	if ok, err := hasBTF[*btf.Func](k, "bpf_get_kmem_cache"); err != nil || !ok {
		warnings = append(warnings, "slab-allocated locks are not named by their cache: the kernel lacks the bpf_get_kmem_cache kfunc (Linux 6.13)")
	}
	return warnings
}

// refusal is the one line that says a program the kernel would not load, and its answer: the
// errno where there is one, not the verifier's log, which says nothing to a user of klockstat (a
// bug report wants it: KLOCKSTAT_VERIFIER_LOG=1 prints it to standard error).
func refusal(prog *ebpf.ProgramSpec, err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) && os.Getenv("KLOCKSTAT_VERIFIER_LOG") == "1" {
		fmt.Fprintf(os.Stderr, "klockstat: verifier log of %s:\n%+v\n", prog.Name, ve)
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		err = errno
	} else if errors.As(err, &ve) {
		err = ve.Cause
	}
	return fmt.Errorf("the kernel refused the program %s (%s): %w", prog.Name, prog.SectionName, err)
}

func (p *namerProgs) close() { p.objs.Close() }

// lockNames names up to p.capacity locks, as kernel.lockNames does, and leaves the labels map
// empty for the next capture's.
func (p *namerProgs) lockNames(addrs []uint64) (map[uint64]string, []string, error) {
	if p.refused != nil {
		return nil, append(slices.Clip(p.warnings), fmt.Sprintf("locks of other processes, runqueues and memory zones are not named: %v", p.refused)), nil
	}
	labels := p.objs.Labels
	defer func() {
		for _, a := range addrs {
			labels.Delete(a) // absent if the Put below failed
		}
	}()
	for _, a := range addrs {
		if err := labels.Put(a, namesLockLabel{}); err != nil {
			return nil, nil, fmt.Errorf("storing lock %#x to name: %w", a, err)
		}
	}
	if err := runIter(link.IterOptions{Program: p.objs.NameTaskLocks}); err != nil {
		return nil, nil, fmt.Errorf("naming the locks of processes: %w", err)
	}

	names := map[uint64]string{}
	var (
		addr  uint64
		label namesLockLabel
	)
	it := labels.Iterate()
	for it.Next(&addr, &label) {
		if name := label.name(); name != "" {
			names[addr] = name
		}
	}
	if err := it.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading the lock names: %w", err)
	}
	return names, p.warnings, nil
}

// keptNamer names locks as kernel.lockNames does for one capture after another (the rounds of a
// sweep), with the programs loaded once, or again when a capture has more locks to name than
// they have room for: the verifier takes most of a load, which a sweep would pay every run.
type keptNamer struct {
	*kernel // names slab fields as for any capture
	progs   *namerProgs
}

func (n *keptNamer) lockNames(addrs []uint64) (map[uint64]string, []string, error) {
	if n.progs == nil || n.progs.capacity < len(addrs) {
		n.close()
		// Room for twice the locks: the captures of a sweep grow with its levels.
		progs, err := n.loadNamer(max(2*len(addrs), minKeptLabels))
		if err != nil {
			return nil, nil, err
		}
		n.progs = progs
	}
	return n.progs.lockNames(addrs)
}

// minKeptLabels is the least room a kept namer has, so that small captures do not reload it.
const minKeptLabels = 1024

// close unloads the programs; they load again at the next capture.
func (n *keptNamer) close() {
	if n.progs != nil {
		n.progs.close()
		n.progs = nil
	}
}

// name is how a label reads in the capture: a CPU's rq_lock, a zone's or node's lock, or the
// lock of a process named by its command.
func (l namesLockLabel) name() string {
	text := cString(l.Text[:])
	switch l.Kind {
	case namesLabelKindLABEL_RQ:
		return fmt.Sprintf("rq_lock (CPU %d)", l.Id)
	case namesLabelKindLABEL_MMAP:
		return fmt.Sprintf("mmap_lock (%s)", text)
	case namesLabelKindLABEL_SIGHAND:
		return fmt.Sprintf("siglock (%s)", text)
	case namesLabelKindLABEL_ZONE:
		return "zone_lock (" + nodeText(l.Id) + text + ")"
	case namesLabelKindLABEL_LRU:
		if l.Id > 0 {
			return fmt.Sprintf("lru_lock (node %d)", l.Id)
		}
		return "lru_lock"
	}
	return ""
}

// nodeText names a NUMA node before a zone's name, "" for node 0: most machines have no other.
func nodeText(node uint32) string {
	if node == 0 {
		return ""
	}
	return fmt.Sprintf("node %d ", node)
}

// hasMember reports whether a struct has a member of that name.
func hasMember(s *btf.Struct, name string) bool {
	for _, m := range s.Members {
		if m.Name == name {
			return true
		}
	}
	return false
}

// runIter runs a BPF iterator to its end.
func runIter(opts link.IterOptions) error {
	l, err := link.AttachIter(opts)
	if err != nil {
		return err
	}
	defer l.Close()
	r, err := l.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(io.Discard, r)
	return err
}
