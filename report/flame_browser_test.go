package report

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/klockstat/klockstat/capture"
)

// flameCentre scrolls the flame graph into view and returns where the widest frame drawn named name
// is, in the viewport.
func flameCentre(t *testing.T, ctx context.Context, name string) (x, y float64) {
	t.Helper()
	xy := eval[[]float64](t, ctx, fmt.Sprintf(`(() => {
		document.getElementById("flame-canvas").scrollIntoView({block: "center"});
		return klock.flame.centreOf(%q) || [];
	})()`, name))
	if len(xy) != 2 {
		t.Fatalf("no frame named %q is drawn in the flame graph", name)
	}
	return xy[0], xy[1]
}

// waitFlame waits until the flame graph satisfies the JavaScript condition cond.
func waitFlame(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("waiting for the flame graph %s (%s): %v", what, cond, err)
	}
}

// flameWidth is how wide the frames drawn named name are together, in pixels, and the canvas's width.
func flameWidth(t *testing.T, ctx context.Context, name string) (frame, canvas float64) {
	t.Helper()
	w := eval[[]float64](t, ctx, fmt.Sprintf(`(() => {
		const f = klock.flame, g = f.graphShown();
		let width = 0;
		for (let i = 0; i < g.depth.length; i++) {
			if (f.boxes[2 * i] >= 0 && f.nameOf(i) === %q) width += f.boxes[2 * i + 1];
		}
		return [width, document.getElementById("flame-canvas").clientWidth];
	})()`, name))
	return w[0], w[1]
}

