package report

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/klockstat/klockstat/capture"
)

const chromiumPath = "/usr/bin/chromium"

// browser opens the report that WriteHTML writes of c, as openPage does.
func browser(t *testing.T, c *capture.Capture, o HTMLOptions) context.Context {
	t.Helper()
	return openPage(t, fmt.Sprintf("report of %d records", len(c.Records)), func(w io.Writer) error { return WriteHTML(w, c, o) })
}

// openPage opens the page that write writes, described by what, from file:// in a headless Chromium that is offline, and
// records everything that would mean the page is broken or unsafe: a request for anything but a file
// or data URL, a console error or warning, an exception, an error in the browser's log (a
// Content-Security-Policy violation lands there). The test fails with them when it ends. It returns
// once the page's script has marked the document with the class "js".
func openPage(t *testing.T, what string, write func(io.Writer) error) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: CI must install the Debian package chromium", chromiumPath)
		}
		t.Skipf("%s is missing (apt-get install chromium), skipping the browser test", chromiumPath)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "page.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromiumOptions(dir)...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}

	offline := []*network.Conditions{{Offline: true, Latency: 0, DownloadThroughput: -1, UploadThroughput: -1}}
	if _, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{MatchedNetworkConditions: offline}); err != nil {
		t.Fatalf("taking the browser offline: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}); err != nil {
		t.Fatalf("taking the browser offline: %v", err)
	}

	var mu sync.Mutex
	var problems []string
	problem := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	err = chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			if u := ev.Request.URL; !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
				problem("request for %s", u)
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problem("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			problem("exception at %d:%d: %s", d.LineNumber, d.ColumnNumber, msg)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				problem("browser log %s (%s): %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Error(p)
		}
	})

	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path)); err != nil {
		t.Fatalf("opening the %s: %v", what, err)
	}
	// page.js marks the page once it has drawn the tables from the page data.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.documentElement.classList.contains("js")`)); err != nil {
		t.Fatalf("waiting for the tables: %v", err)
	}
	t.Logf("%s loaded and its tables built in %v", what, time.Since(start).Round(time.Millisecond))
	return ctx
}

// chromiumOptions start a headless Chromium that keeps its profile in dir and does nothing on the
// network of its own accord.
func chromiumOptions(dir string) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(1400, 1000),
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// shownColumn returns the texts of a column of the rows shown in a table. Headings may span two
// rows, so the cell of a key is found by the table's data-cols.
func shownColumn(t *testing.T, ctx context.Context, table, key string) []string {
	t.Helper()
	return shownCells(t, ctx, table, key, "textContent")
}

// shownRows returns the rows shown in a table as the texts of the given columns, joined by spaces.
func shownRows(t *testing.T, ctx context.Context, table string, keys ...string) []string {
	t.Helper()
	var rows []string
	for k, key := range keys {
		for i, text := range shownColumn(t, ctx, table, key) {
			if k == 0 {
				rows = append(rows, text)
			} else {
				rows[i] += " " + text
			}
		}
	}
	return rows
}

// shownTitles returns the titles of a column's cells, as shownColumn does their texts.
func shownTitles(t *testing.T, ctx context.Context, table, key string) []string {
	t.Helper()
	return shownCells(t, ctx, table, key, "title")
}

// shownCells returns a property of the cells of a column of the rows shown in a table.
func shownCells(t *testing.T, ctx context.Context, table, key, property string) []string {
	t.Helper()
	return eval[[]string](t, ctx, fmt.Sprintf(`(() => {
		const t = document.getElementById(%q);
		const i = t.dataset.cols.split(" ").indexOf(%q);
		return [...t.tBodies[0].rows].filter((r) => !r.classList.contains("empty-row")).map((r) => r.cells[i][%q]);
	})()`, table, key, property))
}

// waitRows waits until the table shows n rows.
func waitRows(t *testing.T, ctx context.Context, table string, n int) {
	t.Helper()
	js := fmt.Sprintf(`document.querySelectorAll("#%s tbody tr:not(.empty-row)").length === %d`, table, n)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		got := eval[int](t, ctx, fmt.Sprintf(`document.querySelectorAll("#%s tbody tr:not(.empty-row)").length`, table))
		t.Fatalf("%s shows %d rows, want %d: %v", table, got, n, err)
	}
}

