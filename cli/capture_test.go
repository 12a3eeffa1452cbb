package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klockstat/klockstat/internal/testenv"
)

func TestCaptureWhileCommandRuns(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	out, html := filepath.Join(dir, "capture.json"), filepath.Join(dir, "report.html")
	contend := testenv.Build(t, "./examples/contend")
	cmd, stdout, stderr := klockstat(t, "--json", out, "-o", html, "-E", "5", "--",
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
	// The next steps compare against the JSON just written.
	for _, want := range []string{"contended", "total wait", "rwsem:", "contention events", "report: " + html, "klockstat diff " + out} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
}

func TestInterruptStillWritesOutputs(t *testing.T) {
	testenv.RequireRoot(t)
	out := filepath.Join(t.TempDir(), "capture.json")
	// The command marks the window's start: a signal before it would end klockstat with nothing
	// written, which the fault matrix tests.
	cmd, stdout, stderr := klockstat(t, "-d", "60s", "--json", out, "--", "sh", "-c", "touch started; exec sleep 60")
	html := filepath.Join(cmd.Dir, "klockstat-report.html")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the command to start", func() bool { return exists(cmd.Dir, "started") })
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
