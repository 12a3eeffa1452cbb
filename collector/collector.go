package collector

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/lockspec"
)

const (
	// MaxStackDepth is the deepest kernel stack bpf_get_stackid can walk
	// (PERF_MAX_STACK_DEPTH).
	MaxStackDepth = 127
	// MaxTypes is how many lock types one capture can tell apart (MAX_TYPES
	// in lockstat.h).
	MaxTypes = 32
	// histBuckets is HIST_BUCKETS in lockstat.h.
	histBuckets = capture.NumBuckets
)

// ErrPermission means the kernel refused to load BPF programs for lack of
// privileges.
var ErrPermission = errors.New("loading BPF programs needs root (CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN): run klockstat as root")

// Config says what to capture and how.
type Config struct {
	Spec       *lockspec.Spec // lock types to capture
	Probe      string         // backend name, or "auto"
	StackDepth int            // kernel frames per stack; 0 disables stacks
	MapSize    uint32         // entries of the aggregation, stack and per-thread maps
	PIDs       []uint32       // capture only these processes (tgids); empty: all
	Comm       string         // capture only processes whose main thread has this name
}

// Validate reports the first problem with the configuration, before any
// kernel object is created.
func (c Config) Validate() error {
	switch {
	case c.Spec == nil || len(c.Spec.Types) == 0:
		return errors.New("no lock types to capture")
	case len(c.Spec.Types) > MaxTypes:
		return fmt.Errorf("%d lock types in %s, at most %d can be captured at once (narrow them with --types)", len(c.Spec.Types), c.Spec.Source, MaxTypes)
	case c.StackDepth < 0 || c.StackDepth > MaxStackDepth:
		return fmt.Errorf("stack depth %d out of range (want 0 to %d)", c.StackDepth, MaxStackDepth)
	case c.MapSize < 64:
		return fmt.Errorf("map size %d too small (want at least 64)", c.MapSize)
	case len(c.Comm) > 15:
		return fmt.Errorf("comm %q longer than the kernel's 15-byte task names", c.Comm)
	}
	if c.Probe != "auto" {
		if _, err := backendByName(c.Probe); err != nil {
			return err
		}
	}
	return nil
}

// Collector is a running capture: programs loaded and attached.
type Collector struct {
	cfg      Config
	backend  Backend
	coll     *ebpf.Collection
	links    []link.Link
	stats    io.Closer // keeps kernel.bpf_stats_enabled on while open
	start    time.Time
	warnings []string
}

// Start loads the BPF programs, attaches them with the configured backend
// (or the first that works, for "auto") and starts counting.
func Start(cfg Config) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, permissionError(fmt.Errorf("removing the memlock limit: %w", err))
	}
	spec, err := loadLockstat()
	if err != nil {
		return nil, fmt.Errorf("reading the embedded BPF object: %w", err)
	}
	if err := configure(spec, cfg); err != nil {
		return nil, err
	}

	c := &Collector{cfg: cfg}
	// Run-time statistics cost a little per program run; the kernel keeps
	// them on only while this descriptor is open, so a crash cannot leave
	// the sysctl set behind.
	if c.stats, err = ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME)); err != nil {
		c.warnings = append(c.warnings, fmt.Sprintf("probe cost not measured: enabling BPF run-time stats: %v", err))
	}

	candidates := Backends()
	if cfg.Probe != "auto" {
		b, _ := backendByName(cfg.Probe)
		candidates = []Backend{b}
	}
	var errs []error
	for _, b := range candidates {
		coll, links, err := loadAndAttach(spec, b)
		if err == nil {
			c.backend, c.coll, c.links = b, coll, links
			break
		}
		if errors.Is(err, ErrPermission) {
			c.Close()
			return nil, err
		}
		errs = append(errs, fmt.Errorf("%s: %w", b.Name(), err))
	}
	if c.backend == nil {
		c.Close()
		return nil, fmt.Errorf("no probe backend could attach: %w", errors.Join(errs...))
	}
	for _, err := range errs {
		c.warnings = append(c.warnings, fmt.Sprintf("backend %v; using %s", err, c.backend.Name()))
	}
	c.start = time.Now()
	return c, nil
}

