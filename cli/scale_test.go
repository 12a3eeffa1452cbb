package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/collector"
	"github.com/klockstat/klockstat/internal/capturetest"
	"github.com/klockstat/klockstat/internal/testenv"
	"github.com/klockstat/klockstat/report"
)

// A mistake in --levels, --metric or --repeat fails with one line naming the flag and the fix, and
// runs nothing: no root needed.
func TestScaleFlagMistakesFailBeforeAnythingRuns(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--levels", "1,x,4"}, []string{`--levels "1,x,4": "x" is not a level`, "e.g. --levels 1,2,4,8"}},
		{[]string{"--levels", "0,2"}, []string{`"0" is not a level`}},
		{[]string{"--levels", "2,4,2"}, []string{"2 given twice"}},
		{[]string{"--levels", ""}, []string{`"" is not a level`}},
		{[]string{"--metric", "ops=("}, []string{`--metric "ops=(": not a regular expression`, "e.g. --metric"}},
		{[]string{"--metric", "ops=[0-9]+"}, []string{"no capture group", "put the number in parentheses"}},
		{[]string{"--repeat", "0"}, []string{"--repeat 0: must be at least 1"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			ran := filepath.Join(dir, "ran")
			var stdout, stderr bytes.Buffer
			args := append([]string{"scale", "-o", filepath.Join(dir, "scale.html")}, tc.args...)
			args = append(args, "--", "touch", ran, "{N}")
			status := Main("test", args, nil, &stdout, &stderr)
			if status != 2 {
				t.Errorf("exit status %d, want 2", status)
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[1], "Run 'klockstat --help'") {
				t.Errorf("stderr is not one line and the hint:\n%s", stderr.String())
			}
			for _, want := range tc.want {
				if !strings.Contains(lines[0], want) {
					t.Errorf("error %q lacks %q", lines[0], want)
				}
			}
			if _, err := os.Stat(ran); err == nil {
				t.Error("the command ran")
			}
		})
	}
}

func TestScaleWithoutCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if status := Main("test", []string{"scale", "-o", ""}, nil, &stdout, &stderr); status != 2 || !strings.Contains(stderr.String(), "needs a command after --") {
		t.Errorf("status %d, stderr %q; want 2 and a word on the command", status, stderr.String())
	}
}

func TestParseLevelsSorts(t *testing.T) {
	levels, err := parseLevels("8, 1,4,2")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 2, 4, 8}; !slices.Equal(levels, want) {
		t.Errorf("levels %v, want %v", levels, want)
	}
}

func TestDefaultLevelsAreTwiceTheCPUs(t *testing.T) {
	for _, cpus := range []int{1, 2, 3, 8} {
		levels := defaultLevels(cpus)
		last := levels[len(levels)-1]
		if levels[0] != 1 || last > 2*cpus || 2*last <= 2*cpus {
			t.Errorf("%d CPUs: levels %v, want powers of two up to %d", cpus, levels, 2*cpus)
		}
		for i := 1; i < len(levels); i++ {
			if levels[i] != 2*levels[i-1] {
				t.Errorf("%d CPUs: levels %v are not powers of two", cpus, levels)
			}
		}
	}
}

// metricOf writes outs to a metricMatch of re, each through a stream of its own in pieces of chunk
// bytes, and returns its value.
func metricOf(re *regexp.Regexp, chunk int, outs ...string) (*float64, string, string) {
	m := &metricMatch{re: re}
	for _, out := range outs {
		st := m.stream()
		for len(out) > 0 {
			n := min(chunk, len(out))
			st.Write([]byte(out[:n]))
			out = out[n:]
		}
		st.Close()
	}
	return m.value()
}

