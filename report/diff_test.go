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
	"time"

	"github.com/klockstat/klockstat/capture"
)

// rowID names a row for comparisons in tests.
func rowID(r capture.DiffRow) string {
	return fmt.Sprintf("%s %s|%s|%s|%s", r.Status, r.Type, r.Name, r.Caller, r.Comm)
}

func rowIDs(d *capture.Diff) []string {
	var ids []string
	for _, r := range d.Rows {
		ids = append(ids, rowID(r))
	}
	slices.Sort(ids)
	return ids
}

func TestCompareMatching(t *testing.T) {
	const sec = int64(time.Second)
	tests := []struct {
		name          string
		before, after []testRecord
		byThread      bool
		hashed        bool // both captures have hashed addresses
		want          []string
	}{{
		name:   "same caller at other offsets, locks, processes and threads matches",
		before: []testRecord{rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "ct-mmap-0", 10, 11, 0xffff888104d2a0c8, 100)},
		after: []testRecord{
			rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe4", "ct-mmap-0", 20, 21, 0xffff8881aaaa0000, 200),
			rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xa5", "ct-mmap-1", 20, 22, 0xffff8881aaaa0000, 300),
		},
		want: []string{"matched rwsem:W|mmap_lock|vm_mmap_pgoff|"},
	}, {
		name:   "different lock types do not match",
		before: []testRecord{rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "a", 1, 1, 1, 100)},
		after:  []testRecord{rec("rwsem:R", "mmap_lock", "vm_mmap_pgoff+0xe0", "a", 1, 1, 1, 100)},
		want:   []string{"gone rwsem:W|mmap_lock|vm_mmap_pgoff|", "new rwsem:R|mmap_lock|vm_mmap_pgoff|"},
	}, {
		name: "named locks at the same caller stay apart, and apart from unnamed ones",
		before: []testRecord{
			rec("spinlock", "jiffies_lock", "tick_do_update_jiffies64+0x3a", "a", 1, 1, 0xffffffff83a1b2c0, 100),
			rec("spinlock", "", "tick_do_update_jiffies64+0x3a", "a", 1, 1, 0xffff888100000000, 50),
		},
		after: []testRecord{
			rec("spinlock", "jiffies_lock", "tick_do_update_jiffies64+0x3a", "a", 1, 1, 0xffffffff83a1b2c0, 100),
			rec("spinlock", "mmap_lock", "tick_do_update_jiffies64+0x3a", "a", 1, 1, 0xffff888100000040, 100),
			rec("spinlock", "", "tick_do_update_jiffies64+0x3a", "a", 1, 1, 0xffff888100000080, 70),
		},
		want: []string{
			"matched spinlock||tick_do_update_jiffies64|", "matched spinlock|jiffies_lock|tick_do_update_jiffies64|",
			"new spinlock|mmap_lock|tick_do_update_jiffies64|",
		},
	}, {
		name:   "raw address callers never match, even with the same value",
		before: []testRecord{rec("mutex", "", "0xffffffffc0a81234", "a", 1, 1, 1, 100), rec("mutex", "", "0xffffffffc0a81234", "b", 1, 2, 1, 100)},
		after:  []testRecord{rec("mutex", "", "0xffffffffc0a81234", "a", 1, 1, 1, 100)},
		want:   []string{"gone mutex||0xffffffffc0a81234|", "new mutex||0xffffffffc0a81234|"},
	}, {
		name:   "hashed ids never match, even with the same value",
		hashed: true,
		before: []testRecord{rec("mutex", "", "000000001a2b3c4d", "a", 1, 1, 1, 100)},
		after:  []testRecord{rec("mutex", "", "000000001a2b3c4d", "a", 1, 1, 1, 100)},
		want:   []string{"gone mutex||000000001a2b3c4d|", "new mutex||000000001a2b3c4d|"},
	}, {
		name:   "16 hex digits are a symbol in a capture without hashed addresses",
		before: []testRecord{rec("mutex", "", "deadbeefdeadbeef", "a", 1, 1, 1, 100)},
		after:  []testRecord{rec("mutex", "", "deadbeefdeadbeef", "a", 1, 1, 1, 100)},
		want:   []string{"matched mutex||deadbeefdeadbeef|"},
	}, {
		name:   "an unknown caller matches the unknown caller",
		before: []testRecord{rec("mutex", "", "", "a", 1, 1, 1, 100)},
		after:  []testRecord{rec("mutex", "", "", "b", 2, 2, 2, 100)},
		want:   []string{"matched mutex|||"},
	}, {
		name:   "a function name with +0x that is not an offset is kept",
		before: []testRecord{rec("mutex", "", "f+0xzz+0x10", "a", 1, 1, 1, 100)},
		after:  []testRecord{rec("mutex", "", "f+0xzz+0x20", "a", 1, 1, 1, 100)},
		want:   []string{"matched mutex||f+0xzz|"},
	}, {
		name:     "by thread: the same comm in other processes matches, other comms do not",
		byThread: true,
		before: []testRecord{
			rec("rwsem:W", "mmap_lock", "__vm_munmap+0x7d", "ct-mmap-0", 10, 11, 1, 100),
			rec("rwsem:W", "mmap_lock", "__vm_munmap+0x7d", "ct-mmap-1", 10, 12, 1, 100),
		},
		after: []testRecord{
			rec("rwsem:W", "mmap_lock", "__vm_munmap+0x7d", "ct-mmap-0", 20, 21, 2, 100),
			rec("rwsem:W", "mmap_lock", "__vm_munmap+0x7d", "ct-mmap-0", 20, 22, 2, 100),
			rec("rwsem:W", "mmap_lock", "__vm_munmap+0x7d", "ct-mmap-10", 20, 23, 2, 100),
		},
		want: []string{
			"gone rwsem:W|mmap_lock|__vm_munmap|ct-mmap-1", "matched rwsem:W|mmap_lock|__vm_munmap|ct-mmap-0",
			"new rwsem:W|mmap_lock|__vm_munmap|ct-mmap-10",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, a := diffCapture(t, sec, tt.before...), diffCapture(t, sec, tt.after...)
			b.Meta.AddressesHashed, a.Meta.AddressesHashed = tt.hashed, tt.hashed
			d := capture.Compare(b, a, capture.DiffOptions{ByThread: tt.byThread})
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if got := rowIDs(d); !slices.Equal(got, want) {
				t.Errorf("rows\n%q\nwant\n%q", got, want)
			}
			// Every record's waits are in exactly one row of its side.
			for side, c := range d.Captures {
				var records int
				var total float64
				for _, r := range d.Rows {
					v := []capture.DiffValues{r.Before, r.After}[side]
					records += v.Records
					total += v.TotalNS
				}
				var want uint64
				for _, r := range c.Records {
					want += r.TotalNS
				}
				if records != len(c.Records) || total != float64(want) {
					t.Errorf("side %d: rows hold %d records and %v ns, want %d and %d", side, records, total, len(c.Records), want)
				}
			}
		})
	}
}