// checkFirstStack opens the stack of the first row the table shows and checks that its frames are
// stack, with raw addresses hashed as the page hashes them.
func checkFirstStack(t *testing.T, ctx context.Context, table string, stack []string) {
	t.Helper()
	do(t, ctx, "opening a stack", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#%s tbody tr:first-child td.stack summary`, table))))
	// The frames are added when the details element reports that it opened, which is a task later.
	frames, err := chromedp.Run(ctx, chromedp.Poll[[]string](fmt.Sprintf(`(() => {
		const shown = [...document.querySelectorAll("#%s tbody tr:first-child td.stack li")].filter((li) => li.offsetHeight > 0);
		return shown.length > 0 && shown.map((li) => li.textContent);
	})()`, table), chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		t.Fatalf("waiting for the frames: %v", err)
	}
	// The page hashes raw addresses, so compare the symbolized frames.
	var want, got []string
	for _, f := range stack {
		if !strings.HasPrefix(f, "0x") {
			want = append(want, f)
		}
	}
	for _, f := range frames {
		if !strings.HasPrefix(f, "00000000") {
			got = append(got, f)
		}
	}
	if len(frames) != len(stack) || !slices.Equal(got, want) {
		t.Errorf("opened stack shows %q, want the %d frames of %q", frames, len(stack), stack)
	}
}

// checkChartsDrawn checks that each chart has drawn a canvas with a size.
func checkChartsDrawn(t *testing.T, ctx context.Context, ids []string) {
	t.Helper()
	for _, id := range ids {
		size := eval[[]int](t, ctx, fmt.Sprintf(`(() => {
			const c = document.querySelector("#%s canvas");
			return c ? [c.width, c.height] : [0, 0];
		})()`, id))
		if size[0] == 0 || size[1] == 0 {
			t.Errorf("chart %s has no canvas with a size (%v)", id, size)
		}
	}
}

// checkTips shows the tooltip of every item of the first n series of each chart, and checks that
// together they show each of want as text.
func checkTips(t *testing.T, ctx context.Context, n int, want ...string) {
	t.Helper()
	tips := eval[string](t, ctx, fmt.Sprintf(`(() => {
		let text = "";
		for (const el of document.querySelectorAll(".chart")) {
			const chart = echarts.getInstanceByDom(el);
			chart.getOption().series.slice(0, %d).forEach((s, si) => {
				for (let i = 0; i < s.data.length; i++) {
					chart.dispatchAction({type: "showTip", seriesIndex: si, dataIndex: i});
					for (const tip of el.querySelectorAll("div")) text += tip.textContent + "\n";
				}
			});
		}
		return text;
	})()`, n))
	for _, w := range want {
		if !strings.Contains(tips, w) {
			t.Errorf("no tooltip shows %q as text", w)
		}
	}
}

// checkNoMarkup checks that no hostile string became an element or ran.
func checkNoMarkup(t *testing.T, ctx context.Context) {
	t.Helper()
	injected := eval[int](t, ctx, `document.querySelectorAll("body svg, body img, body iframe").length`)
	pwned := eval[bool](t, ctx, `typeof window.pwned !== "undefined"`)
	if injected > 0 || pwned {
		t.Errorf("hostile strings became markup: %d injected elements, window.pwned set: %v", injected, pwned)
	}
}

// waitFiltered waits until the pager of a section of tables counts the rows a filter let through:
// the filter applies once typing pauses, and until then the table still shows the unfiltered rows.
func waitFiltered(t *testing.T, ctx context.Context, section string) {
	t.Helper()
	js := fmt.Sprintf(`document.querySelector("#%s .pager .info").textContent.includes("filtered from")`, section)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("waiting for the filter of %s: %v", section, err)
	}
}

// clearFilter empties the filter of a section of tables.
func clearFilter(t *testing.T, ctx context.Context, section string) {
	t.Helper()
	do(t, ctx, "clearing the filter", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const f = document.getElementById("filter-" + %q);
		f.value = "";
		f.dispatchEvent(new Event("input"));
	})()`, section)))
}

func TestBrowserReport(t *testing.T) {
	c, _ := knownCapture(t)
	const top = 5
	ctx := browser(t, c, HTMLOptions{Top: top})

	t.Run("charts", func(t *testing.T) { checkChartsDrawn(t, ctx, reportChartIDs) })

	t.Run("table", func(t *testing.T) {
		waitRows(t, ctx, "table-locks", top)
		var want []string
		for _, r := range sortedRecords(c)[:top] {
			want = append(want, fmt.Sprint(r.PID, "/", r.TID, "/", r.Type))
		}
		pids, tids, types := shownColumn(t, ctx, "table-locks", "pid"), shownColumn(t, ctx, "table-locks", "tid"), shownColumn(t, ctx, "table-locks", "type")
		var got []string
		for i := range pids {
			got = append(got, pids[i]+"/"+tids[i]+"/"+types[i])
		}
		if !slices.Equal(got, want) {
			t.Errorf("first page by total wait: %q, want %q", got, want)
		}
	})

	t.Run("sort", func(t *testing.T) {
		var counts []int
		for _, r := range c.Records {
			counts = append(counts, int(r.Count))
		}
		slices.Sort(counts)
		sel := chromedp.CSS(`#table-locks th[data-col="count"]`)
		do(t, ctx, "sorting by waits", chromedp.Click(sel))
		var desc []string
		for _, n := range slices.Backward(counts) {
			if len(desc) < top {
				desc = append(desc, fmt.Sprint(n))
			}
		}
		if got := shownColumn(t, ctx, "table-locks", "count"); !slices.Equal(got, desc) {
			t.Errorf("sorted by waits, descending: %q, want %q", got, desc)
		}
		do(t, ctx, "sorting by waits again", chromedp.Click(sel))
		var asc []string
		for _, n := range counts[:top] {
			asc = append(asc, fmt.Sprint(n))
		}
		if got := shownColumn(t, ctx, "table-locks", "count"); !slices.Equal(got, asc) {
			t.Errorf("sorted by waits, ascending: %q, want %q", got, asc)
		}
		if s := eval[string](t, ctx, `document.querySelector('#table-locks th[data-col="count"]').getAttribute("aria-sort")`); s != "ascending" {
			t.Errorf("header aria-sort %q, want ascending", s)
		}
		do(t, ctx, "sorting by total wait", chromedp.Click(chromedp.CSS(`#table-locks th[data-col="total"]`)))
	})

	t.Run("filter", func(t *testing.T) {
		var want int
		for _, r := range c.Records {
			if strings.Contains(r.Caller, "ext4_buffered") {
				want++
			}
		}
		do(t, ctx, "filtering", chromedp.SendKeys(chromedp.ID("filter-locks"), "EXT4_buffered"))
		waitFiltered(t, ctx, "locks")
		waitRows(t, ctx, "table-locks", want)
		for _, caller := range shownColumn(t, ctx, "table-locks", "caller") {
			if !strings.Contains(caller, "ext4_buffered") {
				t.Errorf("filter for ext4_buffered shows caller %q", caller)
			}
		}
		clearFilter(t, ctx, "locks")
		waitRows(t, ctx, "table-locks", top)
	})

	t.Run("stack", func(t *testing.T) {
		checkFirstStack(t, ctx, "table-locks", sortedRecords(c)[0].Stack)
	})

	t.Run("views", func(t *testing.T) {
		do(t, ctx, "showing the callers", chromedp.Click(chromedp.CSS(`.tab[data-view="callers"]`)))
		groups := capture.GroupBy(c.Records, capture.ByCaller)
		waitRows(t, ctx, "table-locks", min(top, len(groups)))
		if selected := eval[string](t, ctx, `document.querySelector('.tab[aria-selected="true"]').dataset.view`); selected != "callers" {
			t.Errorf("the selected tab is %q, want callers", selected)
		}
		var want []string
		for _, g := range groups[:top] {
			want = append(want, FormatDuration(float64(g.TotalNS)))
		}
		if got := shownColumn(t, ctx, "table-locks", "total"); !slices.Equal(got, want) {
			t.Errorf("callers by total wait: %q, want %q", got, want)
		}
		do(t, ctx, "showing the threads", chromedp.Click(chromedp.CSS(`.tab[data-view="threads"]`)))
	})

	t.Run("hostile strings stay text", func(t *testing.T) {
		var want int
		for _, r := range c.Records {
			if strings.Contains(r.Comm, svgComm) || slices.Contains(r.Stack, svgComm) || strings.Contains(r.Cgroup, svgComm) {
				want++
			}
		}
		do(t, ctx, "filtering", chromedp.SendKeys(chromedp.ID("filter-locks"), svgComm))
		waitFiltered(t, ctx, "locks")
		waitRows(t, ctx, "table-locks", want)
		if got := shownColumn(t, ctx, "table-locks", "comm"); !slices.Contains(got, svgComm) {
			t.Errorf("thread %q does not show as text: %q", svgComm, got)
		}
		// Every tooltip of each chart's first series, with the hostile type and caller names in them.
		checkTips(t, ctx, 1, scriptBreak, funcType, funcMarker)
		checkNoMarkup(t, ctx)
	})
}

