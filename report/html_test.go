package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/klockstat/klockstat/capture"
)

var testKey = []byte("test key")

func renderHTML(t testing.TB, c *capture.Capture, o HTMLOptions, key []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := writeHTML(&b, c, o, key); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func parseHTML(t testing.TB, page []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func walk(n *html.Node, visit func(*html.Node)) {
	visit(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, visit)
	}
}

func elements(root *html.Node, tag string) []*html.Node {
	var found []*html.Node
	walk(root, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag {
			found = append(found, n)
		}
	})
	return found
}

func elementByID(t testing.TB, root *html.Node, id string) *html.Node {
	t.Helper()
	var found *html.Node
	walk(root, func(n *html.Node) {
		if v, _ := attr(n, "id"); n.Type == html.ElementNode && v == id && found == nil {
			found = n
		}
	})
	if found == nil {
		t.Fatalf("no element with id %q", id)
	}
	return found
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
	})
	return b.String()
}

// tableCell is a cell of a server-rendered table as a reader sees it.
type tableCell struct {
	Text, Title, Class string
	Frames             []string // the stack column's frames
}

// tableOf returns the column keys and the body rows of the table with the given id.
func tableOf(t testing.TB, doc *html.Node, id string) ([]string, [][]tableCell) {
	t.Helper()
	table := elementByID(t, doc, id)
	var keys []string
	for _, th := range elements(table, "th") {
		key, _ := attr(th, "data-col")
		keys = append(keys, key)
	}
	var rows [][]tableCell
	for _, tr := range elements(elements(table, "tbody")[0], "tr") {
		var row []tableCell
		for _, td := range elements(tr, "td") {
			var c tableCell
			c.Title, _ = attr(td, "title")
			c.Class, _ = attr(td, "class")
			if c.Class == "stack" {
				for _, li := range elements(td, "li") {
					c.Frames = append(c.Frames, textOf(li))
				}
				if c.Frames == nil {
					c.Text = textOf(td)
				}
			} else {
				c.Text = textOf(td)
			}
			row = append(row, c)
		}
		rows = append(rows, row)
	}
	return keys, rows
}

