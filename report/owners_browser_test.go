package report

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/klockstat/klockstat/capture"
)

// rowWhere is the number (from 1) of the first row a table shows whose cell of column key reads
// text, or 0.
func rowWhere(t *testing.T, ctx context.Context, table, key, text string) int {
	t.Helper()
	return slices.Index(shownColumn(t, ctx, table, key), text) + 1
}

// pinText is what the section of tables says it is pinned to, "" when it shows every row.
func pinText(t *testing.T, ctx context.Context, section string) string {
	t.Helper()
	return eval[string](t, ctx, fmt.Sprintf(`(() => {
		const pin = document.querySelector("#%s .pin");
		return pin.hidden ? "" : pin.querySelector("span").textContent;
	})()`, section))
}

// selectedView is the view the section of tables shows.
func selectedView(t *testing.T, ctx context.Context, section string) string {
	t.Helper()
	return eval[string](t, ctx, fmt.Sprintf(`document.querySelector('#%s .tab[aria-selected="true"]').dataset.view`, section))
}

// mmapWriters are the threads that waited to write the mmap_lock, as "By thread" shows them, and the
// stack of the first.
func mmapWriters(c *capture.Capture) (tids []string, stack []string) {
	for _, r := range sortedRecords(c) {
		if r.Type == "rwsem:W" && r.Name == "mmap_lock" {
			tids = append(tids, fmt.Sprint(r.TID))
			if stack == nil {
				stack = r.Stack
			}
		}
	}
	return tids, stack
}