// TestBrowserBigReport opens a report of 100,000 records: the page must load, and the table must show
// one page of rows, not all of them, and still sort and filter.
func TestBrowserBigReport(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the 13 MB report in -short mode")
	}
	c := syntheticCapture(100_000)
	ctx := browser(t, c, HTMLOptions{Top: defaultTop}) // logs how long until the first table page shows
	// The charts are drawn before the page data is decoded, so they are there with the table.
	checkChartsDrawn(t, ctx, reportChartIDs)
	waitRows(t, ctx, "table-locks", defaultTop)
	if got := eval[int](t, ctx, `document.querySelectorAll("tbody tr").length`); got > 3*defaultTop {
		t.Errorf("%d table rows in the page, want one page per view", got)
	}
	// The flame graph of all types is drawn once the page is: its nodes and its last draw.
	nodes, drawn, ms := eval[int](t, ctx, `klock.flame.graphShown().depth.length`), eval[int](t, ctx, `klock.flame.drawn`), eval[float64](t, ctx, `klock.flame.drawMS`)
	t.Logf("flame graph: %d nodes, %d drawn in %.1f ms", nodes, drawn, ms)
	if drawn == 0 || nodes > flameNodes {
		t.Errorf("flame graph of %d nodes (at most %d kept) drew %d", nodes, flameNodes, drawn)
	}
	x, y := flameCentre(t, ctx, "worker-976")
	do(t, ctx, "zooming into a thread", chromedp.MouseClickXY(x, y))
	waitFlame(t, ctx, "zoomed", `document.getElementById("flame").dataset.zoom === "worker-976"`)
	t.Logf("flame graph zoomed into worker-976: %d drawn in %.1f ms", eval[int](t, ctx, `klock.flame.drawn`), eval[float64](t, ctx, `klock.flame.drawMS`))
	start := time.Now()
	do(t, ctx, "sorting by thread", chromedp.Click(chromedp.CSS(`#table-locks th[data-col="comm"]`)))
	got := shownColumn(t, ctx, "table-locks", "comm")
	t.Logf("sorted %d records in %v", len(c.Records), time.Since(start).Round(time.Millisecond))
	if !slices.IsSorted(got) {
		t.Errorf("sorted by thread: %q", got)
	}
	start = time.Now()
	do(t, ctx, "filtering", chromedp.SendKeys(chromedp.ID("filter-locks"), "worker-976"))
	waitFiltered(t, ctx, "locks")
	var want int
	for _, r := range c.Records {
		if strings.Contains(r.Comm, "worker-976") {
			want++
		}
	}
	waitRows(t, ctx, "table-locks", min(want, defaultTop))
	t.Logf("filtered in %v", time.Since(start).Round(time.Millisecond))
}