// roundTrip is c as capture.Read returns it from c's JSON: a deep copy, with nil lists made empty.
func roundTrip(t testing.TB, c *capture.Capture) *capture.Capture {
	t.Helper()
	var b bytes.Buffer
	if err := c.Write(&b); err != nil {
		t.Fatal(err)
	}
	r, err := capture.Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// hashed is what the report should show of c: a copy with its addresses hashed under key.
func hashed(t testing.TB, c *capture.Capture, key []byte) *capture.Capture {
	t.Helper()
	h := roundTrip(t, c)
	h.HashAddresses(key)
	return h
}

func durationCell(ns uint64) tableCell {
	return tableCell{Text: FormatDuration(float64(ns)), Title: fmt.Sprintf("%d ns", ns), Class: "num"}
}

func numCell(n uint64) tableCell { return tableCell{Text: strconv.FormatUint(n, 10), Class: "num"} }

func lockCell(name string, lock capture.Addr) tableCell {
	id := fmt.Sprintf("%016x", uint64(lock))
	if name == "" {
		name = id
	}
	return tableCell{Text: name, Title: "lock " + id, Class: "mono"}
}

func callerCell(caller string) tableCell {
	if caller == "" {
		caller = "[unknown]"
	}
	return tableCell{Text: caller, Class: "mono"}
}

func stackCell(stack []string) tableCell {
	if len(stack) == 0 {
		return tableCell{Text: "no stack", Class: "stack"}
	}
	return tableCell{Class: "stack", Frames: stack}
}

func TestHTMLRecordTable(t *testing.T) {
	c, _ := knownCapture(t)
	const top = 5
	doc := parseHTML(t, renderHTML(t, c, HTMLOptions{Top: top}, testKey))
	keys, rows := tableOf(t, doc, "table-threads")
	if want := []string{"lock", "type", "comm", "pid", "tid", "count", "total", "avg", "max", "caller", "stack"}; !slices.Equal(keys, want) {
		t.Fatalf("record table columns %q, want %q", keys, want)
	}

	records := hashed(t, c, testKey).Records
	slices.SortFunc(records, func(a, b capture.Record) int { return int(b.TotalNS) - int(a.TotalNS) })
	var want [][]tableCell
	for _, r := range records[:top] {
		want = append(want, []tableCell{
			lockCell(r.Name, r.Lock), {Text: r.Type}, {Text: r.Comm}, numCell(uint64(r.PID)), numCell(uint64(r.TID)),
			numCell(r.Count), durationCell(r.TotalNS),
			{Text: FormatDuration(float64(r.TotalNS) / float64(r.Count)), Title: fmt.Sprintf("%.1f ns", float64(r.TotalNS)/float64(r.Count)), Class: "num"},
			durationCell(r.MaxNS), callerCell(r.Caller), stackCell(r.Stack),
		})
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("record table:\n got %+v\nwant %+v", rows, want)
	}
	if got, want := textOf(elementByID(t, doc, "view-threads")), fmt.Sprintf("top %d of %d by total wait", top, len(c.Records)); !strings.Contains(got, want) {
		t.Errorf("record view does not say %q", want)
	}
}

func TestHTMLGroupTables(t *testing.T) {
	c, _ := knownCapture(t)
	const top = 5
	doc := parseHTML(t, renderHTML(t, c, HTMLOptions{Top: top}, testKey))
	records := hashed(t, c, testKey).Records
	for _, tc := range []struct {
		id  string
		key func(capture.Record) string
	}{{"table-callers", capture.ByCaller}, {"table-locks", capture.ByLock}} {
		t.Run(tc.id, func(t *testing.T) {
			keys, rows := tableOf(t, doc, tc.id)
			groups := capture.GroupBy(records, tc.key)
			if len(rows) != min(top, len(groups)) {
				t.Fatalf("%d rows, want %d", len(rows), min(top, len(groups)))
			}
			for i, g := range groups[:len(rows)] {
				cells := make(map[string]tableCell)
				for j, k := range keys {
					cells[k] = rows[i][j]
				}
				want := map[string]tableCell{
					"type": {Text: g.Type}, "records": numCell(uint64(g.Records)), "count": numCell(g.Count),
					"total": durationCell(g.TotalNS), "max": durationCell(g.MaxNS), "stack": stackCell(g.Stack),
				}
				if tc.id == "table-callers" {
					want["caller"] = callerCell(g.Caller)
				} else {
					want["lock"] = lockCell(g.Name, g.Lock)
				}
				for k, w := range want {
					if !reflect.DeepEqual(cells[k], w) {
						t.Errorf("group %d (%s) column %s: got %+v, want %+v", i, g.Key, k, cells[k], w)
					}
				}
				// A column the merged records differ in says so.
				distinct := map[string]bool{}
				for _, r := range records {
					if tc.key(r) == g.Key {
						distinct[r.Comm] = true
					}
				}
				if len(distinct) > 1 && cells["comm"].Text != "various" {
					t.Errorf("group %d (%s) merges %d threads but shows thread %q", i, g.Key, len(distinct), cells["comm"].Text)
				}
			}
		})
	}
}

// chartJS returns the script that draws the chart into the element with the given id: the next element.
func chartJS(t testing.TB, doc *html.Node, id string) string {
	t.Helper()
	script := elementByID(t, doc, id).NextSibling
	for script != nil && script.Type != html.ElementNode {
		script = script.NextSibling
	}
	if script == nil || script.Data != "script" {
		t.Fatalf("chart %s: no script after its element", id)
	}
	return textOf(script)
}

// chartOptions returns the ECharts options of the chart drawn into the element with the given id,
// with the formatter functions (klock.*) replaced by their names.
func chartOptions(t testing.TB, doc *html.Node, id string) map[string]any {
	t.Helper()
	js := chartJS(t, doc, id)
	prefix := fmt.Sprintf("echarts.init(document.getElementById(%q)).setOption(", id)
	js, ok := strings.CutPrefix(js, prefix)
	if js, ok = strings.CutSuffix(js, ");"); !ok {
		t.Fatalf("chart %s: script is not %s...);: %.200s", id, prefix, js)
	}
	js = regexp.MustCompile(`:(klock\.[A-Za-z.]+)`).ReplaceAllString(js, `:"$1"`)
	var o map[string]any
	if err := json.Unmarshal([]byte(js), &o); err != nil {
		t.Fatalf("chart %s options: %v\n%.300s", id, err, js)
	}
	return o
}

// path walks decoded JSON: strings index objects, ints arrays.
func path(t testing.TB, v any, keys ...any) any {
	t.Helper()
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%v: not an object at %q", keys, k)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("%v: no element %d", keys, k)
			}
			v = a[k]
		}
	}
	return v
}