func TestMetricIsTheLastLineWithAMatch(t *testing.T) {
	re := regexp.MustCompile(`ops/s: ([0-9.,]+)`)
	for _, chunk := range []int{1, 3, 1 << 20} {
		v, line, failed := metricOf(re, chunk, "warm-up ops/s: 10\nops/s: 1,234.5\nrate ops/s: 99.5\ndone\n")
		if failed != "" || v == nil || *v != 99.5 || line != "rate ops/s: 99.5" {
			t.Errorf("in pieces of %d: metric %v from %q (%q), want 99.5 from its line", chunk, v, line, failed)
		}
	}
	if v, _, failed := metricOf(re, 7, "ops/s: 1,234.5"); v == nil || *v != 1234.5 {
		t.Errorf("metric %v (%q), want 1234.5: thousands separators dropped, a last line without newline matched", v, failed)
	}
	if v, _, failed := metricOf(re, 5, "nothing here"); v != nil || !strings.Contains(failed, "no match of --metric") {
		t.Errorf("metric %v, failure %q; want none and no match", v, failed)
	}
	if v, _, failed := metricOf(regexp.MustCompile(`rate (\S+)`), 5, "rate fast"); v != nil || !strings.Contains(failed, `"fast"`) {
		t.Errorf("metric %v, failure %q; want none and the text matched", v, failed)
	}
	// No work is no throughput: a failed run, not a run without contention.
	if v, line, failed := metricOf(re, 5, "ops/s: 0.00\n"); v != nil || line != "ops/s: 0.00" || !strings.Contains(failed, "matched 0") {
		t.Errorf("metric %v from %q, failure %q; want none, the line, and a failure saying 0", v, line, failed)
	}
}

// A match printed before megabytes of later output is found, and a number is never read from the
// middle: the window is the whole line, not the last bytes of the output.
func TestMetricBeforeALargeOutput(t *testing.T) {
	re := regexp.MustCompile(`([0-9]+) ops/s`)
	noise := strings.Repeat(strings.Repeat("x", 99)+"\n", 30000) // 3 MB after the figure
	v, line, failed := metricOf(re, 4096, "result: 98765 ops/s\n"+noise)
	if failed != "" || v == nil || *v != 98765 || line != "result: 98765 ops/s" {
		t.Errorf("metric %v from %q (%q), want 98765 from its line before 3 MB of output", v, line, failed)
	}
	// A line longer than maxMetricLine is matched on its start; its end is dropped whole, so it
	// cannot end in a number whose start is gone.
	long := "12345 ops/s " + strings.Repeat("y", 2*maxMetricLine) + " 678 ops/s\n"
	if v, _, _ := metricOf(re, 1000, long); v == nil || *v != 12345 {
		t.Errorf("metric %v of an overlong line, want 12345 from its start", v)
	}
	// stdout and stderr are cut into lines apart: interleaved writes do not mix their lines.
	m := &metricMatch{re: re}
	out, errs := m.stream(), m.stream()
	out.Write([]byte("total 4"))
	errs.Write([]byte("warning: 1"))
	out.Write([]byte("2 ops/s\n"))
	errs.Write([]byte("7 retries\n"))
	if v, line, failed := m.value(); v == nil || *v != 42 || line != "total 42 ops/s" {
		t.Errorf("metric %v from %q (%q), want 42 from stdout's line", v, line, failed)
	}
}