// TestComparePerSecond compares a 2 s capture with a 4 s one: per second by default, raw with
// Absolute.
func TestComparePerSecond(t *testing.T) {
	before := []testRecord{
		rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "a", 1, 1, 1, 400_000_000, 600_000_000),
		rec("mutex", "", "anon_pipe_write+0x43", "a", 1, 1, 2, 1_000, 3_000),
	}
	after := []testRecord{
		rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe4", "a", 1, 1, 1, 500_000_000, 700_000_000, 1_800_000_000),
		rec("mutex", "", "anon_pipe_write+0x43", "a", 1, 1, 2, 8_000),
	}
	b, a := diffCapture(t, 2_000_000_000, before...), diffCapture(t, 4_000_000_000, after...)

	// What each row holds, from the waits above: per second is the total over the duration.
	sum := func(waits []uint64) (total float64) {
		for _, w := range waits {
			total += float64(w)
		}
		return total
	}
	for _, tt := range []struct {
		absolute       bool
		scaleB, scaleA float64
	}{{false, 2, 4}, {true, 1, 1}} {
		t.Run(fmt.Sprintf("absolute=%v", tt.absolute), func(t *testing.T) {
			d := capture.Compare(b, a, capture.DiffOptions{Absolute: tt.absolute})
			if d.PerSecond == tt.absolute {
				t.Errorf("PerSecond %v with Absolute %v", d.PerSecond, tt.absolute)
			}
			if len(d.Rows) != 2 {
				t.Fatalf("rows %q, want the two matched", rowIDs(d))
			}
			for i, r := range d.Rows {
				wantB, wantA := sum(before[i].waits)/tt.scaleB, sum(after[i].waits)/tt.scaleA
				if r.Status != capture.Matched || r.Type != before[i].Type || r.Before.TotalNS != wantB || r.After.TotalNS != wantA {
					t.Errorf("row %d: %s %v -> %v, want matched %s %v -> %v", i, rowID(r), r.Before.TotalNS, r.After.TotalNS, before[i].Type, wantB, wantA)
				}
				if wantCount := float64(len(after[i].waits)) / tt.scaleA; r.After.Count != wantCount {
					t.Errorf("row %d: %v waits after, want %v", i, r.After.Count, wantCount)
				}
				// Averages are of single waits: never scaled.
				if wantMean := sum(after[i].waits) / float64(len(after[i].waits)); r.After.MeanNS != wantMean {
					t.Errorf("row %d: average %v after, want %v", i, r.After.MeanNS, wantMean)
				}
			}
			totalB, totalA, pct := d.TotalWaitChange()
			wantB := (sum(before[0].waits) + sum(before[1].waits)) / tt.scaleB
			wantA := (sum(after[0].waits) + sum(after[1].waits)) / tt.scaleA
			if totalB != wantB || totalA != wantA || math.Abs(pct-100*(wantA-wantB)/wantB) > 1e-9 {
				t.Errorf("TotalWaitChange() = %v, %v, %v%%, want %v, %v, %v%%", totalB, totalA, pct, wantB, wantA, 100*(wantA-wantB)/wantB)
			}
			// The lock types, from the histograms, agree with the rows.
			for _, ty := range d.Types {
				i := slices.IndexFunc(before, func(r testRecord) bool { return r.Type == ty.Type })
				if ty.Before.TotalNS != sum(before[i].waits)/tt.scaleB || ty.After.Count != float64(len(after[i].waits))/tt.scaleA {
					t.Errorf("type %s: %+v", ty.Type, ty)
				}
			}
		})
	}
}

