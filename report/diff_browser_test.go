package report

import (
	"cmp"
	"context"
	"fmt"
	"github.com/klockstat/klockstat/capture"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// diffBrowser opens the page WriteDiffHTML writes of d (see openPage).
func diffBrowser(t *testing.T, d *capture.Diff, o HTMLOptions) context.Context {
	t.Helper()
	return openPage(t, fmt.Sprintf("diff page of %d rows", len(d.Rows)), func(w io.Writer) error { return WriteDiffHTML(w, d, o) })
}

// shownDiffColumn returns the texts of a column of the rows the diff's rows table shows.
func shownDiffColumn(t *testing.T, ctx context.Context, key string) []string {
	t.Helper()
	return shownColumn(t, ctx, "table-diff-rows", key)
}

// heaviestStack is the stack a diff row shows: its heaviest record's on its later side.
func heaviestStack(r capture.DiffRow) []string {
	if r.Status == capture.Gone {
		return r.Before.Stack
	}
	return r.After.Stack
}

func TestBrowserDiff(t *testing.T) {
	d := hostileDiff(t, capture.DiffOptions{ByThread: true})
	const top = 2
	ctx := diffBrowser(t, d, HTMLOptions{Top: top})

	t.Run("charts", func(t *testing.T) { checkChartsDrawn(t, ctx, diffChartIDs) })

	t.Run("pages", func(t *testing.T) {
		var want []string
		for _, r := range d.Rows {
			want = append(want, FormatDuration(r.After.TotalNS))
		}
		waitRows(t, ctx, "table-diff-rows", top)
		got := shownDiffColumn(t, ctx, "total_a")
		do(t, ctx, "turning the page", chromedp.Click(chromedp.CSS(`#diff-rows .pager button:nth-child(2)`)))
		waitRows(t, ctx, "table-diff-rows", len(d.Rows)-top)
		got = append(got, shownDiffColumn(t, ctx, "total_a")...)
		// Missing sides show as "–".
		for i, r := range d.Rows {
			if r.Status == capture.Gone {
				want[i] = "–"
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("total wait after, page by page: %q, want %q", got, want)
		}
		do(t, ctx, "turning back", chromedp.Click(chromedp.CSS(`#diff-rows .pager button:nth-child(1)`)))
	})

	t.Run("sort", func(t *testing.T) {
		rows := slices.Clone(d.Rows)
		slices.SortStableFunc(rows, func(a, b capture.DiffRow) int { return cmp.Compare(b.DeltaNS(), a.DeltaNS()) })
		var want []string
		for _, r := range rows[:top] {
			want = append(want, formatDelta(r.DeltaNS()))
		}
		do(t, ctx, "sorting by change", chromedp.Click(chromedp.CSS(`#table-diff-rows th[data-col="total_d"]`)))
		if got := shownDiffColumn(t, ctx, "total_d"); !slices.Equal(got, want) {
			t.Errorf("sorted by change in total wait: %q, want %q", got, want)
		}
		if s := eval[string](t, ctx, `document.querySelector('#table-diff-rows th[data-col="total_d"]').getAttribute("aria-sort")`); s != "descending" {
			t.Errorf("header aria-sort %q, want descending", s)
		}
	})

	t.Run("filter", func(t *testing.T) {
		// The filter looks at the names and the frames, case-insensitively.
		var want []string
		for _, r := range d.Rows {
			fields := append([]string{r.Status.String(), r.Type, r.Name, r.Comm, r.Caller}, heaviestStack(r)...)
			if slices.ContainsFunc(fields, func(f string) bool { return strings.Contains(f, "script") }) {
				want = append(want, r.Comm)
			}
		}
		do(t, ctx, "filtering", chromedp.SendKeys(chromedp.ID("filter-diff-rows"), "SCRIPT"))
		// The filter applies once typing pauses: wait for the pager to count the rows it let through.
		suffix := fmt.Sprintf(" of %d (filtered from %d)", len(want), len(d.Rows))
		const info = `document.querySelector("#diff-rows .pager .info").textContent`
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`%s.endsWith(%q)`, info, suffix), chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatalf("the pager says %q, want it to end in %q: %v", eval[string](t, ctx, info), suffix, err)
		}
		for _, comm := range shownDiffColumn(t, ctx, "comm") {
			if !slices.Contains(want, comm) {
				t.Errorf("filter for script shows thread %q, want only %q", comm, want)
			}
		}
		clearFilter(t, ctx, "diff-rows")
	})

	t.Run("hostile strings stay text", func(t *testing.T) {
		do(t, ctx, "filtering", chromedp.SendKeys(chromedp.ID("filter-diff-rows"), svgComm))
		waitRows(t, ctx, "table-diff-rows", 1)
		if got := shownDiffColumn(t, ctx, "comm"); !slices.Equal(got, []string{svgComm}) {
			t.Errorf("thread %q does not show as text: %q", svgComm, got)
		}
		// Every tooltip of every chart, with the hostile type and caller names in them.
		checkTips(t, ctx, math.MaxInt32, scriptBreak, funcType, funcMarker, svgComm)
		checkNoMarkup(t, ctx)
	})

	t.Run("stack", func(t *testing.T) {
		// The filter still shows only the row of svgComm, whose frames are hostile too.
		i := slices.IndexFunc(d.Rows, func(r capture.DiffRow) bool { return r.Comm == svgComm })
		checkFirstStack(t, ctx, "table-diff-rows", heaviestStack(d.Rows[i]))
	})
	t.Run("blocked by", func(t *testing.T) {
		// The owners by absolute change in wait charged, a page of them; hostile and bidi thread
		// names only text.
		waitRows(t, ctx, "table-diff-owners", top)
		var want []string
		for _, o := range d.Owners[:top] {
			want = append(want, visible(ownerDiffText(o)))
		}
		if got := shownColumn(t, ctx, "table-diff-owners", "owner"); !slices.Equal(got, want) {
			t.Errorf("owners shown %q, want %q", got, want)
		}
		// A state's share that changed is neither worse nor better: its change in points is shown
		// uncoloured, beside the wait charged, whose change is.
		texts := shownColumn(t, ctx, "table-diff-owners", "disk_sleep_d")
		classes := shownCells(t, ctx, "table-diff-owners", "disk_sleep_d", "className")
		waitClasses := shownCells(t, ctx, "table-diff-owners", "total_d", "className")
		var moved int
		for i, text := range texts {
			if strings.Contains(classes[i], "worse") || strings.Contains(classes[i], "better") {
				t.Errorf("owner row %d: change of a share %q coloured %q", i, text, classes[i])
			}
			if strings.HasSuffix(text, " pts") && text != "0.0 pts" {
				moved++
			}
		}
		if moved == 0 || !slices.ContainsFunc(waitClasses, func(c string) bool { return strings.Contains(c, "worse") }) {
			t.Errorf("no share change in points shown (%q) or no wait change coloured (%q)", texts, waitClasses)
		}
		do(t, ctx, "filtering", chromedp.SendKeys(chromedp.ID("filter-diff-owners"), "exe."))
		waitRows(t, ctx, "table-diff-owners", 1)
		if got := shownColumn(t, ctx, "table-diff-owners", "owner"); !slices.Equal(got, []string{"exe.<U+202E>txt"}) {
			t.Errorf("the bidi-named owner shown as %q", got)
		}
		checkNoMarkup(t, ctx)
		clearFilter(t, ctx, "diff-owners")
	})
}