func TestHTMLCharts(t *testing.T) {
	c, waits := knownCapture(t)
	const top = 5
	doc := parseHTML(t, renderHTML(t, c, HTMLOptions{Top: top}, testKey))

	// Types by total wait, from the records.
	type typeTotal struct {
		name         string
		count, total uint64
	}
	var types []typeTotal
	var all uint64
	for typ, ws := range waits {
		tt := typeTotal{name: typ, count: uint64(len(ws))}
		for _, w := range ws {
			tt.total += w
		}
		all += tt.total
		types = append(types, tt)
	}
	slices.SortFunc(types, func(a, b typeTotal) int { return int(b.total) - int(a.total) })
	shown := func(s string) string { return strings.ReplaceAll(s, "\u200b", "") } // see chartText

	t.Run("doughnut", func(t *testing.T) {
		o := chartOptions(t, doc, "klockDoughnut")
		if f := path(t, o, "tooltip", "formatter"); f != "klock.tooltip.doughnut" {
			t.Errorf("tooltip formatter %v", f)
		}
		data := path(t, o, "series", 0, "data").([]any)
		if len(data) != len(types) {
			t.Fatalf("%d slices, want %d", len(data), len(types))
		}
		for i, tt := range types {
			if name, value := path(t, data, i, "name"), path(t, data, i, "value"); shown(name.(string)) != tt.name || value != float64(tt.total) {
				t.Errorf("slice %d: %v = %v, want %s = %d", i, name, value, tt.name, tt.total)
			}
		}
	})

	t.Run("histogram", func(t *testing.T) {
		o := chartOptions(t, doc, "klockHistogram")
		lowest, highest := 64, 0
		for _, ws := range waits {
			for _, w := range ws {
				lowest, highest = min(lowest, bits.Len64(w)), max(highest, bits.Len64(w))
			}
		}
		labels := path(t, o, "xAxis", 0, "data").([]any)
		if len(labels) != highest-lowest+1 {
			t.Fatalf("%d power-of-two ranges, want %d", len(labels), highest-lowest+1)
		}
		if got, want := labels[0], axisDuration(1<<(lowest-1)); got != want {
			t.Errorf("first range %v, want %s", got, want)
		}
		series := path(t, o, "series").([]any)
		if len(series) != len(types) {
			t.Fatalf("%d series, want one per type (%d)", len(series), len(types))
		}
		for i, tt := range types {
			if name := path(t, series, i, "name").(string); shown(name) != tt.name {
				t.Errorf("series %d is %q, want %q", i, name, tt.name)
			}
			if stack := path(t, series, i, "stack"); stack != "waits" {
				t.Errorf("series %d stack %v, want stacked bars", i, stack)
			}
			want := make([]float64, len(labels))
			for _, w := range waits[tt.name] {
				want[bits.Len64(w)-lowest]++
			}
			for j := range labels {
				if got := path(t, series, i, "data", j, "value"); got != want[j] {
					t.Errorf("%s range %v: %v waits, want %v", tt.name, labels[j], got, want[j])
				}
			}
		}
	})

	t.Run("box", func(t *testing.T) {
		o := chartOptions(t, doc, "klockBox")
		if typ := path(t, o, "yAxis", 0, "type"); typ != "log" {
			t.Errorf("wait axis type %v, want log", typ)
		}
		hists := make(map[string]capture.Histogram)
		for _, h := range c.Histograms {
			hists[h.Type] = h
		}
		for i, tt := range types {
			s := hists[tt.name].Stats()
			sorted := slices.Sorted(slices.Values(waits[tt.name]))
			if s.MinNS != sorted[0] || s.MaxNS != sorted[len(sorted)-1] {
				t.Fatalf("%s: histogram min/max %d/%d, waits %d/%d", tt.name, s.MinNS, s.MaxNS, sorted[0], sorted[len(sorted)-1])
			}
			want := []any{float64(s.MinNS), float64(s.P25), float64(s.P50), float64(s.P75), float64(s.MaxNS)}
			if got := path(t, o, "series", 0, "data", i, "value"); !reflect.DeepEqual(got, want) {
				t.Errorf("%s box %v, want %v", tt.name, got, want)
			}
		}
	})

	t.Run("callers", func(t *testing.T) {
		o := chartOptions(t, doc, "klockCallers")
		groups := capture.GroupBy(hashed(t, c, testKey).Records, capture.ByCaller)[:top]
		labels := path(t, o, "yAxis", 0, "data").([]any)
		if len(labels) != top {
			t.Fatalf("%d callers, want %d", len(labels), top)
		}
		for i, g := range groups {
			if got, value := shown(labels[i].(string)), path(t, o, "series", 0, "data", i, "value"); got != callerText(g.Caller) || value != float64(g.TotalNS) {
				t.Errorf("bar %d: %q = %v, want %q = %d", i, got, value, callerText(g.Caller), g.TotalNS)
			}
		}
	})

	t.Run("tooltip data", func(t *testing.T) {
		var data chartData
		if err := json.Unmarshal([]byte(textOf(elementByID(t, doc, "klockstat-charts"))), &data); err != nil {
			t.Fatal(err)
		}
		if len(data.Types) != len(types) {
			t.Fatalf("%d types, want %d", len(data.Types), len(types))
		}
		for i, tt := range types {
			got := data.Types[i]
			if got.Name != tt.name || got.Count != tt.count || got.TotalNS != tt.total || got.Share != float64(tt.total)/float64(all) {
				t.Errorf("type %d: %+v, want %s with %d waits, %d ns, share %v", i, got, tt.name, tt.count, tt.total, float64(tt.total)/float64(all))
			}
		}
	})
}