func TestComparePercentiles(t *testing.T) {
	var waits []uint64
	for i := range uint64(1000) {
		waits = append(waits, 1_000+i*i*37)
	}
	b := diffCapture(t, 1e9, rec("mutex", "", "f+0x1", "a", 1, 1, 1, waits...))
	a := diffCapture(t, 1e9, rec("mutex", "", "f+0x1", "a", 1, 1, 1, waits[:10]...))
	d := capture.Compare(b, a, capture.DiffOptions{})
	sorted := slices.Sorted(slices.Values(waits))
	exact := sorted[int(math.Ceil(0.99*float64(len(sorted))))-1] // nearest rank
	if got := d.Types[0].BeforeDist.P99; math.Abs(float64(got)-float64(exact)) > float64(exact)/16 {
		t.Errorf("p99 before %d, exact %d: off by more than 1/16", got, exact)
	}
	if got := d.Types[0].AfterDist.P99; got > waits[9] || got < waits[8] {
		t.Errorf("p99 after %d, want between the two largest waits %d and %d", got, waits[8], waits[9])
	}
}

func TestCompareNewGone(t *testing.T) {
	b := diffCapture(t, 1e9,
		rec("mutex", "", "kept+0x1", "a", 1, 1, 1, 1_000),
		rec("mutex", "", "gone+0x1", "a", 1, 1, 1, 5_000),
		rec("spinlock", "", "onlybefore+0x1", "a", 1, 1, 1, 7_000))
	a := diffCapture(t, 1e9,
		rec("mutex", "", "kept+0x1", "a", 1, 1, 1, 2_000),
		rec("mutex", "", "new+0x1", "a", 1, 1, 1, 3_000),
		rec("rwsem:R", "", "onlyafter+0x1", "a", 1, 1, 1, 9_000))
	// A record of a function-probe capture may time holds only: without waits it is in no row.
	a.Records = append(a.Records, capture.Record{Type: "mutex", Caller: "holdsonly+0x1", Stack: []string{}})
	d := capture.Compare(b, a, capture.DiffOptions{})
	want := []string{"new rwsem:R||onlyafter|", "gone spinlock||onlybefore|", "gone mutex||gone|", "new mutex||new|", "matched mutex||kept|"}
	var got []string
	for _, r := range d.Rows {
		got = append(got, rowID(r))
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows by absolute change\n%q\nwant\n%q", got, want)
	}
	for _, r := range d.Rows {
		missing := map[capture.DiffStatus]capture.DiffValues{capture.New: r.Before, capture.Gone: r.After}
		if v, ok := missing[r.Status]; ok && (v.Records != 0 || v.TotalNS != 0 || v.Count != 0 || v.MeanNS != 0 || v.MaxNS != 0 || v.Stack != nil) {
			t.Errorf("%s has values on its missing side: %+v", rowID(r), r)
		}
	}
	types := map[string]capture.DiffStatus{}
	for _, ty := range d.Types {
		types[ty.Type] = ty.Status
	}
	if want := map[string]capture.DiffStatus{"mutex": capture.Matched, "spinlock": capture.Gone, "rwsem:R": capture.New}; !maps.Equal(types, want) {
		t.Errorf("types %v, want %v", types, want)
	}
}

