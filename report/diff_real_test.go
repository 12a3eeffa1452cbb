package report

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
)

// TestDiffRealThreads captures examples/contend on mmap_lock for real, with 2 and then 8 threads, and
// compares the two: the rows of mmap_lock must match across the runs, although every address differs
// (another process, another mm), and the wait per second on it must grow with the threads. The first
// capture is read from its HTML report and the second from its JSON, as klockstat diff takes either.
// Both charge the waits to the lock owners, and some owner of mmap_lock must match across the runs
// too: a writer thread of the same name and stack functions, or the reason the owner is unknown
// (held by readers), which a loaded machine cannot keep apart as it can the writers' stacks.
func TestDiffRealThreads(t *testing.T) {
	testenv.RequireRoot(t)
	klockstat, contend := testenv.Build(t, "."), testenv.Build(t, "./examples/contend")
	dir := t.TempDir()
	run := func(threads string, output ...string) *capture.Capture {
		t.Helper()
		args := append(append([]string{"-q", "--owners"}, output...), "--", contend, "-lock", "mmap", "-threads", threads, "-duration", "2s")
		cmd := exec.Command(klockstat, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
		}
		f, err := os.Open(output[len(output)-1])
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		c, err := ReadInput(f)
		if err != nil {
			t.Fatalf("reading the capture of %s threads: %v", threads, err)
		}
		return c
	}
	before := run("2", "-o", filepath.Join(dir, "2threads.html"))
	after := run("8", "-o", "", "--json", filepath.Join(dir, "8threads.json"))

	d := capture.Compare(before, after, capture.DiffOptions{Top: 10})
	var summary bytes.Buffer
	if err := WriteDiffSummary(&summary, d, 10); err != nil {
		t.Fatal(err)
	}
	t.Logf("klockstat diff of 2 and 8 threads:\n%s", summary.String())
	// A probe may miss an event now and then (lost events); the settings must not differ.
	for _, w := range d.Warnings() {
		if !strings.Contains(w, "lost") {
			t.Errorf("two captures of the same machine and settings: %s", w)
		}
	}
	if !d.PerSecond {
		t.Fatal("the diff is not per second")
	}

	var waitB, waitA float64
	matched := 0
	for _, r := range d.Rows {
		mmapCaller := r.Caller == "vm_mmap_pgoff" || r.Caller == "__vm_munmap" || strings.Contains(r.Caller, "mincore")
		if !strings.HasPrefix(r.Type, "rwsem") || r.Name != "mmap_lock" || !mmapCaller {
			continue
		}
		waitB += r.Before.TotalNS
		waitA += r.After.TotalNS
		if r.Status == capture.Matched {
			matched++
		}
	}
	if matched == 0 {
		t.Fatalf("no mmap_lock row matched across the two runs:\n%s", summary.String())
	}
	if waitB <= 0 || waitA <= waitB {
		t.Errorf("mmap_lock wait per second: %s with 2 threads, %s with 8; want it to grow", FormatDuration(waitB), FormatDuration(waitA))
	}
	if !d.OwnersCompared() {
		t.Fatalf("two captures with --owners, owners not compared: %d and %d owners", len(before.Owners), len(after.Owners))
	}
	ownersMatched := 0
	for _, o := range d.Owners {
		if o.Status == capture.Matched && o.Name == "mmap_lock" && (strings.HasPrefix(o.Comm, "ct-mmap-") || o.Reason != "") {
			ownersMatched++
		}
	}
	if ownersMatched == 0 {
		t.Errorf("no owner of mmap_lock matched across the two runs:\n%s", summary.String())
	}
	totalB, totalA, pct := d.TotalWaitChange()
	if ok, grew := d.FailOver(pct); !ok || grew != nil {
		t.Errorf("FailOver(%v) at a change of exactly %v%% fails", pct, pct)
	}
	if ok, grew := d.FailOver(0); ok || len(grew) == 0 {
		t.Errorf("FailOver(0) passes a change from %s/s to %s/s", FormatDuration(totalB), FormatDuration(totalA))
	}

	var page bytes.Buffer
	if err := WriteDiffHTML(&page, d, HTMLOptions{Top: 20}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page.Bytes(), []byte("mmap_lock")) || !bytes.Contains(page.Bytes(), []byte(`id="diff-owners"`)) {
		t.Error("the diff page does not show mmap_lock, or no owners")
	}
}
