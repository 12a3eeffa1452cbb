package whatif

import (
	"fmt"
	"math"

	"github.com/klockstat/klockstat/linfit"
)

// Confidence is the level of every interval of a reading.
const Confidence = 0.95

// minSpunHolds is how many holds ended by spinners a mean hold is taken from, rather than from
// all holds measured.
const minSpunHolds = 30

// Shrinks are the reductions of the lock's contended hold time a reading predicts the gain of: by
// 10%, by half, and to nothing.
var Shrinks = []float64{0.1, 0.5, 1}

// Point is one run that counts, as the fit sees it.
type Point struct {
	Run          int     `json:"run"` // index in Experiment.Runs
	DelayNS      uint64  `json:"delay_ns"`
	AddedPerWork float64 `json:"added_per_work_ns"` // x: hold time added per unit of work
	TimePerWork  float64 `json:"time_per_work_ns"`  // y: wall time per unit of work
}

// Prediction is the gain of throughput the fitted line predicts if the lock's contended hold time
// per unit of work shrank by Shrink: it extrapolates the line below zero added time.
type Prediction struct {
	Shrink         float64 `json:"shrink"`
	RemovedPerWork float64 `json:"removed_per_work_ns"`
	// Gain is the throughput's relative change (0.12 is +12%), GainLo and GainHi its interval from
	// the slope's; +Inf where the line leaves no time per unit of work.
	Gain   float64 `json:"gain"`
	GainLo float64 `json:"gain_lo"`
	GainHi float64 `json:"gain_hi"`
}

// Size is the runs of one delay size that count, averaged, and their counters summed.
type Size struct {
	DelayNS      uint64  `json:"delay_ns"`
	Runs         int     `json:"runs"`
	Failed       int     `json:"failed"`
	TimePerWork  float64 `json:"time_per_work_ns"`
	AddedPerWork float64 `json:"added_per_work_ns"`
	Throughput   float64 `json:"throughput"` // units of work a second
	// Counters summed over the runs; HoldMinNS the least.
	Counters Counters `json:"counters"`
}

// HoldMeanNS is the mean contended hold measured (Counters.HoldMean), 0 without one.
func (s Size) HoldMeanNS() float64 {
	mean, _, _ := s.Counters.HoldMean()
	return mean
}

// HoldMean is the mean contended hold measured and how many holds it is of: a hold ended by a
// spinner's acquisition is tight, one ended by a wake-up may span holds taken without contention
// in between, so the spinners' are taken when there are enough (fromSpinners).
func (c Counters) HoldMean() (ns float64, holds uint64, fromSpinners bool) {
	switch {
	case c.HoldSpun >= minSpunHolds:
		return float64(c.HoldSpunNS) / float64(c.HoldSpun), c.HoldSpun, true
	case c.HoldSamples > 0:
		return float64(c.HoldNS) / float64(c.HoldSamples), c.HoldSamples, false
	}
	return 0, 0, false
}

// Reading is what an experiment shows.
type Reading struct {
	Sizes  []Size  `json:"sizes"` // in the order of Experiment.DelaysNS
	Points []Point `json:"points"`
	// Fit is time per unit of work against added hold time per unit of work; nil with fewer than
	// three points at two delays, FitError says why.
	Fit      *linfit.Line `json:"fit"`
	FitError string       `json:"fit_error,omitempty"`
	SlopeCI  float64      `json:"slope_ci"` // half-width at Confidence
	// Of the runs without delay: the contended hold measured (mean), the contended
	// acquisitions and their hold time per unit of work.
	HoldMeanNS  float64 `json:"hold_mean_ns"`
	HoldSamples uint64  `json:"hold_samples"`
	// HoldFromSpinners: the holds ended by a spinner's acquisition, tight; otherwise all, some of
	// which ended at wake-ups and may span holds taken without contention (an upper bound).
	HoldFromSpinners bool         `json:"hold_from_spinners"`
	ContendedPerWork float64      `json:"contended_per_work"`
	HoldPerWork      float64      `json:"hold_per_work_ns"`
	Predictions      []Prediction `json:"predictions"`
	// Over the runs with delays.
	Fired         uint64  `json:"fired"`
	AddedNS       uint64  `json:"added_ns"`
	RefusedBudget uint64  `json:"refused_budget"`
	RefusedSpin   uint64  `json:"refused_spin"`
	Lost          uint64  `json:"lost,omitempty"` // over every run: waits the kernel's full map did not follow
	LockedShare   float64 `json:"locked_share"`   // of fired, with a mutex's wait_lock held
	// AddedPerCPUSecond is the most added per CPU per second of a run, averaged over the run.
	AddedPerCPUSecond float64  `json:"added_per_cpu_second"`
	Notes             []string `json:"notes"`
}

