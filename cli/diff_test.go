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

// The diff's summary hashes the kernel addresses its captures hold, as its page does, unless
// --raw-addresses asks for them.
func TestDiffSummaryHashesAddresses(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{"before.json", "after.json"} {
		path := filepath.Join(dir, name)
		writeCapture(t, path, 1000)
		c := readCaptureFile(t, path)
		c.Records[0].Caller = "0xffffffff81234567" // a caller kallsyms could not name
		saveCapture(t, path, c)
		paths = append(paths, path)
	}
	for _, raw := range []bool{false, true} {
		args := []string{"diff", "-o", "", paths[0], paths[1]}
		if raw {
			args = append(args, "--raw-addresses")
		}
		var stdout, stderr bytes.Buffer
		if status, err := run(args, &stdout, &stderr); err != nil || status != 0 {
			t.Fatalf("%v: status %d, %v\n%s", args, status, err, stderr.String())
		}
		if shown := strings.Contains(stdout.String(), "ffffffff81234567"); shown != raw {
			t.Errorf("--raw-addresses %v: the address shown %v in the summary:\n%s", raw, shown, stdout.String())
		}
	}
}
