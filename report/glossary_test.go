package report

import (
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
)

// TestGlossary: both pages have the glossary, every term they link to from the header or a table's
// heading has an entry in it, and the terms a reader meets undefined (records, rescued, the owner's
// states, &CACHE lock names, spinning, hashed ids, a diff's statuses) link to theirs.
func TestGlossary(t *testing.T) {
	c := ownedCapture(t)
	c.Meta.Events.Rescued = 3
	pages := map[string][]byte{
		"report": renderHTML(t, c, HTMLOptions{}, testKey),
		"diff":   renderDiff(t, capture.Compare(c, c, capture.DiffOptions{}), HTMLOptions{}),
	}
	want := map[string][]string{
		"report": {"record", "rescued", "owner-state", "lock-name", "spinning", "id", "owner-stack", "caller"},
		"diff":   {"rescued", "owner-state", "lock-name", "id", "status", "p99", "heaviest-stack"},
	}
	for name, page := range pages {
		doc := parseHTML(t, page)
		linked := map[string]bool{}
		for _, a := range elements(doc, "a") {
			if href, _ := attr(a, "href"); strings.HasPrefix(href, "#g-") {
				linked[strings.TrimPrefix(href, "#g-")] = true
			}
		}
		for _, v := range dataOf(t, page).Views {
			for _, col := range v.Columns {
				if col.Term != "" {
					linked[col.Term] = true
				}
			}
		}
		entries := map[string]bool{}
		for _, dt := range elements(elementByID(t, doc, "glossary"), "dt") {
			id, _ := attr(dt, "id")
			entries[strings.TrimPrefix(id, "g-")] = true
		}
		for term := range linked {
			if !entries[term] {
				t.Errorf("%s: a link to the glossary's %q, which has no such entry", name, term)
			}
		}
		for _, term := range want[name] {
			if !linked[term] {
				t.Errorf("%s: nothing links to the glossary's %q", name, term)
			}
		}
	}
}
