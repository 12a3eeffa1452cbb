package cli

import (
	"bytes"
	"cmp"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/collector"
	"github.com/klockstat/klockstat/internal/testenv"
)

// The tests of this file are the cases of Linux's tools/perf/tests/shell/lock_contention.sh, run
// with klockstat: perf lock contention's command lines, letter for letter, on perf bench sched
// messaging as that script runs it, and its checks of what they print. perf prints its summary on
// stderr, klockstat on stdout: the checks read stdout. The script's cases of a recorded perf.data
// (-i) are klockstat report's of a capture JSON.

// perfBench is the workload of the script, after --: its output is not the summary's. The script
// runs messaging over pipes (-p); messaging over socket pairs, without -p, is for the cases of -S
// unix_stream, a path only sockets take.
func perfBench(t *testing.T, messagingArgs ...string) []string {
	t.Helper()
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Fatalf("perf bench runs the workload of perf's lock contention test: %v (install it: apt-get install linux-perf)", err)
	}
	return []string{"--", "sh", "-c", strings.Join(slices.Concat([]string{perf, "bench", "sched", "messaging"}, messagingArgs), " ") + " >/dev/null"}
}

// spinlockCases are the workload, stack substring and lock type of the cases of -S and -Y. perf's
// script filters spinlock, and unix_stream on socket messaging, whose waits there are on spinlocks
// (the sockets' and their wait queues'). Where the kernel shows no spinlock wait
// (collector.SpinlockWaits: an x86 guest without paravirtual spinlocks) they filter what it shows
// instead: mutex, and pipe_write, whose waits for the pipe's mutex pipe messaging contends.
type spinlockCases struct {
	seen            bool
	bench           []string // the workload of the -S cases, after --
	stack, lockType string
}

func spinlockCasesOf(t *testing.T) spinlockCases {
	t.Helper()
	if testenv.SpinlockWaitsSeen(t, collector.SpinlockWaits, collector.ErrSpinlockWaitsUnseen) {
		return spinlockCases{seen: true, bench: perfBench(t), stack: "unix_stream", lockType: "spinlock"}
	}
	t.Logf("%v: filtering mutex and pipe_write on pipe messaging instead of spinlock and unix_stream", collector.SpinlockWaits())
	return spinlockCases{bench: perfBench(t, "-p"), stack: "pipe_write", lockType: "mutex"}
}

// lockContention runs klockstat with args and returns the lines of its stdout.
func lockContention(t *testing.T, args ...string) []string {
	t.Helper()
	cmd, stdout, stderr := klockstat(t, args...)
	if err := cmd.Run(); err != nil {
		t.Fatalf("klockstat %q: %v\nstderr: %s", args, err, stderr)
	}
	return lines(stdout)
}