func TestSubstituteAndLevelPath(t *testing.T) {
	if got := substitute([]string{"run", "-j{N}", "--x={N}/{N}"}, 4); strings.Join(got, " ") != "run -j4 --x=4/4" {
		t.Errorf("substitute: %q", got)
	}
	for path, want := range map[string]string{"out.csv": "out-level8.csv", "dir/waits.folded.txt": "dir/waits-level8.folded.txt", "plain": "plain-level8"} {
		if got := levelPath(path, 8); got != want {
			t.Errorf("levelPath(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestOutputTailKeepsTheEnd(t *testing.T) {
	tail := &outputTail{limit: 16}
	tail.Write([]byte("first line\nsecond\n"))
	tail.Write([]byte("third\n\n"))
	all := "first line\nsecond\nthird\n\n"
	if got := string(tail.bytes()); got != all[len(all)-16:] {
		t.Errorf("tail %q: want the last 16 bytes", got)
	}
	if got := tail.lastLines(2); strings.Join(got, "|") != "second|third" {
		t.Errorf("last lines %q, want second and third", got)
	}
}

// readSweepFile reads a sweep JSON or scaling report.
func readSweepFile(t *testing.T, path string) *capture.Sweep {
	t.Helper()
	in, err := report.ReadAnyInputFile(path, nil)
	if err != nil || in.Sweep == nil {
		t.Fatalf("reading the sweep %s: %v (a capture: %v)", path, err, in.Capture != nil)
	}
	return in.Sweep
}

// The contention workload at 1, 2 and 4 threads on one lock: that lock ranks first, its wait per
// unit of work grows, and throughput is contend's own figure.
func TestScaleSweepOfTheContentionWorkload(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	out, html := filepath.Join(dir, "sweep.json"), filepath.Join(dir, "scale.html")
	contend := testenv.Build(t, "./examples/contend")
	metric := `lock=total .* ops_per_sec=([0-9.]+)`
	cmd, stdout, stderr := klockstat(t, "scale", "--levels", "1,2,4", "--comm", "contend", "--metric", metric, "--json", out, "-o", html, "--",
		contend, "-lock", "inode", "-dir", dir, "-threads", "{N}", "-duration", "1s")
	if status := exitStatus(t, cmd.Run()); status != 0 {
		t.Fatalf("exit status %d\nstderr: %s", status, stderr)
	}
	s := readSweepFile(t, out)
	if len(s.Levels) != 3 || s.Metric != metric || s.Cost.StartNS <= 0 || s.Cost.BetweenNS <= 0 {
		t.Fatalf("sweep of %d levels, metric %q, cost %+v", len(s.Levels), s.Metric, s.Cost)
	}
	// contend's stdout reached ours, and each run's metric is what it printed last.
	printed := regexp.MustCompile(metric).FindAllStringSubmatch(stdout.String(), -1)
	if len(printed) != 3 {
		t.Fatalf("%d throughput lines of contend on stdout, want 3:\n%s", len(printed), stdout)
	}
	for i, l := range s.Levels {
		r := l.Runs[0]
		want, _ := strconv.ParseFloat(printed[i][1], 64)
		if r.Failed != "" || r.Metric == nil || *r.Metric != want {
			t.Errorf("level %d: metric %v (failed %q), want contend's %v", l.N, r.Metric, r.Failed, want)
		}
		if r.Argv[len(r.Argv)-3] != strconv.Itoa(l.N) || r.Capture.Meta.Workload[len(r.Argv)-3] != strconv.Itoa(l.N) {
			t.Errorf("level %d ran %q", l.N, r.Argv)
		}
	}
	a := s.Analyze()
	base := a.Levels[0].Throughput
	for _, st := range a.Levels {
		if speedup := st.Throughput / base; st.Speedup != speedup || st.Efficiency != speedup/float64(st.N) {
			t.Errorf("level %d: speedup %v efficiency %v, want %v and %v", st.N, st.Speedup, st.Efficiency, speedup, speedup/float64(st.N))
		}
		if st.Oversubscribed != (st.N > runtime.NumCPU()) {
			t.Errorf("level %d oversubscribed: %v", st.N, st.Oversubscribed)
		}
	}
	if len(a.Locks) == 0 {
		t.Fatal("no culprit")
	}
	first := a.Locks[0]
	switch {
	case first.Type != "rwsem:W":
		t.Errorf("first culprit %s %s, want the inode's rwsem:W", first.Type, first.Name)
	case first.Name == "" && namesRefused(s):
		// A kernel that refuses the lock-naming programs (the hardened PVM guest) leaves
		// the inode's rwsem unnamed, and the captures say so: the waits on it tell it.
		if !waitsIn(s, first.Lock, "vfs_write", "ksys_pwrite64") {
			t.Errorf("first culprit, the unnamed rwsem:W %v, is not what contend's writes wait on", first.Lock)
		}
	case !strings.Contains(first.Name, "inode"):
		t.Errorf("first culprit %s %s, want the inode's rwsem:W", first.Type, first.Name)
	}
	if w := first.WaitPerWork; !(w[len(w)-1] > w[0]) {
		t.Errorf("wait per unit of work %v does not grow", w)
	}
	for _, want := range []string{"speedup", "efficiency", "Scaling culprits", "scaling report: " + html} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	// The report carries the sweep, and re-renders it.
	if back := readSweepFile(t, html); back.Analyze().Locks[0].Name != first.Name {
		t.Errorf("the scaling report's sweep ranks %s first, the JSON %s", back.Analyze().Locks[0].Name, first.Name)
	}
	level := filepath.Join(dir, "level2.json")
	cmd, _, stderr = klockstat(t, "report", html, "--level", "2", "--json", level, "-o", "", "-q")
	if status := exitStatus(t, cmd.Run()); status != 0 {
		t.Fatalf("report --level 2: exit status %d\nstderr: %s", status, stderr)
	}
	if c := readCaptureFile(t, level); c.Meta.Workload[len(c.Meta.Workload)-3] != "2" {
		t.Errorf("report --level 2 wrote the capture of %q", c.Meta.Workload)
	}
}

// A run that fails, by its exit status or a missing metric, is marked with its output's last lines;
// the sweep goes on and exits 1.
func TestScaleFailedLevels(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "sweep.json")
	script := `case {N} in 2) echo "level two breaks" >&2; exit 3;; 3) echo "no figure";; *) echo "ops=100";; esac`
	cmd, _, stderr := klockstat(t, "scale", "--levels", "1,2,3", "--metric", `ops=([0-9]+)`, "--json", out, "-o", filepath.Join(dir, "s.html"), "-q",
		"--", "sh", "-c", script)
	if status := exitStatus(t, cmd.Run()); status != 1 {
		t.Fatalf("exit status %d, want 1\nstderr: %s", status, stderr)
	}
	if !strings.Contains(stderr.String(), "2 of 3 runs failed") {
		t.Errorf("stderr does not count the failures:\n%s", stderr)
	}
	s := readSweepFile(t, out)
	if len(s.Levels) != 3 {
		t.Fatalf("%d levels, want all 3: the sweep goes on", len(s.Levels))
	}
	for _, tc := range []struct {
		level        int
		failed, tail string
	}{{1, "", ""}, {2, "exit status 3", "level two breaks"}, {3, "no match of --metric", "no figure"}} {
		r := s.Levels[tc.level-1].Runs[0]
		if !strings.Contains(r.Failed, tc.failed) || tc.failed == "" && r.Failed != "" || !strings.Contains(strings.Join(r.Tail, "\n"), tc.tail) {
			t.Errorf("level %d: failed %q, tail %q; want %q and %q", tc.level, r.Failed, r.Tail, tc.failed, tc.tail)
		}
	}
}

// Ctrl-C ends the current run and writes the report of the runs done.
func TestScaleInterruptWritesTheRunsDone(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "sweep.json")
	csv := filepath.Join(dir, "waits.csv")
	cmd, _, stderr := klockstat(t, "scale", "--levels", "1,2,3", "--json", out, "-o", filepath.Join(dir, "s.html"), "--csv", csv, "--",
		"sh", "-c", `[ {N} -lt 2 ] || exec sleep 60`)
	var errBuf lockedBuffer
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(errBuf.String(), "level 2, run 1") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	started := time.Now()
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if status := exitStatus(t, err); status != 128+int(syscall.SIGINT) {
			t.Errorf("exit status %d, want %d\nstderr: %s%s", status, 128+int(syscall.SIGINT), stderr, errBuf.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("klockstat scale did not stop on SIGINT")
	}
	t.Logf("stopped %v after the signal", time.Since(started).Round(time.Millisecond))
	s := readSweepFile(t, out)
	if !s.Interrupted || len(s.Levels) != 2 {
		t.Fatalf("interrupted %v with %d levels, want the 2 begun", s.Interrupted, len(s.Levels))
	}
	if r := s.Levels[1].Runs[0]; !strings.HasPrefix(r.Failed, "interrupted") || r.WallNS > int64(30*time.Second) {
		t.Errorf("level 2 run: failed %q after %v, want cut short by the interrupt", r.Failed, time.Duration(r.WallNS))
	}
	if r := s.Levels[0].Runs[0]; !r.OK() {
		t.Errorf("level 1 run failed: %q", r.Failed)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.html")); err != nil {
		t.Errorf("no scaling report after the interrupt: %v", err)
	}
	// The level done has its export; the one cut short and the one never begun have none.
	for n, want := range map[int]bool{1: true, 2: false, 3: false} {
		if _, err := os.Stat(levelPath(csv, n)); (err == nil) != want {
			t.Errorf("--csv of level %d: exists %v, want %v", n, err == nil, want)
		}
	}
}

// namesRefused reports whether a sweep's captures say that the kernel would not name their locks.
func namesRefused(s *capture.Sweep) bool {
	for _, l := range s.Levels {
		for _, r := range l.Runs {
			if r.Capture != nil && slices.ContainsFunc(r.Capture.Meta.Warnings, func(w string) bool {
				return strings.HasPrefix(w, "locks of other processes, runqueues and slab objects are not named")
			}) {
				return true
			}
		}
	}
	return false
}

// waitsIn reports whether a sweep's captures have a wait on lock with one of the frames on its stack.
func waitsIn(s *capture.Sweep, lock capture.Addr, frames ...string) bool {
	for _, l := range s.Levels {
		for _, r := range l.Runs {
			if r.Capture == nil {
				continue
			}
			for _, rec := range r.Capture.Records {
				if rec.Lock == lock && rec.Count > 0 && slices.ContainsFunc(rec.Stack, func(f string) bool {
					return slices.ContainsFunc(frames, func(fn string) bool { return strings.HasPrefix(f, fn+"+") })
				}) {
					return true
				}
			}
		}
	}
	return false
}

// stress-ng with its own metric, end to end: its bogo ops/s is each run's throughput.
func TestScaleSweepOfStressNG(t *testing.T) {
	testenv.RequireRoot(t)
	// Its flock workers contend the file's flc_lock, a spinlock: where the kernel announces no
	// spinlock wait, no lock scales with them.
	testenv.RequireSpinlockWaits(t, collector.SpinlockWaits, collector.ErrSpinlockWaitsUnseen)
	stressNG := "/usr/bin/stress-ng"
	if _, err := os.Stat(stressNG); err != nil {
		if testenv.InCI() {
			t.Fatalf("%s is missing: CI must install the Debian package stress-ng", stressNG)
		}
		t.Skipf("%s is missing (apt-get install stress-ng)", stressNG)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "sweep.json")
	metric := `flock\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)`
	cmd, stdout, stderr := klockstat(t, "scale", "--levels", "1,2", "--metric", metric, "--json", out, "-o", filepath.Join(dir, "s.html"), "--",
		stressNG, "--flock", "{N}", "-t", "2s", "--metrics-brief", "--temp-path", dir)
	if status := exitStatus(t, cmd.Run()); status != 0 {
		t.Fatalf("exit status %d\nstderr: %s", status, stderr)
	}
	s := readSweepFile(t, out)
	printed := regexp.MustCompile(metric).FindAllStringSubmatch(stdout.String()+stderr.String(), -1)
	if len(printed) != len(s.Levels) {
		t.Fatalf("%d metric lines of stress-ng, want %d", len(printed), len(s.Levels))
	}
	for i, l := range s.Levels {
		want, _ := strconv.ParseFloat(printed[i][1], 64)
		if r := l.Runs[0]; !r.OK() || r.Metric == nil || *r.Metric != want {
			t.Errorf("level %d: metric %v (failed %q), want stress-ng's %v", l.N, r.Metric, r.Failed, want)
		}
	}
	if a := s.Analyze(); len(a.Locks) == 0 || a.Levels[1].Speedup == 0 {
		t.Errorf("no culprit or no speedup: %+v", a.Levels)
	}
}

// testSweepFile writes a sweep of levels 1 and 2, a capture each of one lock, and returns its path.
func testSweepFile(t *testing.T, dir string) string {
	t.Helper()
	s := &capture.Sweep{Version: capture.SweepFormatVersion, Tool: "klockstat", Command: []string{"work", "{N}"}, CPUs: 2}
	for _, n := range []int{1, 2} {
		c := capturetest.Of(t, 1e9, capturetest.Rec("mutex", "hot_lock", "hot_caller+0x10", "work", 10, 11, 0xffffffff83000000, uint64(n)*1000, uint64(n)*3000))
		c.Meta.Workload = []string{"work", strconv.Itoa(n)}
		s.Levels = append(s.Levels, capture.SweepLevel{N: n, Runs: []capture.SweepRun{{Argv: c.Meta.Workload, WallNS: 1e9, Capture: c}}})
	}
	path := filepath.Join(dir, "sweep.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := s.Write(f); err != nil {
		t.Fatal(err)
	}
	return path
}

// klockstat report re-renders a sweep: the scaling report, one pprof whose samples carry their
// level, a CSV per level; --level N one level's report.
func TestReportOfASweep(t *testing.T) {
	dir := t.TempDir()
	in := testSweepFile(t, dir)
	html, pprofPath, csv := filepath.Join(dir, "scale.html"), filepath.Join(dir, "waits.pb.gz"), filepath.Join(dir, "waits.csv")
	var stdout, stderr bytes.Buffer
	if status := Main("test", []string{"report", in, "-o", html, "--pprof", pprofPath, "--csv", csv}, nil, &stdout, &stderr); status != 0 {
		t.Fatalf("exit status %d\n%s", status, stderr.String())
	}
	if s := readSweepFile(t, html); len(s.Levels) != 2 {
		t.Errorf("the scaling report holds %d levels, want 2", len(s.Levels))
	}
	if !strings.Contains(stdout.String(), "Scaling culprits") || !strings.Contains(stdout.String(), "hot_lock") {
		t.Errorf("summary lacks the culprits:\n%s", stdout.String())
	}
	f, err := os.Open(pprofPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	levels := map[string]bool{}
	for _, s := range p.Sample {
		if len(s.Label["level"]) != 1 {
			t.Fatalf("a sample without one level label: %v", s.Label)
		}
		levels[s.Label["level"][0]] = true
	}
	if !levels["1"] || !levels["2"] || len(levels) != 2 {
		t.Errorf("samples of levels %v, want 1 and 2", levels)
	}
	for _, n := range []int{1, 2} {
		if b, err := os.ReadFile(levelPath(csv, n)); err != nil || !bytes.Contains(b, []byte("hot_lock")) {
			t.Errorf("level %d's CSV: %v", n, err)
		}
	}
	level := filepath.Join(dir, "level2.json")
	stdout.Reset()
	if status := Main("test", []string{"report", html, "--level", "2", "--json", level, "-o", "", "-q"}, nil, &stdout, &stderr); status != 0 {
		t.Fatalf("--level 2: exit status %d\n%s", status, stderr.String())
	}
	if c := readCaptureFile(t, level); c.Meta.Workload[1] != "2" {
		t.Errorf("--level 2 wrote the capture of %q", c.Meta.Workload)
	}
	stderr.Reset()
	if status := Main("test", []string{"report", in, "--level", "3", "-o", ""}, nil, &stdout, &stderr); status != 2 || !strings.Contains(stderr.String(), "levels: 1,2") {
		t.Errorf("--level 3: status %d, stderr %q; want 2 and the levels there are", status, stderr.String())
	}
}

// A signal while the probes load ends the sweep before any run: no command started, nothing written.
func TestScaleSignalBeforeTheSweepBegan(t *testing.T) {
	testenv.RequireRoot(t)
	cmd, _, stderr := klockstat(t, "scale", "--levels", "1,2", "-o", "s.html", "--", "sh", "-c", "touch started-{N}")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Loading and attaching the probes takes most of a second or more: the signal comes as the
	// first program is loaded, when klockstat catches it (a fixed sleep came before that on a
	// loaded machine, and the signal killed the process).
	for deadline := time.Now().Add(30 * time.Second); len(testenv.BPFPrograms(cmd.Process.Pid)) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no BPF program loaded after 30 s: %s", stderr)
		}
	}
	cmd.Process.Signal(os.Interrupt)
	status := exitStatus(t, cmd.Wait())
	if status != 128+int(syscall.SIGINT) || !strings.Contains(stderr.String(), "before the capture began") {
		t.Errorf("exit status %d, stderr %q; want %d and a line saying the sweep had not begun", status, stderr, 128+int(syscall.SIGINT))
	}
	for _, name := range []string{"started-1", "s.html"} {
		if exists(cmd.Dir, name) {
			t.Errorf("%s exists: the sweep went on after a signal before it began", name)
		}
	}
}

// waitForLine waits up to a minute for s to appear in the output b.
func waitForLine(t *testing.T, b *lockedBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in a minute:\n%s", s, b.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesWith lists the processes whose command line has marker.
func processesWith(t *testing.T, marker string) []string {
	t.Helper()
	out, err := exec.Command("pgrep", "-af", marker).Output()
	if err != nil && len(out) == 0 {
		return nil // pgrep's status 1: none
	}
	var found []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if !strings.Contains(line, "pgrep") {
			found = append(found, line)
		}
	}
	return found
}

// At the window's end the run's whole process group goes, a child that ignores SIGTERM by SIGKILL
// after the grace, and the run says so; nothing outlives klockstat.
func TestScaleEndsTheRunsProcessGroup(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "sweep.json")
	marker := "6" + strconv.Itoa(os.Getpid()%1000) + "{N}" // sleep's seconds: unique to the test
	script := `trap "" TERM; sleep ` + marker + ` & sleep ` + marker + `; echo ops=1`
	cmd, _, stderr := klockstat(t, "scale", "--levels", "1,2", "-d", "1s", "--json", out, "-o", "", "-q", "--", "sh", "-c", script)
	began := time.Now()
	if status := exitStatus(t, cmd.Run()); status != 1 {
		t.Fatalf("exit status %d, want 1 (every run ran over)\nstderr: %s", status, stderr)
	}
	// Two runs: a second's window each, then the grace.
	if took, most := time.Since(began), 2*(time.Second+groupGrace)+20*time.Second; took > most {
		t.Errorf("the sweep took %v, more than %v", took, most)
	}
	for _, n := range []string{"1", "2"} {
		if left := processesWith(t, "sleep "+strings.ReplaceAll(marker, "{N}", n)); len(left) > 0 {
			t.Errorf("level %s's processes outlived the sweep: %q", n, left)
		}
	}
	s := readSweepFile(t, out)
	for _, l := range s.Levels {
		r := l.Runs[0]
		if !strings.Contains(r.Failed, "ran longer than --duration 1s") || !strings.Contains(r.Stop, "SIGTERM, then SIGKILL after the 5s grace") ||
			strings.Contains(r.Stop, "exited by itself") {
			t.Errorf("level %d: failed %q, stop %q; want over the window, SIGTERM then SIGKILL, not exited by itself", l.N, r.Failed, r.Stop)
		}
		if r.WallNS < int64(time.Second+groupGrace) {
			t.Errorf("level %d ran %v: SIGKILL came before the grace", l.N, time.Duration(r.WallNS))
		}
	}
	if !strings.Contains(stderr.String(), "then SIGKILL after the 5s grace") {
		t.Errorf("stderr does not say how the runs ended:\n%s", stderr)
	}
}