func TestFailOver(t *testing.T) {
	// Before: 1 s of waiting in 2 s; after: 2.2 s in 4 s, 10% more per second.
	b := diffCapture(t, 2e9,
		rec("mutex", "", "a+0x1", "x", 1, 1, 1, 600_000_000),
		rec("mutex", "", "b+0x1", "x", 1, 1, 1, 300_000_000),
		rec("mutex", "", "c+0x1", "x", 1, 1, 1, 100_000_000))
	a := diffCapture(t, 4e9,
		rec("mutex", "", "a+0x1", "x", 1, 1, 1, 1_000_000_000), // 0.3 -> 0.25 s/s
		rec("mutex", "", "b+0x1", "x", 1, 1, 1, 800_000_000),   // 0.15 -> 0.2 s/s
		rec("mutex", "", "c+0x1", "x", 1, 1, 1, 200_000_000),   // 0.05 -> 0.05 s/s
		rec("mutex", "", "d+0x1", "x", 1, 1, 1, 200_000_000))   // new, 0.05 s/s
	for _, tt := range []struct {
		pct  float64
		top  int
		ok   bool
		grew []string
	}{
		{pct: 10, ok: true},
		{pct: 10.5, ok: true},
		{pct: math.Nextafter(10, 0), ok: false, grew: []string{"matched mutex||b|", "new mutex||d|"}},
		{pct: 0, top: 1, ok: false, grew: []string{"matched mutex||b|"}},
		{pct: -50, ok: false, grew: []string{"matched mutex||b|", "new mutex||d|"}},
	} {
		d := capture.Compare(b, a, capture.DiffOptions{Top: tt.top})
		if _, _, pct := d.TotalWaitChange(); pct != 10 {
			t.Fatalf("the change is %v%%, not exactly 10%%", pct)
		}
		ok, grew := d.FailOver(tt.pct)
		var ids []string
		for _, r := range grew {
			ids = append(ids, rowID(r))
		}
		if ok != tt.ok || !slices.Equal(ids, tt.grew) {
			t.Errorf("FailOver(%v) with top %d = %v, %q; want %v, %q", tt.pct, tt.top, ok, ids, tt.ok, tt.grew)
		}
	}

	// Absolute: 1 s -> 2.2 s is +120%.
	d := capture.Compare(b, a, capture.DiffOptions{Absolute: true})
	if ok, _ := d.FailOver(120); !ok {
		t.Error("absolute: FailOver(120) fails on a growth of exactly 120%")
	}
	if ok, _ := d.FailOver(119.9); ok {
		t.Error("absolute: FailOver(119.9) passes a growth of 120%")
	}

	// From nothing to something is infinite growth; nothing to nothing is none.
	empty := diffCapture(t, 1e9)
	if ok, grew := capture.Compare(empty, a, capture.DiffOptions{}).FailOver(1e300); ok || len(grew) != 4 {
		t.Errorf("from no waits: FailOver(1e300) = %v, %d rows; want false, 4", ok, len(grew))
	}
	if _, _, pct := capture.Compare(empty, a, capture.DiffOptions{}).TotalWaitChange(); !math.IsInf(pct, 1) {
		t.Errorf("from no waits: change %v, want +Inf", pct)
	}
	if ok, _ := capture.Compare(empty, empty, capture.DiffOptions{}).FailOver(0); !ok {
		t.Error("no waits in either: FailOver(0) fails")
	}
	// Less waiting passes any bound of 0 or more.
	if ok, _ := capture.Compare(a, b, capture.DiffOptions{}).FailOver(0); !ok {
		t.Error("less waiting fails FailOver(0)")
	}
}