func TestHTMLEmbeddedCapture(t *testing.T) {
	c, _ := knownCapture(t)
	fresh, _ := knownCapture(t)
	for _, tc := range []struct {
		name string
		o    HTMLOptions
		want *capture.Capture
	}{
		{"hashed", HTMLOptions{}, hashed(t, c, testKey)},
		{"raw addresses", HTMLOptions{RawAddresses: true}, roundTrip(t, c)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := renderHTML(t, c, tc.o, testKey)
			js := textOf(elementByID(t, parseHTML(t, page), captureElementID))
			if strings.ContainsAny(js, "\n\t") {
				t.Error("embedded capture JSON is not compact")
			}
			got, err := ReadInput(bytes.NewReader(page))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("embedded capture:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if !reflect.DeepEqual(c, fresh) {
		t.Error("WriteHTML modified its capture")
	}
}

// reportChartIDs are the report's charts, by the id of their element.
var reportChartIDs = []string{"klockDoughnut", "klockBox", "klockHistogram", "klockCallers"}

// checkNoInjection checks that no hostile string reached page unescaped and that nothing of them became
// markup or script: page has exactly scripts script elements, those it means to have. It returns the
// parsed page.
func checkNoInjection(t *testing.T, page []byte, chartIDs []string, scripts int) *html.Node {
	t.Helper()
	for _, h := range []string{svgComm, scriptBreak, imgCanary, commentOpen} {
		if i := bytes.Index(page, []byte(h)); i >= 0 {
			t.Errorf("%q appears unescaped at byte %d: %q", h, i, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	doc := parseHTML(t, page)
	// go-echarts' function marker only means something in chart options, and must not reach them.
	for _, id := range chartIDs {
		if js := chartJS(t, doc, id); strings.Contains(js, "__f__") {
			t.Errorf("chart %s options hold a function marker: %s", id, js)
		}
	}
	// Nothing but the page's own elements: no handler attributes, no injected elements.
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") {
				t.Errorf("<%s> has event handler attribute %s=%q", n.Data, a.Key, a.Val)
			}
		}
		if n.Data == "svg" || n.Data == "img" || n.Data == "iframe" {
			t.Errorf("injected <%s> element", n.Data)
		}
	})
	if n := len(elements(doc, "script")); n != scripts {
		t.Errorf("%d script elements, want %d", n, scripts)
	}
	for _, s := range elements(doc, "script") {
		if js := strings.ToLower(textOf(s)); strings.Contains(js, "</") || strings.Contains(js, "<!--") {
			t.Errorf("inline script holds </ or <!--")
		}
	}
	return doc
}

// shownTexts returns the texts of the elements that show text, as text takes it from an element.
func shownTexts(doc *html.Node, text func(*html.Node) string) map[string]bool {
	texts := map[string]bool{}
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data != "script" && n.Data != "style" {
			texts[strings.TrimSpace(text(n))] = true
		}
	})
	return texts
}

