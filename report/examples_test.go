package report_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/report"
)

var update = flag.Bool("update", false, "rewrite the pages of examples/ from their sources")

// exampleKey hashes the addresses of the example reports. klockstat report draws a key per run, so
// its ids (and the page's bytes) differ from one rendering to the next; a fixed key keeps a page the
// same until what it is rendered from changes.
var exampleKey = []byte("klockstat examples: a fixed key.")

// examplePages are the pages of examples/ that the README links to, each rendered from its source
// as the command in its comment does, with the command's default options.
var examplePages = []struct {
	page   string
	render func(dir string) ([]byte, error)
}{
	// klockstat report examples/contend-capture.json -o examples/contend-report.html
	{"contend-report.html", reportOf("contend-capture.json")},
	// klockstat report examples/phases-capture.json -o examples/phases-report.html
	{"phases-report.html", reportOf("phases-capture.json")},
	// klockstat report examples/owners-capture.json -o examples/owners-report.html
	{"owners-report.html", reportOf("owners-capture.json")},
	// The diff's two sides are reports whose capture is embedded, re-rendered from themselves.
	{"diff-before.html", reportOf("diff-before.html")},
	{"diff-after.html", reportOf("diff-after.html")},
	// klockstat diff examples/diff-before.html examples/diff-after.html -o examples/diff.html
	{"diff.html", diffOf("diff-before.html", "diff-after.html")},
}

// reportOf renders the report of a capture JSON or HTML report as klockstat report does.
func reportOf(source string) func(dir string) ([]byte, error) {
	return func(dir string) ([]byte, error) {
		c, err := report.ReadInputFile(filepath.Join(dir, source), nil)
		if err != nil {
			return nil, err
		}
		var page bytes.Buffer
		err = report.WriteHTML(&page, c, report.HTMLOptions{Top: 20, AddressKey: exampleKey})
		return page.Bytes(), err
	}
}

// diffOf renders the comparison of two captures as klockstat diff does.
func diffOf(before, after string) func(dir string) ([]byte, error) {
	return func(dir string) ([]byte, error) {
		b, err := report.ReadInputFile(filepath.Join(dir, before), nil)
		if err != nil {
			return nil, err
		}
		a, err := report.ReadInputFile(filepath.Join(dir, after), nil)
		if err != nil {
			return nil, err
		}
		d := capture.Compare(b, a, capture.DiffOptions{Top: 20})
		var page bytes.Buffer
		err = report.WriteDiffHTML(&page, d, report.HTMLOptions{Top: 20})
		return page.Bytes(), err
	}
}

// TestExamples fails when a page of examples/ is not what today's code renders from its source, so
// that the README never links to a page older than the templates; -update rewrites them.
func TestExamples(t *testing.T) {
	dir := filepath.Join("..", "examples")
	for _, ex := range examplePages {
		t.Run(ex.page, func(t *testing.T) {
			got, err := ex.render(dir)
			if err != nil {
				t.Fatalf("rendering examples/%s: %v", ex.page, err)
			}
			path := filepath.Join(dir, ex.page)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("examples/%s is stale: run go test ./report -run Examples -update (first difference on line %d)",
					ex.page, firstDifferentLine(got, want))
			}
		})
	}
}

// firstDifferentLine returns the 1-based line of the first byte where a and b differ.
func firstDifferentLine(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return bytes.Count(a[:i], []byte("\n")) + 1
}
