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
	// Matched is the line of the command's output --metric's match was read from.
	Matched string `json:"matched,omitempty"`
	// Stop says how the run's command ended when klockstat ended it, or a process it left: which
	// signals its process group got and whether the command had exited by itself already; "" when
	// it exited by itself and left nothing running.
	Stop string `json:"stop,omitempty"`
	// OverheadNS is the time the run took outside its command: clearing the maps before it, reading
	// them and assembling the capture after it.
	OverheadNS int64    `json:"overhead_ns"`
	Capture    *Capture `json:"capture,omitempty"` // nil when the command could not start
}

// OK reports whether the run counts in the analysis: it ended well, was captured, and did work (a
// metric of 0 is no throughput to scale).
func (r SweepRun) OK() bool {
	return r.Failed == "" && r.Capture != nil && r.WallNS > 0 && (r.Metric == nil || *r.Metric > 0)
}

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
	// WaitNS is the wait of the command's process tree summed over the runs: every process's in a
	// sweep whose captures cannot tell the tree apart (Own false).
	WaitNS uint64 `json:"wait_ns"`
	// ThreadNS is the time the command's threads were alive, summed over the threads and the runs;
	// N × run time where the captures did not count the threads (Own false).
	ThreadNS float64 `json:"thread_ns"`
	// WaitShare is WaitNS over ThreadNS: the share of the command's thread time spent waiting on
	// kernel locks.
	WaitShare  float64   `json:"wait_share"`
	TypeShares []float64 `json:"type_shares"` // WaitShare per type, in the order of ScaleAnalysis.Types
	// Own: the figures are the command's tree's alone, counted over its own threads.
	Own bool `json:"own"`
	// Threads and Processes are what the command ran, per run (the mean over the runs); 0 where
	// the captures did not count them.
	Threads   float64 `json:"threads"`
	Processes float64 `json:"processes"`
	// OthersWaitNS is the wait of processes outside the command's tree, summed over the runs;
	// Others says it was captured (--scope system).
	OthersWaitNS uint64 `json:"others_wait_ns"`
	Others       bool   `json:"others"`
	// Spread over the runs, with more than one that counts: the lowest and highest throughput and
	// waiting share of a run.
	ThroughputLo, ThroughputHi float64 `json:"-"`
	WaitShareLo, WaitShareHi   float64 `json:"-"`
	// BelowNext is how many times the next level's throughput per instance (throughput over N)
	// exceeds this level's, where that is more than SuperlinearFactor: the next level's speedup
	// is superlinear, its efficiency over 100%, and this level is a suspect baseline (I/O-bound,
	// or noise). 0 for a level that is not suspect.
	BelowNext float64 `json:"below_next,omitempty"`
	NextN     int     `json:"next_n,omitempty"`
}

// SuperlinearFactor is how far the throughput per instance of a level may fall below the next
// level's before the level is flagged as a suspect baseline: a margin over 1 for noise.
const SuperlinearFactor = 1.5

// Culprit is one lock (type and name) or caller (type and function) over the levels.
type Culprit struct {
	Type   string `json:"type"`
	Name   string `json:"name"` // the lock's name or the caller's frame
	Lock   Addr   `json:"lock"` // a lock without a name is told by its address
	Caller bool   `json:"caller"`
	// WaitPerWork is the wait in ns per unit of work at each level, in the order of the levels; 0
	// where it did not wait.
	WaitPerWork []float64 `json:"wait_per_work"`
	// WaitPerWorkLo and WaitPerWorkHi are the lowest and highest of a single run at each level,
	// equal to WaitPerWork at a level of one run.
	WaitPerWorkLo []float64 `json:"wait_per_work_lo"`
	WaitPerWorkHi []float64 `json:"wait_per_work_hi"`
	Share         []float64 `json:"share"` // of the level's wait
	// Growth is the rise of WaitPerWork from the lowest level to the highest, what culprits are
	// ranked by.
	Growth float64 `json:"growth"`
	// InNoise: the runs of the lowest and highest levels overlap (the highest run of the lowest
	// level waited as much per unit of work as the lowest run of the highest level), so the
	// growth is inside the noise. Only with more than one run at both.
	InNoise bool `json:"in_noise"`
	// Exponent is the slope of log WaitPerWork against log N, least squares over the levels where it
	// waited; NaN (null in JSON) with fewer than two such levels.
	Exponent float64 `json:"-"`
	// TopFrom is the lowest level from which on it has the largest wait of its kind at every
	// level, 0 if it has not.
	TopFrom int `json:"top_from"`
}

