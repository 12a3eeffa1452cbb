package capture

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"time"
)

// A sweep runs one command at growing parallelism (`klockstat scale`), a capture per run, to find the
// locks that stop it scaling: those whose wait per unit of work grows fastest with the level.

// Sweep is every run of a sweep and how it was made.
type Sweep struct {
	Version     int       `json:"sweep_version"` // SweepFormatVersion
	Tool        string    `json:"tool"`          // "klockstat"
	ToolVersion string    `json:"tool_version"`
	CommandLine []string  `json:"command_line"` // klockstat's own argv
	Command     []string  `json:"command"`      // the command as given, {N} unreplaced
	Metric      string    `json:"metric"`       // the --metric regular expression, "" for 1/run time
	CPUs        int       `json:"cpus"`
	Start       time.Time `json:"start"`
	// Interrupted: a signal ended the sweep; the levels hold the runs done until then.
	Interrupted bool         `json:"interrupted"`
	Cost        SweepCost    `json:"cost"`
	Levels      []SweepLevel `json:"levels"` // in increasing order of N
}

// SweepCost is what the sweep took beyond its runs.
type SweepCost struct {
	StartNS int64 `json:"start_ns"` // loading and attaching the probes, once
	// BetweenNS is, per run, the time between the command's exit and the next command's start
	// (reading and clearing the maps, assembling the capture), summed.
	BetweenNS int64 `json:"between_ns"`
}

// SweepLevel is the runs at one level of parallelism.
type SweepLevel struct {
	N    int        `json:"n"`
	Runs []SweepRun `json:"runs"`
}

// SweepRun is one run of the command at a level.
type SweepRun struct {
	Argv   []string `json:"argv"` // {N} replaced
	WallNS int64    `json:"wall_ns"`
	Exit   *int     `json:"exit,omitempty"` // nil when the command did not start or was cut off
	// Metric is the value --metric found in the command's output; nil without --metric or a match.
	Metric *float64 `json:"metric,omitempty"`
	// Failed says why the run does not count: a non-zero exit, no metric match, an interrupt; ""
	// for a run that counts.
	Failed string `json:"failed,omitempty"`
	// Tail is the last lines of the command's output of a failed run.
	Tail []string `json:"tail,omitempty"`
	// OverheadNS is the time the run took outside its command: clearing the maps before it, reading
	// them and assembling the capture after it.
	OverheadNS int64    `json:"overhead_ns"`
	Capture    *Capture `json:"capture,omitempty"` // nil when the command could not start
}

// OK reports whether the run counts in the analysis.
func (r SweepRun) OK() bool { return r.Failed == "" && r.Capture != nil && r.WallNS > 0 }

// Work is the run's work: the metric (a throughput) times the run time, or 1 without a metric,
// where every run is taken to do the same work.
func (r SweepRun) Work() float64 {
	if r.Metric == nil {
		return 1
	}
	return *r.Metric * float64(r.WallNS) / 1e9
}

// Throughput is the metric, or runs per second without one.
func (r SweepRun) Throughput() float64 {
	if r.Metric != nil {
		return *r.Metric
	}
	return 1e9 / float64(r.WallNS)
}

