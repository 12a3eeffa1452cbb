package report

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/klockstat/klockstat/internal/testenv"
)

// TestBrowserRealHostileThreadName captures, for real, a workload whose
// threads name themselves <svg/onload=x>, and opens the report klockstat
// wrote: the name must show as text and nothing of it may run.
func TestBrowserRealHostileThreadName(t *testing.T) {
	testenv.RequireRoot(t)
	const hostile = "<svg/onload=x>"
	dir := t.TempDir()
	html := filepath.Join(dir, "report.html")
	cmd := exec.Command(testenv.Build(t, "."), "-q", "-o", html, "--",
		testenv.Build(t, "./examples/contend"), "-lock", "pipe", "-threads", "4", "-duration", "1s", "-name", hostile)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
	f, err := os.Open(html)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ReadInput(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var named int
	for _, r := range c.Records {
		if strings.HasPrefix(r.Comm, hostile) {
			named++
		}
	}
	if named == 0 {
		t.Fatalf("no record of a thread named %q among %d records", hostile, len(c.Records))
	}

	ctx := browser(t, c, HTMLOptions{Top: 20})
	hostileRow := func(s string) bool { return strings.HasPrefix(s, hostile) }
	// Where the hostile threads made every wait (a kernel that shows no spinlock wait shows only
	// their pipe mutex), the filter keeps every row and the pager says nothing of it.
	everyRow := !slices.ContainsFunc(shownColumn(t, ctx, "table-locks", "comm"), func(s string) bool { return !hostileRow(s) })
	do(t, ctx, "filtering", chromedp.SendKeys(chromedp.ID("filter-locks"), hostile))
	if !everyRow {
		waitFiltered(t, ctx, "locks")
	}
	waitRows(t, ctx, "table-locks", min(named, 20))
	shown := shownColumn(t, ctx, "table-locks", "comm")
	if !slices.ContainsFunc(shown, hostileRow) {
		t.Errorf("thread %q does not show as text: %q", hostile, shown)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("body svg").length`); n > 0 {
		t.Errorf("the thread name became %d svg elements", n)
	}
}
