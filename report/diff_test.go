package report

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
)

func diffSummary(t *testing.T, d *capture.Diff, top int) string {
	t.Helper()
	return written(t, func(w io.Writer) error { return WriteDiffSummary(w, d, top) })
}

func TestWriteDiffSummary(t *testing.T) {
	b := capturetest.Of(t, 2e9,
		capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "x", 1, 1, 1, 2_000_000),
		capturetest.Rec("mutex", "", "\x1b[2Jevil+0x1", "\x1b[31m", 1, 1, 1, 9_000_000),
		capturetest.Rec("spinlock", "", "small+0x1", "x", 1, 1, 1, 2_000),
		capturetest.Rec("spinlock", "", "gone+0x1", "x", 1, 1, 1, 1_000_000))
	a := capturetest.Of(t, 4e9,
		capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe4", "x", 1, 1, 1, 40_000_000),
		capturetest.Rec("mutex", "", "\x1b[2Jevil+0x1", "\x1b[31m", 1, 1, 1, 2_000_000),
		capturetest.Rec("spinlock", "", "small+0x1", "x", 1, 1, 1, 4_000),
		capturetest.Rec("rwsem:R", "", "new+0x1", "x", 1, 1, 1, 6_000_000))
	a.Meta.Probe = "tracepoint"
	a.Meta.CommandLine = []string{"klockstat", "--", "evil\x1b]0;x\x07"}
	// The owners: one thread name under two thread ids merges, and matches its stack at other
	// offsets; the terminal's hostile thread name holds the mutex on its CPU.
	fault := func(off string) []string {
		return []string{"__schedule+0x618", "io_schedule+0x46", "filemap_fault+" + off, "__do_fault+0x3a"}
	}
	b.Owners = []capture.Owner{
		{Type: "rwsem:W", Name: "mmap_lock", Comm: "ct-hog", PID: 5, TID: 5, Stack: fault("0x10"), Count: 2, TotalNS: 2_000_000,
			States: []capture.OwnerState{{State: capture.OwnerDiskSleep, Count: 1, TotalNS: 1_600_000}, {State: capture.OwnerOnCPU, Count: 1, TotalNS: 400_000}}},
		{Type: "rwsem:W", Name: "mmap_lock", Comm: "ct-hog", PID: 5, TID: 6, Stack: fault("0x10"), Count: 1, TotalNS: 2_000_000,
			States: []capture.OwnerState{{State: capture.OwnerDiskSleep, Count: 1, TotalNS: 2_000_000}}},
		{Type: "mutex", Comm: "\x1b[31m", PID: 7, TID: 7, StackReason: capture.OwnerStackRan, Count: 1, TotalNS: 9_000_000,
			States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 1, TotalNS: 9_000_000}}},
		{Type: "spinlock", Reason: capture.OwnerNoField, Count: 1, TotalNS: 1_000_000},
	}
	a.Owners = []capture.Owner{
		{Type: "rwsem:W", Name: "mmap_lock", Comm: "ct-hog", PID: 50, TID: 50, Stack: fault("0x14"), Count: 4, TotalNS: 40_000_000,
			States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 3, TotalNS: 30_000_000}, {State: capture.OwnerDiskSleep, Count: 1, TotalNS: 10_000_000}}},
		{Type: "mutex", Comm: "\x1b[31m", PID: 70, TID: 70, StackReason: capture.OwnerStackRan, Count: 1, TotalNS: 2_000_000,
			States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 1, TotalNS: 2_000_000}}},
		{Type: "rwsem:R", Reason: capture.OwnerReaders, Count: 1, TotalNS: 6_000_000},
	}
	d := capture.Compare(b, a, capture.DiffOptions{})
	out := diffSummary(t, d, 3)
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("summary holds control characters:\n%q", out)
	}
	lines := strings.Split(out, "\n")
	// Per second: 1 ms -> 10 ms, 4.5 ms -> 0.5 ms, 0.5 ms -> gone, new 1.5 ms, 1 us -> 1 us.
	wantOrder := []string{"vm_mmap_pgoff", "?[2Jevil", "new", "gone"}
	var order []string
	header := -1
	for i, l := range lines {
		if strings.Contains(l, "before/s") && strings.HasSuffix(l, "caller") {
			header = i
		}
		if header >= 0 && i > header+1 && l != "" && !strings.HasPrefix(l, "...") {
			fields := strings.Fields(l)
			order = append(order, fields[len(fields)-1])
			if len(order) == 3 {
				break
			}
		}
	}
	if header < 0 {
		t.Fatalf("no table header in\n%s", out)
	}
	if !slices.Equal(order, wantOrder[:3]) {
		t.Errorf("rows %q, want %q, by absolute change\n%s", order, wantOrder[:3], out)
	}
	for _, want := range []string{
		"before  bench1 · 6.1.0-18-amd64 · 2.00 s · klockstat -q --json a.json\n",
		"after   bench1 · 6.1.0-18-amd64 · 4.00 s · klockstat -- 'evil?]0;x?'\n",
		"total wait per second of capture: 6.00 ms -> 12.00 ms (+100.0%)\n",
		"warning: the probe backends differ (before rawtp, after tracepoint)",
		"   +9.00 ms   +900.0%   ", // vm_mmap_pgoff: 1 ms/s -> 10 ms/s
		"   new   ",
		"... 2 more rows not shown\n",
		"\n3 matched, 1 new, 1 gone row, matched by lock type, caller function, lock name\n",
		// The owners, per second: ct-hog 2 ms -> 10 ms, asleep on I/O for 3.6 of its 4 ms before,
		// for 10 of its 40 ms after; the mutex's owner 4.5 ms -> 0.5 ms, then 1.5 ms new to readers.
		"\nblocked by: the lock owners waits were charged to per second of capture\n",
		" 2.00 ms    10.00 ms   +8.00 ms   +400.0%   disk_sleep 90->25%, on_cpu 10->75%            -   rwsem:W   mmap_lock                     ct-hog   io_schedule+0x46 < filemap_fault+0x14 < __do_fault+0x3a\n",
		" 4.50 ms   500.00 us   -4.00 ms    -88.9%                     on_cpu 100->100%            -     mutex           -                      ?[31m   none: " + capture.OwnerStackRan + "\n",
		"    0 ns     1.50 ms   +1.50 ms       new                                    -            -   rwsem:R           -   unknown: " + capture.OwnerReaders + "   -\n",
		"... 1 more owner not shown\n",
		"2 matched, 1 new, 1 gone owner, matched by lock type, lock name, owner thread name, what it did over the wait and owner stack (functions), or why the owner is unknown\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// The columns line up: every row ends a cell where the header does.
	headerEnds := cellEnds(t, lines[header], []string{"before/s", "after/s", "delta", "change", "avg before", "avg after", "type", "lock"})
	for _, l := range lines[header+2 : header+5] {
		for _, end := range headerEnds {
			if l[end-1] == ' ' || l[end] != ' ' {
				t.Errorf("row %q has no cell ending at %d, where the header's does", l, end)
			}
		}
	}

	all := diffSummary(t, d, 0)
	if strings.Contains(all, "not shown") || !strings.Contains(all, "small") {
		t.Errorf("top 0 does not show all rows:\n%s", all)
	}
	abs := diffSummary(t, capture.Compare(b, a, capture.DiffOptions{Absolute: true, ByThread: true}), 0)
	if !strings.Contains(abs, "total wait: 12.00 ms -> 48.00 ms (+300.0%)") || !strings.Contains(abs, "   thread   caller") || strings.Contains(abs, "/s") {
		t.Errorf("absolute, by thread:\n%s", abs)
	}
	if empty := diffSummary(t, capture.Compare(capturetest.Of(t, 1e9), capturetest.Of(t, 1e9), capture.DiffOptions{}), 5); !strings.Contains(empty, "no lock contention recorded in either capture") || strings.Contains(empty, "owners") {
		t.Errorf("empty diff, without owners in either capture:\n%s", empty)
	}
	// A capture without owners (without --owners) against one with: one line, no owner new or gone.
	withoutOwners := *a
	withoutOwners.Owners = nil
	one := diffSummary(t, capture.Compare(b, &withoutOwners, capture.DiffOptions{}), 0)
	if !strings.Contains(one, "\nLock owners not compared: the after capture has none (taken without --owners).\n") || strings.Contains(one, "blocked by") || strings.Contains(one, "ct-hog") {
		t.Errorf("diff against a capture without owners:\n%s", one)
	}
}

