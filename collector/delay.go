package collector

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"

	"github.com/klockstat/klockstat/lockspec"
	"github.com/klockstat/klockstat/whatif"
)

// The bounds delay.bpf.c enforces on `klockstat whatif`'s delays, whatever it is asked: one delay
// at most MaxDelayNS, at most MaxBudgetNS added per CPU in a second.
const (
	MaxDelayNS  = uint64(delayDelayLimitsDELAY_MAX_NS)
	MaxBudgetNS = uint64(delayDelayLimitsDELAY_BUDGET_MAX_NS)
)

// DelayConfig chooses the contended acquisitions a Delay lengthens: those of a lock in Locks (any
// lock when empty) by a waiter whose kernel stack holds a return address of Callers (any stack
// when empty).
type DelayConfig struct {
	Locks   []uint64
	Callers []uint64
	// BudgetNS bounds the time added per CPU in a second of ktime, at most MaxBudgetNS (the
	// default, 0).
	BudgetNS uint64
	// AllowSpin lets the delay run on a spinning lock (spinlock, rwlock), with interrupts perhaps
	// off; without it those acquisitions are counted and left alone.
	AllowSpin bool
	// UnlockedOnly leaves alone a mutex acquired after sleeping, whose contention_end runs with
	// the mutex's wait_lock held and interrupts off (see delay.bpf.c).
	UnlockedOnly bool
	// Flags are the contention_begin flags of the chosen lock's type: the waits of other types
	// are not followed (any type when empty).
	Flags []lockspec.Flag
}

// flagMask is a bit per flags value of flags, every bit without any.
func flagMask(flags []lockspec.Flag) (uint64, error) {
	if len(flags) == 0 {
		return ^uint64(0), nil
	}
	var m uint64
	for _, f := range flags {
		if f >= lockspec.MaxFlags {
			return 0, fmt.Errorf("delay: flags %v past the %d the kernel program tells apart", f, lockspec.MaxFlags)
		}
		m |= 1 << f
	}
	return m, nil
}

// Delay is the attached delay program of `klockstat whatif`. It adds nothing until SetDelay;
// Close detaches it.
type Delay struct {
	maps  delayMaps
	vars  delayVariables
	progs []*ebpf.Program
	links []link.Link
}

// delayBTF and delayRaw are the delay object with the programs of one kind of hook: a kernel
// without tp_btf refuses to load its programs.
type delayBTF struct {
	delayMaps
	delayVariables
	Begin  *ebpf.Program `ebpf:"whatif_begin"`
	End    *ebpf.Program `ebpf:"whatif_end"`
	Waking *ebpf.Program `ebpf:"whatif_waking"`
}

type delayRaw struct {
	delayMaps
	delayVariables
	Begin  *ebpf.Program `ebpf:"whatif_rbegin"`
	End    *ebpf.Program `ebpf:"whatif_rend"`
	Waking *ebpf.Program `ebpf:"whatif_rwaking"`
}