func lines(b *bytes.Buffer) []string {
	s := strings.TrimSuffix(b.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// wantOneRow fails unless out is a single row, as `wc -l` = 1 checks in the script.
func wantOneRow(t *testing.T, out []string) {
	t.Helper()
	if len(out) != 1 {
		t.Fatalf("%d lines, want 1 row:\n%s", len(out), strings.Join(out, "\n"))
	}
}

// rowType is the lock type of a row of the summary by caller, its eighth field as the script reads
// it with awk: it holds where perf's columns are. The caller is the ninth.
func rowType(t *testing.T, row string) string {
	t.Helper()
	fields := strings.Fields(row)
	if len(fields) < 8 {
		t.Fatalf("row %q has %d fields, want perf's columns: contended, three durations, type, caller", row, len(fields))
	}
	return fields[7]
}

// TestPerfLockContentionLive is the script's cases of perf lock con -a -b -- COMMAND.
func TestPerfLockContentionLive(t *testing.T) {
	testenv.RequireRoot(t)
	pipes, spin := perfBench(t, "-p"), spinlockCasesOf(t)
	con := func(t *testing.T, args ...string) []string {
		t.Helper()
		return lockContention(t, slices.Concat([]string{"-a", "-b"}, args, pipes)...)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		bench []string
	}{
		{"bpf", []string{"-E", "1", "-q"}, pipes},
		{"aggr_task", []string{"-t", "-E", "1", "-q"}, pipes},
		{"aggr_addr", []string{"-l", "-E", "1", "-q"}, pipes},
		{"aggr_cgroup", []string{"--lock-cgroup", "-E", "1", "-q"}, pipes},
		{"aggr_cgroup_g", []string{"-g", "-E", "1", "-q"}, pipes},
		{"stack_filter", []string{"-S", spin.stack, "-E", "1", "-q"}, spin.bench},
		{"aggr_task_stack_filter", []string{"-t", "-S", spin.stack, "-E", "1", "-q"}, spin.bench},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantOneRow(t, lockContention(t, slices.Concat([]string{"-a", "-b"}, tc.args, tc.bench)...))
		})
	}
	t.Run("type_filter", func(t *testing.T) {
		out := con(t, "-Y", spin.lockType, "-q")
		if len(out) == 0 {
			t.Fatalf("no %s contention: messaging wakes its receivers under runqueue locks, and writes to pipes under their mutex", spin.lockType)
		}
		for _, row := range out {
			if !strings.Contains(row, spin.lockType) {
				t.Errorf("row of another type than %s: %q", spin.lockType, row)
			}
		}
	})
	t.Run("lock_filter", func(t *testing.T) {
		// The script filters tasklist_lock, which it finds first by lock (-l); the name of the
		// lock waited on most often is as sure to be waited on again, unless it is one
		// process's lock (mmap_lock, siglock), which the next run contends by chance: a
		// lock every process takes comes first.
		var name, ofProcess string
		for _, row := range con(t, "-l", "-k", "contended", "-F", "contended", "-E", "100", "-q") {
			// contended, lock, name, type
			fields := strings.Fields(row)
			n := strings.Join(fields[2:len(fields)-1], " ")
			kind, _, _ := strings.Cut(n, " (")
			switch {
			case !oneLock(n):
			case kind == "mmap_lock" || kind == "siglock":
				ofProcess = cmp.Or(ofProcess, n)
			case n == "tasklist_lock" || name == "":
				name = n
			}
		}
		if name == "" && !spin.seen {
			// The named locks a messaging run is sure to contend again are the runqueues'
			// (spinlocks) and tasklist_lock. Without spinlock waits, and tasklist_lock not
			// contended, there is none: on the PVM guest a run had no named lock, or one
			// process's mmap_lock, which had no row in 3 runs after the first.
			t.Skipf("skipping: the first run named no lock every process takes (of one process's: %s), and %v", cmp.Or(ofProcess, "none"), collector.SpinlockWaits())
		}
		name = cmp.Or(name, ofProcess)
		if name == "" {
			t.Fatal("no lock with a name in the summary by lock")
		}
		out := con(t, "-L", name, "-q")
		if len(out) == 0 {
			t.Fatalf("no row for lock %s, found in the first run", name)
		}
		lockType, _, _ := strings.Cut(rowType(t, out[0]), ":")
		for _, row := range out {
			if !strings.Contains(row, lockType) {
				t.Errorf("-L %s: row not of its type %s: %q", name, lockType, row)
			}
		}
	})
	t.Run("cgroup_filter", func(t *testing.T) {
		out := con(t, "--lock-cgroup", "-E", "1", "-F", "wait_total", "-q")
		wantOneRow(t, out)
		fields := strings.Fields(out[0])
		if len(fields) != 3 {
			t.Fatalf("row %q: want the total wait and the cgroup, as the script reads its third field", out[0])
		}
		cgroup := fields[2]
		out = con(t, "--lock-cgroup", "-E", "1", "-G", cgroup, "-q")
		wantOneRow(t, out)
		if !slices.Contains(strings.Fields(out[0]), cgroup) {
			t.Errorf("-G %s: row of another cgroup: %q", cgroup, out[0])
		}
	})
	t.Run("csv_output", func(t *testing.T) {
		checkSeparated(t, con(t, "-E", "1", "-x", ","))
	})
}

// checkSeparated checks -x , as the script does: as many commas in each row as in the "# output:"
// header, which names perf's columns first.
func checkSeparated(t *testing.T, out []string) {
	t.Helper()
	var header string
	var rows []string
	for _, line := range out {
		switch {
		case strings.HasPrefix(line, "# output: "):
			header = line
		case !strings.HasPrefix(line, "#") && line != "":
			rows = append(rows, line)
		}
	}
	if perf := "# output: contended, total wait, max wait, avg wait, type, caller"; !strings.HasPrefix(header, perf) {
		t.Errorf("header %q, want perf's columns first: %q", header, perf)
	}
	if len(rows) != 1 {
		t.Errorf("%d rows, want 1 (-E 1):\n%s", len(rows), strings.Join(out, "\n"))
	}
	for _, row := range rows {
		if got, want := strings.Count(row, ","), strings.Count(header, ","); got != want {
			t.Errorf("row %q: %d separators, the header %d", row, got, want)
		}
	}
}

