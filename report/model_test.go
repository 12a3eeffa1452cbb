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