// ownText is the text of n's own text nodes, without its children's.
func ownText(n *html.Node) string {
	var own strings.Builder
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if ch.Type == html.TextNode {
			own.WriteString(ch.Data)
		}
	}
	return own.String()
}

func TestHTMLHostileStrings(t *testing.T) {
	c, _ := knownCapture(t)
	for _, o := range []HTMLOptions{{Top: 100}, {Top: 100, RawAddresses: true}} {
		// ECharts, report.js, the charts, and two JSON data blocks.
		doc := checkNoInjection(t, renderHTML(t, c, o, testKey), reportChartIDs, 2+len(reportChartIDs)+2)

		// The strings are shown as text.
		texts := shownTexts(doc, ownText)
		for _, want := range []string{
			svgComm, scriptBreak, imgCanary, commentOpen, funcMarker, funcType, // table cells
			"kernel.bpf_stats_enabled was 0 " + svgComm,   // warning
			scriptBreak + ": 4",                           // lost events reason
			"sh -c '" + scriptBreak + "' (exit status 2)", // workload
		} {
			if !texts[want] {
				t.Errorf("no element shows %q as its text", want)
			}
		}
	}
}

func TestHTMLAddresses(t *testing.T) {
	c, _ := knownCapture(t)
	var addrs []uint64
	for _, r := range c.Records {
		addrs = append(addrs, uint64(r.Lock))
		for _, f := range append([]string{r.Caller}, r.Stack...) {
			if a, err := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 64); strings.HasPrefix(f, "0x") && err == nil {
				addrs = append(addrs, a)
			}
		}
	}
	page := renderHTML(t, c, HTMLOptions{Top: 100}, testKey)
	lower := bytes.ToLower(page)
	for _, a := range addrs {
		for _, form := range []string{strconv.FormatUint(a, 16), strconv.FormatUint(a, 10), strconv.FormatUint(a>>32, 16) + strconv.FormatUint(a&0xffffffff, 16)} {
			if bytes.Contains(lower, []byte(form)) {
				t.Errorf("hashed report shows address %#x as %s", a, form)
			}
		}
	}

	locks := func(page []byte) map[string]string { // thread -> lock id
		keys, rows := tableOf(t, parseHTML(t, page), "table-threads")
		ids := make(map[string]string)
		for _, row := range rows {
			var comm, id string
			for i, k := range keys {
				switch k {
				case "comm":
					comm = row[i].Text
				case "lock":
					id = strings.TrimPrefix(row[i].Title, "lock ")
				}
			}
			ids[comm] = id
		}
		return ids
	}
	ids := locks(page)
	idPattern := regexp.MustCompile(`^[0-9a-f]{16}$`)
	for comm, id := range ids {
		if !idPattern.MatchString(id) {
			t.Errorf("thread %s: lock id %q is not 16 hex digits", comm, id)
		}
	}
	// Same lock, same id: the inode threads share one lock, the mmap threads another.
	if ids["ct-inode-0"] != ids["ct-inode-1"] || ids["ct-mmap-0"] != ids[svgComm] || ids["ct-inode-0"] == ids["ct-mmap-0"] {
		t.Errorf("lock ids do not follow the locks: %v", ids)
	}
	// Another report, another key: other ids.
	other := locks(renderHTML(t, c, HTMLOptions{Top: 100}, []byte("other key")))
	for comm, id := range ids {
		if other[comm] == id {
			t.Errorf("thread %s: lock id %s is the same under another key", comm, id)
		}
	}
	// WriteHTML draws its own key each time.
	var a, b bytes.Buffer
	if err := WriteHTML(&a, c, HTMLOptions{Top: 100}); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&b, c, HTMLOptions{Top: 100}); err != nil {
		t.Fatal(err)
	}
	if x, y := locks(a.Bytes()), locks(b.Bytes()); x["ct-inode-0"] == y["ct-inode-0"] {
		t.Errorf("two reports share lock id %s", x["ct-inode-0"])
	}

	raw := locks(renderHTML(t, c, HTMLOptions{Top: 100, RawAddresses: true}, testKey))
	if got, want := raw["ct-inode-0"], "0xffff8881237e5a10"; got != want {
		t.Errorf("with RawAddresses the inode lock shows as %q, want %q", got, want)
	}
}