// oneLock reports whether a lock's name, as the summary by lock shows it, is of one lock, and so of
// one type, as the script's tasklist_lock: not of any object of a slab cache ("&CACHE"), which
// holds locks of several types, nor missing or mixed, nor the label of every static lock kallsyms
// could not name.
func oneLock(name string) bool {
	return name != "" && name != "-" && name != "various" && name != capture.UnnamedStatic && !strings.HasPrefix(name, "&")
}

// TestPerfLockContentionRecorded is the script's cases of perf lock record, then perf lock
// contention -i: a capture's JSON, then klockstat report.
func TestPerfLockContentionRecorded(t *testing.T) {
	testenv.RequireRoot(t)
	in, spin := filepath.Join(t.TempDir(), "c.json"), spinlockCasesOf(t)
	lockContention(t, slices.Concat([]string{"-q", "-o", "", "--json", in}, spin.bench)...)
	c := readCaptureFile(t, in)
	report := func(t *testing.T, args ...string) []string {
		t.Helper()
		return lockContention(t, slices.Concat([]string{"report", in, "-o", ""}, args)...)
	}
	for _, args := range [][]string{{"-E", "1", "-q"}, {"-t", "-E", "1", "-q"}, {"-l", "-E", "1", "-q"}, {"-g", "-E", "1", "-q"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) { wantOneRow(t, report(t, args...)) })
	}
	t.Run("type_filter", func(t *testing.T) {
		out := report(t, "-Y", spin.lockType, "-q")
		if len(out) == 0 {
			t.Fatalf("no %s row", spin.lockType)
		}
		for _, row := range out {
			if rowType(t, row) != spin.lockType {
				t.Errorf("row of another type than %s: %q", spin.lockType, row)
			}
		}
		if spin.seen {
			return
		}
		// No spinlock row is not "no spinlock contention": the summary says why there is none.
		said := strings.Join(report(t, "-Y", "spinlock"), "\n")
		for _, want := range []string{"no contention matches the filters, and spinlock waits cannot be seen on this kernel (below)",
			"spinlock waits cannot be seen on this kernel: this guest spins in virt_spin_lock() without paravirtual spinlocks, before the contention tracepoint"} {
			if !strings.Contains(said, want) {
				t.Errorf("-Y spinlock of a capture that could not see them: want %q in\n%s", want, said)
			}
		}
	})
	t.Run("stack_filter", func(t *testing.T) {
		// The row is of a caller with the substring in its stack: the records say which those are.
		callers := map[string]bool{}
		for _, r := range c.Records {
			if strings.Contains(strings.Join(r.Stack, " "), spin.stack) && r.Count > 0 {
				callers[r.Caller] = true
			}
		}
		out := report(t, "-E", "1", "-S", spin.stack, "-q", "--raw-addresses")
		wantOneRow(t, out)
		if caller := strings.Fields(out[0])[8]; !callers[caller] { // after perf's numbers and the type
			t.Errorf("row %q: its caller has no %s frame in its stacks (those with: %v)", out[0], spin.stack, callers)
		}
		wantOneRow(t, report(t, "-t", "-E", "1", "-S", spin.stack, "-q"))
	})
	t.Run("lock_filter", func(t *testing.T) {
		named := slices.IndexFunc(c.Records, func(r capture.Record) bool { return oneLock(r.Name) && r.Count > 0 })
		if named < 0 && !spin.seen {
			// As in the live case: the named locks messaging is sure to contend are spinlocks
			// and tasklist_lock; on the PVM guest pipe messaging left none.
			t.Skipf("skipping: no lock of the capture has a name, and %v", collector.SpinlockWaits())
		}
		if named < 0 {
			t.Fatal("no named lock in the capture")
		}
		r := c.Records[named]
		out := report(t, "-L", r.Name, "-q")
		if len(out) == 0 {
			t.Fatalf("-L %s: no row", r.Name)
		}
		lockType, _, _ := strings.Cut(r.Type, ":") // the script's sed 's/:.*//': readers and writers
		for _, row := range out {
			if !strings.Contains(row, lockType) {
				t.Errorf("-L %s: row not of its type %s: %q", r.Name, lockType, row)
			}
		}
	})
	t.Run("csv_output", func(t *testing.T) { checkSeparated(t, report(t, "-E", "1", "-x", ",")) })
}
