package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// sweepLock is a lock of testSweep whose wait per unit of work at level n is scale × n^exponent.
type sweepLock struct {
	typ, name string
	scale     float64
	exponent  float64
}

var sweepLocks = []sweepLock{
	{"mutex", "hot_lock", 10, 2},     // grows fastest: the culprit
	{"spinlock", "flat_lock", 80, 0}, // the heaviest at level 1, but flat: no culprit
	{"rwsem:W", "warm_lock", 5, 1},   // grows, less
}

// testSweep is a sweep at levels 1, 2 and 4 whose metric (ops/s) is 1000 × n^0.5, one run per
// level lasting a second, and whose locks wait as sweepLocks say; level 2 has a failed run too.
func testSweep(t testing.TB) *Sweep {
	t.Helper()
	s := &Sweep{Version: SweepFormatVersion, Tool: "klockstat", Command: []string{"work", "-j", "{N}"}, Metric: `ops=([0-9.]+)`, CPUs: 2,
		Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	for _, n := range []int{1, 2, 4} {
		metric := 1000 * math.Sqrt(float64(n))
		run := SweepRun{Argv: []string{"work", "-j", string(rune('0' + n))}, WallNS: 1e9, Metric: &metric, OverheadNS: 5e6}
		c := &Capture{Version: FormatVersion, Meta: Meta{Tool: "klockstat", DurationNS: 1e9, CPUs: 2}}
		for i, l := range sweepLocks {
			work := metric // a second at metric ops/s
			wait := uint64(math.Round(l.scale * math.Pow(float64(n), l.exponent) * work))
			h := Histogram{Type: l.typ}
			h.Add(wait)
			c.Histograms = append(c.Histograms, h)
			c.Records = append(c.Records, Record{Type: l.typ, Name: l.name, Lock: Addr(0xffff0000 + i), Comm: "work", PID: 10, TID: 10,
				Count: 1, TotalNS: wait, MinNS: wait, MaxNS: wait, Caller: "caller_" + l.name + "+0x10"})
		}
		level := SweepLevel{N: n, Runs: []SweepRun{run}}
		level.Runs[0].Capture = c
		if n == 2 {
			exit := 1
			level.Runs = append(level.Runs, SweepRun{Argv: run.Argv, WallNS: 1e8, Exit: &exit, Failed: "exit status 1", Tail: []string{"boom"},
				Capture: &Capture{Version: FormatVersion}})
		}
		s.Levels = append(s.Levels, level)
	}
	return s
}

func TestAnalyzeRanksTheFastestGrowingLockFirst(t *testing.T) {
	s := testSweep(t)
	a := s.Analyze()
	var growing []sweepLock
	for _, l := range sweepLocks {
		if l.exponent > 0 {
			growing = append(growing, l)
		}
	}
	if len(a.Locks) != len(growing) {
		t.Fatalf("%d lock culprits, want the %d that grow: %+v", len(a.Locks), len(growing), a.Locks)
	}
	for i, l := range growing { // sweepLocks lists them by growth
		c := a.Locks[i]
		if c.Name != l.name || c.Type != l.typ || c.Caller {
			t.Errorf("culprit %d is %s %s, want %s %s", i+1, c.Type, c.Name, l.typ, l.name)
		}
		if math.Abs(c.Exponent-l.exponent) > 1e-3 {
			t.Errorf("%s: exponent %v, want %v", l.name, c.Exponent, l.exponent)
		}
		for j, n := range []float64{1, 2, 4} {
			if want := l.scale * math.Pow(n, l.exponent); math.Abs(c.WaitPerWork[j]-want) > 1e-3*want {
				t.Errorf("%s at level %v: %v ns per unit of work, want %v", l.name, n, c.WaitPerWork[j], want)
			}
		}
		if want := l.scale*math.Pow(4, l.exponent) - l.scale; math.Abs(c.Growth-want) > 1e-3*want {
			t.Errorf("%s: growth %v, want %v", l.name, c.Growth, want)
		}
	}
	// hot_lock has the largest wait from the first level at which it waits more than flat_lock.
	hot, flat := sweepLocks[0], sweepLocks[1]
	topFrom := 0
	for _, n := range []float64{4, 2, 1} {
		if hot.scale*math.Pow(n, hot.exponent) <= flat.scale {
			break
		}
		topFrom = int(n)
	}
	if topFrom == 0 || a.Locks[0].TopFrom != topFrom || a.Locks[1].TopFrom != 0 {
		t.Errorf("top from %d and %d, want %d and 0", a.Locks[0].TopFrom, a.Locks[1].TopFrom, topFrom)
	}
	if len(a.Callers) != len(growing) || a.Callers[0].Name != "caller_hot_lock+0x10" || !a.Callers[0].Caller {
		t.Errorf("caller culprits %+v, want caller_hot_lock+0x10 first of %d", a.Callers, len(growing))
	}
}

func TestAnalyzeThroughputAndEfficiency(t *testing.T) {
	s := testSweep(t)
	a := s.Analyze()
	if len(a.Levels) != 3 {
		t.Fatalf("%d levels, want 3", len(a.Levels))
	}
	for i, st := range a.Levels {
		n := float64(s.Levels[i].N)
		want := 1000 * math.Sqrt(n)
		if math.Abs(st.Throughput-want) > 1e-9 {
			t.Errorf("level %v: throughput %v, want %v (the failed run left out)", n, st.Throughput, want)
		}
		if speedup := want / 1000; math.Abs(st.Speedup-speedup) > 1e-9 || math.Abs(st.Efficiency-speedup/n) > 1e-9 {
			t.Errorf("level %v: speedup %v efficiency %v, want %v and %v", n, st.Speedup, st.Efficiency, speedup, speedup/n)
		}
		if st.Oversubscribed != (n > 2) {
			t.Errorf("level %v oversubscribed %v on 2 CPUs", n, st.Oversubscribed)
		}
		var wait float64
		for _, l := range sweepLocks {
			wait += l.scale * math.Pow(n, l.exponent) * want
		}
		if share := wait / (1e9 * n); math.Abs(st.WaitShare-share) > 1e-6 {
			t.Errorf("level %v: wait share %v, want %v", n, st.WaitShare, share)
		}
		var typeSum float64
		for _, v := range st.TypeShares {
			typeSum += v
		}
		if math.Abs(typeSum-st.WaitShare) > 1e-9 {
			t.Errorf("level %v: type shares add up to %v, not the wait share %v", n, typeSum, st.WaitShare)
		}
	}
	if a.Levels[1].Runs != 1 || a.Levels[1].Failed != 1 {
		t.Errorf("level 2: %d runs counted, %d failed; want 1 and 1", a.Levels[1].Runs, a.Levels[1].Failed)
	}
}

func TestThroughputWithoutMetricIsRunsPerSecond(t *testing.T) {
	s := testSweep(t)
	for i := range s.Levels {
		for j := range s.Levels[i].Runs {
			s.Levels[i].Runs[j].Metric = nil
			s.Levels[i].Runs[j].WallNS = int64(s.Levels[i].N) * 5e8 // twice the threads, twice as long
		}
	}
	s.Metric = ""
	a := s.Analyze()
	for i, st := range a.Levels {
		if want := 1e9 / (float64(s.Levels[i].N) * 5e8); math.Abs(st.Throughput-want) > 1e-9 {
			t.Errorf("level %d: throughput %v runs/s, want %v", st.N, st.Throughput, want)
		}
	}
	// The same work each run: wait per unit of work is the run's wait.
	hot := a.Locks[0]
	if hot.Name != "hot_lock" || hot.WaitPerWork[2] != float64(s.Levels[2].Runs[0].Capture.Records[0].TotalNS) {
		t.Errorf("without a metric the first culprit is %s with %v ns per run at level 4, want hot_lock with its wait", hot.Name, hot.WaitPerWork[2])
	}
}

func TestGrowthExponent(t *testing.T) {
	for _, tc := range []struct {
		exp  float64
		n    []int
		zero int // index of a value left at 0, skipped by the fit; -1 for none
	}{{2, []int{1, 2, 4, 8}, -1}, {0.5, []int{1, 3, 9}, -1}, {-1, []int{2, 4, 16}, -1}, {3, []int{1, 2, 4, 8}, 0}} {
		v := make([]float64, len(tc.n))
		for i, n := range tc.n {
			if i != tc.zero {
				v[i] = 7 * math.Pow(float64(n), tc.exp)
			}
		}
		if got := GrowthExponent(tc.n, v); math.Abs(got-tc.exp) > 1e-9 {
			t.Errorf("GrowthExponent(%v, %v) = %v, want %v", tc.n, v, got, tc.exp)
		}
	}
	for _, v := range [][]float64{{0, 0, 5}, {3}, {}} {
		if got := GrowthExponent([]int{1, 2, 4}, v); !math.IsNaN(got) {
			t.Errorf("GrowthExponent of %v = %v, want NaN: fewer than two points", v, got)
		}
	}
	// Noise: the least-squares slope, not the slope of the end points.
	n, v := []int{1, 2, 4}, []float64{1, 8, 16}
	xs := []float64{0, math.Ln2, 2 * math.Ln2}
	ys := []float64{0, math.Log(8), math.Log(16)}
	mx, my := (xs[0]+xs[1]+xs[2])/3, (ys[0]+ys[1]+ys[2])/3
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if got := GrowthExponent(n, v); math.Abs(got-sxy/sxx) > 1e-12 {
		t.Errorf("GrowthExponent(%v, %v) = %v, want the least-squares %v", n, v, got, sxy/sxx)
	}
}

func TestRepresentativeIsTheMedianRun(t *testing.T) {
	l := SweepLevel{N: 2}
	for _, m := range []float64{30, 10, 20, 40} {
		l.Runs = append(l.Runs, SweepRun{WallNS: 1, Metric: &m, Capture: &Capture{Version: FormatVersion}})
	}
	l.Runs = append(l.Runs, SweepRun{WallNS: 1, Failed: "exit status 2", Capture: &Capture{}})
	if r := l.Representative(); r == nil || *r.Metric != 20 {
		t.Errorf("representative %+v, want the run of 20, the lower middle of the four that count", r)
	}
	if r := (SweepLevel{Runs: []SweepRun{{Failed: "x"}}}).Representative(); r != nil {
		t.Errorf("a level of failed runs has representative %+v", r)
	}
}

func encodeSweep(t testing.TB, s *Sweep) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := s.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSweepRoundTrip(t *testing.T) {
	first := encodeSweep(t, testSweep(t))
	if !IsSweep(first) {
		t.Fatal("IsSweep is false for a sweep")
	}
	if IsSweep(encode(t, testCapture(t))) {
		t.Error("IsSweep is true for a capture")
	}
	s, err := ParseSweep(first)
	if err != nil {
		t.Fatal(err)
	}
	if second := encodeSweep(t, s); !bytes.Equal(first, second) {
		t.Errorf("round trip changed the sweep:\n%s\n%s", first, second)
	}
	if a, b := testSweep(t).Analyze(), s.Analyze(); a.Locks[0].Growth != b.Locks[0].Growth {
		t.Errorf("growth %v after the round trip, %v before", b.Locks[0].Growth, a.Locks[0].Growth)
	}
}

func TestParseSweepRefuses(t *testing.T) {
	valid := string(encodeSweep(t, testSweep(t)))
	for _, tc := range []struct {
		name, json string
		want       string
		is         error
	}{
		{"not JSON", "<html>", "decoding sweep", nil},
		{"a capture", string(encode(t, testCapture(t))), `no "sweep_version"`, nil},
		{"another version", strings.Replace(valid, `"sweep_version": 1`, `"sweep_version": 2`, 1), "version 2", ErrUnsupportedSweepVersion},
		{"levels decreasing", strings.Replace(valid, `"n": 4`, `"n": 1`, 1), "levels must increase", nil},
		{"level 0", strings.Replace(valid, `"n": 1`, `"n": 0`, 1), "out of range", nil},
		{"negative metric", strings.Replace(valid, `"metric": 1000,`, `"metric": -1,`, 1), "metric -1", nil},
		{"negative run time", strings.Replace(valid, `"wall_ns": 1000000000`, `"wall_ns": -1`, 1), "wall_ns -1", nil},
		{"a metric of 1.7e308", strings.Replace(valid, `"metric": 1000,`, `"metric": 1.7e308,`, 1), "level 1 run 1: metric 1.7e+308, want 0 or a number from 1e-09 to 1e+18", nil},
		{"a metric of 1e-300", strings.Replace(valid, `"metric": 1000,`, `"metric": 1e-300,`, 1), "metric 1e-300", nil},
		{"a negative cost", strings.Replace(valid, `"start_ns": 0`, `"start_ns": -1`, 1), "cost start_ns -1, between_ns 0: want 0 or more", nil},
		{"an invalid capture", strings.Replace(valid, `"version": 1`, `"version": 9`, 1), "level 1 run 1", ErrUnsupportedVersion},
		{"too many levels", `{"sweep_version":1,"levels":[` + strings.Repeat(`{"n":1},`, MaxSweepLevels) + `{"n":1}]}`, "65 levels", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.json == valid {
				t.Fatal("the case changed nothing")
			}
			_, err := ParseSweep([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) || tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func FuzzParseSweep(f *testing.F) {
	f.Add(encodeSweep(f, testSweep(f)))
	for _, s := range []string{"", "{}", `{"sweep_version":1}`, `{"sweep_version":1,"levels":[{"n":1,"runs":[{"capture":null}]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSweep(data)
		if err != nil {
			return
		}
		// Whatever ParseSweep accepts, the analysis must take and Write must write back.
		a := s.Analyze()
		if len(a.Levels) != len(s.Levels) {
			t.Errorf("%d levels analysed of %d", len(a.Levels), len(s.Levels))
		}
		if _, err := json.Marshal(a); err != nil { // a number that is not finite
			t.Errorf("the analysis does not encode: %v", err)
		}
		first := encodeSweep(t, s)
		again, err := ParseSweep(first)
		if err != nil {
			t.Fatalf("reading back what Write wrote: %v\n%s", err, first)
		}
		if second := encodeSweep(t, again); !bytes.Equal(first, second) {
			t.Errorf("second round trip changed the encoding:\n%s\n%s", first, second)
		}
	})
}

// Two locks of one slab cache at different fields are two culprits, each named by its field; the
// same field in every run, at another address each time, is one.
func TestCulpritsOfOneCacheByField(t *testing.T) {
	s := testSweep(t)
	for i, l := range s.Levels {
		c := l.Runs[0].Capture
		n := uint64(l.N)
		for j, f := range []struct{ off, field string }{{"0x408", "super_block.s_vfs_rename_mutex"}, {"0x70", "super_block.s_umount"}} {
			wait := n * n * n * 1000 * uint64(j+1)
			c.Records = append(c.Records, Record{Type: "mutex", Name: "&kmalloc-2k", ObjectOffset: f.off, Field: f.field,
				Lock: Addr(0xffff8881_00000000 + uint64(i)<<20 + uint64(j)<<12), Comm: "work", PID: 10, TID: 10,
				Count: 1, TotalNS: wait, MinNS: wait, MaxNS: wait, Caller: "do_renameat2+0x221"})
		}
	}
	a := s.Analyze()
	var names []string
	for _, c := range a.Locks {
		if strings.HasPrefix(c.Name, "&kmalloc-2k") {
			names = append(names, c.Name)
		}
	}
	want := []string{"&kmalloc-2k+0x70 (super_block.s_umount)", "&kmalloc-2k+0x408 (super_block.s_vfs_rename_mutex)"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("culprits of &kmalloc-2k %q, want %q", names, want)
	}
}

// TestAnalyzeCountsTheCommandsOwnWaits marks testSweep's captures as of --scope system with the
// command's tree counted, adds an outside process's heavy wait to each: the waiting share is the
// tree's wait over its thread time, the outsider's wait is apart and names no culprit.
func TestAnalyzeCountsTheCommandsOwnWaits(t *testing.T) {
	s := testSweep(t)
	const outsider = 99
	for i := range s.Levels {
		for j := range s.Levels[i].Runs {
			c := s.Levels[i].Runs[j].Capture
			n := uint64(s.Levels[i].N)
			c.Meta.Scope, c.Meta.CommandPIDs = ScopeSystem, []uint32{10}
			// Four processes per instance, each of one thread alive the whole second.
			c.Meta.CommandProcesses, c.Meta.CommandThreads, c.Meta.CommandThreadNS = 4*n, 4*n, 4*n*1e9
			c.Records = append(c.Records, Record{Type: "rwsem:R", Name: "mmap_lock", Lock: 0xffff9000, Comm: "other", PID: outsider, TID: outsider,
				Count: 1, TotalNS: 3e9, MinNS: 3e9, MaxNS: 3e9, Caller: "other_caller+0x1"})
		}
	}
	a := s.Analyze()
	for i, st := range a.Levels {
		n := float64(st.N)
		var wait float64
		for _, l := range sweepLocks {
			wait += l.scale * math.Pow(n, l.exponent) * 1000 * math.Sqrt(n)
		}
		if share := wait / (4 * n * 1e9); !st.Own || math.Abs(st.WaitShare-share) > 1e-6 {
			t.Errorf("level %v: wait share %v (own %v), want the tree's %v over its 4N threads", n, st.WaitShare, st.Own, share)
		}
		if st.Threads != 4*n || st.Processes != 4*n || !st.Others || st.OthersWaitNS != 3e9 {
			t.Errorf("level %v: %v threads, %v processes, others %v with %d ns; want %v, %v, true, 3e9", n, st.Threads, st.Processes, st.Others, st.OthersWaitNS, 4*n, 4*n)
		}
		if s.Levels[i].Runs[0].Capture.Records[len(sweepLocks)].PID != outsider {
			t.Fatalf("the outsider's record moved")
		}
	}
	for _, c := range append(a.Locks, a.Callers...) {
		if c.Name == "mmap_lock" || c.Name == "other_caller+0x1" {
			t.Errorf("the outside process's %s is a culprit", c.Name)
		}
	}
}

// TestAnalyzeFlagsASuperlinearBaseline: a level 1 that made a tenth of its throughput per instance
// (one instance stuck in I/O) is a suspect baseline, the levels after it are not.
func TestAnalyzeFlagsASuperlinearBaseline(t *testing.T) {
	s := testSweep(t)
	slow := *s.Levels[0].Runs[0].Metric / 10
	s.Levels[0].Runs[0].Metric = &slow
	a := s.Analyze()
	first := a.Levels[0]
	// Level 2's throughput per instance is 1000·√2/2 against 100.
	if want := 1000 * math.Sqrt2 / 2 / 100; first.NextN != 2 || math.Abs(first.BelowNext-want) > 1e-9 {
		t.Errorf("level 1: below level %d by %v, want level 2 by %v", first.NextN, first.BelowNext, want)
	}
	if a.Levels[1].Efficiency <= 1 {
		t.Errorf("level 2 efficiency %v: the fixture should be superlinear", a.Levels[1].Efficiency)
	}
	for _, st := range a.Levels[1:] {
		if st.BelowNext != 0 {
			t.Errorf("level %d flagged below level %d by %v: it scales sublinearly", st.N, st.NextN, st.BelowNext)
		}
	}
	if a := testSweep(t).Analyze(); a.Levels[0].BelowNext != 0 {
		t.Errorf("testSweep's level 1 flagged by %v: its speedup is √N", a.Levels[0].BelowNext)
	}
}

// TestAnalyzeSpreadOfRepeats gives each level a second run: one where every lock waits twice as
// long. The figures carry both runs' range; warm_lock, growing as N, stays inside that noise
// across 1..4 only when the runs spread wider than its growth.
func TestAnalyzeSpreadOfRepeats(t *testing.T) {
	repeat := func(factor float64) *Sweep {
		s := testSweep(t)
		for i := range s.Levels {
			r := s.Levels[i].Runs[0]
			c := *r.Capture
			c.Records = slices.Clone(c.Records)
			for k := range c.Records {
				c.Records[k].TotalNS = uint64(float64(c.Records[k].TotalNS) * factor)
			}
			metric := *r.Metric * 1.1
			r.Metric, r.Capture = &metric, &c
			s.Levels[i].Runs = append(s.Levels[i].Runs, r)
		}
		return s
	}
	a := repeat(2).Analyze()
	for _, st := range a.Levels {
		want := 1000 * math.Sqrt(float64(st.N))
		if st.Runs != 2 || math.Abs(st.ThroughputLo-want) > 1e-9 || math.Abs(st.ThroughputHi-1.1*want) > 1e-9 {
			t.Errorf("level %d: %d runs, throughput %v to %v; want 2, %v to %v", st.N, st.Runs, st.ThroughputLo, st.ThroughputHi, want, 1.1*want)
		}
		if st.WaitShareHi <= st.WaitShareLo || st.WaitShare < st.WaitShareLo || st.WaitShare > st.WaitShareHi {
			t.Errorf("level %d: wait share %v outside its runs' %v to %v", st.N, st.WaitShare, st.WaitShareLo, st.WaitShareHi)
		}
	}
	inNoise := func(a ScaleAnalysis, name string) bool {
		for _, c := range a.Locks {
			if c.Name == name {
				return c.InNoise
			}
		}
		t.Fatalf("%s is no culprit", name)
		return false
	}
	// Runs a factor 2 apart per unit of work (with the 1.1 in the metric, 2/1.1): hot_lock grows
	// 16-fold, warm_lock 4-fold, both beyond it.
	if inNoise(a, "hot_lock") || inNoise(a, "warm_lock") {
		t.Errorf("a 4-fold growth marked as noise of runs 1.8x apart")
	}
	// Runs 5 apart: warm_lock's 4-fold growth is inside, hot_lock's 16-fold is not.
	a = repeat(5.5).Analyze()
	if !inNoise(a, "warm_lock") || inNoise(a, "hot_lock") {
		t.Errorf("runs 5x apart: warm_lock in noise %v, hot_lock %v; want true, false", inNoise(a, "warm_lock"), inNoise(a, "hot_lock"))
	}
	if inNoise(testSweep(t).Analyze(), "hot_lock") {
		t.Errorf("a culprit of single runs marked as in the noise")
	}
}

// TestAMetricOfZeroDoesNotCount: a run that reported no work is no throughput to scale from.
func TestAMetricOfZeroDoesNotCount(t *testing.T) {
	s := testSweep(t)
	zero := 0.0
	s.Levels[0].Runs[0].Metric = &zero
	a := s.Analyze()
	if st := a.Levels[0]; st.Runs != 0 || st.Failed != 1 || a.Levels[1].Speedup != 1 {
		t.Errorf("level 1 with a metric of 0: %d runs count, %d failed, level 2 speedup %v; want 0, 1 and 1 (level 2 the base)", st.Runs, st.Failed, a.Levels[1].Speedup)
	}
}

// Waits that add up past a uint64 stop at its maximum and mark the analysis, as a capture's sums
// do, instead of wrapping.
func TestAnalyzeSaturates(t *testing.T) {
	s := testSweep(t)
	for _, l := range s.Levels {
		for i := range l.Runs[0].Capture.Records {
			l.Runs[0].Capture.Records[i].TotalNS = math.MaxUint64
		}
	}
	a := s.Analyze()
	if !a.Saturated {
		t.Error("not marked saturated")
	}
	for _, st := range a.Levels {
		if st.Runs > 0 && st.WaitNS != math.MaxUint64 {
			t.Errorf("level %d: wait %d, want the maximum", st.N, st.WaitNS)
		}
	}
	if testSweep(t).Analyze().Saturated {
		t.Error("a sound sweep marked saturated")
	}
}

func TestSweepKernels(t *testing.T) {
	s := testSweep(t)
	if k := s.Kernels(); len(k) != 1 {
		t.Errorf("kernels %q of one kernel", k)
	}
	s.Levels[2].Runs[0].Capture.Meta.Kernel, s.Levels[2].Runs[0].Capture.Meta.Arch = "6.1.0", "arm64"
	if k := s.Kernels(); len(k) != 2 || k[1] != "6.1.0 arm64" {
		t.Errorf("kernels %q, want 2, the second 6.1.0 arm64", k)
	}
}