// Read fits the experiment's runs that count and predicts from the fit.
func (e *Experiment) Read() Reading {
	r := Reading{Sizes: e.sizes(), Points: []Point{}, Predictions: []Prediction{}, Notes: []string{}}
	var x, y []float64
	var baseWork float64
	delayedRuns := 0
	var base, delayed, all Counters
	for i, run := range e.Runs {
		if !run.OK() {
			continue
		}
		p := Point{Run: i, DelayNS: run.DelayNS, AddedPerWork: run.AddedPerWork(), TimePerWork: run.TimePerWork()}
		r.Points = append(r.Points, p)
		x, y = append(x, p.AddedPerWork), append(y, p.TimePerWork)
		c := run.Counters
		all = all.Merge(c)
		if run.DelayNS == 0 {
			baseWork += run.Work()
			base = base.Merge(c)
			continue
		}
		delayedRuns++
		delayed = delayed.Merge(c)
		if e.CPUs > 0 {
			r.AddedPerCPUSecond = max(r.AddedPerCPUSecond, float64(c.AddedNS)/float64(run.WallNS)/float64(e.CPUs))
		}
	}
	r.Fired, r.AddedNS, r.RefusedBudget, r.RefusedSpin, r.Lost = delayed.Fired, delayed.AddedNS, delayed.RefusedBudget, delayed.RefusedSpin, all.Lost
	if r.Fired > 0 {
		r.LockedShare = float64(delayed.FiredLocked) / float64(r.Fired)
	}
	if mean, holds, spun := base.HoldMean(); holds > 0 && baseWork > 0 {
		r.HoldMeanNS, r.HoldSamples, r.HoldFromSpinners = mean, holds, spun
		r.ContendedPerWork = float64(base.Matched) / baseWork
		r.HoldPerWork = r.HoldMeanNS * r.ContendedPerWork
	}
	line, err := linfit.Fit(x, y)
	if delayedRuns > 0 && r.AddedNS == 0 {
		// Every point sits at x = 0: the line would fail for too few x values, which hides why.
		err = fmt.Errorf("no delay fired in the %d runs with delays: the chosen lock was not contended at its call sites there (%.3g contended acquisitions per %s without delay)", delayedRuns, r.ContendedPerWork, e.UnitName())
	}
	if err != nil {
		r.FitError = err.Error()
		r.Notes = append(r.Notes, "no fit: "+err.Error())
		return r
	}
	r.Fit = &line
	r.SlopeCI = line.SlopeCI(Confidence)
	if r.HoldPerWork > 0 {
		for _, s := range Shrinks {
			r.Predictions = append(r.Predictions, predict(line, r.SlopeCI, s, r.HoldPerWork))
		}
	}
	r.Notes = append(r.Notes, e.notes(r)...)
	return r
}

// sizes averages the runs of each delay size.
func (e *Experiment) sizes() []Size {
	out := make([]Size, 0, len(e.DelaysNS))
	for _, d := range e.DelaysNS {
		sz := Size{DelayNS: d}
		for _, run := range e.Runs {
			switch {
			case run.DelayNS != d:
				continue
			case !run.OK():
				sz.Failed++
				continue
			}
			sz.Runs++
			sz.TimePerWork += run.TimePerWork()
			sz.AddedPerWork += run.AddedPerWork()
			sz.Throughput += 1e9 / run.TimePerWork()
			sz.Counters = sz.Counters.Merge(run.Counters)
		}
		if sz.Runs > 0 {
			n := float64(sz.Runs)
			sz.TimePerWork, sz.AddedPerWork, sz.Throughput = sz.TimePerWork/n, sz.AddedPerWork/n, sz.Throughput/n
		}
		out = append(out, sz)
	}
	return out
}

// predict is the gain if the hold per unit of work shrank by shrink: time per unit of work goes
// from the intercept a to a - b·removed, so throughput gains a / (a - b·removed) - 1; the interval is
// that of b.
func predict(l linfit.Line, ci, shrink, holdPerWork float64) Prediction {
	removed := shrink * holdPerWork
	gain := func(b float64) float64 {
		left := l.Intercept - b*removed
		if left <= 0 {
			return math.Inf(1)
		}
		return l.Intercept/left - 1
	}
	lo, hi := gain(l.Slope-ci), gain(l.Slope+ci)
	return Prediction{Shrink: shrink, RemovedPerWork: removed, Gain: gain(l.Slope), GainLo: min(lo, hi), GainHi: max(lo, hi)}
}

// steepSlope is a slope past which a microsecond added costs more than waiters spinning on the
// holder could (about 1 per waiting CPU on the few CPUs of a scalability test's machine).
const steepSlope = 4