// ownWait reports whether a record of c is a wait of the command's tree: under --scope system one of
// the tree's processes, else any (the capture holds the tree's only, or cannot tell).
func ownWait(c *Capture, r Record) bool {
	return c.Meta.Scope != ScopeSystem || c.Meta.InCommand(r.PID)
}

// threadTime is the command's thread time of a run at level n: its tree's, where the capture
// counted it, else n × run time; own says which.
func threadTime(r SweepRun, n int) (ns float64, own bool) {
	if m := r.Capture.Meta; m.Scope != "" && m.CommandThreadNS > 0 {
		return float64(m.CommandThreadNS), true
	}
	return float64(r.WallNS) * float64(n), false
}

// Analyze computes the sweep's figures. Levels without a run that counts have zero figures; the
// culprits' series skip no level, so that they line up with Levels.
func (s *Sweep) Analyze() ScaleAnalysis {
	var a ScaleAnalysis
	typeTotals := map[string]uint64{}
	locks, callers := newCulpritSet(len(s.Levels)), newCulpritSet(len(s.Levels))
	work := make([]float64, len(s.Levels))
	runWork := make([]map[int]float64, len(s.Levels)) // per level, by run
	waits := make([]uint64, len(s.Levels))
	typeWait := make([]map[string]uint64, len(s.Levels))
	// Sums saturate: a forged record of 2^64-1 ns marks the sweep corrupt instead of wrapping.
	add := func(sum *uint64, v uint64) {
		var saturated bool
		*sum, saturated = AddSaturating(*sum, v)
		a.Saturated = a.Saturated || saturated
	}
	for i, l := range s.Levels {
		st := LevelStats{N: l.N, Oversubscribed: s.CPUs > 0 && l.N > s.CPUs, Own: true}
		typeWait[i], runWork[i] = map[string]uint64{}, map[int]float64{}
		var thr, wall float64
		var threads, processes uint64
		for j, r := range l.Runs {
			if !r.OK() {
				st.Failed++
				continue
			}
			st.Runs++
			thr += r.Throughput()
			wall += float64(r.WallNS)
			tns, own := threadTime(r, l.N)
			st.ThreadNS += tns
			st.Own = st.Own && own
			st.Others = r.Capture.Meta.Scope == ScopeSystem
			threads += r.Capture.Meta.CommandThreads
			processes += r.Capture.Meta.CommandProcesses
			work[i] += r.Work()
			runWork[i][j] = r.Work()
			var runWait uint64
			for _, rec := range r.Capture.Records {
				if rec.TotalNS == 0 {
					continue
				}
				if !ownWait(r.Capture, rec) {
					add(&st.OthersWaitNS, rec.TotalNS)
					continue
				}
				add(&runWait, rec.TotalNS)
				tw, tt := typeWait[i][rec.Type], typeTotals[rec.Type]
				add(&tw, rec.TotalNS)
				add(&tt, rec.TotalNS)
				typeWait[i][rec.Type], typeTotals[rec.Type] = tw, tt
				locks.add(i, j, ByLockLabel(rec), rec, add)
				callers.add(i, j, ByCaller(rec), rec, add)
			}
			add(&waits[i], runWait)
			widen(&st.ThroughputLo, &st.ThroughputHi, r.Throughput(), st.Runs == 1)
			widen(&st.WaitShareLo, &st.WaitShareHi, float64(runWait)/tns, st.Runs == 1)
		}
		if st.Runs > 0 {
			st.Throughput = thr / float64(st.Runs)
			st.WallNS = int64(wall / float64(st.Runs))
			st.WaitNS = waits[i]
			st.Threads, st.Processes = float64(threads)/float64(st.Runs), float64(processes)/float64(st.Runs)
			if st.ThreadNS > 0 {
				st.WaitShare = float64(waits[i]) / st.ThreadNS
			}
		} else {
			st.Own = false
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
	markSuperlinear(a.Levels)
	levels := make([]int, len(s.Levels))
	for i, l := range s.Levels {
		levels[i] = l.N
	}
	a.Locks = locks.culprits(levels, work, runWork, waits, a.Levels, false)
	a.Callers = callers.culprits(levels, work, runWork, waits, a.Levels, true)
	return a
}

// widen widens [lo, hi] to v; first starts it at v.
func widen(lo, hi *float64, v float64, first bool) {
	if first {
		*lo, *hi = v, v
		return
	}
	*lo, *hi = min(*lo, v), max(*hi, v)
}

// markSuperlinear flags each level whose throughput per instance is more than SuperlinearFactor
// below the next level's with runs.
func markSuperlinear(levels []LevelStats) {
	prev := -1
	for i, st := range levels {
		if st.Runs == 0 || st.Throughput <= 0 {
			continue
		}
		if prev >= 0 {
			p := &levels[prev]
			if ratio := (st.Throughput / float64(st.N)) / (p.Throughput / float64(p.N)); ratio > SuperlinearFactor {
				p.BelowNext, p.NextN = ratio, st.N
			}
		}
		prev = i
	}
}

// ByLockLabel keys a lock by type and label (its name, and for a slab lock its offset and struct
// field), which stay the same from run to run where the address may not (the mmap_lock of each
// run's process); a lock without a name by its address.
func ByLockLabel(r Record) string {
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
	runs  []map[int]uint64 // per level, the wait of each run
}

func newCulpritSet(levels int) *culpritSet {
	return &culpritSet{levels: levels, byKey: map[string]*culpritSums{}}
}

// add adds r's wait to the culprit of key at level and in run there, with add, which saturates.
func (s *culpritSet) add(level, run int, key string, r Record, add func(sum *uint64, v uint64)) {
	c := s.byKey[key]
	if c == nil {
		c = &culpritSums{first: r, wait: make([]uint64, s.levels), runs: make([]map[int]uint64, s.levels)}
		s.byKey[key] = c
	}
	add(&c.wait[level], r.TotalNS)
	if c.runs[level] == nil {
		c.runs[level] = map[int]uint64{}
	}
	w := c.runs[level][run]
	add(&w, r.TotalNS)
	c.runs[level][run] = w
}

// culprits ranks the set: by Growth, then by the wait at the highest level, then by name; those
// that did not grow are left out.
func (s *culpritSet) culprits(levels []int, work []float64, runWork []map[int]float64, levelWait []uint64, stats []LevelStats, callers bool) []Culprit {
	out := make([]Culprit, 0, len(s.byKey))
	for _, sums := range s.byKey {
		c := Culprit{Type: sums.first.Type, Caller: callers, WaitPerWork: make([]float64, s.levels), Share: make([]float64, s.levels),
			WaitPerWorkLo: make([]float64, s.levels), WaitPerWorkHi: make([]float64, s.levels)}
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
			first := true
			for run, rw := range runWork[i] {
				if rw > 0 {
					widen(&c.WaitPerWorkLo[i], &c.WaitPerWorkHi[i], float64(sums.runs[i][run])/rw, first)
					first = false
				}
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
			c.InNoise = stats[first].Runs > 1 && stats[last].Runs > 1 && c.WaitPerWorkHi[first] >= c.WaitPerWorkLo[last]
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
