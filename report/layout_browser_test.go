package report

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
)

// longStackCapture is ownedCapture with the 16-frame stacks of long module functions that a
// filesystem's waits have, for the waiters and the owners alike.
func longStackCapture(t testing.TB) *capture.Capture {
	t.Helper()
	c := ownedCapture(t)
	stack := make([]string, 16)
	for i := range stack {
		stack[i] = fmt.Sprintf("xfs_buffered_write_iomap_begin_with_a_long_helper_name_%d+0x1a4 [xfs]", i)
	}
	for i := range c.Records {
		c.Records[i].Stack = stack
	}
	for i := range c.Owners {
		if len(c.Owners[i].Stack) > 0 {
			c.Owners[i].Stack = stack
		}
	}
	return c
}

// Width of the screen the tables must fit, in CSS pixels.
const screenWidth, screenHeight = 1400, 900

// overflowingCells opens the stacks of the first rows a table shows, then returns the cells of the
// given columns that end right of the screen, as "column row: right edge".
func overflowingCells(t *testing.T, ctx context.Context, table string, keys ...string) []string {
	t.Helper()
	eval[bool](t, ctx, fmt.Sprintf(`(() => {
		for (const d of [...document.querySelectorAll("#%s tbody tr td.stack details")].slice(0, 6)) {
			d.open = true;
		}
		return true;
	})()`, table))
	// The frames are put into the page when a stack reports that it opened, a task later.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.querySelectorAll("#%s td.stack li").length > 0 || document.querySelectorAll("#%s td.stack details").length === 0`, table, table),
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("waiting for the stacks of %s to open: %v", table, err)
	}
	return eval[[]string](t, ctx, fmt.Sprintf(`(() => {
		const t = document.getElementById(%q);
		const cols = t.dataset.cols.split(" ");
		const out = [];
		for (const key of %s) {
			const i = cols.indexOf(key);
			if (i < 0) {
				out.push(key + ": no such column");
				continue;
			}
			[...t.tBodies[0].rows].forEach((row, r) => {
				const right = row.cells[i].getBoundingClientRect().right;
				if (right > %d) {
					out.push(key + " " + r + ": " + Math.round(right));
				}
			});
		}
		return out;
	})()`, table, jsonStrings(keys), screenWidth))
}

func jsonStrings(s []string) string {
	return `["` + strings.Join(s, `","`) + `"]`
}

func showView(t *testing.T, ctx context.Context, section, view string) {
	t.Helper()
	do(t, ctx, "showing view "+view, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#%s button.tab[data-view=%q]`, section, view))))
}

// TestBrowserTablesFit: on a screen 1400 pixels wide, what tells the rows of a table apart (lock,
// type, caller, stack; the owner's stack and why there is none) shows without scrolling sideways,
// with long stacks opened.
func TestBrowserTablesFit(t *testing.T) {
	ctx := browser(t, longStackCapture(t), HTMLOptions{Top: 20})
	do(t, ctx, "sizing the screen", chromedp.EmulateViewport(screenWidth, screenHeight))
	for view, keys := range map[string][]string{
		"threads": {"lock", "type", "blocked_by", "caller", "stack"},
		"callers": {"caller", "type", "lock", "stack"},
		"locks":   {"lock", "type", "blocked_by", "caller", "stack"},
		"owners":  {"owner", "type", "lock", "stack", "stack_reason"},
	} {
		showView(t, ctx, "locks", view)
		if out := overflowingCells(t, ctx, "table-locks", keys...); len(out) > 0 {
			t.Errorf("view %s: cells right of the %d pixels of the screen: %q", view, screenWidth, out)
		}
	}

	d := capture.Compare(longStackCapture(t), longStackCapture(t), capture.DiffOptions{})
	diff := diffBrowser(t, d, HTMLOptions{Top: 20})
	do(t, diff, "sizing the screen", chromedp.EmulateViewport(screenWidth, screenHeight))
	for table, keys := range map[string][]string{
		"table-diff-rows":   {"status", "type", "lock", "caller", "stack"},
		"table-diff-owners": {"status", "type", "lock", "owner", "stack", "stack_reason"},
	} {
		if out := overflowingCells(t, diff, table, keys...); len(out) > 0 {
			t.Errorf("diff %s: cells right of the %d pixels of the screen: %q", table, screenWidth, out)
		}
	}
}

// chartColors are the colours of the slices of a doughnut chart, by name.
func chartColors(t *testing.T, ctx context.Context, id string) map[string]string {
	t.Helper()
	return eval[map[string]string](t, ctx, fmt.Sprintf(`(() => {
		const out = {};
		for (const d of echarts.getInstanceByDom(document.getElementById(%q)).getOption().series[0].data) {
			out[d.name] = d.itemStyle.color;
		}
		return out;
	})()`, id))
}

// TestBrowserTypeColorsFixed: a lock type has the same colour in two reports whose types differ
// and rank differently, and in their diff.
func TestBrowserTypeColorsFixed(t *testing.T) {
	first := capturetest.Of(t, 1e9,
		capturetest.Rec("spinlock", "", "f+0x1", "a", 1, 1, 0xffff888100000000, 90_000),
		capturetest.Rec("mutex", "", "g+0x1", "a", 1, 1, 0xffff888100000040, 5_000),
		capturetest.Rec("my_lock", "", "h+0x1", "a", 1, 1, 0xffff888100000080, 1_000))
	second := capturetest.Of(t, 1e9,
		capturetest.Rec("rwsem:W", "", "k+0x1", "b", 2, 2, 0xffff888100000100, 200_000),
		capturetest.Rec("my_lock", "", "h+0x1", "b", 2, 2, 0xffff888100000080, 80_000),
		capturetest.Rec("mutex", "", "g+0x1", "b", 2, 2, 0xffff888100000040, 40_000),
		capturetest.Rec("spinlock", "", "f+0x1", "b", 2, 2, 0xffff888100000000, 2_000))
	colors := []map[string]string{
		chartColors(t, browser(t, first, HTMLOptions{}), "klockDoughnut"),
		chartColors(t, browser(t, second, HTMLOptions{}), "klockDoughnut"),
	}
	diff := diffBrowser(t, capture.Compare(first, second, capture.DiffOptions{}), HTMLOptions{})
	colors = append(colors, chartColors(t, diff, "klockDiffDoughnutBefore"), chartColors(t, diff, "klockDiffDoughnutAfter"))
	for _, typ := range []string{"spinlock", "mutex", "my_lock", "rwsem:W"} {
		want := ""
		for i, c := range colors {
			got, ok := c[typ]
			if !ok {
				continue
			}
			if want == "" {
				want = got
			} else if got != want {
				t.Errorf("%s is %s in chart %d, %s before", typ, got, i, want)
			}
		}
		if want == "" {
			t.Errorf("no chart shows %s", typ)
		}
	}
	if colors[0]["spinlock"] == colors[0]["mutex"] || colors[1]["mutex"] == colors[1]["rwsem:W"] {
		t.Errorf("two types share a colour: %v, %v", colors[0], colors[1])
	}
}