// notes are what a reader must know beside the figures.
func (e *Experiment) notes(r Reading) []string {
	var notes []string
	if r.Fit != nil && math.Abs(r.Fit.Slope) <= r.SlopeCI {
		notes = append(notes, fmt.Sprintf("the slope is not told apart from 0 at %.0f%%: the added hold time did not reach the workload's critical path, or the runs vary more than the delays moved them (more --repeat, larger --delays)", 100*Confidence))
	}
	if r.HoldPerWork == 0 {
		notes = append(notes, "no contended hold of the lock was measured in the runs without delay (no holder woke a waiter): no prediction")
	}
	if r.Fit != nil && r.HoldPerWork > r.Fit.Intercept {
		notes = append(notes, fmt.Sprintf("the contended hold measured per %s (%s) exceeds the time per %s (%s), which holds of one lock taken in turn cannot: the holds measured are too long (long ones are more likely to have a waiter through them), and the predictions are upper bounds", e.UnitName(), us(r.HoldPerWork), e.UnitName(), us(r.Fit.Intercept)))
	}
	if r.HoldMeanNS > 0 && !r.HoldFromSpinners {
		notes = append(notes, "the contended hold was measured to the holder's wake-up of a waiter, which may span holds taken without contention in between: an upper bound, and the predictions with it")
	}
	// A slope far above 1 that takes the line to no time at all is a response that is not a line:
	// the longer holds did more than lengthen the critical path.
	for _, p := range r.Predictions {
		if math.IsInf(p.Gain, 1) && r.Fit.Slope > steepSlope {
			notes = append(notes, fmt.Sprintf("shrinking the holds by %.0f%% takes the line to no time per %s: at a slope of %.2f each us added cost far more than itself (waiters went to sleep behind the longer holds, a convoy), so the runs did not follow a line and its extrapolation means nothing there; smaller --delays stay where the response is linear", 100*p.Shrink, e.UnitName(), r.Fit.Slope))
			break
		}
	}
	if r.Lost > 0 {
		notes = append(notes, fmt.Sprintf("%d waits not followed: the kernel program's map of waits in progress was full (more threads waiting at once than it holds); their acquisitions were neither delayed nor counted", r.Lost))
	}
	if r.RefusedBudget > 0 {
		notes = append(notes, fmt.Sprintf("%d delays refused by the budget of %s per CPU a second: the added time counted is what was added", r.RefusedBudget, us(float64(e.Bounds.BudgetNS))))
	}
	if r.RefusedSpin > 0 {
		notes = append(notes, fmt.Sprintf("%d contended acquisitions of a spinning lock (or of unknown kind) left alone: --allow-spin adds to them", r.RefusedSpin))
	}
	if r.LockedShare > 0 {
		notes = append(notes, fmt.Sprintf("%.0f%% of the delays ran at the mutex's contention_end with its wait_lock held and interrupts off: they also held off other waiters' queueing", 100*r.LockedShare))
	}
	for i, run := range e.Runs {
		if !run.OK() {
			notes = append(notes, fmt.Sprintf("run %d (delay %s) does not count: %s", i+1, us(float64(run.DelayNS)), run.Failed))
		}
	}
	return notes
}

// Quote is the line a ticket can quote: the sensitivity and the gain of halving the hold.
func (e *Experiment) Quote(r Reading) string {
	unit := e.UnitName()
	if r.Fit == nil {
		return fmt.Sprintf("no sensitivity of %s: %s", e.Target.Label, r.FitError)
	}
	s := fmt.Sprintf("each us added to %s's contended holds costs %.2f us per %s (+-%.2f, R^2 %.2f)",
		e.Target.Label, r.Fit.Slope, unit, r.SlopeCI, r.Fit.R2)
	for _, p := range r.Predictions {
		if p.Shrink == 0.5 {
			s += fmt.Sprintf("; halving them predicts %s %ss/s (%s to %s)", FormatGain(p.Gain), unit, FormatGain(p.GainLo), FormatGain(p.GainHi))
		}
	}
	return s
}

// UnitName is what a unit of work is called: --unit, else "run" without a metric.
func (e *Experiment) UnitName() string {
	switch {
	case e.Unit != "":
		return e.Unit
	case e.Metric == "":
		return "run"
	}
	return "unit of work"
}

// FormatGain writes a relative change as a signed percentage.
func FormatGain(g float64) string {
	if math.IsInf(g, 1) {
		return "unbounded"
	}
	return fmt.Sprintf("%+.1f%%", 100*g)
}

// us writes nanoseconds in microseconds, the unit of the quote, or in milliseconds from one.
func us(ns float64) string {
	if ns >= 1e6 {
		return fmt.Sprintf("%.1f ms", ns/1e6)
	}
	return fmt.Sprintf("%.1f us", ns/1e3)
}