func renderDiff(t testing.TB, d *capture.Diff, o HTMLOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := writeDiffHTML(&b, d, o, testKey); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var diffChartIDs = []string{"klockDiffDoughnutBefore", "klockDiffDoughnutAfter", "klockDiffHistogram", "klockDiffBox", "klockDiffChanges"}

func TestDiffHTMLHostileStrings(t *testing.T) {
	for _, o := range []HTMLOptions{{Top: 100}, {Top: 100, RawAddresses: true}} {
		for _, byThread := range []bool{false, true} {
			// ECharts, page.js, the charts and the page data.
			page := renderDiff(t, hostileDiff(t, capture.DiffOptions{ByThread: byThread}), o)
			texts := shownTexts(checkNoInjection(t, page, 4), textOf)
			for _, w := range []string{
				"klockstat -- sh -c '" + scriptBreak + "'", // command line
				"6.12 " + svgComm + " x86_64",              // kernel
			} {
				if !texts[w] {
					t.Errorf("byThread %v: no element shows %q as its text", byThread, w)
				}
			}
			data := dataOf(t, page)
			want := []string{svgComm, scriptBreak, funcMarker, funcType, imgCanary} // caller, type, lock name
			if byThread {
				want = append(want, commentOpen) // thread
			}
			for _, w := range want {
				if !slices.Contains(data.Strings, w) {
					t.Errorf("byThread %v: the page data lacks %q", byThread, w)
				}
			}
		}
	}
}

func TestDiffHTMLSelfContained(t *testing.T) {
	// ECharts and page.js run.
	checkSelfContained(t, parseHTML(t, renderDiff(t, hostileDiff(t, capture.DiffOptions{}), HTMLOptions{})), 2)
}

func TestDiffHTMLAddresses(t *testing.T) {
	d := hostileDiff(t, capture.DiffOptions{})
	shows := func(page []byte, addr string) bool {
		return bytes.Contains(page, []byte(addr)) || slices.ContainsFunc(dataOf(t, page).Strings, func(s string) bool { return strings.Contains(s, addr) })
	}
	for _, addr := range []string{"ffffffffc0a81234", "ffffffffc0a85678"} {
		if shows(renderDiff(t, d, HTMLOptions{}), addr) {
			t.Errorf("hashed page shows address %s", addr)
		}
		if !shows(renderDiff(t, d, HTMLOptions{RawAddresses: true}), addr) {
			t.Errorf("page with raw addresses lacks %s", addr)
		}
	}
	// The diff itself keeps the addresses: hashing works on copies.
	if !slices.ContainsFunc(d.Rows, func(r capture.DiffRow) bool { return r.Caller == "0xffffffffc0a81234" }) {
		t.Error("rendering changed the diff's rows")
	}
	// The caller's key hashes them, as it does in the report and the exports, and the header says
	// that the page shows ids.
	var b bytes.Buffer
	if err := WriteDiffHTML(&b, d, HTMLOptions{AddressKey: testKey}); err != nil {
		t.Fatal(err)
	}
	if id := capture.NewAddressHasher(testKey).Frame("0xffffffffc0a81234"); !shows(b.Bytes(), id) {
		t.Errorf("the page hashed with the caller's key lacks the id %s", id)
	}
	texts := shownTexts(parseHTML(t, b.Bytes()), textOf)
	if texts["real kernel addresses"] || !slices.ContainsFunc(slices.Collect(maps.Keys(texts)), func(s string) bool { return strings.HasPrefix(s, "hashed ids") }) {
		t.Error("the header of a page of hashed ids does not say so")
	}
}

// TestDiffHTMLTables checks the server-rendered tables against the diff: the rows in order, with
// the numbers of each side, and the lock types with their p99.
func TestDiffHTMLTables(t *testing.T) {
	b := capturetest.Of(t, 2e9,
		capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "x", 1, 1, 1, 2_000_000, 1_000_000),
		capturetest.Rec("mutex", "", "anon_pipe_write+0x43", "x", 1, 1, 1, 9_000_000),
		capturetest.Rec("spinlock", "", "gone+0x1", "x", 1, 1, 1, 1_000_000))
	a := capturetest.Of(t, 4e9,
		capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe4", "x", 1, 1, 1, 40_000_000),
		capturetest.Rec("mutex", "", "anon_pipe_write+0x43", "x", 1, 1, 1, 2_000_000),
		capturetest.Rec("rwsem:R", "", "new+0x1", "x", 1, 1, 1, 6_000_000))
	d := capture.Compare(b, a, capture.DiffOptions{})
	page := renderDiff(t, d, HTMLOptions{Top: 3})
	doc := parseHTML(t, page)
	data := dataOf(t, page)
	v := data.view(t, "rows")
	if v.Rows != len(d.Rows) {
		t.Fatalf("%d rows, want %d", v.Rows, len(d.Rows))
	}
	// vm_mmap_pgoff: 3 ms in 2 s -> 40 ms in 4 s: 1.5 ms/s -> 10 ms/s.
	want := []struct{ status, caller, totalB, totalA, change, ratio, countB, avgA string }{
		{"matched", "vm_mmap_pgoff", "1500000", "10000000", "8500000", "6.667", "1", "40000000"},
		{"matched", "anon_pipe_write", "4500000", "500000", "-4000000", "0.111", "0.5", "2000000"},
		{"new", "new", "null", "1500000", "1500000", "-1", "null", "6000000"},
	}
	for i, w := range want {
		var got []string
		for _, key := range []string{"status", "caller", "total_b", "total_a", "total_d", "total_r", "count_b", "avg_a"} {
			got = append(got, data.cell(t, v, key, i))
		}
		if exp := []string{w.status, w.caller, w.totalB, w.totalA, w.change, w.ratio, w.countB, w.avgA}; !slices.Equal(got, exp) {
			t.Errorf("row %d: %q, want %q", i, got, exp)
		}
	}
	if got, title := data.cell(t, v, "p99", 0), data.title(t, v, "p99", 0); got != "per type" || title != "p99 of all rwsem:W waits: 2.00 ms before, 40.00 ms after" {
		t.Errorf("p99 cell %q titled %q", got, title)
	}
	if got := data.cell(t, v, "lock", 0); got != "mmap_lock" {
		t.Errorf("lock cell %q", got)
	}
	if got := data.cell(t, v, "lock", 1); got != "unnamed" {
		t.Errorf("lock cell of an unnamed lock %q", got)
	}

	types := data.view(t, "types")
	var rows []string
	for i := range types.Rows {
		rows = append(rows, data.cell(t, types, "type", i)+" "+data.cell(t, types, "status", i)+" "+data.cell(t, types, "p99_a", i))
	}
	// p99 of one wait is that wait.
	if want := []string{"rwsem:W matched 40000000", "mutex matched 2000000", "rwsem:R new 6000000", "spinlock gone null"}; !slices.Equal(rows, want) {
		t.Errorf("types %q, want %q", rows, want)
	}
	for _, want := range []string{"Waits and total wait are per second of capture (before 2.00 s, after 4.00 s)"} {
		if got := textOf(elementByID(t, doc, "diff-basis")); !strings.Contains(got, want) {
			t.Errorf("the page says %q, not %q", got, want)
		}
	}
}

