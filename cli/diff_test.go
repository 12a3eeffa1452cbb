package cli

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

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
