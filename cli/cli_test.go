package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
	"github.com/klockstat/klockstat/report"
)

// testVersion is the version the tests' klockstat says it is.
const testVersion = "0.0.0-test"

// exampleCapture is a capture of examples/contend, from the repository's examples.
var exampleCapture = filepath.Join(testenv.ModuleRoot(), "examples", "contend-capture.json")

// run runs a klockstat invocation in the test, with nothing on stdin.
func run(args []string, stdout, stderr io.Writer) (int, error) {
	return invocation{version: testVersion, stdin: strings.NewReader(""), stdout: stdout, stderr: stderr}.run(args)
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	status, err := run([]string{"version"}, &out, &out)
	if err != nil || status != 0 {
		t.Fatalf("version: status %d, err %v", status, err)
	}
	for _, want := range []string{"klockstat " + testVersion + " (go1.", "linux/"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("version output %q lacks %q", out.String(), want)
		}
	}
	// A test binary of a package other than main lists no modules: the command does.
	cmd, stdout, _ := klockstat(t, "version")
	if err := cmd.Run(); err != nil {
		t.Fatalf("klockstat version: %v", err)
	}
	if !strings.Contains(stdout.String(), ", cilium/ebpf v") {
		t.Errorf("klockstat version printed %q, without the cilium/ebpf version", stdout.String())
	}
}

