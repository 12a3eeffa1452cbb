package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
)

var testKey = []byte("test key")

func renderHTML(t testing.TB, c *capture.Capture, o HTMLOptions, key []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := newModel(c, o.RawAddresses, key).writeHTML(&b, o); err != nil {
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

// nsText is a number of nanoseconds as the page data holds it.
func nsText(ns float64) string { return strconv.FormatFloat(math.Round(ns*1000)/1000, 'f', -1, 64) }

func TestHTMLRecordTable(t *testing.T) {
	c, _ := knownCapture(t)
	d := dataOf(t, renderHTML(t, c, HTMLOptions{Top: 5}, testKey))
	v := d.view(t, "threads")
	if want := []string{"lock", "type", "caller", "stack", "comm", "count", "total", "spin", "avg", "max", "pid", "tid", "cgroup"}; !slices.Equal(v.keys(), want) {
		t.Fatalf("record view columns %q, want %q", v.keys(), want)
	}
	records := sortedRecords(hashed(t, c, testKey))
	if v.Rows != len(records) || v.Sort != "total" {
		t.Fatalf("record view of %d rows sorted by %q, want all %d by total", v.Rows, v.Sort, len(records))
	}
	for i, r := range records {
		id := r.Lock.HashedString()
		want := map[string]string{
			"lock": cmp.Or(r.Name, id), "type": r.Type, "comm": r.Comm, "pid": fmt.Sprint(r.PID), "tid": fmt.Sprint(r.TID),
			"count": fmt.Sprint(r.Count), "total": fmt.Sprint(r.TotalNS), "avg": nsText(r.MeanNS()), "max": fmt.Sprint(r.MaxNS),
			"caller": callerText(r.Caller), "stack": strings.Join(r.Stack, "\n"),
		}
		for key, w := range want {
			if got := d.cell(t, v, key, i); got != w {
				t.Errorf("row %d %s: %q, want %q", i, key, got, w)
			}
		}
		if got := d.title(t, v, "lock", i); got != "lock "+id {
			t.Errorf("row %d lock title %q, want the id", i, got)
		}
	}
}

func TestHTMLGroupTables(t *testing.T) {
	c, _ := knownCapture(t)
	d := dataOf(t, renderHTML(t, c, HTMLOptions{Top: 5}, testKey))
	records := hashed(t, c, testKey).Records
	for _, tc := range []struct {
		id  string
		key func(capture.Record) string
	}{{"callers", capture.ByCaller}, {"locks", capture.ByLock}} {
		t.Run(tc.id, func(t *testing.T) {
			v := d.view(t, tc.id)
			groups := capture.GroupBy(records, tc.key)
			if v.Rows != len(groups) {
				t.Fatalf("%d rows, want %d", v.Rows, len(groups))
			}
			for i, g := range groups {
				want := map[string]string{
					"type": g.Type, "records": fmt.Sprint(g.Records), "count": fmt.Sprint(g.Count),
					"total": fmt.Sprint(g.TotalNS), "avg": nsText(g.MeanNS()), "max": fmt.Sprint(g.MaxNS), "stack": strings.Join(g.Stack, "\n"),
				}
				if tc.id == "callers" {
					want["caller"] = callerText(g.Caller)
				} else {
					want["lock"] = cmp.Or(g.Name, g.Lock.HashedString())
				}
				// A column the merged records differ in says so.
				if g.Mixed.Has(capture.FieldComm) {
					want["comm"] = "various"
				}
				for k, w := range want {
					if got := d.cell(t, v, k, i); got != w {
						t.Errorf("group %d (%s) column %s: %q, want %q", i, g.Key, k, got, w)
					}
				}
			}
		})
	}
}

// Locks that differ but share a name, as the mmap_lock of two processes does, show their name where
// a view merges them, with a title saying that several locks have it; a view by lock keeps them
// apart, each showing its own id after the name, as its title does.
func TestHTMLMergedLocks(t *testing.T) {
	c, _ := mergedLocksCapture(t, 1e9, 1)
	d := dataOf(t, renderHTML(t, c, HTMLOptions{}, testKey))
	callers := d.view(t, "callers")
	if got, title := d.cell(t, callers, "lock", 0), d.title(t, callers, "lock", 0); got != "mmap_lock" || title != "several locks named mmap_lock" {
		t.Errorf("by caller, the merged mmap_locks show as %q titled %q", got, title)
	}
	if got := d.cell(t, callers, "comm", 0); got != "various" {
		t.Errorf("by caller, the threads of two processes show as %q", got)
	}
	locks := d.view(t, "locks")
	var ids []string
	for i := range locks.Rows {
		cell, title := d.cell(t, locks, "lock", i), d.title(t, locks, "lock", i)
		if id, ok := strings.CutPrefix(cell, "mmap_lock · "); ok {
			ids = append(ids, id)
			if title != "lock "+id {
				t.Errorf("by lock, %q is titled %q, want its id", cell, title)
			}
		}
	}
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Errorf("by lock, the two mmap_locks show the ids %q, want two ids", ids)
	}
}

// A lock inside a slab object shows its offset and struct field beside its cache's name, "?" and the
// candidates in its title when the field is a guess, in the records' view and the view by lock.
func TestHTMLLockField(t *testing.T) {
	rename := capturetest.Rec("mutex", "&kmalloc-2k", "lock_rename+0x2c", "mv", 10, 11, 0xffff888104c2a408, 5_000)
	rename.ObjectOffset, rename.Field = "0x408", "super_block.s_vfs_rename_mutex"
	rename.FieldCandidates = []string{"super_block.s_vfs_rename_mutex", "kvm_arch.lock"}
	inode := capturetest.Rec("rwsem:W", "&ext4_inode_cache", "ext4_buffered_write_iter+0x3c", "dd", 12, 12, 0xffff8881237e5a10, 9_000)
	inode.ObjectOffset, inode.Field = "0x1a8", "ext4_inode_info.vfs_inode.i_rwsem"
	c := capturetest.Of(t, 1e9, rename, inode)
	d := dataOf(t, renderHTML(t, c, HTMLOptions{}, testKey))
	for _, view := range []string{"threads", "locks"} {
		v := d.view(t, view)
		cells := map[string]string{}
		for i := range v.Rows {
			cells[d.cell(t, v, "lock", i)] = d.title(t, v, "lock", i)
		}
		guess, ok := cells["&kmalloc-2k+0x408 (super_block.s_vfs_rename_mutex?)"]
		if !ok || !strings.HasSuffix(guess, "a guess among super_block.s_vfs_rename_mutex, kvm_arch.lock") {
			t.Errorf("%s: the rename mutex is not shown as a guess with its candidates: %q", view, cells)
		}
		if _, ok := cells["&ext4_inode_cache+0x1a8 (ext4_inode_info.vfs_inode.i_rwsem)"]; !ok {
			t.Errorf("%s: the inode's rwsem is not shown by its field: %q", view, cells)
		}
	}
}

// chartSpec is a chart as page.js draws it.
type chartSpec struct {
	ID         string         `json:"id"`
	Option     map[string]any `json:"option"`
	Formatters [][2]string    `json:"formatters"`
	Tips       [][]tip        `json:"tips"`
}

// chartsOf returns the charts of a page, by id.
func chartsOf(t testing.TB, doc *html.Node) map[string]chartSpec {
	t.Helper()
	var specs []chartSpec
	if err := json.Unmarshal([]byte(textOf(elementByID(t, doc, "klockstat-charts"))), &specs); err != nil {
		t.Fatal(err)
	}
	byID := make(map[string]chartSpec)
	for _, s := range specs {
		byID[s.ID] = s
	}
	return byID
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
	specs := chartsOf(t, doc)
	chartOptions := func(t *testing.T, _ *html.Node, id string) map[string]any {
		if _, ok := specs[id]; !ok {
			t.Fatalf("no chart %s", id)
		}
		return specs[id].Option
	}

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
	shown := func(s string) string { return s }

	t.Run("doughnut", func(t *testing.T) {
		o := chartOptions(t, doc, "klockDoughnut")
		if f := specs["klockDoughnut"].Formatters; !slices.Contains(f, [2]string{"tooltip.formatter", "tip"}) {
			t.Errorf("formatters %v", f)
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
			if stack := path(t, series, i, "stack"); stack != "all" {
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

	t.Run("tooltips", func(t *testing.T) {
		tips := specs["klockDoughnut"].Tips[0]
		if len(tips) != len(types) {
			t.Fatalf("%d doughnut tips, want %d", len(tips), len(types))
		}
		for i, tt := range types {
			want := []string{"total wait", FormatDuration(float64(tt.total)) + " (" + percent(float64(tt.total)/float64(all)) + ")"}
			if got := tips[i]; got.Title != tt.name || !slices.Equal(got.Rows[0], want) || got.Rows[1][1] != fmt.Sprint(tt.count) {
				t.Errorf("type %d tip %+v, want %s with %q and %d waits", i, got, tt.name, want, tt.count)
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
			got, err := ReadInput(bytes.NewReader(page))
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Sort() // the page holds the records in the order it shows them
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
func checkNoInjection(t *testing.T, page []byte, scripts int) *html.Node {
	t.Helper()
	for _, h := range []string{svgComm, scriptBreak, imgCanary, commentOpen} {
		if i := bytes.Index(page, []byte(h)); i >= 0 {
			t.Errorf("%q appears unescaped at byte %d: %q", h, i, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	doc := parseHTML(t, page)
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
		// ECharts, page.js, the charts and the page data.
		page := renderHTML(t, c, o, testKey)
		doc := checkNoInjection(t, page, 4)

		// The strings are data of the tables, and shown as text in the header.
		data := dataOf(t, page)
		for _, want := range []string{svgComm, scriptBreak, imgCanary, commentOpen, funcMarker, funcType} {
			if !slices.Contains(data.Strings, want) {
				t.Errorf("the page data lacks %q", want)
			}
		}
		texts := shownTexts(doc, ownText)
		for _, want := range []string{
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
		d := dataOf(t, page)
		v := d.view(t, "threads")
		ids := make(map[string]string)
		for i := range v.Rows {
			ids[d.cell(t, v, "comm", i)] = strings.TrimPrefix(d.title(t, v, "lock", i), "lock ")
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
	// ECharts and page.js run; the chart options and the page data are not scripts.
	checkSelfContained(t, parseHTML(t, renderHTML(t, c, HTMLOptions{}, testKey)), 2)
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
	for _, v := range dataOf(t, page).Views {
		if v.Rows != 0 {
			t.Errorf("view %s has %d rows", v.ID, v.Rows)
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
	if size, _ := attr(elementByID(t, doc, "locks"), "data-page-size"); size != fmt.Sprint(defaultTop) {
		t.Errorf("Top 0 makes pages of %s rows, want %d", size, defaultTop)
	}
}

// saturatingCapture is a capture whose two records of one caller wait more, together, than a
// uint64 holds: a wrapped sum would show 1969 waits.
func saturatingCapture(t testing.TB) *capture.Capture {
	t.Helper()
	c := capturetest.Of(t, 1e9, capturetest.Rec("mutex", "", "f+0x1", "a", 1, 1, 0x10, 100), capturetest.Rec("mutex", "", "f+0x1", "b", 1, 2, 0x10, 100))
	c.Records[0].Count, c.Records[0].TotalNS = math.MaxUint64, math.MaxUint64-10
	c.Records[1].Count, c.Records[1].TotalNS = 1970, 1970
	return c
}

// Sums that do not fit 64 bits show as their maximum, marked as lower bounds, not wrapped around.
func TestHTMLSaturatedSums(t *testing.T) {
	c := saturatingCapture(t)
	page := renderHTML(t, c, HTMLOptions{}, testKey)
	d := dataOf(t, page)
	v := d.view(t, "callers")
	if !slices.Equal(v.Saturated, []int{0}) {
		t.Errorf("saturated rows %v, want [0]", v.Saturated)
	}
	if got := d.cell(t, v, "count", 0); got != fmt.Sprint(uint64(math.MaxUint64)) {
		t.Errorf("count %s, want the maximum", got)
	}
	if c := d.column(t, v, "count"); !c.Sum {
		t.Error("the count column is not marked as a sum")
	}
	if text := textOf(parseHTML(t, page)); !strings.Contains(text, "the sums exceed what 64 bits hold") {
		t.Error("the header does not flag the saturated total")
	}
}

// Bidirectional-text controls in a thread name or any other string of a capture show as what they
// are, in the header and in the tables, and never reorder the page.
func TestHTMLBidiControls(t *testing.T) {
	c, _ := mergedLocksCapture(t, 1e9, 1)
	c.Records[0].Comm = "exe.\u202etxt"
	c.Meta.Hostname = "host\u2066x\u2069"
	page := renderHTML(t, c, HTMLOptions{}, testKey)
	for _, r := range []rune{'\u202e', '\u2066', '\u2069'} {
		if bytes.ContainsRune(page, r) {
			t.Errorf("the page holds %U as it is", r)
		}
	}
	if text := textOf(parseHTML(t, page)); !strings.Contains(text, "host<U+2066>x<U+2069>") {
		t.Error("the header does not show the host name's controls")
	}
	d := dataOf(t, page)
	v := d.view(t, "threads")
	var comms []string
	for i := range v.Rows {
		comms = append(comms, d.cell(t, v, "comm", i))
	}
	if !slices.Contains(comms, "exe.<U+202E>txt") {
		t.Errorf("threads shown as %q, want exe.<U+202E>txt", comms)
	}
	// The capture read back keeps the name as it was.
	back, err := ReadInput(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(back.Records, func(r capture.Record) bool { return r.Comm == "exe.\u202etxt" }) {
		t.Error("the report's capture lost the thread name")
	}
}

// TestHTMLBlockedBy shows the owners in a view of their own, ranked by the wait charged to them and
// split by their state, with lock ids those of the other views; a hostile owner name is only text,
// and the embedded capture keeps the owners, hashed, for a report read back.
func TestHTMLBlockedBy(t *testing.T) {
	c, _ := knownCapture(t)
	inode := capture.Addr(0xffff8881237e5a10)
	c.Owners = []capture.Owner{
		{Type: "rwsem:W", Lock: inode, Comm: scriptBreak, PID: 3150, TID: 3164, Count: 4, TotalNS: 8_000_000,
			Stack:  []string{"__schedule+0x618", "io_schedule+0x46", "0xffffffff81a2b3c4"},
			States: []capture.OwnerState{{State: capture.OwnerDiskSleep, Count: 3, TotalNS: 6_000_000}, {State: capture.OwnerOnCPU, Count: 1, TotalNS: 2_000_000}}},
		{Type: "rwsem:W", Lock: inode, Comm: scriptBreak, PID: 3150, TID: 3164, Count: 1, TotalNS: 1_000_000, StackReason: capture.OwnerStackRan,
			States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 1, TotalNS: 1_000_000}}},
		{Type: "spinlock", Lock: 0xffff88813bd2f1c0, Name: "runqueues+0x1c0", Reason: capture.OwnerNoField, Count: 7, TotalNS: 11_564},
	}
	page := renderHTML(t, c, HTMLOptions{Top: 5}, testKey)
	d := dataOf(t, page)
	v := d.view(t, "owners")
	if v.Title != "Blocked by" || v.Rows != 3 {
		t.Fatalf("owner view %q with %d rows", v.Title, v.Rows)
	}
	for key, want := range map[string]string{
		"owner": scriptBreak + " 3150/3164", "tid": "3164", "count": "4", "total": "8000000",
		"disk_sleep": "6000000", "on_cpu": "2000000", "runnable": "0",
	} {
		if got := d.cell(t, v, key, 0); got != want {
			t.Errorf("owner row 0, %s: %q, want %q", key, got, want)
		}
	}
	// The owner's stack, its raw address hashed as in the other views; or why it has none.
	if got := d.cell(t, v, "stack", 0); !strings.HasPrefix(got, "__schedule+0x618\nio_schedule+0x46\n") || strings.Contains(got, "81a2b3c4") {
		t.Errorf("owner row 0's stack: %q", got)
	}
	if stack, why := d.cell(t, v, "stack", 1), d.cell(t, v, "stack_reason", 1); stack != "" || why != capture.OwnerStackRan {
		t.Errorf("owner row 1, without a stack: stack %q, why %q", stack, why)
	}
	if got := d.cell(t, v, "owner", 2); got != "unknown: "+capture.OwnerNoField {
		t.Errorf("unknown owner shown as %q", got)
	}
	threads := d.view(t, "threads")
	var waiterLock string
	for row := range threads.Rows {
		if d.cell(t, threads, "tid", row) == "3164" {
			waiterLock = d.cell(t, threads, "lock", row)
		}
	}
	if got := d.cell(t, v, "lock", 0); got != waiterLock || strings.Contains(got, "ffff8881237e5a10") {
		t.Errorf("owner's lock shown as %q, its waiters' as %q: want the same hashed id", got, waiterLock)
	}
	if bytes.Contains(page, []byte(scriptBreak)) {
		t.Error("the hostile owner name is in the page as markup")
	}
	back, err := ReadInput(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Owners) != 3 || back.Owners[0].Comm != scriptBreak || back.Owners[0].Lock == inode ||
		len(back.Owners[0].Stack) != 3 || back.Owners[0].Stack[2] == "0xffffffff81a2b3c4" || back.Owners[1].StackReason != capture.OwnerStackRan {
		t.Errorf("owners read back from the report: %+v", back.Owners)
	}
}

// TestHTMLCgroupView finds one row per cgroup of the records, with the sums of its records, its
// path as captured (hostile text stays data) or its id where the path is unknown, and the records
// read back from the page with their cgroups.
func TestHTMLCgroupView(t *testing.T) {
	c, _ := knownCapture(t)
	page := renderHTML(t, c, HTMLOptions{}, testKey)
	d := dataOf(t, page)
	v := d.view(t, "cgroups")
	want := map[string]uint64{}
	for _, r := range c.Records {
		want[capture.CgroupName(r.CgroupID, r.Cgroup)] += r.TotalNS
	}
	if v.Rows != len(want) {
		t.Fatalf("%d rows by cgroup, want %d", v.Rows, len(want))
	}
	for i := range v.Rows {
		name := d.cell(t, v, "cgroup", i)
		if total := d.cell(t, v, "total", i); total != strconv.FormatUint(want[name], 10) {
			t.Errorf("cgroup %q: total %s, want %d", name, total, want[name])
		}
	}
	if _, ok := want["cgroup id 4713"]; !ok {
		t.Errorf("the cgroup without a path is not shown by its id: %v", want)
	}
	back, err := ReadInput(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range sortedRecords(hashed(t, c, testKey)) {
		if got := back.Records[i]; got.CgroupID != r.CgroupID || got.Cgroup != r.Cgroup {
			t.Errorf("record %d read back with cgroup %d %q, want %d %q", i, got.CgroupID, got.Cgroup, r.CgroupID, r.Cgroup)
		}
	}
}