// A command that exits by itself leaving a process in its group: the run counts, and the process
// left gets SIGTERM, which the run says.
func TestScaleEndsWhatTheCommandLeft(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "sweep.json")
	marker := "7" + strconv.Itoa(os.Getpid()%1000) + "{N}"
	cmd, _, stderr := klockstat(t, "scale", "--levels", "1", "--metric", `ops=([0-9]+)`, "--json", out, "-o", "", "-q", "--",
		"sh", "-c", `sleep `+marker+` & echo ops=5`)
	if status := exitStatus(t, cmd.Run()); status != 0 {
		t.Fatalf("exit status %d\nstderr: %s", status, stderr)
	}
	if left := processesWith(t, "sleep "+strings.ReplaceAll(marker, "{N}", "1")); len(left) > 0 {
		t.Errorf("the command's background sleep outlived the sweep: %q", left)
	}
	r := readSweepFile(t, out).Levels[0].Runs[0]
	if !r.OK() || r.Stop != "the command had exited by itself; processes it left in its group got SIGTERM" || r.Matched != "ops=5" {
		t.Errorf("run failed %q, stop %q, matched %q; want it counted, its leftover sent SIGTERM, the metric's line", r.Failed, r.Stop, r.Matched)
	}
}

// SIGKILL in the second level leaves the sweep JSON and the scaling report of the first, which
// klockstat report reads; no export of a level that never ran.
func TestScaleKilledKeepsTheLevelsDone(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	out, html, csv := filepath.Join(dir, "sweep.json"), filepath.Join(dir, "scale.html"), filepath.Join(dir, "waits.csv")
	cmd, _, _ := klockstat(t, "scale", "--levels", "1,2,3", "--json", out, "-o", html, "--csv", csv, "--",
		"sh", "-c", `[ {N} -lt 2 ] || exec sleep 60`)
	var errBuf lockedBuffer
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForLine(t, &errBuf, "level 2, run 1 of 1")
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Kill()
	if err := cmd.Wait(); exitStatus(t, err) != -1 && !strings.Contains(err.Error(), "killed") {
		t.Errorf("klockstat ended with %v, want killed", err)
	}
	for _, path := range []string{out, html} {
		s := readSweepFile(t, path)
		if len(s.Levels) != 1 || s.Levels[0].N != 1 || !s.Levels[0].Runs[0].OK() || !s.Interrupted {
			t.Errorf("%s: %d levels, interrupted %v; want level 1's counted run, marked interrupted", path, len(s.Levels), s.Interrupted)
		}
	}
	report, rout, rerr := klockstat(t, "report", out, "-o", filepath.Join(dir, "again.html"))
	if status := exitStatus(t, report.Run()); status != 0 || !strings.Contains(rout.String(), "interrupted") {
		t.Errorf("klockstat report of the killed sweep: status %d\n%s%s", status, rout, rerr)
	}
	for _, n := range []int{1, 2, 3} {
		if _, err := os.Stat(levelPath(csv, n)); err == nil {
			t.Errorf("--csv of level %d exists: the exports are written at the end", n)
		}
	}
}