// TestBrowserDiffBig compares two big captures thread by thread: the page must load, show one page
// of its thousands of rows, and sort them.
func TestBrowserDiffBig(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the big diff in -short mode")
	}
	d := capture.Compare(syntheticCapture(20_000), syntheticCapture(30_000), capture.DiffOptions{ByThread: true})
	ctx := diffBrowser(t, d, HTMLOptions{Top: defaultTop})
	waitRows(t, ctx, "table-diff-rows", defaultTop)
	do(t, ctx, "sorting by caller", chromedp.Click(chromedp.CSS(`#table-diff-rows th[data-col="caller"]`)))
	if got := shownDiffColumn(t, ctx, "caller"); !slices.IsSorted(got) {
		t.Errorf("sorted by caller: %q", got)
	}
	for _, id := range diffChartIDs {
		if n := eval[int](t, ctx, fmt.Sprintf(`document.querySelectorAll("#%s canvas").length`, id)); n == 0 {
			t.Errorf("chart %s is not drawn", id)
		}
	}
}

// TestBrowserDiffOneSideEmpty compares a capture without contention with one with: the before
// charts have nothing to draw, and the page must still work.
func TestBrowserDiffOneSideEmpty(t *testing.T) {
	c, _ := knownCapture(t)
	empty := *c
	empty.Records, empty.Histograms = nil, nil
	d := capture.Compare(&empty, c, capture.DiffOptions{})
	ctx := diffBrowser(t, d, HTMLOptions{Top: 5})
	waitRows(t, ctx, "table-diff-rows", 5)
	for _, status := range shownDiffColumn(t, ctx, "status") {
		if status != "new" {
			t.Errorf("a row of %q against no contention", status)
		}
	}
	for _, id := range diffChartIDs {
		if n := eval[int](t, ctx, fmt.Sprintf(`document.querySelectorAll("#%s canvas").length`, id)); n == 0 {
			t.Errorf("chart %s is not drawn", id)
		}
	}
}