// TestBadInputFailsBeforeCapture checks that every mistake on the command
// line is reported in one line that names it, before any BPF is loaded:
// none of these need root to fail the right way.
func TestBadInputFailsBeforeCapture(t *testing.T) {
	dir := t.TempDir()
	badLocks := filepath.Join(dir, "locks.json")
	if err := os.WriteFile(badLocks, []byte("{\n  \"version\": 1,\n  \"types\": [{\"name\": \"x\", \"flag\": []}]\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"unknown flag", []string{"--frobnicate"}, true, "unknown flag: --frobnicate"},
		{"negative duration", []string{"-d", "-1s"}, true, "--duration -1s: must be positive"},
		{"duration without unit", []string{"-d", "3"}, true, "durations need a unit: 10s"},
		{"zero top", []string{"-n", "0"}, true, "--top 0"},
		{"bad pid", []string{"-p", "12,abc"}, true, `--pid "abc"`},
		{"unknown type", []string{"-t", "mutex,mutx"}, true, `unknown lock type "mutx"`},
		{"deep stack", []string{"--stack-depth", "200"}, true, "--stack-depth 200 out of range"},
		{"bad probe", []string{"--probe", "dtrace"}, true, `unknown probe backend "dtrace"`},
		{"stray argument", []string{"make"}, true, `unexpected argument "make"`},
		{"empty command", []string{"--"}, true, "no command after --"},
		{"missing locks file", []string{"-L", filepath.Join(dir, "nope.json")}, true, "reading --locks"},
		{"invalid locks file", []string{"-L", badLocks}, true, badLocks + ":3:"},
		{"unwritable json", []string{"--json", filepath.Join(dir, "no", "such", "dir", "c.json")}, false, "c.json: cannot create output file"},
		{"unwritable report", []string{"-o", filepath.Join(dir, "no", "such", "dir", "r.html")}, false, "r.html: cannot create output file"},
		{"two outputs on stdout", []string{"-o", "-", "--json", "-"}, true, "--json and --output both write to stdout"},
		{"report without input", []string{"report"}, true, "report takes one INPUT"},
		{"report of a non-capture", []string{"report", badLocks}, false, "not a klockstat capture"},
		{"report of a missing file", []string{"report", filepath.Join(dir, "nope.html")}, false, "no such file"},
		{"diff of one capture", []string{"diff", badLocks}, true, "diff takes BEFORE and AFTER"},
		{"diff by what", []string{"diff", "--by", "pid", "a", "b"}, true, `--by "pid"`},
		{"diff negative fail-over", []string{"diff", "--fail-over", "-5", "a", "b"}, true, "--fail-over -5"},
		{"diff of a non-capture", []string{"diff", "-o", "", badLocks, badLocks}, false, "not a klockstat capture"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			start := time.Now()
			_, err := run(tc.args, &stdout, &stderr)
			if err == nil {
				t.Fatalf("run(%q) succeeded, want an error containing %q", tc.args, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			var ue usageError
			if errors.As(err, &ue) != tc.usage {
				t.Errorf("usage error = %v, want %v (exit status 2 for command-line mistakes)", !tc.usage, tc.usage)
			}
			if stdout.Len() > 0 {
				t.Errorf("printed to stdout on error: %q", stdout.String())
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v to reject bad input: it must fail before capturing", d)
			}
		})
	}
}

// readCaptureFile reads a capture JSON or the capture an HTML report carries.
func readCaptureFile(t *testing.T, path string) *capture.Capture {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := report.ReadInput(f)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return c
}

func klockstat(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(testenv.Build(t, "."), args...)
	cmd.Dir = t.TempDir() // where the default report lands
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd, &stdout, &stderr
}

func exitStatus(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

func TestCaptureWhileCommandRuns(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	out, html := filepath.Join(dir, "capture.json"), filepath.Join(dir, "report.html")
	contend := testenv.Build(t, "./examples/contend")
	cmd, stdout, stderr := klockstat(t, "--json", out, "-o", html, "-n", "5", "--",
		"sh", "-c", contend+" -lock mmap -threads 4 -duration 1s >/dev/null && exit 3")
	status := exitStatus(t, cmd.Run())
	if status != 3 {
		t.Fatalf("exit status %d, want the command's 3\nstderr: %s", status, stderr)
	}
	c := readCaptureFile(t, out)
	if len(c.Records) == 0 {
		t.Fatal("no records captured while contend ran")
	}
	if c.Meta.WorkloadExit == nil || *c.Meta.WorkloadExit != 3 {
		t.Errorf("workload_exit = %v, want 3", c.Meta.WorkloadExit)
	}
	if c.Meta.Workload[0] != "sh" || c.Meta.Tool != "klockstat" || c.Meta.Kernel == "" || c.Meta.CPUs == 0 {
		t.Errorf("metadata not filled in: %+v", c.Meta)
	}
	if c.Meta.Duration() > 10*time.Second {
		t.Errorf("capture lasted %v: it should end when the command exits", c.Meta.Duration())
	}
	fromHTML := readCaptureFile(t, html)
	if len(fromHTML.Records) != len(c.Records) || !fromHTML.Meta.AddressesHashed {
		t.Errorf("HTML report carries %d records (addresses hashed: %v), the JSON %d", len(fromHTML.Records), fromHTML.Meta.AddressesHashed, len(c.Records))
	}
	summary := stdout.String()
	for _, want := range []string{"contended", "total wait", "rwsem:", "contention events", "report: " + html} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
}

func TestInterruptStillWritesOutputs(t *testing.T) {
	testenv.RequireRoot(t)
	out := filepath.Join(t.TempDir(), "capture.json")
	cmd, stdout, stderr := klockstat(t, "-d", "60s", "--json", out)
	html := filepath.Join(cmd.Dir, "klockstat-report.html")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if status := exitStatus(t, err); status != 128+int(syscall.SIGINT) {
			t.Errorf("exit status %d after SIGINT, want %d\nstderr: %s", status, 128+int(syscall.SIGINT), stderr)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("klockstat did not stop on SIGINT")
	}
	c := readCaptureFile(t, out)
	if h := readCaptureFile(t, html); h.Meta.DurationNS != c.Meta.DurationNS {
		t.Errorf("default HTML report holds a capture of %v, the JSON %v", h.Meta.Duration(), c.Meta.Duration())
	}
	if d := c.Meta.Duration(); d <= 0 || d >= 60*time.Second {
		t.Errorf("capture lasted %v, want it cut short of its 60s by the signal", d)
	}
	if !strings.Contains(stdout.String(), "contention events") {
		t.Errorf("no summary after SIGINT:\n%s", stdout)
	}
}

func TestNotRootFailsClearly(t *testing.T) {
	testenv.RequireRoot(t) // to become someone else
	cmd, stdout, stderr := klockstat(t, "-d", "1s", "-o", "")
	cmd.Dir = "/" // somewhere nobody may enter
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	status := exitStatus(t, cmd.Run())
	if status != 1 {
		t.Errorf("exit status %d as nobody, want 1", status)
	}
	if msg := stderr.String(); !strings.Contains(msg, "needs root") || strings.Count(msg, "\n") != 1 {
		t.Errorf("stderr as nobody = %q, want one line saying klockstat needs root", msg)
	}
	if stdout.Len() > 0 {
		t.Errorf("printed a summary without capturing: %q", stdout)
	}
}

// TestReportRerendersTheSameData renders a capture, re-renders it from the
// JSON and from the HTML report, and checks both carry the same capture.
func TestReportRerendersTheSameData(t *testing.T) {
	dir := t.TempDir()
	c := &capture.Capture{
		Version: capture.FormatVersion,
		Meta:    capture.Meta{Tool: "klockstat", DurationNS: int64(time.Second), CPUs: 2, Probe: "rawtp", StackDepth: 16},
		Records: []capture.Record{
			{Type: "mutex", Lock: 0xffff888100a3c2d8, Comm: "<svg/onload=x>", PID: 7, TID: 8, Count: 3, TotalNS: 300, MinNS: 50, MaxNS: 200, Caller: "anon_pipe_write+0x43", Stack: []string{"__mutex_lock+0x1", "anon_pipe_write+0x43"}},
			{Type: "rwsem:W", Lock: 0xffff888100a3c000, Name: "mmap_lock", Comm: "w", PID: 7, TID: 9, Count: 1, TotalNS: 1000, MinNS: 1000, MaxNS: 1000, Caller: "vm_mmap_pgoff+0xe0", Stack: []string{"vm_mmap_pgoff+0xe0"}},
		},
	}
	for _, r := range c.Records {
		h := capture.NewHistogram(r.Type, make([]uint64, capture.NumBuckets))
		h.Add(r.MinNS)
		for i := uint64(1); i < r.Count; i++ {
			h.Add(r.MaxNS)
		}
		h.TotalNS = r.TotalNS
		c.Histograms = append(c.Histograms, h)
	}
	c.Sort() // as captures are written, and as a report holds the records
	jsonPath := filepath.Join(dir, "c.json")
	f, err := os.Create(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()

	fromJSON, fromHTML := filepath.Join(dir, "a.html"), filepath.Join(dir, "b.html")
	for _, args := range [][]string{{"report", "-q", jsonPath, "-o", fromJSON}, {"report", "-q", fromJSON, "-o", fromHTML}} {
		var stdout, stderr bytes.Buffer
		if status, err := run(args, &stdout, &stderr); err != nil || status != 0 {
			t.Fatalf("klockstat %q: status %d, %v\n%s", args, status, err, stderr.String())
		}
	}
	a, b := readCaptureFile(t, fromJSON), readCaptureFile(t, fromHTML)
	var ja, jb bytes.Buffer
	a.Write(&ja)
	b.Write(&jb)
	if ja.String() != jb.String() {
		t.Errorf("re-rendering the HTML report changed its capture:\n%s\n---\n%s", ja.String(), jb.String())
	}
	if len(a.Records) != len(c.Records) || a.Records[0].Comm != c.Records[0].Comm {
		t.Errorf("report lost records: %+v", a.Records)
	}
	if !a.Meta.AddressesHashed || a.Records[0].Lock == c.Records[0].Lock {
		t.Errorf("report shows the real lock address %v", a.Records[0].Lock)
	}
}

func writeCapture(t *testing.T, path string, totalNS uint64) {
	t.Helper()
	writeCaptureOf(t, path, totalNS, 1)
}

// writeCaptureOf writes a capture of n one-wait records of totalNS each, of threads 8 to 8+n-1,
// with their waits charged to the pipe's owner, thread 7 "pipe-hog", asleep in the pipe's write.
func writeCaptureOf(t *testing.T, path string, totalNS uint64, n int) {
	t.Helper()
	c := &capture.Capture{
		Version: capture.FormatVersion,
		Meta:    capture.Meta{Tool: "klockstat", DurationNS: int64(time.Second), CPUs: 2, Probe: "rawtp", StackDepth: 16, Kernel: "6.18"},
	}
	h := capture.NewHistogram("mutex", make([]uint64, capture.NumBuckets))
	for i := range n {
		c.Records = append(c.Records, capture.Record{Type: "mutex", Lock: 0xffff888100a3c2d8, Comm: "w", PID: 7, TID: uint32(8 + i), Count: 1, TotalNS: totalNS, MinNS: totalNS, MaxNS: totalNS, Caller: "anon_pipe_write+0x43"})
		h.Add(totalNS)
	}
	c.Histograms = []capture.Histogram{h}
	c.Owners = []capture.Owner{{Type: "mutex", Lock: 0xffff888100a3c2d8, Comm: "pipe-hog", PID: 7, TID: 7,
		Stack: []string{"__schedule+0x618", "schedule+0x27", "anon_pipe_write+0x1c2"}, Count: uint64(n), TotalNS: uint64(n) * totalNS,
		States: []capture.OwnerState{{State: capture.OwnerSleeping, Count: uint64(n), TotalNS: uint64(n) * totalNS}}}}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := c.Write(f); err != nil {
		t.Fatal(err)
	}
}

// TestDiffFailOver checks the exit status CI scripts rely on.
func TestDiffFailOver(t *testing.T) {
	dir := t.TempDir()
	before, after := filepath.Join(dir, "before.json"), filepath.Join(dir, "after.json")
	writeCapture(t, before, 1000)
	writeCapture(t, after, 1500) // +50%
	for _, tc := range []struct {
		pct  string
		want int
	}{{"49", 1}, {"50", 0}, {"100", 0}} {
		var stdout, stderr bytes.Buffer
		status, err := run([]string{"diff", "-o", "", "--fail-over", tc.pct, before, after}, &stdout, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		if status != tc.want {
			t.Errorf("--fail-over %s on +50%%: status %d, want %d\n%s", tc.pct, status, tc.want, stderr.String())
		}
		if !strings.Contains(stdout.String(), "anon_pipe_write") {
			t.Errorf("summary lacks the caller:\n%s", stdout.String())
		}
		// The pipe's owner, matched and grown as its waiters' wait.
		if owner := regexp.MustCompile(`(?m)^.*\+50\.0%.*sleeping 100->100%.*pipe-hog +anon_pipe_write\+0x1c2$`); !owner.MatchString(stdout.String()) {
			t.Errorf("summary lacks the owner's row:\n%s", stdout.String())
		}
		if tc.want == 1 && !strings.Contains(stderr.String(), "anon_pipe_write") {
			t.Errorf("--fail-over does not name the row that grew:\n%s", stderr.String())
		}
	}
}