func TestDiffWarnings(t *testing.T) {
	base := diffCapture(t, 1e9, rec("mutex", "", "a+0x1", "x", 1, 1, 1, 100))
	if w := capture.Compare(base, base, capture.DiffOptions{}).Warnings(); len(w) != 0 {
		t.Errorf("identical settings give warnings %q", w)
	}
	tests := []struct {
		name   string
		change func(m *capture.Meta)
		want   []string // in the one warning
	}{
		{"probe", func(m *capture.Meta) { m.Probe = "tracepoint" }, []string{"probe", "rawtp", "tracepoint"}},
		{"stack depth", func(m *capture.Meta) { m.StackDepth = 4 }, []string{"stack depth", "16", "4 frames"}},
		{"types", func(m *capture.Meta) { m.Types = []string{"mutex", "spinlock", "rwlock:R"} }, []string{"lock types", "only before: rwsem:R, rwsem:W", "only after: rwlock:R"}},
		{"kernel", func(m *capture.Meta) { m.Kernel = "6.12.0-1-amd64" }, []string{"kernels differ", "6.1.0-18-amd64", "6.12.0-1-amd64"}},
		{"comm filter", func(m *capture.Meta) { m.Comm = "make" }, []string{"process filters", "comm make"}},
		{"pid filter", func(m *capture.Meta) { m.PIDs = []uint32{42} }, []string{"process filters", "PIDs 42"}},
		{"lost events", func(m *capture.Meta) { m.Lost = []capture.Lost{{Reason: "aggregation map full", Count: 3}} }, []string{"after capture lost 3 events"}},
		{"no duration", func(m *capture.Meta) { m.DurationNS = 0 }, []string{"after capture has no duration", "raw totals"}},
		{"kallsyms", func(m *capture.Meta) { m.KallsymsRestricted = true }, []string{"raw addresses"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := *base
			after.Meta.Types = slices.Clone(base.Meta.Types)
			tt.change(&after.Meta)
			d := capture.Compare(base, &after, capture.DiffOptions{})
			w := d.Warnings()
			if len(w) != 1 {
				t.Fatalf("warnings %q, want one", w)
			}
			for _, s := range tt.want {
				if !strings.Contains(w[0], s) {
					t.Errorf("warning %q does not say %q", w[0], s)
				}
			}
		})
	}
	// Without a duration nothing can be per second.
	after := *base
	after.Meta.DurationNS = 0
	if d := capture.Compare(base, &after, capture.DiffOptions{}); d.PerSecond {
		t.Error("per second with a capture of no duration")
	}
	// The warnings are a copy.
	after.Meta.Probe = "x"
	d := capture.Compare(base, &after, capture.DiffOptions{})
	d.Warnings()[0] = "changed"
	if d.Warnings()[0] == "changed" {
		t.Error("Warnings returns the diff's own slice")
	}
}

func diffSummary(t *testing.T, d *capture.Diff, top int) string {
	t.Helper()
	return written(t, func(w io.Writer) error { return WriteDiffSummary(w, d, top) })
}

