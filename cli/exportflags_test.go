package cli

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
)

// recordedWait is the total wait of a capture's records, which every export must add up to.
func recordedWait(c *capture.Capture) uint64 {
	var total uint64
	for _, r := range c.Records {
		total += r.TotalNS
	}
	return total
}

// readCSVColumn reads one column of an exported CSV, by its header.
func readCSVColumn(t *testing.T, path, column string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	col := slices.Index(rows[0], column)
	var values []string
	for _, row := range rows[1:] {
		values = append(values, row[col])
	}
	return values
}

// pprofDelay reads a profile with pprof's parser and returns its total delay. (The export package's
// tests run go tool pprof on it.)
func pprofDelay(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var total int64
	for _, s := range p.Sample {
		total += s.Value[1]
	}
	return uint64(total)
}

// TestReportExports: klockstat report writes the three exports of a capture, with the lock addresses
// hashed unless --raw-addresses, and under the same key as the HTML report.
func TestReportExports(t *testing.T) {
	input := exampleCapture
	c := readCaptureFile(t, input)
	for _, raw := range []bool{false, true} {
		dir := t.TempDir()
		pprof, folded, csvPath := filepath.Join(dir, "k.pb.gz"), filepath.Join(dir, "k.folded"), filepath.Join(dir, "k.csv")
		html := filepath.Join(dir, "k.html")
		args := []string{"report", input, "-o", html, "-q", "--pprof", pprof, "--folded", folded, "--csv", csvPath}
		if raw {
			args = append(args, "--raw-addresses")
		}
		var stdout, stderr bytes.Buffer
		if status, err := run(args, &stdout, &stderr); err != nil || status != 0 {
			t.Fatalf("%q: status %d, %v\n%s", args, status, err, stderr.String())
		}
		if got := pprofDelay(t, pprof); got != recordedWait(c) {
			t.Errorf("--pprof: the profile totals %d ns, the capture's records %d ns", got, recordedWait(c))
		}
		b, err := os.ReadFile(folded)
		if err != nil {
			t.Fatal(err)
		}
		var foldedTotal uint64
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			w, _ := strconv.ParseUint(line[strings.LastIndexByte(line, ' ')+1:], 10, 64)
			foldedTotal += w
		}
		if foldedTotal != recordedWait(c) {
			t.Errorf("--folded: weights total %d ns, the capture's records %d ns", foldedTotal, recordedWait(c))
		}
		locks := readCSVColumn(t, csvPath, "lock")
		if len(locks) != len(c.Records) {
			t.Fatalf("--csv: %d rows for %d records", len(locks), len(c.Records))
		}
		want := c.Records[0].Lock.String()
		if !raw {
			want = `^[0-9a-f]{16}$` // an id, as the report writes them
		}
		if !regexp.MustCompile(want).MatchString(locks[0]) {
			t.Errorf("--csv (raw addresses %v): lock %q, want %s", raw, locks[0], want)
		}
		// The report of the same run names every lock as the exports do.
		page := readCaptureFile(t, html)
		for i, r := range page.Records {
			id := r.Lock.String()
			if page.Meta.AddressesHashed {
				id = r.Lock.HashedString()
			}
			if locks[i] != id {
				t.Fatalf("--csv row %d names lock %s, the HTML report %s", i, locks[i], id)
			}
		}
	}
}

func TestExportFlagsFailBeforeCapture(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "no", "such", "dir")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pprof", "-", "--csv", "-"}, "--csv and --pprof both write to stdout"},
		{[]string{"--folded", filepath.Join(dir, "k.folded")}, "k.folded: cannot create output file"},
		{[]string{"report", exampleCapture, "-o", "-", "--pprof", "-"}, "--output and --pprof both write to stdout"},
	} {
		var stdout, stderr bytes.Buffer
		_, err := run(tc.args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestCaptureExports captures real contention with a profile: its total delay is the capture's total
// wait.
func TestCaptureExports(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	out, pprof := filepath.Join(dir, "capture.json"), filepath.Join(dir, "k.pb.gz")
	contend := testenv.Build(t, "./examples/contend")
	cmd, _, stderr := klockstat(t, "-q", "-o", "", "--json", out, "--pprof", pprof, "--raw-addresses", "--",
		contend, "-lock", "inode", "-dir", dir, "-threads", "4", "-duration", "1s")
	if status := exitStatus(t, cmd.Run()); status != 0 {
		t.Fatalf("exit status %d\nstderr: %s", status, stderr)
	}
	c := readCaptureFile(t, out)
	if recordedWait(c) == 0 {
		t.Fatal("no wait captured while contend ran")
	}
	if got := pprofDelay(t, pprof); got != recordedWait(c) {
		t.Errorf("the profile totals %d ns, the capture's records %d ns", got, recordedWait(c))
	}
}