// StartDelay loads and attaches the delay programs to lock:contention_begin/end and
// sched:sched_waking (which ends a measured hold), tp_btf where the kernel has it, else raw
// tracepoints. A kernel without the lock tracepoints (before Linux 5.19) gets an
// *UnavailableError saying so.
func StartDelay(cfg DelayConfig) (_ *Delay, err error) {
	if len(cfg.Locks) > 64 || len(cfg.Callers) > 64 {
		return nil, fmt.Errorf("delay: %d locks and %d call sites, at most 64 each", len(cfg.Locks), len(cfg.Callers))
	}
	// The kernel's BTF answers without tracefs; mounting it only helps a kernel without BTF.
	_ = mountTracefs()
	if u := noContentionTracepoint(&kernel{}, "whatif"); u != nil {
		return nil, u
	}
	if cfg.BudgetNS == 0 || cfg.BudgetNS > MaxBudgetNS {
		cfg.BudgetNS = MaxBudgetNS
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("removing the memlock limit: %w", err)
	}
	spec, err := loadDelay()
	if err != nil {
		return nil, fmt.Errorf("reading the embedded delay object: %w", err)
	}
	var s delaySpecs
	if err := spec.Assign(&s); err != nil {
		return nil, fmt.Errorf("the embedded delay object does not match its generated code (run go generate ./...): %w", err)
	}
	mask, err := flagMask(cfg.Flags)
	if err != nil {
		return nil, err
	}
	if err := setVariables([]variable{
		{s.MatchLocks, len(cfg.Locks) > 0}, {s.MatchCallers, len(cfg.Callers) > 0},
		{s.AllowSpin, cfg.AllowSpin}, {s.UnlockedOnly, cfg.UnlockedOnly}, {s.BudgetNs, cfg.BudgetNS},
		{s.FlagMask, mask},
	}); err != nil {
		return nil, err
	}
	d := &Delay{}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	var btfObjs delayBTF
	if btfErr := spec.LoadAndAssign(&btfObjs, nil); btfErr == nil {
		d.maps, d.vars, d.progs = btfObjs.delayMaps, btfObjs.delayVariables, []*ebpf.Program{btfObjs.Begin, btfObjs.End, btfObjs.Waking}
		for _, p := range d.progs {
			l, err := link.AttachTracing(link.TracingOptions{Program: p})
			if err != nil {
				return nil, fmt.Errorf("attaching %s: %w", p, err)
			}
			d.links = append(d.links, l)
		}
	} else {
		var raw delayRaw
		if err := spec.LoadAndAssign(&raw, nil); err != nil {
			return nil, fmt.Errorf("loading the delay programs: %w (tp_btf: %w)", err, btfErr)
		}
		d.maps, d.vars, d.progs = raw.delayMaps, raw.delayVariables, []*ebpf.Program{raw.Begin, raw.End, raw.Waking}
		for i, event := range []string{"contention_begin", "contention_end", "sched_waking"} {
			l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: event, Program: d.progs[i]})
			if err != nil {
				return nil, fmt.Errorf("attaching to %s: %w", event, err)
			}
			d.links = append(d.links, l)
		}
	}
	one := uint8(1)
	for _, a := range cfg.Locks {
		if err := d.maps.TargetLocks.Put(a, one); err != nil {
			return nil, fmt.Errorf("choosing lock %#x: %w", a, err)
		}
	}
	for _, a := range cfg.Callers {
		if err := d.maps.TargetCallers.Put(a, one); err != nil {
			return nil, fmt.Errorf("choosing call site %#x: %w", a, err)
		}
	}
	return d, nil
}

// SetDelay enables the program with ns added to each chosen contended acquisition (0 measures
// without delaying), capped at MaxDelayNS.
func (d *Delay) SetDelay(ns uint64) error {
	if err := d.vars.DelayNs.Set(min(ns, MaxDelayNS)); err != nil {
		return fmt.Errorf("setting the delay: %w", err)
	}
	if err := d.vars.Enabled.Set(uint32(1)); err != nil {
		return fmt.Errorf("enabling the delay: %w", err)
	}
	return nil
}

// Stop makes the attached program add and count nothing, at once.
func (d *Delay) Stop() error {
	if err := d.vars.Enabled.Set(uint32(0)); err != nil {
		return fmt.Errorf("disabling the delay: %w", err)
	}
	return nil
}

// Counters are the counters summed over the CPUs since the last ResetCounters.
func (d *Delay) Counters() (whatif.Counters, error) {
	var perCPU []delayDelayCounters
	if err := d.maps.Counters.Lookup(uint32(0), &perCPU); err != nil {
		return whatif.Counters{}, fmt.Errorf("reading the delay counters: %w", err)
	}
	var sum whatif.Counters
	for _, c := range perCPU {
		sum = sum.Merge(whatif.Counters{
			Matched: c.Matched, Fired: c.Fired, AddedNS: c.AddedNs, RefusedBudget: c.RefusedBudget, RefusedSpin: c.RefusedSpin,
			SkippedLocked: c.SkippedLocked, FiredLocked: c.FiredLocked, NoStack: c.NoStack, Lost: c.Lost,
			HoldSamples: c.HoldSamples, HoldNS: c.HoldNs, HoldMinNS: c.HoldMinNs, HoldMaxNS: c.HoldMaxNs, HoldSpun: c.HoldSpun, HoldSpunNS: c.HoldSpunNs,
		})
	}
	return sum, nil
}

// ResetCounters sets every counter to zero, at the start of a run.
func (d *Delay) ResetCounters() error {
	zeros := make([]delayDelayCounters, ebpf.MustPossibleCPU())
	if err := d.maps.Counters.Put(uint32(0), zeros); err != nil {
		return fmt.Errorf("resetting the delay counters: %w", err)
	}
	return nil
}

// Close detaches and unloads the programs; the delays stop as the links go.
func (d *Delay) Close() error {
	var errs []error
	if d.vars.Enabled != nil {
		errs = append(errs, d.Stop())
	}
	for _, l := range d.links {
		errs = append(errs, l.Close())
	}
	d.links = nil
	for _, p := range d.progs {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	d.progs = nil
	errs = append(errs, d.maps.Close())
	return errors.Join(errs...)
}