// checkSelfContained checks that the page loads nothing, from the network or at all, and that its
// Content-Security-Policy lets exactly its scripts inline scripts run.
func checkSelfContained(t *testing.T, doc *html.Node, scripts int) {
	t.Helper()
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		switch n.Data {
		case "link", "iframe", "object", "embed", "base":
			t.Errorf("page has a <%s> element", n.Data)
		}
		for _, a := range n.Attr {
			switch a.Key {
			case "src", "href", "srcset", "action", "formaction", "poster", "data", "xlink:href":
				if v := strings.ToLower(a.Val); strings.Contains(v, "http://") || strings.Contains(v, "https://") || strings.HasPrefix(v, "//") {
					t.Errorf("<%s %s=%q> refers to the network", n.Data, a.Key, a.Val)
				}
				if n.Data == "script" {
					t.Errorf("<script %s=%q>: scripts must be inline", a.Key, a.Val)
				}
			}
		}
	})
	for _, style := range elements(doc, "style") {
		if css := textOf(style); strings.Contains(css, "@import") || strings.Contains(css, "url(") {
			t.Error("inline CSS loads something")
		}
	}
	var csp string
	for _, m := range elements(doc, "meta") {
		if v, _ := attr(m, "http-equiv"); v == "Content-Security-Policy" {
			csp, _ = attr(m, "content")
		}
	}
	if !strings.HasPrefix(csp, "default-src 'none';") || strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "script-src 'unsafe-inline'") {
		t.Errorf("Content-Security-Policy %q does not lock the page down", csp)
	}
	if n := strings.Count(csp, "'sha256-"); n != scripts {
		t.Errorf("CSP allows %d scripts, want %d", n, scripts)
	}
}

