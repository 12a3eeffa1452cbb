package whatif

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// experiment builds runs whose time per unit of work is base + slope·added + noise: work 1e5 units
// a run at a metric of 1e5 a second, hold 20 us at 1 contended acquisition per unit of work.
func experiment(slope, noise float64, seed uint64) *Experiment {
	rng := rand.New(rand.NewPCG(seed, 7))
	const base, work = 10000.0, 1e5 // ns per unit, units per run
	e := &Experiment{Version: FormatVersion, Unit: "rename", CPUs: 2, Target: Target{Label: "mutex s_vfs_rename_mutex"}, Repeat: 3}
	e.DelaysNS = []uint64{0, 10000, 20000, 40000}
	for range e.Repeat {
		for _, d := range e.DelaysNS {
			added := float64(d) // one delay per unit of work
			t := base + slope*added + noise*rng.NormFloat64()
			wall := t * work
			metric := work / (wall / 1e9)
			c := Counters{Matched: uint64(work), HoldSamples: uint64(work), HoldNS: uint64(work * 20000)}
			if d > 0 {
				c.Fired, c.AddedNS = uint64(work), uint64(added*work)
			}
			e.Runs = append(e.Runs, Run{DelayNS: d, WallNS: int64(wall), Metric: &metric, Counters: c})
		}
	}
	return e
}

func TestReadKnownSlope(t *testing.T) {
	e := experiment(1.02, 200, 1)
	r := e.Read()
	if r.Fit == nil {
		t.Fatalf("no fit: %s", r.FitError)
	}
	if len(r.Points) != 12 {
		t.Errorf("%d points, want 12", len(r.Points))
	}
	if math.Abs(r.Fit.Slope-1.02) > r.SlopeCI || r.SlopeCI > 0.05 {
		t.Errorf("slope %.3f ± %.3f, want 1.02 within a tight interval", r.Fit.Slope, r.SlopeCI)
	}
	if math.Abs(r.HoldPerWork-20000) > 1 || math.Abs(r.HoldMeanNS-20000) > 1 {
		t.Errorf("hold per work %.0f ns, mean %.0f ns, want 20000", r.HoldPerWork, r.HoldMeanNS)
	}
	// Halving 20 us of hold per unit removes 10.2 us of 10 us + noise: the line leaves almost
	// nothing, to nothing it would be negative.
	if len(r.Predictions) != 3 {
		t.Fatalf("%d predictions", len(r.Predictions))
	}
	p10 := r.Predictions[0]
	want := r.Fit.Intercept/(r.Fit.Intercept-r.Fit.Slope*2000) - 1
	if p10.Shrink != 0.1 || math.Abs(p10.Gain-want) > 1e-9 || !(p10.GainLo <= p10.Gain && p10.Gain <= p10.GainHi) {
		t.Errorf("10%% shrink: %+v, want gain %.4f inside its interval", p10, want)
	}
	if !math.IsInf(r.Predictions[2].Gain, 1) {
		t.Errorf("shrinking a hold larger than the time per unit to nothing: gain %v, want unbounded", r.Predictions[2].Gain)
	}
	if notes := strings.Join(r.Notes, "\n"); strings.Contains(notes, "convoy") {
		t.Errorf("notes %q call a slope of 1 a convoy", notes)
	}
	q := e.Quote(r)
	for _, part := range []string{"each us added to mutex s_vfs_rename_mutex's contended holds costs 1.0", "per rename", "halving them predicts"} {
		if !strings.Contains(q, part) {
			t.Errorf("quote %q lacks %q", q, part)
		}
	}
}

// TestReadSteep: a slope of 5 takes the line to no time per unit when the holds halve: the
// reading says the response was no line, rather than predict an unbounded gain alone.
func TestReadSteep(t *testing.T) {
	e := experiment(5, 200, 2)
	r := e.Read()
	if r.Fit == nil || len(r.Predictions) != 3 || math.IsInf(r.Predictions[0].Gain, 1) || !math.IsInf(r.Predictions[1].Gain, 1) {
		t.Fatalf("fit %+v, predictions %+v: want the 10%% shrink bounded, halving unbounded", r.Fit, r.Predictions)
	}
	if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, "shrinking the holds by 50% takes the line to no time per rename") {
		t.Errorf("notes %q do not say where the line stops meaning anything", notes)
	}
}

func TestReadNoEffect(t *testing.T) {
	e := experiment(0, 2000, 3)
	r := e.Read()
	if r.Fit == nil || math.Abs(r.Fit.Slope) > r.SlopeCI {
		t.Fatalf("a workload the lock does not slow: slope %v ± %v", r.Fit, r.SlopeCI)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "not told apart from 0") {
		t.Errorf("notes %q do not say the slope is 0", r.Notes)
	}
}

func TestReadTooFew(t *testing.T) {
	e := experiment(1, 10, 1)
	e.Runs = e.Runs[:2]
	e.Runs[1].Failed = "exit status 1"
	r := e.Read()
	if r.Fit != nil || r.FitError == "" || len(r.Predictions) != 0 {
		t.Errorf("two runs, one failed: fit %+v, error %q, predictions %v", r.Fit, r.FitError, r.Predictions)
	}
}

// TestReadNoDelayFired: runs with delays where the lock was never contended say so, not that a
// line needs two x values.
func TestReadNoDelayFired(t *testing.T) {
	e := experiment(1, 10, 1)
	for i := range e.Runs {
		e.Runs[i].Counters.Fired, e.Runs[i].Counters.AddedNS = 0, 0
	}
	r := e.Read()
	if r.Fit != nil || !strings.HasPrefix(r.FitError, "no delay fired in the 9 runs with delays") {
		t.Errorf("fit %+v, error %q", r.Fit, r.FitError)
	}
	if q := e.Quote(r); !strings.Contains(q, "no delay fired") {
		t.Errorf("quote %q does not say why", q)
	}
}

func TestRoundTrip(t *testing.T) {
	e := experiment(1, 10, 1)
	var b bytes.Buffer
	if err := e.Write(&b); err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Runs) != len(e.Runs) || back.Runs[5].Counters != e.Runs[5].Counters || *back.Runs[5].Metric != *e.Runs[5].Metric {
		t.Errorf("read back %+v", back.Runs[5])
	}
	if _, err := Parse([]byte(`{"sweep_version": 1}`)); err != ErrNotExperiment {
		t.Errorf("a sweep: %v", err)
	}
}