func TestWriteDiffSummary(t *testing.T) {
	b := diffCapture(t, 2e9,
		rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "x", 1, 1, 1, 2_000_000),
		rec("mutex", "", "\x1b[2Jevil+0x1", "\x1b[31m", 1, 1, 1, 9_000_000),
		rec("spinlock", "", "small+0x1", "x", 1, 1, 1, 2_000),
		rec("spinlock", "", "gone+0x1", "x", 1, 1, 1, 1_000_000))
	a := diffCapture(t, 4e9,
		rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe4", "x", 1, 1, 1, 40_000_000),
		rec("mutex", "", "\x1b[2Jevil+0x1", "\x1b[31m", 1, 1, 1, 2_000_000),
		rec("spinlock", "", "small+0x1", "x", 1, 1, 1, 4_000),
		rec("rwsem:R", "", "new+0x1", "x", 1, 1, 1, 6_000_000))
	a.Meta.Probe = "tracepoint"
	a.Meta.CommandLine = []string{"klockstat", "--", "evil\x1b]0;x\x07"}
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
	if empty := diffSummary(t, capture.Compare(diffCapture(t, 1e9), diffCapture(t, 1e9), capture.DiffOptions{}), 5); !strings.Contains(empty, "no lock contention recorded in either capture") {
		t.Errorf("empty diff:\n%s", empty)
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
}

// TestDiffHTMLTables checks the server-rendered tables against the diff: the rows in order, with
// the numbers of each side, and the lock types with their p99.
func TestDiffHTMLTables(t *testing.T) {
	b := diffCapture(t, 2e9,
		rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "x", 1, 1, 1, 2_000_000, 1_000_000),
		rec("mutex", "", "anon_pipe_write+0x43", "x", 1, 1, 1, 9_000_000),
		rec("spinlock", "", "gone+0x1", "x", 1, 1, 1, 1_000_000))
	a := diffCapture(t, 4e9,
		rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe4", "x", 1, 1, 1, 40_000_000),
		rec("mutex", "", "anon_pipe_write+0x43", "x", 1, 1, 1, 2_000_000),
		rec("rwsem:R", "", "new+0x1", "x", 1, 1, 1, 6_000_000))
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
	b := diffCapture(t, 2e9,
		rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "x", 1, 1, 1, 1_000, 3_000, 3_100),
		rec("mutex", "", "anon_pipe_write+0x43", "x", 1, 1, 1, 100))
	a := diffCapture(t, 4e9,
		rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe4", "x", 1, 1, 1, 2_000, 2_100, 70_000, 70_001),
		rec("spinlock", "", "new+0x1", "x", 1, 1, 1, 100))
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
	empty := diffCapture(t, 1e9)
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
		if typ == "" || strings.ContainsAny(typ, " \t\n") {
			t.Skip() // not a valid lock type
		}
		b := diffCapture(t, 1e9, rec(typ, name, callerB, commB, 1, 1, 1, 100), rec(typ, "", callerA, commA, 1, 2, 1, 50))
		a := diffCapture(t, 3e9, rec(typ, name, callerA, commA, 2, 1, 1, 300))
		b.Meta.AddressesHashed, a.Meta.AddressesHashed = hashed, hashed
		d := capture.Compare(b, a, capture.DiffOptions{ByThread: byThread})
		var records [2]int
		for _, r := range d.Rows {
			records[0] += r.Before.Records
			records[1] += r.After.Records
			if (r.Status == capture.Matched) != (r.Before.Records > 0 && r.After.Records > 0) {
				t.Errorf("row %s has records %d, %d", rowID(r), r.Before.Records, r.After.Records)
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

// A capture whose sums saturate is flagged, and its total is not wrapped into a small change.
func TestDiffSaturatedSums(t *testing.T) {
	b := saturatingCapture(t)
	a := saturatingCapture(t)
	a.Records = a.Records[1:]
	d := capture.Compare(b, a, capture.DiffOptions{Absolute: true})
	if !slices.ContainsFunc(d.Warnings(), func(w string) bool {
		return strings.Contains(w, "before capture's waits add up to more than a 64-bit number")
	}) {
		t.Errorf("warnings %q do not flag the saturated capture", d.Warnings())
	}
	if before, _, pct := d.TotalWaitChange(); before != math.MaxUint64 || pct > -99 {
		t.Errorf("total before %v, change %v%%: want the maximum, and nearly all of it gone", before, pct)
	}
}