func TestHTMLSelfContained(t *testing.T) {
	c, _ := knownCapture(t)
	// ECharts, report.js and the charts run; the JSON data blocks are not scripts.
	checkSelfContained(t, parseHTML(t, renderHTML(t, c, HTMLOptions{}, testKey)), 2+len(reportChartIDs))
}

func TestHTMLLostBanner(t *testing.T) {
	c, _ := knownCapture(t)
	doc := parseHTML(t, renderHTML(t, c, HTMLOptions{}, testKey))
	body := elements(doc, "body")[0]
	first := body.FirstChild
	for first != nil && first.Type != html.ElementNode {
		first = first.NextSibling
	}
	if id, _ := attr(first, "id"); id != "lost-banner" {
		t.Fatalf("the page does not start with the lost-events banner but with <%s id=%q>", first.Data, id)
	}
	text := textOf(first)
	for _, want := range []string{fmt.Sprint(c.Meta.LostTotal()), "aggregation map full: 17", scriptBreak + ": 4"} {
		if !strings.Contains(text, want) {
			t.Errorf("lost-events banner %q lacks %q", text, want)
		}
	}

	c.Meta.Lost = nil
	page := renderHTML(t, c, HTMLOptions{}, testKey)
	if bytes.Contains(page, []byte(`id="lost-banner"`)) {
		t.Error("lost-events banner without lost events")
	}
}

func TestHTMLEmptyCapture(t *testing.T) {
	c := &capture.Capture{Version: capture.FormatVersion, Meta: capture.Meta{Hostname: "idle", DurationNS: 1e9}}
	page := renderHTML(t, c, HTMLOptions{}, testKey)
	doc := parseHTML(t, page)
	if !strings.Contains(textOf(doc), "No lock contention was recorded.") {
		t.Error("an empty capture does not say that nothing was recorded")
	}
	if bytes.Contains(page, []byte("klockDoughnut")) {
		t.Error("an empty capture has charts")
	}
	for _, id := range []string{"table-threads", "table-callers", "table-locks"} {
		if _, rows := tableOf(t, doc, id); len(rows) != 0 {
			t.Errorf("%s has %d rows", id, len(rows))
		}
	}
	got, err := ReadInput(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if got.Meta.Hostname != "idle" || len(got.Records) != 0 {
		t.Errorf("read back %+v", got)
	}
}

func TestHTMLDefaultTop(t *testing.T) {
	c := syntheticCapture(50)
	doc := parseHTML(t, renderHTML(t, c, HTMLOptions{}, testKey))
	if _, rows := tableOf(t, doc, "table-threads"); len(rows) != defaultTop {
		t.Errorf("Top 0 shows %d rows, want %d", len(rows), defaultTop)
	}
}

func TestCaptureJSON(t *testing.T) {
	known, _ := knownCapture(t)
	for name, c := range map[string]*capture.Capture{
		"known":     known,
		"synthetic": syntheticCapture(5000),
		"empty":     {Version: capture.FormatVersion},
		"one":       {Version: capture.FormatVersion, Records: known.Records[:1], Histograms: known.Histograms},
	} {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := captureJSON(c)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("captureJSON differs from json.Marshal:\n got %.300s\nwant %.300s", got, want)
			}
		})
	}
}

func TestTopRecords(t *testing.T) {
	c := syntheticCapture(3000)
	// Ties on the total wait, across the cut, must be broken as capture.Sort breaks them.
	first := c.Records[0]
	for i := range 40 {
		r := &c.Records[i*7]
		r.Count, r.TotalNS, r.MinNS, r.MaxNS = first.Count, first.TotalNS, first.MinNS, first.MaxNS
	}
	sorted := roundTrip(t, c)
	sorted.Sort()
	for _, n := range []int{1, 5, 20, 39, 100, 3000, 5000} {
		got := topRecords(c.Records, n)
		if want := sorted.Records[:min(n, len(sorted.Records))]; !reflect.DeepEqual(got, want) {
			t.Errorf("top %d records differ from the first %d of capture.Sort", n, n)
		}
	}
}