// TestBrowserMergedLocks shows the views that merge records, by caller and by lock, of two processes
// each waiting on its own mmap_lock: two locks of one name. The report's "By caller" merges the two
// locks into a row that names them, its "By lock" keeps them apart, each with its id shown; the diff's "By lock" matches
// locks by name, so it merges them, and its "By caller" merges every lock of a caller. Every number
// shown is the one Go computed.
func TestBrowserMergedLocks(t *testing.T) {
	c, locks := mergedLocksCapture(t, 1e9, 1)
	t.Run("report", func(t *testing.T) {
		ctx := browser(t, c, HTMLOptions{})
		do(t, ctx, "showing the callers", chromedp.Click(chromedp.CSS(`#locks .tab[data-view="callers"]`)))
		groups := capture.GroupBy(c.Records, capture.ByCaller)
		waitRows(t, ctx, "table-locks", len(groups))
		var want []string
		for _, g := range groups {
			want = append(want, g.Caller+" "+FormatDuration(float64(g.TotalNS)))
		}
		if got := shownRows(t, ctx, "table-locks", "caller", "total"); !slices.Equal(got, want) {
			t.Errorf("by caller: %q, want %q", got, want)
		}
		lockNames, lockTitles, comms := shownColumn(t, ctx, "table-locks", "lock"), shownTitles(t, ctx, "table-locks", "lock"), shownColumn(t, ctx, "table-locks", "comm")
		if lockNames[0] != "mmap_lock" || lockTitles[0] != "several locks named mmap_lock" || comms[0] != "various" {
			t.Errorf("the merged mmap_locks of vm_mmap_pgoff show as %q titled %q, thread %q", lockNames[0], lockTitles[0], comms[0])
		}

		do(t, ctx, "showing the locks", chromedp.Click(chromedp.CSS(`#locks .tab[data-view="locks"]`)))
		byLock := capture.GroupBy(c.Records, capture.ByLock)
		waitRows(t, ctx, "table-locks", len(byLock))
		names, titles, totals := shownColumn(t, ctx, "table-locks", "lock"), shownTitles(t, ctx, "table-locks", "lock"), shownColumn(t, ctx, "table-locks", "total")
		var ids []string
		named := map[string]int{} // locks by name: a name two locks share shows their ids too
		for _, g := range byLock {
			named[g.Name]++
		}
		for i, g := range byLock {
			id := strings.TrimPrefix(titles[i], "lock ")
			want := cmp.Or(g.Name, id)
			if g.Name != "" && named[g.Name] > 1 {
				want = g.Name + " · " + id
			}
			if names[i] != want || totals[i] != FormatDuration(float64(g.TotalNS)) {
				t.Errorf("by lock, row %d: %s (%s) %s, want %s %s", i, names[i], titles[i], totals[i], want, FormatDuration(float64(g.TotalNS)))
			}
			if g.Name == "mmap_lock" {
				ids = append(ids, titles[i])
			}
		}
		if len(ids) != len(locks) || ids[0] == ids[1] {
			t.Errorf("by lock, the mmap_locks are titled %q, want one id each", ids)
		}
	})

	t.Run("diff", func(t *testing.T) {
		after, _ := mergedLocksCapture(t, 2e9, 3)
		d := capture.Compare(c, after, capture.DiffOptions{})
		ctx := diffBrowser(t, d, HTMLOptions{})
		for _, v := range []struct {
			id, key string
			rows    []capture.DiffRow
			name    func(capture.DiffRow) string
		}{
			{"callers", "caller", d.Callers, func(r capture.DiffRow) string { return r.Caller }},
			{"locks", "lock", d.Locks, func(r capture.DiffRow) string { return cmp.Or(r.Name, "unnamed") }},
		} {
			do(t, ctx, "showing "+v.id, chromedp.Click(chromedp.CSS(`#diff-rows .tab[data-view="`+v.id+`"]`)))
			waitRows(t, ctx, "table-diff-rows", len(v.rows))
			var want []string
			for _, r := range v.rows {
				want = append(want, v.name(r)+" "+FormatDuration(r.Before.TotalNS)+" "+FormatDuration(r.After.TotalNS)+" "+formatDelta(r.DeltaNS()))
			}
			names, before, after, delta := shownDiffColumn(t, ctx, v.key), shownDiffColumn(t, ctx, "total_b"), shownDiffColumn(t, ctx, "total_a"), shownDiffColumn(t, ctx, "total_d")
			var got []string
			for i := range names {
				got = append(got, names[i]+" "+before[i]+" "+after[i]+" "+delta[i])
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: %q, want %q", v.id, got, want)
			}
		}
		// Both mmap_locks, of both callers, are one row by lock.
		if n := len(d.Locks); n != 2 {
			t.Errorf("%d rows by lock, want mmap_lock and the mutex", n)
		}
	})
}