// TestDiffHTMLCharts checks the charts' data against the diff: the histograms overlaid per second,
// the doughnuts, the box chart and the biggest changes.
func TestDiffHTMLCharts(t *testing.T) {
	b := capturetest.Of(t, 2e9,
		capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "x", 1, 1, 1, 1_000, 3_000, 3_100),
		capturetest.Rec("mutex", "", "anon_pipe_write+0x43", "x", 1, 1, 1, 100))
	a := capturetest.Of(t, 4e9,
		capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe4", "x", 1, 1, 1, 2_000, 2_100, 70_000, 70_001),
		capturetest.Rec("spinlock", "", "new+0x1", "x", 1, 1, 1, 100))
	d := capture.Compare(b, a, capture.DiffOptions{})
	charts := chartsOf(t, parseHTML(t, renderDiff(t, d, HTMLOptions{})))
	// Waits per second in each power-of-two range, counted from the waits above.
	perRange := func(scale float64, waits ...uint64) map[uint64]float64 {
		m := map[uint64]float64{}
		for _, w := range waits {
			lo := uint64(1)
			for lo*2 <= w {
				lo *= 2
			}
			m[lo] += 1 / scale
		}
		return m
	}
	wantWaits := [2]map[uint64]float64{perRange(2, 1_000, 3_000, 3_100, 100), perRange(4, 2_000, 2_100, 70_000, 70_001, 100)}
	hist := charts["klockDiffHistogram"].Option
	labels := path(t, hist, "xAxis", 0, "data").([]any)
	if len(labels) != 11 || labels[0] != axisDuration(64) || labels[10] != axisDuration(65536) {
		t.Fatalf("ranges %v, want 64 ns to 65536 ns", labels)
	}
	for side := range 2 {
		for i := range labels {
			lo := uint64(64) << i
			want := any(wantWaits[side][lo])
			if want == 0.0 {
				want = "-" // no bar on a log axis
			}
			if got := path(t, hist, "series", side, "data", i, "value"); got != want {
				t.Errorf("side %d, range %d: %v waits/s, want %v", side, lo, got, want)
			}
		}
	}
	// mutex waited 50 ns/s before, spinlock 25 ns/s after.
	for id, want := range map[string][]any{"klockDiffDoughnutBefore": {"rwsem:W", "mutex"}, "klockDiffDoughnutAfter": {"rwsem:W", "spinlock"}} {
		var names []any
		for _, slice := range path(t, charts[id].Option, "series", 0, "data").([]any) {
			names = append(names, path(t, slice, "name"))
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s slices %v, want %v", id, names, want)
		}
	}
	box := charts["klockDiffBox"].Option
	if names := path(t, box, "xAxis", 0, "data").([]any); !slices.Equal(names, []any{"rwsem:W", "mutex", "spinlock"}) {
		t.Errorf("box categories %v, want the types by wait in both", names)
	}
	if n := len(path(t, box, "series").([]any)); n != 2 {
		t.Errorf("box chart has %d series, want before and after", n)
	}
	if v := path(t, box, "series", 1, "data", 1, "value").([]any); len(v) != 0 {
		t.Errorf("a box for mutex after, which had no waits: %v", v)
	}
	changes := path(t, charts["klockDiffChanges"].Option, "series", 0, "data").([]any)
	if len(changes) != len(d.Rows) {
		t.Errorf("%d changes, want all %d rows", len(changes), len(d.Rows))
	}
	for i, c := range changes {
		if got := path(t, c, "value"); got != d.Rows[i].DeltaNS() {
			t.Errorf("change %d: %v, want %v", i, got, d.Rows[i].DeltaNS())
		}
	}
}

