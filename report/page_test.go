package report

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// testData is a page's data as page.js reads it (embed.go), decoded without the report's own code.
type testData struct {
	Strings []string                     `json:"strings"`
	Shown   map[string]string            `json:"shown"`
	Stacks  [][]int32                    `json:"stacks"`
	Records map[string][]json.RawMessage `json:"records"`
	Views   []testView                   `json:"views"`
	Sources struct {
		Frames map[string][2]string `json:"frames"`
		Note   string               `json:"note"`
		Help   string               `json:"help"`
	} `json:"sources"`
}

type testView struct {
	ID        string       `json:"id"`
	Title     string       `json:"title"`
	Rows      int          `json:"rows"`
	Sort      string       `json:"sort"`
	Saturated []int        `json:"saturated"`
	Columns   []testColumn `json:"columns"`
}

type testColumn struct {
	Key    string            `json:"key"`
	Label  string            `json:"label"`
	Kind   string            `json:"kind"`
	Group  string            `json:"group"`
	Ref    string            `json:"ref"`
	Sum    bool              `json:"sum"`
	Values []json.RawMessage `json:"values"`
	Titles []int32           `json:"titles"`
	Link   *columnLink       `json:"link"`
	Term   string            `json:"term"`
}

// dataOf decodes the page data of page.
func dataOf(t testing.TB, page []byte) *testData {
	t.Helper()
	el := elementByID(t, parseHTML(t, page), dataElementID)
	if enc, _ := attr(el, "data-encoding"); enc != dataEncoding {
		t.Fatalf("page data encoded as %q", enc)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(textOf(el)))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var d testData
	if err := json.NewDecoder(zr).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return &d
}

func (d *testData) view(t testing.TB, id string) *testView {
	t.Helper()
	for i := range d.Views {
		if d.Views[i].ID == id {
			return &d.Views[i]
		}
	}
	t.Fatalf("no view %q", id)
	return nil
}

// keys are the column keys of a view.
func (v *testView) keys() []string {
	var keys []string
	for _, c := range v.Columns {
		keys = append(keys, c.Key)
	}
	return keys
}

func (d *testData) column(t testing.TB, v *testView, key string) *testColumn {
	t.Helper()
	for i := range v.Columns {
		if c := &v.Columns[i]; c.Key == key {
			if c.Ref != "" {
				c.Values = d.Records[c.Ref]
			}
			if len(c.Values) != v.Rows {
				t.Fatalf("view %s column %s: %d values for %d rows", v.ID, key, len(c.Values), v.Rows)
			}
			return c
		}
	}
	t.Fatalf("view %s has no column %q", v.ID, key)
	return nil
}

// text is string i as the page shows it.
func (d *testData) text(i int) string {
	if s, ok := d.Shown[strconv.Itoa(i)]; ok {
		return s
	}
	return d.Strings[i]
}

// cell is the value of a view's cell: a text kind's text ("various" for -1), a stack's frames joined
// by newlines, a number as JSON wrote it ("null" where missing).
func (d *testData) cell(t testing.TB, v *testView, key string, row int) string {
	t.Helper()
	c := d.column(t, v, key)
	raw := string(c.Values[row])
	switch c.Kind {
	case kindText, kindStatus, kindStack:
		i, err := strconv.Atoi(raw)
		if err != nil {
			t.Fatalf("view %s column %s row %d: %s", v.ID, key, row, raw)
		}
		switch {
		case c.Kind == kindStack && i < 0:
			return ""
		case c.Kind == kindStack:
			var frames []string
			for _, f := range d.Stacks[i] {
				frames = append(frames, d.text(int(f)))
			}
			return strings.Join(frames, "\n")
		case i < 0:
			return "various"
		}
		return d.text(i)
	case kindLink:
		return d.text(int(d.linkTexts(t, v, key, row)[0]))
	}
	return raw
}

// linkTexts are the label and the title of a link cell: its key's, or the link's None.
func (d *testData) linkTexts(t testing.TB, v *testView, key string, row int) [2]int32 {
	t.Helper()
	c := d.column(t, v, key)
	k := d.linkKey(t, v, key, row)
	if k < 0 {
		return c.Link.None
	}
	return [2]int32{c.Link.Labels[k], c.Link.Titles[k]}
}

// linkKey is the key of a link cell, -1 for none.
func (d *testData) linkKey(t testing.TB, v *testView, key string, row int) int {
	t.Helper()
	c := d.column(t, v, key)
	k, err := strconv.Atoi(string(c.Values[row]))
	if err != nil || k >= len(c.Link.Labels) {
		t.Fatalf("view %s column %s row %d: link key %s of %d", v.ID, key, row, c.Values[row], len(c.Link.Labels))
	}
	return k
}

// title is the tooltip of a text cell, "" where it has none.
func (d *testData) title(t testing.TB, v *testView, key string, row int) string {
	t.Helper()
	c := d.column(t, v, key)
	if c.Titles == nil || c.Titles[row] < 0 {
		return ""
	}
	return d.text(int(c.Titles[row]))
}