// chooseFlameType shows the flame graph the type selector offers as label.
func chooseFlameType(t *testing.T, ctx context.Context, label string) {
	t.Helper()
	do(t, ctx, "choosing "+label, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const s = document.getElementById("flame-type");
		s.value = [...s.options].find((o) => o.textContent === %q).value;
		s.dispatchEvent(new Event("change"));
	})()`, label)))
}

// waitsOf sums the wait time of the records with waits for which keep holds.
func waitsOf(c *capture.Capture, keep func(capture.Record) bool) uint64 {
	var ns uint64
	for _, r := range c.Records {
		if r.Count > 0 && keep(r) {
			ns += r.TotalNS
		}
	}
	return ns
}

func TestBrowserFlameGraph(t *testing.T) {
	c, _ := knownCapture(t)
	ctx := browser(t, c, HTMLOptions{})
	all := waitsOf(c, func(capture.Record) bool { return true })
	info := func() string { return eval[string](t, ctx, `document.getElementById("flame-info").textContent`) }

	t.Run("drawn", func(t *testing.T) {
		size := eval[[]int](t, ctx, `(() => { const c = document.getElementById("flame-canvas"); return [c.width, c.height]; })()`)
		if size[0] == 0 || size[1] == 0 {
			t.Errorf("the flame graph's canvas is %v", size)
		}
		if n := eval[int](t, ctx, `klock.flame.drawn`); n == 0 {
			t.Error("the flame graph drew no frame")
		}
		if got := info(); !strings.Contains(got, "all waits: "+FormatDuration(float64(all))) {
			t.Errorf("the flame graph says %q, want all waits of %s", got, FormatDuration(float64(all)))
		}
		frame, width := flameWidth(t, ctx, "do_syscall_64")
		want := waitsOf(c, func(r capture.Record) bool { return slices.Contains(r.Stack, "do_syscall_64+0x82") })
		if got := frame / width; math.Abs(got-float64(want)/float64(all)) > 2/width {
			t.Errorf("do_syscall_64 takes %.4f of the width, want its share of the wait %.4f", got, float64(want)/float64(all))
		}
	})

	t.Run("click zooms", func(t *testing.T) {
		x, y := flameCentre(t, ctx, "ct-inode-0")
		do(t, ctx, "clicking a thread", chromedp.MouseClickXY(x, y))
		waitFlame(t, ctx, "zoomed", `document.getElementById("flame").dataset.zoom === "ct-inode-0"`)
		want := waitsOf(c, func(r capture.Record) bool { return r.Comm == "ct-inode-0" })
		if got := eval[float64](t, ctx, `klock.flame.graphShown().value[klock.flame.zoom]`); uint64(got) != want {
			t.Errorf("zoomed to a thread of %v ns, want %d", got, want)
		}
		// The thread waited from one stack, so each of its frames now takes the whole width.
		if frame, width := flameWidth(t, ctx, "ext4_buffered_write_iter"); frame < width-1 {
			t.Errorf("zoomed into ct-inode-0, ext4_buffered_write_iter is %v px wide of %v", frame, width)
		}
		if !strings.Contains(info(), "zoomed to ct-inode-0") {
			t.Errorf("the flame graph says %q, not where it zoomed", info())
		}
		do(t, ctx, "zooming out", chromedp.Click(chromedp.ID("flame-reset")))
		waitFlame(t, ctx, "zoomed out", `document.getElementById("flame").dataset.zoom === "" && document.getElementById("flame-reset").disabled`)
	})

	t.Run("search highlights", func(t *testing.T) {
		do(t, ctx, "searching", chromedp.SendKeys(chromedp.ID("flame-search"), "Mincore"))
		waitFlame(t, ctx, "searched", `klock.flame.query === "mincore"`)
		want := float64(waitsOf(c, func(r capture.Record) bool {
			return slices.ContainsFunc(r.Stack, func(f string) bool { return strings.Contains(f, "mincore") })
		})) / float64(all)
		if got := eval[float64](t, ctx, `klock.flame.matchedShare`); math.Abs(got-want) > 1e-9 {
			t.Errorf("the search matches %v of the wait, want %v", got, want)
		}
		if got := info(); !strings.Contains(got, fmt.Sprintf("matches %.1f %%", 100*want)) {
			t.Errorf("the flame graph says %q, want the matched share %.1f %%", got, 100*want)
		}
		highlighted := eval[[]string](t, ctx, `(() => {
			const f = klock.flame, names = [];
			f.matched.forEach((m, i) => { if (m && f.boxes[2 * i] >= 0) names.push(f.nameOf(i)); });
			return names;
		})()`)
		if len(highlighted) == 0 || slices.ContainsFunc(highlighted, func(n string) bool { return !strings.Contains(strings.ToLower(n), "mincore") }) {
			t.Errorf("the search highlights %q", highlighted)
		}
		do(t, ctx, "clearing the search", chromedp.Evaluate[chromedp.Void](`(() => {
			const s = document.getElementById("flame-search");
			s.value = "";
			s.dispatchEvent(new Event("input"));
		})()`))
		waitFlame(t, ctx, "cleared", `klock.flame.query === "" && klock.flame.matched === null`)
	})

	t.Run("per type", func(t *testing.T) {
		chooseFlameType(t, ctx, "mutex")
		want := waitsOf(c, func(r capture.Record) bool { return r.Type == "mutex" })
		if got := eval[float64](t, ctx, `klock.flame.graphShown().value[0]`); uint64(got) != want {
			t.Errorf("the mutex flame graph weighs %v ns, want %d", got, want)
		}
		if got := info(); !strings.Contains(got, "all mutex waits: "+FormatDuration(float64(want))) {
			t.Errorf("the mutex flame graph says %q", got)
		}
		types := eval[[]string](t, ctx, `[...document.getElementById("flame-type").options].map((o) => o.textContent)`)
		if !slices.Contains(types, scriptBreak) || !slices.Contains(types, funcType) {
			t.Errorf("the type selector offers %q, without the hostile types as text", types)
		}
		chooseFlameType(t, ctx, "All lock types")
	})

	t.Run("hostile names stay text", func(t *testing.T) {
		// Each in the graph of a type where it is wide enough to point at.
		for _, v := range []struct{ typ, name string }{{"rwsem:W", svgComm}, {"mutex", scriptBreak}, {"mutex", commentOpen}, {"rwsem:R", imgCanary}, {"spinlock", funcMarker}, {scriptBreak, funcMarker}} {
			chooseFlameType(t, ctx, v.typ)
			name := v.name
			x, y := flameCentre(t, ctx, name)
			do(t, ctx, "pointing at "+name, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y))
			tip := eval[string](t, ctx, `document.getElementById("flame-tip").querySelector(".name").textContent`)
			if tip != name {
				t.Errorf("the tooltip of %q names %q", name, tip)
			}
		}
		checkNoMarkup(t, ctx)
	})
}
