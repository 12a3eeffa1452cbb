package report

import (
	"bytes"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/export"
)

// The summary, its next steps and the page of one capture render from one analysis: each part of it
// is computed once, however many renderings ask for it, and a summary of the same options reads the
// same from the analysis as from WriteSummary, which makes its own.
func TestAnalysisComputedOncePerCapture(t *testing.T) {
	c := renameCapture(t, capture.ScopeSystem)
	a := Analyze(c, false, testKey)
	o := SummaryOptions{Top: 5, AddressKey: testKey, Saved: "capture.json"}
	var first, second, page bytes.Buffer
	if err := a.WriteSummary(&first, o); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteHTML(&page, HTMLOptions{Top: 5}); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteSummary(&second, o); err != nil {
		t.Fatal(err)
	}
	// What both renderings show, and the headline of the split capture, were computed.
	assertComputedOnce(t, "the analysis", a.m, "groups by caller", "groups by lock", "contended", "contended callers", "totals", "types", "split", "waits", "command waits", "others' waits", "order", "flame graphs")
	if first.String() != second.String() {
		t.Errorf("the summary changed on a second rendering:\n%s\n---\n%s", first.String(), second.String())
	}
	var alone bytes.Buffer
	if err := WriteSummary(&alone, c, o); err != nil {
		t.Fatal(err)
	}
	if alone.String() != first.String() {
		t.Errorf("summary of the analysis:\n%s\nWriteSummary:\n%s", first.String(), alone.String())
	}
	if page.Len() == 0 {
		t.Error("no page")
	}

	// The exports of the run write from the same analysis: they name a lock by the id the summary
	// and the page name it by, and the owners' stacks all three write are found once.
	var exports [3]bytes.Buffer
	for i, write := range []func(io.Writer, export.Analysis) error{export.WriteCSV, export.WriteFolded, export.WritePprof} {
		if err := write(&exports[i], a); err != nil {
			t.Fatal(err)
		}
	}
	csv := exports[0]
	lock := c.Records[slices.IndexFunc(c.Records, func(r capture.Record) bool { return r.Count > 0 })].Lock
	if id := capture.NewAddressHasher(testKey).ID(lock).HashedString(); !strings.Contains(csv.String(), ","+id+",") || strings.Contains(csv.String(), lock.String()) {
		t.Errorf("the CSV does not name lock %s by its id %s:\n%s", lock, id, csv.String())
	}
	assertComputedOnce(t, "the analysis", a.m, "owner stacks")
}

// A diff renders from the models of its two captures, built once each: a model in several diffs (a
// level of a scaling page is), either way round, groups its records, sums its waits and reads its
// histograms once, and the diff of the models is the diff of the captures.
func TestDiffComputedOncePerModel(t *testing.T) {
	b, af := hostilePair(t)
	before, after := Analyze(b, true, nil), Analyze(af, true, nil)
	o := capture.DiffOptions{ByThread: true, Top: 5}
	render := func(d *capture.Diff) (page, summary string) {
		var p, s bytes.Buffer
		if err := WriteDiffHTML(&p, d, HTMLOptions{Top: 5, AddressKey: testKey}); err != nil {
			t.Fatal(err)
		}
		if err := WriteDiffSummary(&s, d, 5); err != nil {
			t.Fatal(err)
		}
		return p.String(), s.String()
	}
	d := Compare(before, after, o)
	if d.Captures != [2]*capture.Capture{b, af} {
		t.Error("the diff does not hold the models' captures")
	}
	page, summary := render(d)
	again := Compare(before, after, o)
	Compare(after, before, o) // the other way round, as a level is before in one pair of a scaling page and after in another
	for name, m := range map[string]*model{"before": before.m, "after": after.m} {
		assertComputedOnce(t, name, m, "totals", "types", "lock fields", "owner groups")
		// The rows, the callers, the locks and the cgroups: one grouping each.
		if rows := slices.DeleteFunc(slices.Collect(maps.Keys(m.computed)), func(p string) bool { return !strings.HasPrefix(p, "diff rows") }); len(rows) != 4 {
			t.Errorf("%s: groupings %q, want 4", name, rows)
		}
	}
	if p, s := render(again); p != page || s != summary {
		t.Error("a second diff of the same models renders differently")
	}
	if p, s := render(capture.Compare(b, af, o)); p != page || s != summary {
		t.Errorf("the diff of the models renders unlike the diff of the captures:\n%s\n---\n%s", summary, s)
	}
}

// assertComputedOnce fails unless every part of m was computed at most once, and those named once.
func assertComputedOnce(t *testing.T, name string, m *model, parts ...string) {
	t.Helper()
	for part, n := range m.computed {
		if n > 1 {
			t.Errorf("%s: %s computed %d times, want once", name, part, n)
		}
	}
	for _, part := range parts {
		if m.computed[part] != 1 {
			t.Errorf("%s: part %q not computed (computed: %v)", name, part, slices.Sorted(maps.Keys(m.computed)))
		}
	}
}
