package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestMainExitStatus checks what Main prints and returns: nothing wrong is 0, a failure 1 with
// one "klockstat: " line, a command-line mistake 2 with the hint, and --help 0.
func TestMainExitStatus(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.json")
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		stdout string
		stderr []string
	}{
		{"version", []string{"version"}, 0, "klockstat 1.2.3 (", nil},
		{"usage mistake", []string{"-E", "0"}, 2, "", []string{"klockstat: --entries 0: must be at least 1\n", "Run 'klockstat --help' for usage.\n"}},
		{"failure", []string{"report", "-o", "", missing}, 1, "", []string{"klockstat: ", "nope.json"}},
		{"help", []string{"--help"}, 0, "", []string{"Usage: klockstat [flags] [-- COMMAND [ARGS...]]"}},
		{"report help", []string{"report", "-h"}, 0, "", []string{"Usage: klockstat report INPUT [flags]"}},
		{"diff help", []string{"diff", "--help"}, 0, "", []string{"Usage: klockstat diff BEFORE AFTER [flags]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			status := Main("1.2.3", tc.args, strings.NewReader(""), &stdout, &stderr)
			if status != tc.status {
				t.Errorf("status %d, want %d (stderr %q)", status, tc.status, stderr.String())
			}
			if !strings.HasPrefix(stdout.String(), tc.stdout) || tc.stdout == "" && stdout.Len() > 0 {
				t.Errorf("stdout %q, want it to start with %q", stdout.String(), tc.stdout)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr %q lacks %q", stderr.String(), want)
				}
			}
			if tc.status == 1 && strings.Contains(stderr.String(), "--help") {
				t.Errorf("a failure that is no usage mistake hints at --help: %q", stderr.String())
			}
		})
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
		{"zero entries", []string{"-E", "0"}, true, "--entries 0"},
		{"bad pid", []string{"-p", "12,abc"}, true, `--pid "abc"`},
		{"unknown type", []string{"-Y", "mutex,mutx"}, true, `--type-filter: unknown lock type "mutx"`},
		{"deep stack", []string{"--max-stack", "200"}, true, " 200 out of range"},
		{"bad probe", []string{"--probe", "dtrace"}, true, `unknown probe backend "dtrace"`},
		{"stray argument", []string{"make"}, true, `unexpected argument "make"`},
		{"empty command", []string{"--"}, true, "no command after --"},
		{"missing locks file", []string{"--locks", filepath.Join(dir, "nope.json")}, true, "reading --locks"},
		{"invalid locks file", []string{"--locks", badLocks}, true, badLocks + ":3:"},
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
	saveCapture(t, path, c)
}

// saveCapture writes c to a JSON file at path.
func saveCapture(t *testing.T, path string, c *capture.Capture) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := c.Write(f); err != nil {
		t.Fatal(err)
	}
}
