package report

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/klockstat/klockstat/capture"
)

// clippedJS lists what a page at its viewport's width cuts off: a table cell not inside the frame
// that holds its table, or whose content spills out of it; a text cut short by its column (an
// ellipsis) without a title holding it whole; a text that ECharts drew on a chart's canvas partly
// outside it, or over another text; a card's heading flush against the card's edge, or its text
// spilling out of it.
const clippedJS = `(() => {
	const out = [];
	const inside = (r, f) => r.left >= f.left - 1 && r.right <= f.right + 1;
	const visible = (e) => e.getClientRects().length > 0;
	for (const table of document.querySelectorAll("table")) {
		if (!visible(table)) {
			continue;
		}
		const name = table.id || (table.closest("section") || {}).id || "table";
		const frame = (table.closest(".table-wrap") || table.parentElement).getBoundingClientRect();
		if (frame.right > window.innerWidth + 1) {
			out.push(name + ": its frame ends at " + Math.round(frame.right) + ", right of the window");
		}
		for (const row of table.rows) {
			for (const cell of row.cells) {
				const what = name + " cell " + JSON.stringify(cell.innerText.slice(0, 40));
				if (!inside(cell.getBoundingClientRect(), frame)) {
					out.push(what + " is outside its table's frame");
				} else if (cell.scrollWidth > cell.clientWidth + 1) {
					const style = getComputedStyle(cell);
					if (style.overflowX !== "hidden" || style.textOverflow !== "ellipsis") {
						out.push(what + " spills out of its cell");
					} else if (!(cell.getAttribute("title") || "").includes(cell.textContent.trim())) {
						out.push(what + " is cut without a title holding it whole");
					}
				}
				for (const clip of cell.querySelectorAll(".clip, button.link")) {
					const title = clip.getAttribute("title") || "";
					if (clip.scrollWidth > clip.clientWidth + 1 && !title.includes(clip.textContent)) {
						out.push(what + " is cut without a title holding it whole");
					}
				}
			}
		}
	}
	for (const el of document.querySelectorAll(".chart, [id^=scale-]")) {
		const chart = window.echarts && echarts.getInstanceByDom(el);
		if (!chart) {
			continue;
		}
		const w = chart.getWidth(), h = chart.getHeight();
		const boxes = [];
		for (const d of chart.getZr().storage.getDisplayList(true)) {
			if (!d.style || typeof d.style.text !== "string" || d.style.text.trim() === "" || d.invisible) {
				continue;
			}
			const r = d.getBoundingRect().clone();
			r.applyTransform(d.getComputedTransform());
			const what = el.id + " text " + JSON.stringify(d.style.text);
			if (r.x < -1 || r.y < -1 || r.x + r.width > w + 1 || r.y + r.height > h + 1) {
				out.push(what + " is cut by the chart's edge");
			}
			for (const [other, o] of boxes) {
				const dx = Math.min(r.x + r.width, o.x + o.width) - Math.max(r.x, o.x);
				const dy = Math.min(r.y + r.height, o.y + o.height) - Math.max(r.y, o.y);
				if (dx > 2 && dy > 2) {
					out.push(what + " overlaps " + JSON.stringify(other));
				}
			}
			boxes.push([d.style.text, r]);
		}
	}
	for (const card of document.querySelectorAll(".highlight, .facts .card")) {
		if (visible(card) && card.scrollWidth > card.clientWidth + 1) {
			out.push("card " + JSON.stringify(card.innerText.slice(0, 40)) + " has text spilling out of it");
		}
	}
	for (const h of document.querySelectorAll(".card > h2, .card > figcaption > h2")) {
		const card = h.closest(".card").getBoundingClientRect();
		const r = h.getBoundingClientRect();
		if (visible(h) && (r.left - card.left < 8 || r.top - card.top < 6)) {
			out.push("heading " + JSON.stringify(h.textContent) + " is flush against its card's edge");
		}
	}
	return out;
})()`

// clipped sizes the window to the screen the pages are made for and returns what clippedJS finds.
func clipped(t *testing.T, ctx context.Context) []string {
	t.Helper()
	do(t, ctx, "sizing the screen", chromedp.EmulateViewport(screenWidth, screenHeight))
	// ECharts redraws on the window's resize event, which page.js and scale.js listen for.
	eval[bool](t, ctx, `(window.dispatchEvent(new Event("resize")), true)`)
	return eval[[]string](t, ctx, clippedJS)
}

// TestBrowserNothingClipped: at 1400x900, no table cell of the report, of the diff or of the scaling
// page is cut by its frame or spills out, no text of a chart is cut by the chart's edge or drawn over
// another, and no card's heading touches its card's edge, in every view of the tables.
func TestBrowserNothingClipped(t *testing.T) {
	// A capture of owners, whose views are the widest, and one with a timeline.
	for _, name := range []string{"owners-capture.json", "phases-capture.json"} {
		report := browser(t, exampleCapture(t, name), HTMLOptions{Top: 20})
		for _, view := range strings.Fields(eval[string](t, report, `document.getElementById("locks").dataset.views`)) {
			showView(t, report, "locks", view)
			for _, p := range clipped(t, report) {
				t.Errorf("report of %s, view %s: %s", name, view, p)
			}
		}
		// Narrowed, the window's table is fitted again to its narrower frame.
		do(t, report, "narrowing the screen", chromedp.EmulateViewport(1100, screenHeight))
		eval[bool](t, report, `(window.dispatchEvent(new Event("resize")), true)`)
		fitted := `(() => { const t = document.getElementById("table-locks"); return t.scrollWidth <= t.parentElement.clientWidth; })()`
		if _, err := chromedp.Run(report, chromedp.Poll[bool](fitted, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Errorf("report of %s: the table is not fitted again to a narrower window: %v", name, err)
		}
	}

	// A kernel without data symbols: the card of contended locks names the debug image's paths,
	// words longer than the card is wide.
	for _, p := range clipped(t, browser(t, staticCapture(t), HTMLOptions{Top: 20})) {
		t.Errorf("report of a kernel without data symbols: %s", p)
	}

	// Each way round, so that the longest bar of changes is once an increase and once a decrease,
	// and a diff of two captures with timelines.
	before, after, phases := exampleCapture(t, "diff-before.html"), exampleCapture(t, "diff-after.html"), exampleCapture(t, "phases-capture.json")
	for i, pair := range [][2]*capture.Capture{{before, after}, {after, before}, {phases, phases}} {
		diff := diffBrowser(t, capture.Compare(pair[0], pair[1], capture.DiffOptions{Top: 20}), HTMLOptions{Top: 20})
		for _, view := range strings.Fields(eval[string](t, diff, `document.getElementById("diff-rows").dataset.views`)) {
			showView(t, diff, "diff-rows", view)
			for _, p := range clipped(t, diff) {
				t.Errorf("diff %d, view %s: %s", i, view, p)
			}
		}
	}

	scale := openPage(t, "scaling report", func(w io.Writer) error { return WriteScaleHTML(w, scaleSweep(t), HTMLOptions{}) })
	for _, p := range clipped(t, scale) {
		t.Errorf("scaling page: %s", p)
	}
}

// exampleCapture reads a capture of examples/.
func exampleCapture(t *testing.T, name string) *capture.Capture {
	t.Helper()
	c, err := ReadInputFile("../examples/"+name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