// --scope command: an outside process contending the same kind of lock during the sweep has no
// wait in any level's capture; under the default system scope its waits are apart from the
// command's, and the levels count the command's processes and threads.
func TestScaleScopeExcludesAnOutsider(t *testing.T) {
	testenv.RequireRoot(t)
	contend := testenv.Build(t, "./examples/contend")
	outsider := exec.Command(contend, "-lock", "mmap", "-threads", "2", "-duration", "60s")
	if err := outsider.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { outsider.Process.Kill(); outsider.Wait() }()
	pid := uint32(outsider.Process.Pid)
	for _, scope := range []string{"command", "system"} {
		t.Run(scope, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "sweep.json")
			cmd, _, stderr := klockstat(t, "scale", "--scope", scope, "--levels", "1,2", "--json", out, "-o", "", "-q", "--",
				contend, "-lock", "mmap", "-threads", "{N}", "-duration", "2s")
			if status := exitStatus(t, cmd.Run()); status != 0 {
				t.Fatalf("exit status %d\nstderr: %s", status, stderr)
			}
			s := readSweepFile(t, out)
			var others uint64
			for _, l := range s.Levels {
				c := l.Runs[0].Capture
				if c.Meta.Scope != scope || c.Meta.InCommand(pid) || c.Meta.CommandProcesses != 1 || c.Meta.CommandThreads < uint64(l.N)+1 {
					t.Errorf("level %d: scope %q, outsider in the tree %v, %d processes, %d threads; want %s, no, 1, at least %d",
						l.N, c.Meta.Scope, c.Meta.InCommand(pid), c.Meta.CommandProcesses, c.Meta.CommandThreads, scope, l.N+1)
				}
				for _, r := range c.Records {
					switch {
					case scope == "command" && !c.Meta.InCommand(r.PID):
						t.Errorf("level %d: a wait of pid %d (%s) outside the command under --scope command", l.N, r.PID, r.Comm)
					case !c.Meta.InCommand(r.PID):
						others += r.TotalNS
					}
				}
			}
			var counted uint64
			for _, st := range s.Analyze().Levels {
				counted += st.OthersWaitNS
				if !st.Own || st.ThreadNS <= 0 || st.Others != (scope == "system") {
					t.Errorf("level %d: own %v, thread time %v, others captured %v under --scope %s", st.N, st.Own, st.ThreadNS, st.Others, scope)
				}
			}
			if counted != others {
				t.Errorf("others' wait %d ns in the analysis, %d in the records outside the tree", counted, others)
			}
		})
	}
}
