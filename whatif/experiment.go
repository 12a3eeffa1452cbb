// Package whatif is the model of a `klockstat whatif` experiment (a workload run without and with
// delays added to one lock's contended holds) and its reading: time per unit of work against the
// added hold time per unit of work, the fitted slope, and the gain it predicts for a shorter hold.
// It imports no BPF code.
package whatif

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/klockstat/klockstat/capture"
)

// FormatVersion is the JSON "whatif_version" Write writes and Parse accepts.
const FormatVersion = 1

// Experiment is every run of an experiment and how it was made.
type Experiment struct {
	Version     int       `json:"whatif_version"`
	Tool        string    `json:"tool"`
	ToolVersion string    `json:"tool_version"`
	CommandLine []string  `json:"command_line"` // klockstat's own argv
	Command     []string  `json:"command"`      // as run, {N} replaced
	Metric      string    `json:"metric"`       // --metric, "" for 1 / run time
	Unit        string    `json:"unit"`         // what a unit of work is called ("rename")
	Kernel      string    `json:"kernel"`
	CPUModel    string    `json:"cpu_model"`
	CPUs        int       `json:"cpus"`
	Start       time.Time `json:"start"`
	Target      Target    `json:"target"`
	Bounds      Bounds    `json:"bounds"`
	DelaysNS    []uint64  `json:"delays_ns"` // the sizes, as chosen
	Repeat      int       `json:"repeat"`
	Runs        []Run     `json:"runs"` // in the order run: the sizes alternate
	// Interrupted: a signal or an error ended the experiment; Runs holds those done.
	Interrupted bool `json:"interrupted"`
}

// Target is the lock the delays were added to, and what its baseline capture said of it.
type Target struct {
	Label    string         `json:"label"` // "mutex super_block.s_vfs_rename_mutex at do_renameat2+0x221"
	Type     string         `json:"type"`
	Callers  []string       `json:"callers"` // the call sites whose contended acquisitions were delayed
	Locks    []capture.Addr `json:"locks"`   // restricted to these addresses; none: any at the call sites
	ChosenBy string         `json:"chosen_by"`
	// From the baseline capture: the lock's waits, and their share of all wait.
	Source     string  `json:"source"`
	Waits      uint64  `json:"waits"`
	WaitNS     uint64  `json:"wait_ns"`
	WaitShare  float64 `json:"wait_share"`
	MeanWaitNS float64 `json:"mean_wait_ns"`
	// WaitsPerSecond is Waits over the capture's duration.
	WaitsPerSecond float64 `json:"waits_per_second"`
}

// Bounds are the limits the kernel program enforced.
type Bounds struct {
	MaxDelayNS uint64 `json:"max_delay_ns"`
	// BudgetNS is the most added per CPU in a second.
	BudgetNS  uint64 `json:"budget_ns_per_cpu_second"`
	AllowSpin bool   `json:"allow_spin"`
	// UnlockedOnly: a mutex acquired in its wait loop, whose contention_end runs with its wait_lock
	// held and interrupts off, was not delayed.
	UnlockedOnly bool `json:"unlocked_only"`
}

// Run is one run of the command at one delay.
type Run struct {
	DelayNS  uint64   `json:"delay_ns"`
	WallNS   int64    `json:"wall_ns"`
	Exit     *int     `json:"exit,omitempty"`
	Metric   *float64 `json:"metric,omitempty"`
	Failed   string   `json:"failed,omitempty"`
	Tail     []string `json:"tail,omitempty"`
	Counters Counters `json:"counters"`
}

// Counters are what the kernel program counted during a run.
type Counters struct {
	Matched       uint64 `json:"matched"` // contended acquisitions of the lock
	Fired         uint64 `json:"fired"`
	AddedNS       uint64 `json:"added_ns"`
	RefusedBudget uint64 `json:"refused_budget"`
	RefusedSpin   uint64 `json:"refused_spin"`
	SkippedLocked uint64 `json:"skipped_locked"`
	FiredLocked   uint64 `json:"fired_locked"` // with a mutex's wait_lock held, interrupts off
	NoStack       uint64 `json:"no_stack"`
	Lost          uint64 `json:"lost,omitempty"` // waits not followed: the kernel's map of them was full
	HoldSamples   uint64 `json:"hold_samples"`
	HoldNS        uint64 `json:"hold_ns"`
	HoldMinNS     uint64 `json:"hold_min_ns"`
	HoldMaxNS     uint64 `json:"hold_max_ns"`
	HoldSpun      uint64 `json:"hold_spun"` // of HoldSamples, ended by a spinner's acquisition
	HoldSpunNS    uint64 `json:"hold_spun_ns"`
}

