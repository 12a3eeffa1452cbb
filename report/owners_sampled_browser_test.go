package report

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/klockstat/klockstat/capture"
)

// sampledOwnerCapture is ownedCapture with the inode's writer sampled on its CPU at two stacks, its
// wait spread over them (capture.SpreadOwnerSamples), and a wait chain from the pipe's owner, whose
// end has a hostile name, to the inode.
func sampledOwnerCapture(t testing.TB) *capture.Capture {
	t.Helper()
	c := ownedCapture(t)
	var inode, pipe capture.Owner
	for _, o := range c.Owners {
		switch {
		case o.Comm == "ct-inode-w":
			inode = o
		case o.Comm == "ct-pipe-1":
			pipe = o
		}
	}
	c.Meta.OwnerSampleHz = 997
	c.Owners = capture.SpreadOwnerSamples(c.Owners, []capture.OwnerSample{
		{Type: inode.Type, Lock: inode.Lock, TID: inode.TID, Count: 30, Stack: []string{"copy_user_generic+0xa", "generic_perform_write+0x11d", "ext4_buffered_write_iter+0x5a", "vfs_write+0x26b"}},
		{Type: inode.Type, Lock: inode.Lock, TID: inode.TID, Count: 10, Stack: []string{"clear_page_erms+0x7", scriptBreak + "+0x1", "vfs_write+0x26b"}},
	})
	// The inode writer's share at __cond_resched was spent preempted.
	for i, o := range c.Owners {
		if o.TID == inode.TID && slices.ContainsFunc(o.Stack, func(f string) bool { return strings.HasPrefix(f, "__cond_resched+") }) {
			c.Owners[i].HolderState = capture.HolderRunnable
		}
	}
	c.OwnerChains = []capture.OwnerChain{{Type: pipe.Type, Lock: pipe.Lock, TID: pipe.TID, Comm: pipe.Comm,
		EndType: inode.Type, EndLock: inode.Lock, EndTID: 4242, EndComm: ownerComm, Depth: 1, Count: 7, TotalNS: 7_005}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBrowserOwnersOnCPU reads the owners' critical sections in "Blocked by": the sampled stacks on
// CPU with their samples and shares of the owner's wait, the stack it left its CPU at, the wait chain
// of the pipe's owner to a hostile thread, shown as text; then draws the owners' flame graph and
// points at the sampled function.
func TestBrowserOwnersOnCPU(t *testing.T) {
	c := sampledOwnerCapture(t)
	ctx := browser(t, c, HTMLOptions{Top: 40})
	do(t, ctx, "showing the owners", chromedp.Click(chromedp.CSS(`#locks .tab[data-view="owners"]`)))
	waitRows(t, ctx, "table-locks", len(c.Owners))
	if header := eval[string](t, ctx, `document.body.textContent`); !strings.Contains(header, "Owner samples997 Hz per CPU") {
		t.Errorf("the page does not say at what rate the owners were sampled")
	}

	totals := map[string]uint64{}
	for _, o := range c.Owners {
		totals[o.Key()] += o.TotalNS
	}
	owners, wheres, samples, shares := shownColumn(t, ctx, "table-locks", "owner"), shownColumn(t, ctx, "table-locks", "where"),
		shownColumn(t, ctx, "table-locks", "samples"), shownColumn(t, ctx, "table-locks", "share")
	var onCPU int
	for i, o := range c.Owners {
		want := map[string]string{capture.OwnerStackOnCPU: "on CPU (sampled)", capture.OwnerStackOffCPU: "off CPU (left it)"}[o.Where]
		if wheres[i] != want {
			t.Errorf("owner row %d (%s): where %q, want %q", i, owners[i], wheres[i], want)
		}
		if o.Where == capture.OwnerStackOnCPU {
			onCPU++
			if samples[i] != fmt.Sprint(o.Samples) {
				t.Errorf("owner row %d (%s): %q samples, want %d", i, owners[i], samples[i], o.Samples)
			}
		}
		if want := fmt.Sprintf("%.1f", 100*float64(o.TotalNS)/float64(totals[o.Key()])); shares[i] != want {
			t.Errorf("owner row %d (%s): share %q, want %q", i, owners[i], shares[i], want)
		}
	}
	if onCPU != 2 {
		t.Errorf("%d rows on CPU, want the writer's 2 sampled stacks", onCPU)
	}

	chains := shownColumn(t, ctx, "table-locks", "chain")
	row := slices.Index(owners, "ct-pipe-1 3200/3203")
	if row < 0 {
		t.Fatalf("no row of the pipe's owner among %q", owners)
	}
	if want := "held by " + visible(ownerComm) + " (tid 4242): 50.0% of its wait"; !strings.Contains(chains[row], want) {
		t.Errorf("the pipe owner's chain reads %q, want it to contain %q", chains[row], want)
	}
	checkNoMarkup(t, ctx)

	chooseFlameType(t, ctx, "Owners' critical sections")
	waitFlame(t, ctx, "the owners' graph drawn", `klock.flame.nameOf(0) === "all wait charged to lock owners"`)
	var withStack uint64
	for _, o := range c.Owners {
		if len(o.Stack) > 0 && o.Reason == "" {
			withStack += o.TotalNS
		}
	}
	if got := eval[float64](t, ctx, `klock.flame.graphShown().value[0]`); uint64(got) != withStack {
		t.Errorf("the owners' flame graph weighs %v ns, want the %d charged to their stacks", got, withStack)
	}
	x, y := flameCentre(t, ctx, "copy_user_generic")
	do(t, ctx, "pointing at copy_user_generic", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y))
	if what := eval[string](t, ctx, `document.getElementById("flame-tip").querySelector(".what").textContent`); what != "kernel function" {
		t.Errorf("copy_user_generic is shown as %q", what)
	}
	var preempted uint64
	for _, o := range c.Owners {
		if o.HolderState == capture.HolderRunnable {
			preempted += o.TotalNS
		}
	}
	x, y = flameCentre(t, ctx, capture.HolderFrame(capture.HolderRunnable))
	do(t, ctx, "pointing at the preempted share", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y))
	if what := eval[string](t, ctx, `document.getElementById("flame-tip").querySelector(".what").textContent`); what != "what the holder did over this share of the wait" {
		t.Errorf("the preempted share is shown as %q", what)
	}
	if got := eval[float64](t, ctx, `(() => { const g = klock.flame.graphShown(); return g.value[g.name.indexOf(g.holders.runnable)]; })()`); preempted == 0 || uint64(got) != preempted {
		t.Errorf("the preempted share weighs %v ns, want the %d ns charged to the holder preempted", got, preempted)
	}
	x, y = flameCentre(t, ctx, scriptBreak)
	do(t, ctx, "pointing at the hostile frame", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y))
	if tip := eval[string](t, ctx, `document.getElementById("flame-tip").querySelector(".name").textContent`); tip != scriptBreak {
		t.Errorf("the hostile frame's tooltip names %q", tip)
	}
	checkNoMarkup(t, ctx)
}