// Representative is the run a level is shown by, one capture of the level: of the runs that count, the
// one of median throughput (the lower of the middle two), or nil when none counts.
func (l SweepLevel) Representative() *SweepRun {
	var ok []int
	for i, r := range l.Runs {
		if r.OK() {
			ok = append(ok, i)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	slices.SortStableFunc(ok, func(a, b int) int { return cmp.Compare(l.Runs[a].Throughput(), l.Runs[b].Throughput()) })
	return &l.Runs[ok[(len(ok)-1)/2]]
}

// Kernels are the distinct kernels and architectures ("6.1.0-13-amd64 x86_64") the sweep's runs
// were captured on, in the order first met: more than one, and their figures do not compare.
func (s *Sweep) Kernels() []string {
	var out []string
	for _, l := range s.Levels {
		for _, r := range l.Runs {
			if r.Capture == nil {
				continue
			}
			if k := strings.TrimSpace(r.Capture.Meta.Kernel + " " + r.Capture.Meta.Arch); !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// ScaleAnalysis is what a sweep shows: per level, throughput and wait; the culprits.
type ScaleAnalysis struct {
	Levels []LevelStats `json:"levels"`
	// Types are the lock types that had waits, by total wait over the sweep, heaviest first.
	Types []string `json:"types"`
	// Locks and Callers are the culprits, the locks and callers whose wait per unit of work grew
	// from the lowest level to the highest, ranked by how much.
	Locks   []Culprit `json:"locks"`
	Callers []Culprit `json:"callers"`
	// Saturated: the waits of a level, a type or a culprit add up to more than a uint64 holds, and
	// stopped at math.MaxUint64. Only a corrupt or forged sweep gets there.
	Saturated bool `json:"saturated,omitempty"`
}

// LevelStats are one level's figures, over its runs that count.
type LevelStats struct {
	N              int     `json:"n"`
	Runs           int     `json:"runs"`   // that count
	Failed         int     `json:"failed"` // runs that do not
	Throughput     float64 `json:"throughput"`
	Speedup        float64 `json:"speedup"`    // throughput over the lowest level's
	Efficiency     float64 `json:"efficiency"` // speedup over the ideal, N over the lowest level's N
	Oversubscribed bool    `json:"oversubscribed"`
	WallNS         int64   `json:"wall_ns"` // mean run time
	WaitNS         uint64  `json:"wait_ns"` // wait summed over the runs
	// WaitShare is the wait over the thread time, N × run time: the share of a workload that
	// keeps N threads busy spent waiting on kernel locks. Waits of other processes count too.
	WaitShare  float64   `json:"wait_share"`
	TypeShares []float64 `json:"type_shares"` // WaitShare per type, in the order of ScaleAnalysis.Types
}

// Culprit is one lock (type and name) or caller (type and function) over the levels.
type Culprit struct {
	Type   string `json:"type"`
	Name   string `json:"name"` // the lock's name or the caller's frame
	Lock   Addr   `json:"lock"` // a lock without a name is told by its address
	Caller bool   `json:"caller"`
	// WaitPerWork is the wait in ns per unit of work at each level, in the order of the levels; 0
	// where it did not wait.
	WaitPerWork []float64 `json:"wait_per_work"`
	Share       []float64 `json:"share"` // of the level's wait
	// Growth is the rise of WaitPerWork from the lowest level to the highest, what culprits are
	// ranked by.
	Growth float64 `json:"growth"`
	// Exponent is the slope of log WaitPerWork against log N, least squares over the levels where it
	// waited; NaN (null in JSON) with fewer than two such levels.
	Exponent float64 `json:"-"`
	// TopFrom is the lowest level from which on it has the largest wait of its kind at every
	// level, 0 if it has not.
	TopFrom int `json:"top_from"`
}

// Analyze computes the sweep's figures. Levels without a run that counts have zero figures; the
// culprits' series skip no level, so that they line up with Levels.
func (s *Sweep) Analyze() ScaleAnalysis {
	var a ScaleAnalysis
	typeTotals := map[string]uint64{}
	locks, callers := newCulpritSet(len(s.Levels)), newCulpritSet(len(s.Levels))
	work := make([]float64, len(s.Levels))
	waits := make([]uint64, len(s.Levels))
	typeWait := make([]map[string]uint64, len(s.Levels))
	for i, l := range s.Levels {
		st := LevelStats{N: l.N, Oversubscribed: s.CPUs > 0 && l.N > s.CPUs}
		typeWait[i] = map[string]uint64{}
		var thr float64
		var wall, threadNS float64
		for _, r := range l.Runs {
			if !r.OK() {
				st.Failed++
				continue
			}
			st.Runs++
			thr += r.Throughput()
			wall += float64(r.WallNS)
			threadNS += float64(r.WallNS) * float64(l.N)
			work[i] += r.Work()
			for _, rec := range r.Capture.Records {
				if rec.TotalNS == 0 {
					continue
				}
				add := func(sum *uint64) {
					var saturated bool
					*sum, saturated = addSaturating(*sum, rec.TotalNS)
					a.Saturated = a.Saturated || saturated
				}
				add(&waits[i])
				tw, tt := typeWait[i][rec.Type], typeTotals[rec.Type]
				add(&tw)
				add(&tt)
				typeWait[i][rec.Type], typeTotals[rec.Type] = tw, tt
				add(locks.sum(i, lockKeyOf(rec), rec))
				add(callers.sum(i, ByCaller(rec), rec))
			}
		}
		if st.Runs > 0 {
			st.Throughput = thr / float64(st.Runs)
			st.WallNS = int64(wall / float64(st.Runs))
			st.WaitNS = waits[i]
			if threadNS > 0 {
				st.WaitShare = float64(waits[i]) / threadNS
			}
		}
		a.Levels = append(a.Levels, st)
	}
	for t := range typeTotals {
		a.Types = append(a.Types, t)
	}
	slices.SortFunc(a.Types, func(x, y string) int {
		return cmp.Or(cmp.Compare(typeTotals[y], typeTotals[x]), cmp.Compare(x, y))
	})
	base := -1
	for i, st := range a.Levels {
		if st.Runs > 0 && base < 0 {
			base = i
		}
		a.Levels[i].TypeShares = make([]float64, len(a.Types))
		if st.WaitNS == 0 {
			continue
		}
		for j, t := range a.Types {
			a.Levels[i].TypeShares[j] = st.WaitShare * float64(typeWait[i][t]) / float64(st.WaitNS)
		}
	}
	if base >= 0 {
		b := a.Levels[base]
		for i := range a.Levels {
			st := &a.Levels[i]
			if st.Runs == 0 || b.Throughput == 0 {
				continue
			}
			st.Speedup = st.Throughput / b.Throughput
			st.Efficiency = st.Speedup / (float64(st.N) / float64(b.N))
		}
	}
	levels := make([]int, len(s.Levels))
	for i, l := range s.Levels {
		levels[i] = l.N
	}
	a.Locks = locks.culprits(levels, work, waits, a.Levels, false)
	a.Callers = callers.culprits(levels, work, waits, a.Levels, true)
	return a
}

// lockKeyOf keys a lock by type and label (its name, and for a slab lock its offset and struct
// field), which stay the same from run to run where the address may not (the mmap_lock of each
// run's process); a lock without a name by its address.
func lockKeyOf(r Record) string {
	if r.Name != "" {
		return r.Type + " " + r.LockLabel()
	}
	return ByLock(r)
}

// culpritSet sums the wait of each lock or caller per level.
type culpritSet struct {
	levels int
	byKey  map[string]*culpritSums
}

type culpritSums struct {
	first Record // names the culprit
	wait  []uint64
}

func newCulpritSet(levels int) *culpritSet {
	return &culpritSet{levels: levels, byKey: map[string]*culpritSums{}}
}

// sum is the wait of the culprit of key at level, which r is one record of, to add r's to.
func (s *culpritSet) sum(level int, key string, r Record) *uint64 {
	c := s.byKey[key]
	if c == nil {
		c = &culpritSums{first: r, wait: make([]uint64, s.levels)}
		s.byKey[key] = c
	}
	return &c.wait[level]
}

// culprits ranks the set: by Growth, then by the wait at the highest level, then by name; those
// that did not grow are left out.
func (s *culpritSet) culprits(levels []int, work []float64, levelWait []uint64, stats []LevelStats, callers bool) []Culprit {
	out := make([]Culprit, 0, len(s.byKey))
	for _, sums := range s.byKey {
		c := Culprit{Type: sums.first.Type, Caller: callers, WaitPerWork: make([]float64, s.levels), Share: make([]float64, s.levels)}
		if callers {
			c.Name = sums.first.Caller
		} else {
			c.Name, c.Lock = sums.first.LockLabel(), sums.first.Lock
		}
		for i, w := range sums.wait {
			if work[i] > 0 {
				c.WaitPerWork[i] = float64(w) / work[i]
			}
			if levelWait[i] > 0 {
				c.Share[i] = float64(w) / float64(levelWait[i])
			}
		}
		first, last := -1, -1
		for i, st := range stats {
			if st.Runs > 0 {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		if first >= 0 {
			c.Growth = c.WaitPerWork[last] - c.WaitPerWork[first]
		}
		c.Exponent = GrowthExponent(levels, c.WaitPerWork)
		out = append(out, c)
	}
	slices.SortFunc(out, func(x, y Culprit) int {
		return cmp.Or(cmp.Compare(y.Growth, x.Growth), cmp.Compare(lastOf(y.WaitPerWork), lastOf(x.WaitPerWork)),
			cmp.Compare(x.Type, y.Type), cmp.Compare(x.Name, y.Name), cmp.Compare(x.Lock, y.Lock))
	})
	markTopFrom(out, stats)
	// Those whose wait per unit of work fell or stayed do not stop the scaling; the largest wait
	// was found among all of them.
	return slices.DeleteFunc(out, func(c Culprit) bool { return c.Growth <= 0 })
}

func lastOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return v[len(v)-1]
}

// markTopFrom sets TopFrom: walking down from the highest level with runs, the levels where the
// culprit's wait is the largest of all.
func markTopFrom(cs []Culprit, stats []LevelStats) {
	top := make([]int, len(stats)) // index of the heaviest culprit per level, -1 if none
	for i := range stats {
		top[i] = -1
		for j := range cs {
			if cs[j].Share[i] > 0 && (top[i] < 0 || cs[j].Share[i] > cs[top[i]].Share[i]) {
				top[i] = j
			}
		}
	}
	for j := range cs {
		from := 0
		for i := len(stats) - 1; i >= 0; i-- {
			if stats[i].Runs == 0 {
				continue // a level without runs neither breaks nor extends the streak
			}
			if top[i] != j {
				break
			}
			from = stats[i].N
		}
		cs[j].TopFrom = from
	}
}

// GrowthExponent is the slope of the least-squares line through (log n, log v) over the points
// where v > 0: wait per unit of work growing as n^k has exponent k. NaN with fewer than two such
// points or a single n.
func GrowthExponent(n []int, v []float64) float64 {
	var xs, ys []float64
	for i := range n {
		if i < len(v) && v[i] > 0 && n[i] > 0 {
			xs = append(xs, math.Log(float64(n[i])))
			ys = append(ys, math.Log(v[i]))
		}
	}
	if len(xs) < 2 {
		return math.NaN()
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(xs))
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return math.NaN()
	}
	return sxy / sxx
}

// MarshalJSON implements json.Marshaler: an undefined exponent is null.
func (c Culprit) MarshalJSON() ([]byte, error) {
	type plain Culprit
	out := struct {
		plain
		Exponent *float64 `json:"exponent"`
	}{plain: plain(c)}
	if !math.IsNaN(c.Exponent) && !math.IsInf(c.Exponent, 0) {
		out.Exponent = &c.Exponent
	}
	return json.Marshal(out)
}
