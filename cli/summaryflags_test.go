package cli

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestSummaryFlagsFailBeforeCapture: a sort key, field, grouping or filter klockstat does not know is a
// usage error naming its flag, on a capture and on report alike, before anything is captured or read.
func TestSummaryFlagsFailBeforeCapture(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-k", "wait"}, `--sort: unknown sort key "wait"`},
		{[]string{"-F", "contended,total"}, `--fields: unknown field "total"`},
		{[]string{"--by", "owners"}, `--by: unknown grouping "owners"`},
		{[]string{"-l", "0xffffg"}, `--lock-filter: address "0xffffg"`},
		{[]string{"-S", "ext4,"}, "--callstack-filter: empty stack substring"},
	} {
		for _, args := range [][]string{tc.args, append([]string{"report", exampleCapture, "-o", ""}, tc.args...)} {
			var stdout, stderr bytes.Buffer
			_, err := run(args, &stdout, &stderr)
			var ue usageError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ue) {
				t.Errorf("run(%q) = %v, want a usage error containing %q", args, err, tc.want)
			}
		}
	}
}

// TestFiltersNarrowExports: --lock-filter and --callstack-filter narrow the exports as the summary,
// and the JSON keeps every record.
func TestFiltersNarrowExports(t *testing.T) {
	input := exampleCapture
	c := readCaptureFile(t, input)
	var kept int
	for _, r := range c.Records {
		if r.Name == "mmap_lock" && strings.Contains(strings.Join(r.Stack, " "), "vm_mmap_pgoff") {
			kept++
		}
	}
	dir := t.TempDir()
	csvPath, jsonPath := filepath.Join(dir, "k.csv"), filepath.Join(dir, "k.json")
	var stdout, stderr bytes.Buffer
	args := []string{"report", input, "-o", "", "--json", jsonPath, "--csv", csvPath, "-l", "mmap_lock", "-S", "vm_mmap_pgoff"}
	if status, err := run(args, &stdout, &stderr); err != nil || status != 0 {
		t.Fatalf("%q: status %d, %v\n%s", args, status, err, stderr.String())
	}
	if rows := len(readCSVColumn(t, csvPath, "lock")); rows != kept || kept == 0 {
		t.Errorf("--csv: %d rows, want the %d records the filters keep", rows, kept)
	}
	if all := readCaptureFile(t, jsonPath); len(all.Records) != len(c.Records) {
		t.Errorf("--json: %d records, want all %d", len(all.Records), len(c.Records))
	}
	if !strings.Contains(stdout.String(), "vm_mmap_pgoff") || strings.Contains(stdout.String(), "ext4") {
		t.Errorf("the summary does not show the filtered records only:\n%s", stdout.String())
	}
}