// Merge sums two counts (CPUs', runs'): each sum saturating, as a forged file may ask, the
// shortest hold the shorter of those measured (0 is none), the longest the longer.
func (c Counters) Merge(o Counters) Counters {
	add := func(a, b uint64) uint64 { sum, _ := capture.AddSaturating(a, b); return sum }
	shortest := c.HoldMinNS
	if shortest == 0 || o.HoldMinNS != 0 && o.HoldMinNS < shortest {
		shortest = o.HoldMinNS
	}
	return Counters{
		Matched: add(c.Matched, o.Matched), Fired: add(c.Fired, o.Fired), AddedNS: add(c.AddedNS, o.AddedNS),
		RefusedBudget: add(c.RefusedBudget, o.RefusedBudget), RefusedSpin: add(c.RefusedSpin, o.RefusedSpin),
		SkippedLocked: add(c.SkippedLocked, o.SkippedLocked), FiredLocked: add(c.FiredLocked, o.FiredLocked),
		NoStack: add(c.NoStack, o.NoStack), Lost: add(c.Lost, o.Lost),
		HoldSamples: add(c.HoldSamples, o.HoldSamples), HoldNS: add(c.HoldNS, o.HoldNS),
		HoldMinNS: shortest, HoldMaxNS: max(c.HoldMaxNS, o.HoldMaxNS),
		HoldSpun: add(c.HoldSpun, o.HoldSpun), HoldSpunNS: add(c.HoldSpunNS, o.HoldSpunNS),
	}
}

// OK reports whether the run counts.
func (r Run) OK() bool { return r.Failed == "" && r.WallNS > 0 && (r.Metric == nil || *r.Metric > 0) }

// Work is the run's work: the metric (a throughput) times the run time, or 1 without a metric.
func (r Run) Work() float64 {
	if r.Metric == nil {
		return 1
	}
	return *r.Metric * float64(r.WallNS) / 1e9
}

// TimePerWork is the run's wall time per unit of work, in ns.
func (r Run) TimePerWork() float64 { return float64(r.WallNS) / r.Work() }

// AddedPerWork is the hold time the delays added per unit of work, in ns.
func (r Run) AddedPerWork() float64 { return float64(r.Counters.AddedNS) / r.Work() }

// Write encodes e as indented JSON.
func (e *Experiment) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(e); err != nil {
		return fmt.Errorf("encoding the experiment: %w", err)
	}
	return nil
}

// MarshalJSON implements json.Marshaler, with nil lists as [].
func (e Experiment) MarshalJSON() ([]byte, error) {
	type plain Experiment
	e.CommandLine, e.Command, e.DelaysNS, e.Runs = nonNil(e.CommandLine), nonNil(e.Command), nonNil(e.DelaysNS), nonNil(e.Runs)
	e.Target.Callers, e.Target.Locks = nonNil(e.Target.Callers), nonNil(e.Target.Locks)
	return json.Marshal(plain(e))
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Parse's bounds, far past what klockstat whatif writes (--repeat rounds of a few sizes, each at
// most the kernel program's 100 us): a forged file cannot make the reading loop for long.
// MaxDelays bounds --delays too.
const (
	maxRuns       = 4096
	MaxDelays     = 64
	maxDelayAsked = uint64(time.Second)
)

// ErrNotExperiment is Parse's error for JSON without "whatif_version".
var ErrNotExperiment = errors.New(`no "whatif_version" field, not a klockstat whatif experiment`)

// Parse decodes an experiment Write wrote, and checks its version and its numbers.
func Parse(data []byte) (*Experiment, error) {
	var e Experiment
	e.Version = -1
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("decoding the experiment: %w", err)
	}
	switch {
	case e.Version == -1:
		return nil, ErrNotExperiment
	case e.Version != FormatVersion:
		return nil, fmt.Errorf("experiment format version %d: this klockstat reads version %d", e.Version, FormatVersion)
	case len(e.Runs) > maxRuns:
		return nil, fmt.Errorf("invalid experiment: %d runs, at most %d", len(e.Runs), maxRuns)
	case len(e.DelaysNS) > MaxDelays:
		return nil, fmt.Errorf("invalid experiment: %d delay sizes, at most %d", len(e.DelaysNS), MaxDelays)
	}
	for i, d := range e.DelaysNS {
		if d > maxDelayAsked || slices.Contains(e.DelaysNS[:i], d) {
			return nil, fmt.Errorf("invalid experiment: delay size %d ns: each at most %d and given once", d, maxDelayAsked)
		}
	}
	for i, r := range e.Runs {
		// A sweep's bounds on a metric: past them the figures become Inf or NaN.
		if r.WallNS < 0 || r.Metric != nil && !(*r.Metric == 0 || *r.Metric >= capture.MinSweepMetric && *r.Metric <= capture.MaxSweepMetric) {
			return nil, fmt.Errorf("invalid experiment: run %d: run time %d ns, metric %v", i+1, r.WallNS, r.Metric)
		}
	}
	return &e, nil
}
