package report

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	"github.com/klockstat/klockstat/capture"
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
	for part, n := range a.m.computed {
		if n != 1 {
			t.Errorf("%s computed %d times, want once", part, n)
		}
	}
	// What both renderings show, and the headline of the split capture, were computed.
	for _, part := range []string{"groups by caller", "groups by lock", "contended", "contended callers", "totals", "types", "split", "waits", "command waits", "others' waits", "order", "flame graphs"} {
		if a.m.computed[part] != 1 {
			t.Errorf("part %q not computed (computed: %v)", part, slices.Sorted(maps.Keys(a.m.computed)))
		}
	}
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
}