func TestDiffHTMLEmpty(t *testing.T) {
	empty := capturetest.Of(t, 1e9)
	doc := parseHTML(t, renderDiff(t, capture.Compare(empty, empty, capture.DiffOptions{}), HTMLOptions{}))
	if !strings.Contains(textOf(doc), "No lock contention was recorded in either capture.") {
		t.Error("the empty diff does not say so")
	}
	if n := len(elements(doc, "canvas")) + len(elements(doc, "figure")); n != 0 {
		t.Errorf("%d charts in an empty diff", n)
	}
}

// FuzzCompare compares captures whose strings are arbitrary: every record must end up in exactly one
// row, matched rows must agree in what they are matched by, and the outputs must not fail.
func FuzzCompare(f *testing.F) {
	f.Add("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "ct-0", "vm_mmap_pgoff+0xe4", "ct-1", true, false)
	f.Add("mutex", "", "0xffffffffc0a81234", svgComm, "0xffffffffc0a81234", scriptBreak, false, true)
	f.Add("spinlock", imgCanary, "000000001a2b3c4d", "", "000000001a2b3c4d", "", true, true)
	f.Fuzz(func(t *testing.T, typ, name, callerB, commB, callerA, commA string, byThread, hashed bool) {
		if capture.CheckTypeName(typ) != nil {
			t.Skip() // not a valid lock type
		}
		b := capturetest.Of(t, 1e9, capturetest.Rec(typ, name, callerB, commB, 1, 1, 1, 100), capturetest.Rec(typ, "", callerA, commA, 1, 2, 1, 50))
		a := capturetest.Of(t, 3e9, capturetest.Rec(typ, name, callerA, commA, 2, 1, 1, 300))
		b.Meta.AddressesHashed, a.Meta.AddressesHashed = hashed, hashed
		// The threads own the lock in turn, at the callers' frames: two entries before, one after.
		owner := func(comm, frame string, tid uint32) capture.Owner {
			return capture.Owner{Type: typ, Lock: 1, Name: name, Comm: comm, PID: 1, TID: tid, Stack: []string{frame}, Count: 1, TotalNS: 100,
				States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 1, TotalNS: 100}}}
		}
		b.Owners = []capture.Owner{owner(commB, callerB, 1), owner(commA, callerA, 2)}
		a.Owners = []capture.Owner{owner(commA, callerA, 2)}
		d := capture.Compare(b, a, capture.DiffOptions{ByThread: byThread})
		var entries [2]int
		for _, o := range d.Owners {
			entries[0] += o.Before.Entries
			entries[1] += o.After.Entries
			if (o.Status == capture.Matched) != (o.Before.Entries > 0 && o.After.Entries > 0) {
				t.Errorf("owner %s|%s|%q has entries %d, %d", o.Status, o.Type, o.Stack, o.Before.Entries, o.After.Entries)
			}
		}
		if entries != [2]int{2, 1} {
			t.Errorf("owners hold %v entries, want 2 and 1", entries)
		}
		var records [2]int
		for _, r := range d.Rows {
			records[0] += r.Before.Records
			records[1] += r.After.Records
			if (r.Status == capture.Matched) != (r.Before.Records > 0 && r.After.Records > 0) {
				t.Errorf("row %s has records %d, %d", fmt.Sprintf("%s %s|%s|%s|%s", r.Status, r.Type, r.Name, r.Caller, r.Comm), r.Before.Records, r.After.Records)
			}
		}
		if records != [2]int{2, 1} {
			t.Errorf("rows hold %v records, want 2 and 1", records)
		}
		if err := WriteDiffSummary(&bytes.Buffer{}, d, 0); err != nil {
			t.Fatal(err)
		}
		if err := writeDiffHTML(&bytes.Buffer{}, d, HTMLOptions{}, testKey); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFormatPct(t *testing.T) {
	for _, tt := range []struct {
		pct  float64
		want string
	}{
		{0, "+0.0%"}, {12.54, "+12.5%"}, {-40, "-40.0%"}, {-100, "-100.0%"}, {999.94, "+999.9%"},
		{1000, "×11.0"}, {9850, "×99.5"}, {9900, "×100"}, {12122620.2, "×121227"}, {math.Inf(1), "from 0"},
	} {
		if got := formatPct(tt.pct); got != tt.want {
			t.Errorf("formatPct(%v) = %q, want %q", tt.pct, got, tt.want)
		}
	}
}

// TestDiffHTMLIsNoCapture: a diff page holds no capture, and reading it as one says so.
func TestDiffHTMLIsNoCapture(t *testing.T) {
	page := renderDiff(t, hostileDiff(t, capture.DiffOptions{}), HTMLOptions{})
	if _, err := ReadInput(bytes.NewReader(page)); err == nil || !strings.Contains(err.Error(), "not a klockstat capture") {
		t.Errorf("ReadInput of a diff page: %v, want an error saying it is no capture", err)
	}
}

// TestWriteDiffSummaryByCgroup keeps the rows of two cgroups apart, by path, with a column that
// shows each one's path as text that cannot drive the terminal.
func TestWriteDiffSummaryByCgroup(t *testing.T) {
	in := func(path string, r capturetest.Record) capturetest.Record {
		r.CgroupID, r.Cgroup = uint64(len(path)), path
		return r
	}
	mmap := capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "x", 1, 1, 1, 2_000_000)
	b := capturetest.Of(t, 1e9, in("/ctr/a", mmap), in("/ctr/\x1b[2Jb", mmap))
	a := capturetest.Of(t, 1e9, in("/ctr/a", mmap), in("/ctr/\x1b[2Jb", mmap), in("/ctr/a", mmap))
	out := diffSummary(t, capture.Compare(b, a, capture.DiffOptions{ByCgroup: true}), 0)
	for _, want := range []string{"   cgroup   caller\n", "   /ctr/a   vm_mmap_pgoff\n", "   /ctr/?[2Jb   vm_mmap_pgoff\n", "2 matched, 0 new, 0 gone rows, matched by lock type, caller function, lock name, cgroup path\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// TestDiffHTMLBlockedBy checks the "Blocked by" table of the diff page against the owners of the
// diff: wait charged before and after per second, the owners' states as shares, hostile thread
// names as text, bidirectional controls shown, raw addresses of owner stacks hashed; and the one
// line that replaces the table when a capture has no owners.
func TestDiffHTMLBlockedBy(t *testing.T) {
	d := hostileDiff(t, capture.DiffOptions{})
	page := renderDiff(t, d, HTMLOptions{Top: 3})
	if bytes.ContainsRune(page, '\u202e') {
		t.Error("the page holds U+202E as it is")
	}
	data := dataOf(t, page)
	v := data.view(t, "owner-changes")
	if v.Rows != 4 || v.Title != "Blocked by" {
		t.Fatalf("owner view %q with %d rows, want Blocked by with 4", v.Title, v.Rows)
	}
	// Per second of 1 s before and 2 s after: the hostile owner 5 us -> 25 us, asleep on I/O for
	// all of it before, on a CPU for 30 of its 50 us after; the spinlock's unknown owner gone (2
	// us), the bidi-named one 1 us -> 350 ns, the one with a module frame gone (300 ns).
	want := []struct{ status, owner, lock, totalB, totalA, totalD, diskB, diskA, diskD, onA, runnableB string }{
		{"matched", imgCanary, imgCanary, "5000", "25000", "20000", "100", "40", "-60", "60", "0"},
		{"gone", "unknown: " + capture.OwnerNoField, "unnamed", "2000", "null", "-2000", "null", "null", "null", "null", "null"},
		{"matched", "exe.<U+202E>txt", "unnamed", "1000", "350", "-650", "0", "0", "0", "100", "0"},
		{"gone", scriptBreak, "unnamed", "300", "null", "-300", "0", "null", "null", "null", "100"},
	}
	for i, w := range want {
		var got []string
		for _, key := range []string{"status", "owner", "lock", "total_b", "total_a", "total_d", "disk_sleep_b", "disk_sleep_a", "disk_sleep_d", "on_cpu_a", "runnable_b"} {
			got = append(got, data.cell(t, v, key, i))
		}
		if exp := []string{w.status, w.owner, w.lock, w.totalB, w.totalA, w.totalD, w.diskB, w.diskA, w.diskD, w.onA, w.runnableB}; !slices.Equal(got, exp) {
			t.Errorf("owner row %d: %q, want %q", i, got, exp)
		}
	}
	// No owner slept interruptibly or was stopped: no columns of dashes for those states.
	for _, c := range v.Columns {
		if strings.HasPrefix(c.Key, capture.OwnerSleeping) || strings.HasPrefix(c.Key, capture.OwnerOther) {
			t.Errorf("a column %s for a state no owner was in", c.Key)
		}
	}
	if got := data.cell(t, v, "stack", 0); got != svgComm+"+0x20\n"+scriptBreak {
		t.Errorf("the matched owner's stack %q, want the after side's heaviest as captured", got)
	}
	if stack, why := data.cell(t, v, "stack", 2), data.cell(t, v, "stack_reason", 2); stack != "" || why != capture.OwnerStackRan {
		t.Errorf("the owner without a stack: stack %q, why %q", stack, why)
	}
	if got := data.cell(t, v, "stack", 3); strings.Contains(got, "ffffffffc0a85678") || len(strings.Split(got, "\n")) != 2 {
		t.Errorf("the gone owner's stack %q: want its module frame hashed", got)
	}
	raw := dataOf(t, renderDiff(t, d, HTMLOptions{RawAddresses: true}))
	if got := raw.cell(t, raw.view(t, "owner-changes"), "stack", 3); got != "__schedule+0x618\n0xffffffffc0a85678" {
		t.Errorf("the gone owner's stack with raw addresses %q", got)
	}

	// Against a capture without owners, one line says so.
	b, a := d.Captures[capture.BeforeSide], *d.Captures[capture.AfterSide]
	a.Owners = nil
	page = renderDiff(t, capture.Compare(b, &a, capture.DiffOptions{}), HTMLOptions{})
	if got := textOf(elementByID(t, parseHTML(t, page), "diff-owners")); !strings.Contains(got, "Lock owners not compared: the after capture has none (taken without --owners).") {
		t.Errorf("the page says %q where the owners would be", got)
	}
	if slices.ContainsFunc(dataOf(t, page).Views, func(v testView) bool { return v.ID == "owner-changes" }) {
		t.Error("an owner table against a capture without owners")
	}
	b2 := *b
	b2.Owners = nil
	if text := textOf(parseHTML(t, renderDiff(t, capture.Compare(&b2, &a, capture.DiffOptions{}), HTMLOptions{}))); strings.Contains(text, "Lock owners") {
		t.Error("a diff of two captures without owners speaks of owners")
	}
}

// The owners of a terminal diff say what each share's holder did over it and how a waker blocked
// the waiters.
func TestWriteDiffSummaryHolderAndBlocker(t *testing.T) {
	owner := capture.Owner{Type: "mutex", Lock: 0x10, Comm: "renamer", PID: 1, TID: 2, HolderState: capture.HolderRunnable,
		Stack: []string{"__cond_resched+0x35", "dput+0xe7"}, Count: 1, TotalNS: 3000}
	writer := capture.Owner{Type: "pcpu-sem:R", Lock: 0x20, Comm: "reader", PID: 3, TID: 4, Blocker: capture.BlockerWriter,
		Where: capture.BlockerStackAcquire, Stack: []string{"percpu_down_write+0x127", "locks_start+0x25"}, Count: 1, TotalNS: 500}
	b := capturetest.Of(t, 1e9, capturetest.Rec("mutex", "", "do_renameat2+0x2c2", "renamer", 1, 5, 0x10, 4000))
	a := capturetest.Of(t, 1e9, capturetest.Rec("mutex", "", "do_renameat2+0x2c2", "renamer", 1, 5, 0x10, 1000))
	b.Owners = []capture.Owner{owner, writer}
	a.Owners = []capture.Owner{writer}
	out := diffSummary(t, capture.Compare(b, a, capture.DiffOptions{Absolute: true}), 0)
	for _, want := range []string{"    preempted        mutex   ", "   writer reader   percpu_down_write+0x127 < locks_start+0x25\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
}