// TestBrowserBlockedBy opens the report of a capture with owners from file:// and reads "Blocked by"
// as a reader would: the owners ranked by the wait charged to them, with their state breakdown and
// stacks, a hostile owner name shown as text; then follows an owner's link to its waiters (by
// keyboard), a waiter's link back to the owners of its lock (by mouse), and a lock's to its two
// owners, checking the rows each lands on.
func TestBrowserBlockedBy(t *testing.T) {
	c := ownedCapture(t)
	ctx := browser(t, c, HTMLOptions{Top: 20})
	showView := func(id string) {
		t.Helper()
		do(t, ctx, "showing "+id, chromedp.Click(chromedp.CSS(`#locks .tab[data-view="`+id+`"]`)))
	}
	hostile := visible(ownerComm) + " 3099/3110"
	ownerRow := func(o capture.Owner) string { return visible(ownerText(o)) + " " + o.Type }

	var mmapTitle string // the mmap_lock's title in the owners' rows: its hashed id
	t.Run("owners", func(t *testing.T) {
		showView("owners")
		waitRows(t, ctx, "table-locks", len(c.Owners))
		names := shownColumn(t, ctx, "table-locks", "owner")
		var want []string
		for _, o := range c.Owners {
			want = append(want, ownerRow(o)+" "+FormatDuration(float64(o.TotalNS)))
		}
		if got := shownRows(t, ctx, "table-locks", "owner", "type", "total"); !slices.Equal(got, want) {
			t.Errorf("owners by wait charged:\n got %q\nwant %q", got, want)
		}
		for _, state := range capture.OwnerStates {
			cells := shownColumn(t, ctx, "table-locks", state)
			for i, o := range c.Owners {
				var ns uint64
				for _, s := range o.States {
					if s.State == state {
						ns = s.TotalNS
					}
				}
				if w := FormatDuration(float64(ns)); cells[i] != w {
					t.Errorf("owner row %d (%s), state %s: %q, want %q", i, names[i], state, cells[i], w)
				}
			}
		}
		for i, why := range shownColumn(t, ctx, "table-locks", "stack_reason") {
			if o := c.Owners[i]; why != o.StackReason {
				t.Errorf("owner row %d (%s) says why it has no stack: %q, want %q", i, names[i], why, o.StackReason)
			}
		}
		checkFirstStack(t, ctx, "table-locks", c.Owners[0].Stack)
		if cls := eval[string](t, ctx, `document.querySelector('#table-locks th[data-col="waiters"]').className`); strings.Contains(cls, "num") {
			t.Errorf("the heading of the waiters' links is aligned as numbers are: class %q", cls)
		}

		// The hostile name is one text node in the cell's clip, shown with its bidi control made visible.
		row := rowWhere(t, ctx, "table-locks", "owner", hostile)
		if row == 0 {
			t.Fatalf("no owner row shows %q: %q", hostile, names)
		}
		elements := eval[int](t, ctx, fmt.Sprintf(`(() => {
			const t = document.getElementById("table-locks");
			return t.tBodies[0].rows[%d].cells[t.dataset.cols.split(" ").indexOf("owner")].querySelectorAll(":not(span.clip)").length;
		})()`, row-1))
		if elements != 0 {
			t.Errorf("the hostile owner's cell holds %d elements", elements)
		}
		mmapTitle = shownTitles(t, ctx, "table-locks", "lock")[row-1]
		checkNoMarkup(t, ctx)
	})

	t.Run("owner to waiters", func(t *testing.T) {
		row := rowWhere(t, ctx, "table-locks", "owner", hostile)
		if types := shownColumn(t, ctx, "table-locks", "type"); row == 0 || types[row-1] != "rwsem:W" {
			t.Fatalf("the hostile owner of the mmap_lock's writers is not row %d", row)
		}
		// Keyboard only: the link is a button that Tab reaches and Enter presses.
		do(t, ctx, "following the owner's link", chromedp.Focus(chromedp.CSS(fmt.Sprintf(`#table-locks tbody tr:nth-child(%d) button.link`, row))),
			chromedp.KeyEvent(kb.Enter))
		want, stack := mmapWriters(c)
		waitRows(t, ctx, "table-locks", len(want))
		if v := selectedView(t, ctx, "locks"); v != "threads" {
			t.Errorf("the owner's link shows view %q, want threads", v)
		}
		if got := shownColumn(t, ctx, "table-locks", "tid"); !slices.Equal(got, want) {
			t.Errorf("the waiters shown are threads %q, want %q", got, want)
		}
		for i, title := range shownTitles(t, ctx, "table-locks", "lock") {
			if typ := shownColumn(t, ctx, "table-locks", "type")[i]; title != mmapTitle || typ != "rwsem:W" {
				t.Errorf("waiter row %d: %s %s, want rwsem:W %s", i, typ, title, mmapTitle)
			}
		}
		if got, w := pinText(t, ctx, "locks"), "The waits on rwsem:W mmap_lock ("+mmapTitle+")"; got != w {
			t.Errorf("the waiters are introduced as %q, want %q", got, w)
		}
		if focused := eval[string](t, ctx, `document.activeElement.textContent`); focused != "Show all rows" {
			t.Errorf("after the link, the focus is on %q, want the button that shows all rows", focused)
		}
		checkFirstStack(t, ctx, "table-locks", stack)
	})

	t.Run("waiter to owners", func(t *testing.T) {
		row := rowWhere(t, ctx, "table-locks", "tid", "3106")
		if got := shownColumn(t, ctx, "table-locks", "blocked_by"); row == 0 || got[row-1] != hostile {
			t.Fatalf("waiter 3106 is row %d, blocked by %q, want %q", row, got, hostile)
		}
		do(t, ctx, "following the waiter's link", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#table-locks tbody tr:nth-child(%d) button.link`, row))))
		waitRows(t, ctx, "table-locks", 1)
		if v := selectedView(t, ctx, "locks"); v != "owners" {
			t.Errorf("the waiter's link shows view %q, want owners", v)
		}
		// The writers' owner, not the readers' owner of the same lock, who is the same thread.
		if got := shownRows(t, ctx, "table-locks", "owner", "type")[0]; got != hostile+" rwsem:W" {
			t.Errorf("the waiter's link shows owner %q, want %q", got, hostile+" rwsem:W")
		}
		if got, w := pinText(t, ctx, "locks"), "The owners of rwsem:W mmap_lock ("+mmapTitle+")"; got != w {
			t.Errorf("the owners are introduced as %q, want %q", got, w)
		}
		do(t, ctx, "showing all owners", chromedp.Click(chromedp.CSS(`#locks .pin button`)))
		waitRows(t, ctx, "table-locks", len(c.Owners))
		if got := pinText(t, ctx, "locks"); got != "" {
			t.Errorf("after showing all rows the owners are still pinned to %q", got)
		}
	})

	t.Run("lock to owners", func(t *testing.T) {
		showView("locks")
		row := rowWhere(t, ctx, "table-locks", "blocked_by", "2 owners")
		if row == 0 {
			t.Fatalf("no lock is blocked by 2 owners: %q", shownColumn(t, ctx, "table-locks", "blocked_by"))
		}
		do(t, ctx, "following the lock's link", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#table-locks tbody tr:nth-child(%d) button.link`, row))))
		var want []string
		for _, o := range c.Owners {
			if o.Comm == "ct-inode-w" || o.Comm == "ct-inode-0" {
				want = append(want, ownerRow(o))
			}
		}
		waitRows(t, ctx, "table-locks", len(want))
		if got := shownRows(t, ctx, "table-locks", "owner", "type"); !slices.Equal(got, want) {
			t.Errorf("the inode's owners: %q, want %q", got, want)
		}
	})

	t.Run("waiters without owners", func(t *testing.T) {
		showView("threads")
		do(t, ctx, "showing all records", chromedp.Click(chromedp.CSS(`#locks .pin button`)))
		waitRows(t, ctx, "table-locks", len(c.Records))
		links := eval[[]string](t, ctx, `[...document.querySelectorAll("#table-locks tbody tr")].map((r) => r.querySelector("button.link") ? "link" : "none")`)
		for i, r := range sortedRecords(c) {
			want := "link"
			if !slices.Contains(c.Meta.Types[:4], r.Type) {
				want = "none"
			}
			if links[i] != want {
				t.Errorf("record row %d (%s): %s, want %s", i, r.Type, links[i], want)
			}
		}
		checkNoMarkup(t, ctx)
	})
}

// followOwnerLinks is the script that TestFirefoxBlockedBy runs once the page has drawn its tables (null
// before): it follows the link of the owner named %q to its waiters, then the link of waiter 3106 back
// to its owners, and returns what each showed, as JSON.
const followOwnerLinks = `(() => {
	if (!document.documentElement.classList.contains("js")) {
		return null;
	}
	const table = document.getElementById("table-locks");
	const rows = () => [...table.tBodies[0].rows].filter((r) => !r.classList.contains("empty-row"));
	const column = (key) => rows().map((r) => r.cells[table.dataset.cols.split(" ").indexOf(key)].textContent);
	const view = () => document.querySelector('#locks .tab[aria-selected="true"]').dataset.view;
	const pin = () => document.querySelector("#locks .pin span").textContent;
	const out = {};
	document.querySelector('#locks .tab[data-view="owners"]').click();
	out.owners = column("owner");
	rows()[out.owners.indexOf(%q)].querySelector("button.link").click();
	out.waitersView = view();
	out.waiters = column("tid");
	out.waitersPin = pin();
	rows()[out.waiters.indexOf("3106")].querySelector("button.link").click();
	out.ownersView = view();
	out.ownersOfLock = column("owner").map((o, i) => o + " " + column("type")[i]);
	out.ownersPin = pin();
	out.markup = document.querySelectorAll("body svg, body img, body iframe").length;
	return JSON.stringify(out);
})()`

// TestFirefoxBlockedBy follows the links of "Blocked by" both ways in Firefox ESR, offline from
// file://, as TestBrowserBlockedBy does in Chromium: the page's script must work in both.
func TestFirefoxBlockedBy(t *testing.T) {
	if _, err := os.Stat(firefoxPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing: CI must install the Debian package firefox-esr", firefoxPath)
		}
		t.Skipf("%s is missing (apt-get install firefox-esr), skipping the browser test", firefoxPath)
	}
	c := ownedCapture(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, c, HTMLOptions{Top: 20}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(dir, "profile")
	if err := os.Mkdir(profile, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	firefox := openFirefox(t, ctx, profile, "file://"+path)
	hostile := visible(ownerComm) + " 3099/3110"
	var shown struct {
		Owners, Waiters, OwnersOfLock []string
		WaitersView, WaitersPin       string
		OwnersView, OwnersPin         string
		Markup                        int
	}
	for {
		out, ok := firefox.evaluate(fmt.Sprintf(followOwnerLinks, hostile))
		if ok {
			if err := json.Unmarshal([]byte(out), &shown); err != nil {
				t.Fatalf("what Firefox showed, %s: %v", out, err)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("Firefox did not draw the tables: %v", ctx.Err())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var owners []string
	for _, o := range c.Owners {
		owners = append(owners, visible(ownerText(o)))
	}
	if !slices.Equal(shown.Owners, owners) {
		t.Errorf("Firefox shows the owners %q, want %q", shown.Owners, owners)
	}
	if tids, _ := mmapWriters(c); shown.WaitersView != "threads" || !slices.Equal(shown.Waiters, tids) {
		t.Errorf("the owner's link shows %s %q, want threads %q", shown.WaitersView, shown.Waiters, tids)
	}
	if shown.OwnersView != "owners" || !slices.Equal(shown.OwnersOfLock, []string{hostile + " rwsem:W"}) {
		t.Errorf("the waiter's link shows %s %q, want the owner %q", shown.OwnersView, shown.OwnersOfLock, hostile)
	}
	if !strings.HasPrefix(shown.WaitersPin, "The waits on rwsem:W mmap_lock (lock ") || !strings.HasPrefix(shown.OwnersPin, "The owners of rwsem:W mmap_lock (lock ") {
		t.Errorf("the views followed to are introduced as %q and %q", shown.WaitersPin, shown.OwnersPin)
	}
	if shown.Markup > 0 {
		t.Errorf("hostile strings became %d elements", shown.Markup)
	}
}
