package cli

import (
	"strings"
	"testing"
	"time"
)

// A workload gets the environment it is given beside klockstat's, writes to the writers it is
// given, and has ended when it exits although a process it left behind holds its output open.
func TestStartWorkload(t *testing.T) {
	t.Setenv("KLOCKSTAT_TEST_INHERITED", "kept")
	var stdout, stderr strings.Builder
	stdio := invocation{stdout: &stdout, stderr: &stderr}
	script := `echo "$KLOCKSTAT_LEVEL $KLOCKSTAT_TEST_INHERITED"; echo to-stderr >&2; sleep 10 & exit 3`
	began := time.Now()
	w, err := startWorkload([]string{"sh", "-c", script}, stdio, "KLOCKSTAT_LEVEL=4")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-w.done:
		if status := *commandStatus(err); status != 3 {
			t.Errorf("exit status %d, want 3", status)
		}
	case <-time.After(5 * time.Second):
		w.cmd.Process.Kill()
		t.Fatal("the workload had not ended 5 s after it exited: its child holds its output")
	}
	t.Logf("ended after %v", time.Since(began))
	if got := stdout.String(); got != "4 kept\n" {
		t.Errorf("stdout %q, want the level and the inherited variable", got)
	}
	if got := stderr.String(); got != "to-stderr\n" {
		t.Errorf("stderr %q", got)
	}
	if _, err := startWorkload([]string{"/nonexistent/command"}, stdio); err == nil || !strings.HasPrefix(err.Error(), "starting /nonexistent/command: ") {
		t.Errorf("starting a missing command: %v", err)
	}
}
