package cli

import (
	"bytes"
	"os"
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

func TestMetricOfTakesTheLastMatch(t *testing.T) {
	re := regexp.MustCompile(`ops/s: ([0-9.,]+)`)
	out := []byte("warm-up ops/s: 10\nops/s: 1,234.5\nrate ops/s: 99.5\ndone\n")
	v, failed := metricOf(re, out)
	if failed != "" || v == nil || *v != 99.5 {
		t.Errorf("metric %v (%q), want 99.5, the last match", v, failed)
	}
	if v, failed := metricOf(regexp.MustCompile(`ops/s: ([0-9.,]+)`), []byte("ops/s: 1,234.5\n")); v == nil || *v != 1234.5 {
		t.Errorf("metric %v (%q), want 1234.5: thousands separators dropped", v, failed)
	}
	if v, failed := metricOf(re, []byte("nothing here")); v != nil || !strings.Contains(failed, "no match of --metric") {
		t.Errorf("metric %v, failure %q; want none and no match", v, failed)
	}
	if v, failed := metricOf(regexp.MustCompile(`rate (\S+)`), []byte("rate fast")); v != nil || !strings.Contains(failed, `"fast"`) {
		t.Errorf("metric %v, failure %q; want none and the text matched", v, failed)
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
	s, ok, err := report.ReadSweepInputFile(path, nil)
	if err != nil || !ok {
		t.Fatalf("reading the sweep %s: %v (a sweep: %v)", path, err, ok)
	}
	return s
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
	cmd, _, stderr := klockstat(t, "scale", "--levels", "1,2,3", "--json", out, "-o", filepath.Join(dir, "s.html"), "--",
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
	// Loading and attaching the probes takes most of a second or more; the signal comes well
	// before, once the Go runtime has had time to catch it.
	time.Sleep(150 * time.Millisecond)
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
