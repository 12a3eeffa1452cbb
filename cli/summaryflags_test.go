package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
		{[]string{"-k", "wait"}, `--key: unknown sort key "wait"`},
		{[]string{"-F", "contended,total"}, `--field: unknown field "total"`},
		{[]string{"--by", "owners"}, `--by: unknown grouping "owners"`},
		{[]string{"-L", "0xffffg"}, `--lock-filter: address "0xffffg"`},
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
	args := []string{"report", input, "-o", "", "--json", jsonPath, "--csv", csvPath, "-L", "mmap_lock", "-S", "vm_mmap_pgoff"}
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

// TestOldSpellingsStillWork: klockstat's spellings from before perf's still set their flag, with a
// one-line note naming the new one.
func TestOldSpellingsStillWork(t *testing.T) {
	for _, tc := range []struct {
		args []string
		note string
	}{
		{[]string{"--sort", "contended"}, "--sort is deprecated: it is -k/--key now"},
		{[]string{"--fields", "contended"}, "--fields is deprecated: it is -F/--field now"},
		{[]string{"--types", "spinlock"}, "--types is deprecated: it is -Y/--type-filter now"},
		{[]string{"--cgroup", "/"}, "--cgroup is deprecated: it is -G/--cgroup-filter now"},
		{[]string{"-n", "1"}, "-n/--top is deprecated: it is -E/--entries now"},
		{[]string{"--top", "1"}, "-n/--top is deprecated: it is -E/--entries now"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"report", exampleCapture, "-o", ""}, tc.args...)
		if status, err := run(args, &stdout, &stderr); err != nil || status != 0 {
			t.Errorf("%q: status %d, %v", args, status, err)
			continue
		}
		if want := "klockstat: note: " + tc.note + ", as in perf lock contention\n"; stderr.String() != want {
			t.Errorf("%q: stderr %q, want the one note %q", args, stderr.String(), want)
		}
	}
	// Each still means what it meant: the old and the new spelling print the same summary.
	for _, pair := range [][2][]string{
		{{"--sort", "contended", "--fields", "contended,avg_wait", "-n", "3"}, {"-k", "contended", "-F", "contended,avg_wait", "-E", "3"}},
		{{"--types", "spinlock"}, {"-Y", "spinlock"}},
	} {
		var summaries [2]string
		for i, flags := range pair {
			var stdout, stderr bytes.Buffer
			if _, err := run(append([]string{"report", exampleCapture, "-o", "", "--raw-addresses"}, flags...), &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			summaries[i] = stdout.String()
		}
		if summaries[0] != summaries[1] {
			t.Errorf("%q and %q differ:\n%s\n%s", pair[0], pair[1], summaries[0], summaries[1])
		}
	}
	inv := invocation{stdin: strings.NewReader("")}
	var stderr bytes.Buffer
	inv.stderr = &stderr
	o, err := inv.parseCaptureFlags([]string{"--stack-depth", "8", "--map-size", "4096", "-o", ""})
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.StackDepth != 8 || o.cfg.MapSize != 4096 {
		t.Errorf("--stack-depth 8 --map-size 4096: stack depth %d, map size %d", o.cfg.StackDepth, o.cfg.MapSize)
	}
	for _, note := range []string{"--stack-depth is deprecated: it is --max-stack now", "--map-size is deprecated: it is -M/--map-nr-entries now"} {
		if !strings.Contains(stderr.String(), note) {
			t.Errorf("stderr %q lacks %q", stderr.String(), note)
		}
	}
}

// TestMovedLettersRefused: -t, -l and -L, which perf gives other meanings, refuse their old use with
// a line naming the new flag, rather than do something else.
func TestMovedLettersRefused(t *testing.T) {
	locks := filepath.Join(t.TempDir(), "mylocks")
	if err := os.WriteFile(locks, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "mutex"}, "-t mutex: -t is perf's --threads now, a summary by thread: filter lock types with -Y/--type-filter"},
		{[]string{"-tmutex"}, "-tmutex: -t is perf's --threads now"},
		{[]string{"-t=mutex"}, "-t=mutex: -t is perf's --threads now"},
		{[]string{"-d", "1s", "-t", "rwsem:W", "--", "true"}, "-t rwsem:W: -t is perf's --threads now"},
		{[]string{"-l", "mmap_lock"}, "-l mmap_lock: -l is perf's --lock-addr now, a summary by lock: filter locks with -L/--lock-filter"},
		{[]string{"report", exampleCapture, "-l", "mmap_lock"}, "-l mmap_lock: -l is perf's --lock-addr now"},
		{[]string{"report", "-t", "mutex", exampleCapture}, "-t mutex: -t is perf's --threads now"},
		{[]string{"-L", locks}, "-L " + locks + ": -L is perf's --lock-filter now, a filter of lock names and addresses: give the lock catalogue with --locks " + locks},
		{[]string{"-L", "locks.json"}, "give the lock catalogue with --locks locks.json"},
		{[]string{"-t", "-l"}, "-t and -l: one summary at a time"},
		{[]string{"-g", "--by", "lock"}, "-g and --by lock: one summary at a time"},
	} {
		var stdout, stderr bytes.Buffer
		_, err := run(tc.args, &stdout, &stderr)
		var ue usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ue) {
			t.Errorf("run(%q) = %v, want a usage error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestPerfLettersMeanPerfs: -t, -l, -g and --lock-owner are the summaries --by gives, -Y and --tid
// keep the records of their types and threads, and -a and -b are taken silently.
func TestPerfLettersMeanPerfs(t *testing.T) {
	summary := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if status, err := run(append([]string{"report", exampleCapture, "-o", "", "--raw-addresses"}, args...), &stdout, &stderr); err != nil || status != 0 || stderr.Len() > 0 {
			t.Fatalf("%q: status %d, %v, stderr %q", args, status, err, stderr.String())
		}
		return stdout.String()
	}
	for _, pair := range [][2]string{{"-t", "thread"}, {"-l", "lock"}, {"-g", "cgroup"}, {"--lock-owner", "owner"}} {
		if got, want := summary(pair[0]), summary("--by", pair[1]); got != want {
			t.Errorf("%s differs from --by %s:\n%s\n%s", pair[0], pair[1], got, want)
		}
	}
	c := readCaptureFile(t, exampleCapture)
	tid := c.Records[0].TID
	out := summary("-t", "--tid", strconv.Itoa(int(tid)), "-q")
	if rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(rows) != 1 || !slices.Contains(strings.Fields(rows[0]), strconv.Itoa(int(tid))) {
		t.Errorf("-t --tid %d: want one row, of that thread:\n%s", tid, out)
	}
	out = summary("-Y", "rwsem", "-q")
	for _, row := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !strings.Contains(row, "rwsem:R") && !strings.Contains(row, "rwsem:W") {
			t.Errorf("-Y rwsem, perf's name of rwsem:R and rwsem:W, keeps %q", row)
		}
	}
	var stderr bytes.Buffer
	o, err := invocation{stdin: strings.NewReader(""), stderr: &stderr}.parseCaptureFlags([]string{"-a", "-b", "-Y", "rwsem", "--lock-owner", "-o", ""})
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("-a -b -Y rwsem --lock-owner: %v, stderr %q", err, stderr.String())
	}
	if types := o.cfg.Spec.Names(); !slices.Equal(types, []string{"rwsem:R", "rwsem:W"}) || !o.cfg.Owners || o.summary.By != "owner" {
		t.Errorf("-Y rwsem --lock-owner: types %q, owners %v, summary by %q; want rwsem:R and rwsem:W, owners, by owner", types, o.cfg.Owners, o.summary.By)
	}
}
