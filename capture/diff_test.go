package capture_test

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
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
		before, after []capturetest.Record
		byThread      bool
		hashed        bool // both captures have hashed addresses
		want          []string
	}{{
		name:   "same caller at other offsets, locks, processes and threads matches",
		before: []capturetest.Record{capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "ct-mmap-0", 10, 11, 0xffff888104d2a0c8, 100)},
		after: []capturetest.Record{
			capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe4", "ct-mmap-0", 20, 21, 0xffff8881aaaa0000, 200),
			capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xa5", "ct-mmap-1", 20, 22, 0xffff8881aaaa0000, 300),
		},
		want: []string{"matched rwsem:W|mmap_lock|vm_mmap_pgoff|"},
	}, {
		name:   "different lock types do not match",
		before: []capturetest.Record{capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "a", 1, 1, 1, 100)},
		after:  []capturetest.Record{capturetest.Rec("rwsem:R", "mmap_lock", "vm_mmap_pgoff+0xe0", "a", 1, 1, 1, 100)},
		want:   []string{"gone rwsem:W|mmap_lock|vm_mmap_pgoff|", "new rwsem:R|mmap_lock|vm_mmap_pgoff|"},
	}, {
		name: "named locks at the same caller stay apart, and apart from unnamed ones",
		before: []capturetest.Record{
			capturetest.Rec("spinlock", "jiffies_lock", "tick_do_update_jiffies64+0x3a", "a", 1, 1, 0xffffffff83a1b2c0, 100),
			capturetest.Rec("spinlock", "", "tick_do_update_jiffies64+0x3a", "a", 1, 1, 0xffff888100000000, 50),
		},
		after: []capturetest.Record{
			capturetest.Rec("spinlock", "jiffies_lock", "tick_do_update_jiffies64+0x3a", "a", 1, 1, 0xffffffff83a1b2c0, 100),
			capturetest.Rec("spinlock", "mmap_lock", "tick_do_update_jiffies64+0x3a", "a", 1, 1, 0xffff888100000040, 100),
			capturetest.Rec("spinlock", "", "tick_do_update_jiffies64+0x3a", "a", 1, 1, 0xffff888100000080, 70),
		},
		want: []string{
			"matched spinlock||tick_do_update_jiffies64|", "matched spinlock|jiffies_lock|tick_do_update_jiffies64|",
			"new spinlock|mmap_lock|tick_do_update_jiffies64|",
		},
	}, {
		name:   "raw address callers never match, even with the same value",
		before: []capturetest.Record{capturetest.Rec("mutex", "", "0xffffffffc0a81234", "a", 1, 1, 1, 100), capturetest.Rec("mutex", "", "0xffffffffc0a81234", "b", 1, 2, 1, 100)},
		after:  []capturetest.Record{capturetest.Rec("mutex", "", "0xffffffffc0a81234", "a", 1, 1, 1, 100)},
		want:   []string{"gone mutex||0xffffffffc0a81234|", "new mutex||0xffffffffc0a81234|"},
	}, {
		name:   "hashed ids never match, even with the same value",
		hashed: true,
		before: []capturetest.Record{capturetest.Rec("mutex", "", "000000001a2b3c4d", "a", 1, 1, 1, 100)},
		after:  []capturetest.Record{capturetest.Rec("mutex", "", "000000001a2b3c4d", "a", 1, 1, 1, 100)},
		want:   []string{"gone mutex||000000001a2b3c4d|", "new mutex||000000001a2b3c4d|"},
	}, {
		// The collector writes every symbol with an offset: 16 bare hex digits are an id wherever found.
		name:   "16 hex digits are an id in a capture without hashed addresses too",
		before: []capturetest.Record{capturetest.Rec("mutex", "", "deadbeefdeadbeef", "a", 1, 1, 1, 100)},
		after:  []capturetest.Record{capturetest.Rec("mutex", "", "deadbeefdeadbeef", "a", 1, 1, 1, 100)},
		want:   []string{"gone mutex||deadbeefdeadbeef|", "new mutex||deadbeefdeadbeef|"},
	}, {
		name:   "a module caller at another offset (the module rebuilt) matches, with its module",
		before: []capturetest.Record{capturetest.Rec("rwsem:W", "", "xfs_ilock+0x4c [xfs]", "a", 1, 1, 1, 100)},
		after: []capturetest.Record{
			capturetest.Rec("rwsem:W", "", "xfs_ilock+0x58 [xfs]", "a", 1, 1, 2, 100),
			capturetest.Rec("rwsem:W", "", "xfs_ilock+0x90 [xfs]", "a", 1, 1, 3, 100),
		},
		want: []string{"matched rwsem:W||xfs_ilock [xfs]|"},
	}, {
		name:   "a module function is not the vmlinux function of the same name, nor another module's",
		before: []capturetest.Record{capturetest.Rec("mutex", "", "probe+0x10 [e1000]", "a", 1, 1, 1, 100)},
		after:  []capturetest.Record{capturetest.Rec("mutex", "", "probe+0x10", "a", 1, 1, 1, 100), capturetest.Rec("mutex", "", "probe+0x10 [igb]", "a", 1, 1, 1, 100)},
		want:   []string{"gone mutex||probe [e1000]|", "new mutex||probe|", "new mutex||probe [igb]|"},
	}, {
		name:   "an unknown caller matches the unknown caller",
		before: []capturetest.Record{capturetest.Rec("mutex", "", "", "a", 1, 1, 1, 100)},
		after:  []capturetest.Record{capturetest.Rec("mutex", "", "", "b", 2, 2, 2, 100)},
		want:   []string{"matched mutex|||"},
	}, {
		name:   "a function name with +0x that is not an offset is kept",
		before: []capturetest.Record{capturetest.Rec("mutex", "", "f+0xzz+0x10", "a", 1, 1, 1, 100)},
		after:  []capturetest.Record{capturetest.Rec("mutex", "", "f+0xzz+0x20", "a", 1, 1, 1, 100)},
		want:   []string{"matched mutex||f+0xzz|"},
	}, {
		name:     "by thread: the same comm in other processes matches, other comms do not",
		byThread: true,
		before: []capturetest.Record{
			capturetest.Rec("rwsem:W", "mmap_lock", "__vm_munmap+0x7d", "ct-mmap-0", 10, 11, 1, 100),
			capturetest.Rec("rwsem:W", "mmap_lock", "__vm_munmap+0x7d", "ct-mmap-1", 10, 12, 1, 100),
		},
		after: []capturetest.Record{
			capturetest.Rec("rwsem:W", "mmap_lock", "__vm_munmap+0x7d", "ct-mmap-0", 20, 21, 2, 100),
			capturetest.Rec("rwsem:W", "mmap_lock", "__vm_munmap+0x7d", "ct-mmap-0", 20, 22, 2, 100),
			capturetest.Rec("rwsem:W", "mmap_lock", "__vm_munmap+0x7d", "ct-mmap-10", 20, 23, 2, 100),
		},
		want: []string{
			"gone rwsem:W|mmap_lock|__vm_munmap|ct-mmap-1", "matched rwsem:W|mmap_lock|__vm_munmap|ct-mmap-0",
			"new rwsem:W|mmap_lock|__vm_munmap|ct-mmap-10",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, a := capturetest.Of(t, sec, tt.before...), capturetest.Of(t, sec, tt.after...)
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
	before := []capturetest.Record{
		capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "a", 1, 1, 1, 400_000_000, 600_000_000),
		capturetest.Rec("mutex", "", "anon_pipe_write+0x43", "a", 1, 1, 2, 1_000, 3_000),
	}
	after := []capturetest.Record{
		capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe4", "a", 1, 1, 1, 500_000_000, 700_000_000, 1_800_000_000),
		capturetest.Rec("mutex", "", "anon_pipe_write+0x43", "a", 1, 1, 2, 8_000),
	}
	b, a := capturetest.Of(t, 2_000_000_000, before...), capturetest.Of(t, 4_000_000_000, after...)

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
				wantB, wantA := sum(before[i].Waits)/tt.scaleB, sum(after[i].Waits)/tt.scaleA
				if r.Status != capture.Matched || r.Type != before[i].Type || r.Before.TotalNS != wantB || r.After.TotalNS != wantA {
					t.Errorf("row %d: %s %v -> %v, want matched %s %v -> %v", i, rowID(r), r.Before.TotalNS, r.After.TotalNS, before[i].Type, wantB, wantA)
				}
				if wantCount := float64(len(after[i].Waits)) / tt.scaleA; r.After.Count != wantCount {
					t.Errorf("row %d: %v waits after, want %v", i, r.After.Count, wantCount)
				}
				// Averages are of single waits: never scaled.
				if wantMean := sum(after[i].Waits) / float64(len(after[i].Waits)); r.After.MeanNS != wantMean {
					t.Errorf("row %d: average %v after, want %v", i, r.After.MeanNS, wantMean)
				}
			}
			totalB, totalA, pct := d.TotalWaitChange()
			wantB := (sum(before[0].Waits) + sum(before[1].Waits)) / tt.scaleB
			wantA := (sum(after[0].Waits) + sum(after[1].Waits)) / tt.scaleA
			if totalB != wantB || totalA != wantA || math.Abs(pct-100*(wantA-wantB)/wantB) > 1e-9 {
				t.Errorf("TotalWaitChange() = %v, %v, %v%%, want %v, %v, %v%%", totalB, totalA, pct, wantB, wantA, 100*(wantA-wantB)/wantB)
			}
			// The lock types, from the histograms, agree with the rows.
			for _, ty := range d.Types {
				i := slices.IndexFunc(before, func(r capturetest.Record) bool { return r.Type == ty.Type })
				if ty.Before.TotalNS != sum(before[i].Waits)/tt.scaleB || ty.After.Count != float64(len(after[i].Waits))/tt.scaleA {
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
	b := capturetest.Of(t, 1e9, capturetest.Rec("mutex", "", "f+0x1", "a", 1, 1, 1, waits...))
	a := capturetest.Of(t, 1e9, capturetest.Rec("mutex", "", "f+0x1", "a", 1, 1, 1, waits[:10]...))
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
	b := capturetest.Of(t, 1e9,
		capturetest.Rec("mutex", "", "kept+0x1", "a", 1, 1, 1, 1_000),
		capturetest.Rec("mutex", "", "gone+0x1", "a", 1, 1, 1, 5_000),
		capturetest.Rec("spinlock", "", "onlybefore+0x1", "a", 1, 1, 1, 7_000))
	a := capturetest.Of(t, 1e9,
		capturetest.Rec("mutex", "", "kept+0x1", "a", 1, 1, 1, 2_000),
		capturetest.Rec("mutex", "", "new+0x1", "a", 1, 1, 1, 3_000),
		capturetest.Rec("rwsem:R", "", "onlyafter+0x1", "a", 1, 1, 1, 9_000))
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
	b := capturetest.Of(t, 2e9,
		capturetest.Rec("mutex", "", "a+0x1", "x", 1, 1, 1, 600_000_000),
		capturetest.Rec("mutex", "", "b+0x1", "x", 1, 1, 1, 300_000_000),
		capturetest.Rec("mutex", "", "c+0x1", "x", 1, 1, 1, 100_000_000))
	a := capturetest.Of(t, 4e9,
		capturetest.Rec("mutex", "", "a+0x1", "x", 1, 1, 1, 1_000_000_000), // 0.3 -> 0.25 s/s
		capturetest.Rec("mutex", "", "b+0x1", "x", 1, 1, 1, 800_000_000),   // 0.15 -> 0.2 s/s
		capturetest.Rec("mutex", "", "c+0x1", "x", 1, 1, 1, 200_000_000),   // 0.05 -> 0.05 s/s
		capturetest.Rec("mutex", "", "d+0x1", "x", 1, 1, 1, 200_000_000))   // new, 0.05 s/s
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
	empty := capturetest.Of(t, 1e9)
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
	base := capturetest.Of(t, 1e9, capturetest.Rec("mutex", "", "a+0x1", "x", 1, 1, 1, 100))
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

// A capture whose sums saturate is flagged, and its total is not wrapped into a small change.
func TestDiffSaturatedSums(t *testing.T) {
	saturating := func() *capture.Capture {
		c := capturetest.Of(t, 1e9, capturetest.Rec("mutex", "", "f+0x1", "a", 1, 1, 0x10, 100), capturetest.Rec("mutex", "", "f+0x1", "b", 1, 2, 0x10, 100))
		c.Records[0].Count, c.Records[0].TotalNS = math.MaxUint64, math.MaxUint64-10
		c.Records[1].Count, c.Records[1].TotalNS = 1970, 1970
		return c
	}
	b, a := saturating(), saturating()
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

// TestCompareCgroups matches the waiters' cgroups by path, whatever their ids (they change with every
// boot); a cgroup known by its id only matches nothing. With ByCgroup, the rows keep them apart too.
func TestCompareCgroups(t *testing.T) {
	in := func(id uint64, path string, r capturetest.Record) capturetest.Record {
		r.CgroupID, r.Cgroup = id, path
		return r
	}
	mmap := capturetest.Rec("rwsem:W", "mmap_lock", "vm_mmap_pgoff+0xe0", "a", 10, 11, 0xffff888104d2a0c8, 100)
	b := capturetest.Of(t, 1e9, in(40, "/ctr/<b>a", mmap), in(41, "/ctr/b", mmap), in(42, "", mmap))
	a := capturetest.Of(t, 1e9, in(90, "/ctr/<b>a", mmap), in(91, "/ctr/c", mmap), in(42, "", mmap))
	var got []string
	for _, r := range capture.Compare(b, a, capture.DiffOptions{}).Cgroups {
		got = append(got, r.Status.String()+" "+r.Type+" "+r.Cgroup)
	}
	slices.Sort(got)
	want := []string{"gone rwsem:W /ctr/b", "gone rwsem:W cgroup id 42", "matched rwsem:W /ctr/<b>a", "new rwsem:W /ctr/c", "new rwsem:W cgroup id 42"}
	if !slices.Equal(got, want) {
		t.Errorf("rows by cgroup %q, want %q", got, want)
	}
	if rows := capture.Compare(b, a, capture.DiffOptions{}).Rows; len(rows) != 1 || rows[0].Status != capture.Matched || rows[0].Cgroup != "" {
		t.Errorf("without ByCgroup, the cgroups split the rows: %+v", rows)
	}
	d := capture.Compare(b, a, capture.DiffOptions{ByCgroup: true})
	if len(d.Rows) != len(want) {
		t.Errorf("with ByCgroup, %d rows, want one per cgroup and side as by cgroup: %d", len(d.Rows), len(want))
	}
}

func TestCompareLockFields(t *testing.T) {
	in := func(offset, field string, candidates []string, r capturetest.Record) capturetest.Record {
		r.ObjectOffset, r.Field, r.FieldCandidates = offset, field, candidates
		return r
	}
	rename := capturetest.Rec("mutex", "&kmalloc-2k", "lock_rename+0x2c", "mv", 10, 11, 0xffff888104c2a408, 100)
	other := capturetest.Rec("mutex", "&kmalloc-2k", "lock_rename+0x2c", "mv", 10, 11, 0xffff888104c2a808, 100)
	guess := []string{"super_block.s_vfs_rename_mutex", "kvm_arch.lock"}
	// Another boot, another kernel: the object's address and the field's offset moved.
	b := capturetest.Of(t, 1e9, in("0x408", "super_block.s_vfs_rename_mutex", guess, rename), in("0x8", "pipe_inode_info.mutex", nil, other))
	a := capturetest.Of(t, 1e9, in("0x410", "super_block.s_vfs_rename_mutex", nil, rename))
	var got []string
	for _, r := range capture.Compare(b, a, capture.DiffOptions{}).Locks {
		got = append(got, r.Status.String()+" "+r.Name)
	}
	slices.Sort(got)
	want := []string{"gone &kmalloc-2k (pipe_inode_info.mutex)", "matched &kmalloc-2k (super_block.s_vfs_rename_mutex)"}
	if !slices.Equal(got, want) {
		t.Errorf("locks by field %q, want %q", got, want)
	}
	// A capture without fields only knows the cache: its locks match the cache's, all merged.
	old := capturetest.Of(t, 1e9, rename)
	got = nil
	for _, r := range capture.Compare(old, b, capture.DiffOptions{}).Locks {
		got = append(got, r.Status.String()+" "+r.Name)
	}
	if want := []string{"matched &kmalloc-2k"}; !slices.Equal(got, want) {
		t.Errorf("against a capture without fields %q, want %q", got, want)
	}
}

// ownerID names an owner of a diff for comparisons in tests.
func ownerID(o capture.OwnerDiff) string {
	return fmt.Sprintf("%s %s|%s|%s|%s|%s|%s", o.Status, o.Type, o.Name, o.Comm, o.Reason, strings.Join(o.Stack, "<"), o.StackReason)
}

// owned is a known owner of the given thread and stack, charged total ns in count waits, split by
// states as state, total ns pairs.
func owned(typ, name, comm string, tid uint32, lock capture.Addr, stack []string, count, total uint64, states ...any) capture.Owner {
	o := capture.Owner{Type: typ, Lock: lock, Name: name, Comm: comm, PID: tid, TID: tid, Stack: stack, Count: count, TotalNS: total}
	if len(stack) == 0 {
		o.StackReason = capture.OwnerStackRan
	}
	for i := 0; i < len(states); i += 2 {
		o.States = append(o.States, capture.OwnerState{State: states[i].(string), Count: 1, TotalNS: states[i+1].(uint64)})
	}
	return o
}

// TestCompareOwners matches owners by lock type, lock name, thread name and stack functions, or
// by the reason an owner is unknown, after merging the entries of one capture that agree in those.
func TestCompareOwners(t *testing.T) {
	write := []string{"__schedule+0x618", "io_schedule+0x46", "ext4_buffered_write_iter+0x5c"}
	writeElsewhere := []string{"__schedule+0x610", "io_schedule+0x40", "ext4_buffered_write_iter+0x60"} // another kernel build
	resched := []string{"__schedule+0x618", "__cond_resched+0x2a", "generic_perform_write+0x11c"}
	module := []string{"__schedule+0x618", "0xffffffffc0a81234"}
	const inode, inode2 = capture.Addr(0xffff8881237e5a10), capture.Addr(0xffff8881237e6b20)
	tests := []struct {
		name          string
		before, after []capture.Owner
		hashed        bool
		want          []string
	}{{
		name: "the same thread name under other thread ids and locks merges, and matches at other offsets",
		before: []capture.Owner{
			owned("rwsem:W", "", "ct-hog", 11, inode, write, 2, 3_000, capture.OwnerDiskSleep, uint64(3_000)),
			owned("rwsem:W", "", "ct-hog", 12, inode2, write, 1, 1_000, capture.OwnerOnCPU, uint64(1_000)),
		},
		after: []capture.Owner{owned("rwsem:W", "", "ct-hog", 21, inode, writeElsewhere, 5, 8_000, capture.OwnerRunnable, uint64(8_000))},
		want:  []string{"matched rwsem:W||ct-hog||__schedule<io_schedule<ext4_buffered_write_iter|"},
	}, {
		name:   "another stack, another thread name or another lock name stays apart",
		before: []capture.Owner{owned("rwsem:W", "", "ct-hog", 11, inode, write, 1, 1_000)},
		after: []capture.Owner{
			owned("rwsem:W", "", "ct-hog", 11, inode, resched, 1, 2_000),
			owned("rwsem:W", "", "ct-hog2", 12, inode, write, 1, 3_000),
			owned("rwsem:W", "mmap_lock", "ct-hog", 11, inode, write, 1, 4_000),
			owned("rwsem:W", "", "ct-hog", 11, inode, nil, 1, 5_000),
		},
		want: []string{
			"gone rwsem:W||ct-hog||__schedule<io_schedule<ext4_buffered_write_iter|",
			"new rwsem:W||ct-hog||__schedule<__cond_resched<generic_perform_write|",
			"new rwsem:W||ct-hog||" + "|" + capture.OwnerStackRan,
			"new rwsem:W||ct-hog2||__schedule<io_schedule<ext4_buffered_write_iter|",
			"new rwsem:W|mmap_lock|ct-hog||__schedule<io_schedule<ext4_buffered_write_iter|",
		},
	}, {
		name: "unknown owners match by reason",
		before: []capture.Owner{
			{Type: "spinlock", Lock: 1, Name: "jiffies_lock", Reason: capture.OwnerNoField, Count: 2, TotalNS: 500},
			{Type: "spinlock", Lock: 2, Name: "jiffies_lock", Reason: capture.OwnerNoField, Count: 1, TotalNS: 100},
			{Type: "rwsem:R", Lock: inode, Reason: capture.OwnerReaders, Count: 1, TotalNS: 700},
		},
		after: []capture.Owner{
			{Type: "spinlock", Lock: 3, Name: "jiffies_lock", Reason: capture.OwnerNoField, Count: 1, TotalNS: 900},
			{Type: "rwsem:R", Lock: inode, Reason: capture.OwnerNone, Count: 1, TotalNS: 700},
		},
		want: []string{
			"matched spinlock|jiffies_lock||" + capture.OwnerNoField + "||",
			"gone rwsem:R|||" + capture.OwnerReaders + "||",
			"new rwsem:R|||" + capture.OwnerNone + "||",
		},
	}, {
		name:   "a stack with a raw address never matches, even with the same value",
		before: []capture.Owner{owned("mutex", "", "w", 1, 1, module, 1, 100), owned("mutex", "", "w", 2, 1, module, 1, 100)},
		after:  []capture.Owner{owned("mutex", "", "w", 1, 1, module, 1, 100)},
		want:   []string{"gone mutex||w||__schedule<0xffffffffc0a81234|", "new mutex||w||__schedule<0xffffffffc0a81234|"},
	}, {
		name:   "a stack through a rebuilt module matches at other offsets",
		before: []capture.Owner{owned("mutex", "", "w", 1, 1, []string{"__schedule+0x618", "xfs_ilock+0x4c [xfs]"}, 1, 100)},
		after:  []capture.Owner{owned("mutex", "", "w", 1, 1, []string{"__schedule+0x618", "xfs_ilock+0x58 [xfs]"}, 1, 100)},
		want:   []string{"matched mutex||w||__schedule<xfs_ilock [xfs]|"},
	}, {
		name:   "a stack with a hashed id never matches",
		hashed: true,
		before: []capture.Owner{owned("mutex", "", "w", 1, 1, []string{"__schedule+0x618", "000000001a2b3c4d"}, 1, 100)},
		after:  []capture.Owner{owned("mutex", "", "w", 1, 1, []string{"__schedule+0x618", "000000001a2b3c4d"}, 1, 100)},
		want:   []string{"gone mutex||w||__schedule<000000001a2b3c4d|", "new mutex||w||__schedule<000000001a2b3c4d|"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, a := capturetest.Of(t, 1e9), capturetest.Of(t, 1e9)
			b.Owners, a.Owners = tt.before, tt.after
			b.Meta.AddressesHashed, a.Meta.AddressesHashed = tt.hashed, tt.hashed
			d := capture.Compare(b, a, capture.DiffOptions{})
			var got []string
			for _, o := range d.Owners {
				got = append(got, ownerID(o))
			}
			want := slices.Clone(tt.want)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("owners\n%q\nwant\n%q", got, want)
			}
			// Every entry's waits are in exactly one owner of its side.
			for side, c := range d.Captures {
				var entries int
				var count, total float64
				for _, o := range d.Owners {
					v := []capture.OwnerDiffValues{o.Before, o.After}[side]
					entries, count, total = entries+v.Entries, count+v.Count, total+v.TotalNS
				}
				var wantCount, wantTotal uint64
				for _, o := range c.Owners {
					wantCount, wantTotal = wantCount+o.Count, wantTotal+o.TotalNS
				}
				if entries != len(c.Owners) || count != float64(wantCount) || total != float64(wantTotal) {
					t.Errorf("side %d: owners hold %d entries, %v waits and %v ns, want %d, %d and %d", side, entries, count, total, len(c.Owners), wantCount, wantTotal)
				}
			}
		})
	}
}

// TestCompareOwnerValues sums the states of merged entries, scales them per second as the rows,
// and keeps the heaviest entry's stack as captured.
func TestCompareOwnerValues(t *testing.T) {
	write := []string{"__schedule+0x618", "io_schedule+0x46"}
	b := capturetest.Of(t, 2e9)
	b.Owners = []capture.Owner{
		owned("rwsem:W", "", "ct-hog", 11, 1, write, 3, 6_000, capture.OwnerDiskSleep, uint64(4_000), capture.OwnerOnCPU, uint64(2_000)),
		owned("rwsem:W", "", "ct-hog", 12, 1, []string{"__schedule+0x610", "io_schedule+0x40"}, 1, 2_000, capture.OwnerOnCPU, uint64(2_000)),
		{Type: "spinlock", Lock: 2, Reason: capture.OwnerNoField, Count: 1, TotalNS: 10},
	}
	a := capturetest.Of(t, 4e9)
	a.Owners = []capture.Owner{{Type: "spinlock", Lock: 2, Reason: capture.OwnerNoField, Count: 4, TotalNS: 40}}
	d := capture.Compare(b, a, capture.DiffOptions{})
	if len(d.Owners) != 2 {
		t.Fatalf("owners %+v, want the writer gone and the spinlock matched", d.Owners)
	}
	hog := d.Owners[0]
	if hog.Status != capture.Gone || hog.Before.Count != 2 || hog.Before.TotalNS != 4_000 || hog.Before.Entries != 2 {
		t.Errorf("the writer per second of 2 s: %+v, want gone, 2 waits, 4000 ns, 2 entries", hog)
	}
	if !slices.Equal(hog.Before.Stack, write) {
		t.Errorf("the writer's stack %q, want the heaviest entry's as captured, %q", hog.Before.Stack, write)
	}
	// 4000 ns asleep and 4000 ns on a CPU of 8000 ns charged.
	if on, disk := hog.Before.Share(capture.OwnerOnCPU), hog.Before.Share(capture.OwnerDiskSleep); on != 0.5 || disk != 0.5 {
		t.Errorf("shares on_cpu %v, disk_sleep %v; want 0.5 and 0.5", on, disk)
	}
	if s := hog.After.Share(capture.OwnerOnCPU); !math.IsNaN(s) {
		t.Errorf("share on the side the owner is missing from: %v, want NaN", s)
	}
	spin := d.Owners[1]
	if spin.Status != capture.Matched || spin.Before.TotalNS != 5 || spin.After.TotalNS != 10 || spin.After.Count != 1 || spin.After.States != nil {
		t.Errorf("the spinlock's unknown owner: %+v, want matched, 5 -> 10 ns/s, 1 wait/s, no states", spin)
	}
	if s := spin.After.Share(capture.OwnerOnCPU); !math.IsNaN(s) {
		t.Errorf("an unknown owner's share of on_cpu %v, want NaN", s)
	}
}

// TestCompareOwnersMissing: a capture without owners (taken without --owners) is compared with no
// owner, rather than showing every owner of the other as new or gone.
func TestCompareOwnersMissing(t *testing.T) {
	with, without := capturetest.Of(t, 1e9), capturetest.Of(t, 1e9)
	with.Owners = []capture.Owner{owned("mutex", "", "w", 1, 1, nil, 1, 100)}
	for _, tt := range []struct {
		b, a    *capture.Capture
		missing [2]bool
	}{{with, without, [2]bool{false, true}}, {without, with, [2]bool{true, false}}, {without, without, [2]bool{true, true}}, {with, with, [2]bool{}}} {
		d := capture.Compare(tt.b, tt.a, capture.DiffOptions{})
		if got := d.OwnersMissing(); got != tt.missing {
			t.Errorf("OwnersMissing() = %v, want %v", got, tt.missing)
		}
		compared := tt.missing == [2]bool{}
		if d.OwnersCompared() != compared || (len(d.Owners) > 0) != compared {
			t.Errorf("missing %v: compared %v with %d owners", tt.missing, d.OwnersCompared(), len(d.Owners))
		}
	}
}