// configure writes the run-time options into the object before it is loaded.
func configure(spec *ebpf.CollectionSpec, cfg Config) error {
	table := cfg.Spec.FlagTable()
	comm := [16]byte{}
	copy(comm[:], cfg.Comm)
	vars := []struct {
		name  string
		value any
	}{
		{"self_tgid", uint32(os.Getpid())},
		{"stack_depth", uint32(cfg.StackDepth)},
		{"filter_pids", len(cfg.PIDs) > 0},
		{"filter_comm", cfg.Comm != ""},
		{"comm_filter", comm},
		{"flag_type", table},
	}
	for _, v := range vars {
		if err := setVariable(spec, v.name, v.value); err != nil {
			return err
		}
	}

	spec.Maps["aggregate"].MaxEntries = cfg.MapSize
	spec.Maps["thread_waits"].MaxEntries = cfg.MapSize
	spec.Maps["stacks"].MaxEntries = cfg.MapSize
	spec.Maps["stacks"].ValueSize = uint32(max(cfg.StackDepth, 1) * 8)
	spec.Maps["histogram"].MaxEntries = uint32(len(cfg.Spec.Types) * histBuckets)
	pids := spec.Maps["pid_filter"]
	pids.MaxEntries = uint32(max(len(cfg.PIDs), 1))
	for _, pid := range cfg.PIDs {
		pids.Contents = append(pids.Contents, ebpf.MapKV{Key: pid, Value: uint8(1)})
	}
	return nil
}

func setVariable(spec *ebpf.CollectionSpec, name string, value any) error {
	v, ok := spec.Variables[name]
	if !ok {
		return fmt.Errorf("BPF object has no variable %s (stale generated code? run go generate ./...)", name)
	}
	if err := v.Set(value); err != nil {
		return fmt.Errorf("setting BPF variable %s: %w", name, err)
	}
	return nil
}

// loadAndAttach loads only the backend's programs (a program for a hook the
// kernel lacks would fail to load) and attaches them.
func loadAndAttach(spec *ebpf.CollectionSpec, b Backend) (*ebpf.Collection, []link.Link, error) {
	spec = spec.Copy()
	layout := b.StackLayout()
	if err := setVariable(spec, "stack_skip", layout.Skip); err != nil {
		return nil, nil, err
	}
	if err := setVariable(spec, "ctx_on_stack", layout.ContextOnStack); err != nil {
		return nil, nil, err
	}
	keep := map[string]bool{}
	for _, name := range b.Programs() {
		keep[name] = true
	}
	for name := range spec.Programs {
		if !keep[name] {
			delete(spec.Programs, name)
		}
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, nil, fmt.Errorf("loading BPF programs: %+v", ve)
		}
		return nil, nil, permissionError(fmt.Errorf("loading BPF programs: %w", err))
	}
	links, err := b.Attach(coll.Programs)
	if err != nil {
		coll.Close()
		return nil, nil, permissionError(err)
	}
	return coll, links, nil
}

func permissionError(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w (%v)", ErrPermission, err)
	}
	return err
}

// Backend is the name of the backend in use.
func (c *Collector) Backend() string { return c.backend.Name() }

// Events returns how many contention events were captured so far; cheap
// enough for a progress line.
func (c *Collector) Events() uint64 {
	var perCPU []uint64
	if err := c.coll.Maps["counters"].Lookup(uint32(lockstatCounterCNT_BEGIN), &perCPU); err != nil {
		return 0
	}
	return sum(perCPU)
}

// Close detaches and frees everything. It is safe to call more than once.
func (c *Collector) Close() error {
	closeLinks(c.links)
	c.links = nil
	if c.coll != nil {
		c.coll.Close()
		c.coll = nil
	}
	if c.stats != nil {
		c.stats.Close()
		c.stats = nil
	}
	return nil
}

func sum(v []uint64) uint64 {
	var s uint64
	for _, x := range v {
		s += x
	}
	return s
}

// cString converts a NUL-padded kernel char array.
func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
