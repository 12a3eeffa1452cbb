package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
)

// scopedCapture is knownCapture taken with a workload under scope, whose tree is the mmap
// process (3099) only, and whose mincore reader of the mmap_lock (TID 3108) belongs to the inode
// process (3150): the view by lock merges a row of both sides.
func scopedCapture(t testing.TB, scope string) *capture.Capture {
	c, _ := knownCapture(t)
	c.Meta.Scope, c.Meta.CommandPIDs = scope, []uint32{3099}
	for i := range c.Records {
		if c.Records[i].TID == 3108 {
			c.Records[i].PID = 3150
		}
	}
	return c
}

// TestHTMLWhoseColumn: under --scope system every table says whose each row's waits are, the
// command's, another process's, or the command's share of a row that merges both.
func TestHTMLWhoseColumn(t *testing.T) {
	c := scopedCapture(t, capture.ScopeSystem)
	d := dataOf(t, renderHTML(t, c, HTMLOptions{}, testKey))
	threads := d.view(t, "threads")
	if i := slices.Index(threads.keys(), "whose"); i < 0 || threads.keys()[i-1] != "comm" {
		t.Fatalf("record view columns %q: want whose after comm", threads.keys())
	}
	for i, r := range sortedRecords(hashed(t, c, testKey)) {
		want := "other"
		if r.PID == 3099 {
			want = "command"
		}
		if got := d.cell(t, threads, "whose", i); got != want {
			t.Errorf("record %d (pid %d): whose %q, want %q", i, r.PID, got, want)
		}
	}
	seen := map[string]bool{}
	locks := d.view(t, "locks")
	for i := range locks.Rows {
		seen[d.cell(t, locks, "type", i)+" "+d.cell(t, locks, "whose", i)] = true
	}
	// The mmap_lock's readers: 118,240 ns of the command's (TID 3106), 2,800 ns of pid 3150's.
	for _, want := range []string{"rwsem:R command 98%", "rwsem:W command", "rwsem:W other", "mutex other", "spinlock other"} {
		if !seen[want] {
			t.Errorf("no lock row %q among %v", want, seen)
		}
	}
	for _, id := range []string{"callers", "cgroups"} {
		if !slices.Contains(d.view(t, id).keys(), "whose") {
			t.Errorf("view %s has no column whose", id)
		}
	}
}

func TestHTMLScopeHeader(t *testing.T) {
	for _, tc := range []struct {
		scope      string
		want       string // in the header's Scope line
		whose      bool   // the tables have the column Whose
		highlights bool   // the command's share is a headline
	}{
		{capture.ScopeSystem, "every process; the command's process tree (1 process) had ", true, true},
		{capture.ScopeCommand, "the command's process tree only (1 process): other processes' waits were not captured", false, false},
		{"", "", false, false},
	} {
		page := renderHTML(t, scopedCapture(t, tc.scope), HTMLOptions{}, testKey)
		doc := parseHTML(t, page)
		text := textOf(doc)
		line := ""
		for _, dt := range elements(doc, "dt") {
			if textOf(dt) == "Scope" {
				line = textOf(dt.NextSibling)
			}
		}
		if !strings.HasPrefix(line, tc.want) || (line == "") != (tc.want == "") {
			t.Errorf("scope %q: header line %q, want %q", tc.scope, line, tc.want)
		}
		if got := slices.Contains(dataOf(t, page).view(t, "threads").keys(), "whose"); got != tc.whose {
			t.Errorf("scope %q: column whose %v, want %v", tc.scope, got, tc.whose)
		}
		if got := strings.Contains(text, "The command's share"); got != tc.highlights {
			t.Errorf("scope %q: the command's share in the headlines %v, want %v", tc.scope, got, tc.highlights)
		}
	}
}

func TestCommandHighlight(t *testing.T) {
	c := &capture.Capture{
		Meta: capture.Meta{Scope: capture.ScopeSystem, CommandPIDs: []uint32{10, 11}},
		Records: []capture.Record{
			{Type: "mutex", Lock: 1, PID: 10, TID: 10, Count: 1, TotalNS: 3000, MinNS: 3000, MaxNS: 3000},
			{Type: "mutex", Lock: 1, PID: 11, TID: 12, Count: 1, TotalNS: 3000, MinNS: 3000, MaxNS: 3000},
			{Type: "mutex", Lock: 1, PID: 20, TID: 20, Count: 1, TotalNS: 2000, MinNS: 2000, MaxNS: 2000},
		},
	}
	h, ok := commandHighlight(c, measureOf(c.Meta))
	if !ok || h.Value != "75.0%" || !strings.Contains(h.Detail, "of the wait time in the 2 processes of its tree") || h.Term != "scope" {
		t.Errorf("highlight %+v, want 75.0%% in the 2 processes of the tree", h)
	}
	for _, w := range []struct {
		row  whose
		want string
	}{
		{whose{command: true, commandNS: 5}, "command"},
		{whose{other: true, otherNS: 5}, "other"},
		{whose{command: true, other: true, commandNS: 1, otherNS: 3}, "command 25%"},
		{whose{command: true, other: true}, "command and other"},
	} {
		if got := w.row.text(); got != w.want {
			t.Errorf("%+v: %q, want %q", w.row, got, w.want)
		}
	}
}
