package report

import (
	"bytes"
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
)

// withoutPeoplesLines is a summary without the headline and the next steps, which their own tests
// check (the TestHeadline tests, TestWriteSummaryNextSteps): the table and the lines under it.
func withoutPeoplesLines(out string) string {
	if head, rest, ok := strings.Cut(out, "\n\n"); ok && strings.Contains(strings.SplitN(head, "\n", 2)[0], "; top lock ") {
		out = rest
	}
	if i := strings.Index(out, "\n\nnext steps:\n"); i >= 0 {
		out = out[:i+1]
	}
	return out
}

// tableCells splits the summary's table, a header, a blank line and rows, into cells: columns are at
// least three spaces apart, and no cell of these tests has three spaces in it.
func tableCells(out string) [][]string {
	lines := strings.Split(withoutPeoplesLines(out), "\n")
	rows := [][]string{columnGap.Split(strings.TrimLeft(lines[0], " "), -1)}
	for _, line := range lines[2:] {
		if line == "" || strings.HasPrefix(line, "... ") || strings.HasPrefix(line, "filters keep ") {
			break
		}
		rows = append(rows, columnGap.Split(strings.TrimLeft(line, " "), -1))
	}
	return rows
}

var columnGap = regexp.MustCompile(` {3,}`)

// The summary by lock names a slab lock by its offset and struct field, "?" after a guess.
func TestWriteSummaryLockField(t *testing.T) {
	rename := capturetest.Rec("mutex", "&kmalloc-2k", "lock_rename+0x2c", "mv", 10, 11, 0xffff888104c2a408, 5_000)
	rename.ObjectOffset, rename.Field = "0x408", "super_block.s_vfs_rename_mutex"
	rename.FieldCandidates = []string{"super_block.s_vfs_rename_mutex", "kvm_arch.lock"}
	inode := capturetest.Rec("rwsem:W", "&ext4_inode_cache", "ext4_buffered_write_iter+0x3c", "dd", 12, 12, 0xffff8881237e5a10, 9_000)
	inode.ObjectOffset, inode.Field = "0x1a8", "ext4_inode_info.vfs_inode.i_rwsem"
	var b bytes.Buffer
	if err := WriteSummary(&b, capturetest.Of(t, 1e9, rename, inode), SummaryOptions{By: "lock", Fields: []capture.GroupStat{capture.StatWaitTotal}, RawAddresses: true}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, row := range tableCells(b.String())[1:] {
		names = append(names, row[2])
	}
	want := []string{"&ext4_inode_cache+0x1a8 (ext4_inode_info.vfs_inode.i_rwsem)", "&kmalloc-2k+0x408 (super_block.s_vfs_rename_mutex?)"}
	if !slices.Equal(names, want) {
		t.Errorf("names %q, want %q:\n%s", names, want, b.String())
	}
}

// TestWriteSummaryViews sorts every grouping by every key and shows that key only: the column holds
// the groups' values, computed here from the records, largest first.
func TestWriteSummaryViews(t *testing.T) {
	c, _ := knownCapture(t)
	keys := map[string]func(capture.Record) string{
		"caller": func(r capture.Record) string { return r.Type + "\x00" + r.Caller },
		"thread": func(r capture.Record) string { return fmt.Sprint(r.PID, r.TID) },
		"lock":   func(r capture.Record) string { return r.Type + "\x00" + r.Lock.String() },
		"cgroup": func(r capture.Record) string { return fmt.Sprint(r.CgroupID) },
	}
	heads := map[string][]string{"caller": {"type", "caller"}, "thread": {"pid", "tid", "comm"}, "lock": {"lock", "name", "type"}, "cgroup": {"cgroup"}}
	for _, v := range summaryViews { // the groupings of records; owners have their own test
		by := v.name
		type sums struct{ count, total, spin, max, min uint64 }
		groups := map[string]*sums{}
		for _, r := range c.Records {
			g := groups[keys[by](r)]
			if g == nil {
				g = &sums{min: r.MinNS}
				groups[keys[by](r)] = g
			}
			g.count += r.Count
			g.total += r.TotalNS
			g.spin += r.SpinNS
			g.max, g.min = max(g.max, r.MaxNS), min(g.min, r.MinNS)
		}
		for _, s := range capture.GroupStats {
			var values []float64
			for _, g := range groups {
				values = append(values, map[capture.GroupStat]float64{
					capture.StatContended: float64(g.count), capture.StatWaitTotal: float64(g.total),
					capture.StatWaitMax: float64(g.max), capture.StatWaitMin: float64(g.min),
					capture.StatAvgWait: float64(g.total) / float64(g.count), capture.StatSpinTotal: float64(g.spin),
				}[s])
			}
			slices.SortFunc(values, func(a, b float64) int { return cmp.Compare(b, a) })
			want := []string{statHeading(s, measureOf(c.Meta))}
			for _, v := range values {
				if s == capture.StatContended {
					want = append(want, strconv.FormatFloat(v, 'f', 0, 64))
				} else {
					want = append(want, FormatDuration(v))
				}
			}

			var b bytes.Buffer
			if err := WriteSummary(&b, c, SummaryOptions{By: by, Sort: s, Fields: []capture.GroupStat{s}}); err != nil {
				t.Fatal(err)
			}
			rows := tableCells(b.String())
			// perf's numbers come before the columns that say what a row is, klockstat's after them.
			column, wantHeads := 0, rows[0][1:]
			if !perfStat(s) {
				column, wantHeads = len(rows[0])-1, rows[0][:len(rows[0])-1]
			}
			var got []string
			for _, row := range rows {
				got = append(got, row[column])
			}
			if !slices.Equal(got, want) {
				t.Errorf("--by %s -k %s -F %s: column %q, want %q", by, s, s, got, want)
			}
			if !slices.Equal(wantHeads, heads[by]) {
				t.Errorf("--by %s: header %q, want the %s and %q", by, rows[0], s, heads[by])
			}
		}
	}
}

// TestWriteSummaryFields shows the fields asked for, in the order asked for.
func TestWriteSummaryFields(t *testing.T) {
	c, _ := knownCapture(t)
	fields := []capture.GroupStat{capture.StatWaitMin, capture.StatContended, capture.StatAvgWait}
	var b bytes.Buffer
	if err := WriteSummary(&b, c, SummaryOptions{Fields: fields}); err != nil {
		t.Fatal(err)
	}
	want := []string{"min wait", "contended", "avg wait", "type", "caller"}
	if got := tableCells(b.String())[0]; !slices.Equal(got, want) {
		t.Errorf("header %q, want %q", got, want)
	}
}

// TestWriteSummaryFilter: the table holds only what the filter keeps, and says how much that is.
func TestWriteSummaryFilter(t *testing.T) {
	c, _ := knownCapture(t)
	f, err := capture.NewFilter([]string{"mmap_lock"}, []string{"down_write"})
	if err != nil {
		t.Fatal(err)
	}
	var kept, keptNS, allNS uint64
	callers := map[string]bool{}
	for _, r := range c.Records {
		allNS += r.TotalNS
		if r.Name == "mmap_lock" && strings.Contains(strings.Join(r.Stack, "\n"), "down_write") {
			kept++
			keptNS += r.TotalNS
			callers[r.Caller] = true
		}
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, c, SummaryOptions{Filter: f}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if rows := tableCells(out); len(rows)-1 != len(callers) {
		t.Errorf("%d rows, want one per caller of the %d records kept:\n%s", len(rows)-1, kept, out)
	}
	want := fmt.Sprintf("filters keep %d of %d records: %s of the %s waited\n", kept, len(c.Records), FormatDuration(float64(keptNS)), FormatDuration(float64(allNS)))
	if !strings.Contains(out, want) {
		t.Errorf("want %q in:\n%s", want, out)
	}

	none, _ := capture.NewFilter([]string{"no_such_lock"}, nil)
	b.Reset()
	if err := WriteSummary(&b, c, SummaryOptions{Filter: none}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "no contention matches the filters\nfilters keep 0 of ") {
		t.Errorf("a filter that keeps nothing:\n%s", b.String())
	}
}

func TestSummaryOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    SummaryOptions
		want string
	}{
		{SummaryOptions{By: "owners"}, `unknown grouping "owners": want one of caller, thread, lock, cgroup, owner`},
		{SummaryOptions{Sort: "wait"}, `unknown sort key "wait"`},
		{SummaryOptions{Fields: []capture.GroupStat{"contended", "total"}}, `unknown field "total"`},
	} {
		if err := tc.o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error containing %q", tc.o, err, tc.want)
		}
		if err := WriteSummary(&bytes.Buffer{}, &capture.Capture{}, tc.o); err == nil {
			t.Errorf("WriteSummary(%+v) succeeded", tc.o)
		}
	}
	if err := (SummaryOptions{}).Validate(); err != nil {
		t.Errorf("the zero options: %v", err)
	}
}

// TestWriteSummaryVarious: a thread that renamed itself, or a lock group whose records differ in name,
// says "various" rather than one of the names.
func TestWriteSummaryVarious(t *testing.T) {
	c, _ := knownCapture(t)
	comms := map[string]map[string]bool{} // pid and tid -> thread names
	for _, r := range c.Records {
		k := fmt.Sprint(r.PID, " ", r.TID)
		if comms[k] == nil {
			comms[k] = map[string]bool{}
		}
		comms[k][sanitize(r.Comm)] = true
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, c, SummaryOptions{By: "thread"}); err != nil {
		t.Fatal(err)
	}
	renamed := 0
	n := slices.IndexFunc(DefaultFields, func(s capture.GroupStat) bool { return !perfStat(s) }) // the cells before the thread's
	for _, row := range tableCells(b.String())[1:] {
		pid, tid, want := row[n], row[n+1], row[n+2]
		names := comms[pid+" "+tid]
		if len(names) > 1 {
			renamed++
			if want != "various" {
				t.Errorf("thread %s %s with names %v shows %q", pid, tid, names, want)
			}
		} else if !names[want] {
			t.Errorf("thread %s %s shows %q, not its name %v", pid, tid, want, names)
		}
	}
	if renamed == 0 {
		t.Fatal("the fixture has no thread of two names: the test proves nothing")
	}
}

// TestWriteSummarySpinOfAcquires shows no spin for the function-probe backends, which time whole
// acquires: a zero would claim they never spun.
func TestWriteSummarySpinOfAcquires(t *testing.T) {
	c, _ := knownCapture(t)
	c.Meta.Acquire = &capture.Acquire{ThresholdNS: 1000}
	for i := range c.Records {
		c.Records[i].SpinNS = 0
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, c, SummaryOptions{Fields: []capture.GroupStat{capture.StatSpinTotal, capture.StatWaitTotal}}); err != nil {
		t.Fatal(err)
	}
	rows := tableCells(b.String())
	if rows[0][len(rows[0])-1] != "spinning" || len(rows) < 2 {
		t.Fatalf("no spinning column last in\n%s", b.String())
	}
	for _, row := range rows[1:] {
		if spin := row[len(row)-1]; spin != "-" {
			t.Errorf("an acquire row shows spinning %q, want -", spin)
		}
	}
}

// TestWriteSummaryByOwner ranks the owners by the wait charged to them, with their states as shares
// of it, and names unknown owners by reason; a hostile thread name cannot drive the terminal.
func TestWriteSummaryByOwner(t *testing.T) {
	c, _ := knownCapture(t)
	c.Owners = []capture.Owner{
		{Type: "rwsem:W", Lock: 0xffff8881237e5a10, Comm: "evil\x1b[2J", PID: 3150, TID: 3164, Count: 4, TotalNS: 8_000_000,
			Stack:  []string{"__schedule+0x618", "schedule+0x27", "io_schedule+0x46", "folio_wait_bit_common+0x13d", "evil\x1b[2J+0x1"},
			States: []capture.OwnerState{{State: capture.OwnerDiskSleep, Count: 3, TotalNS: 6_000_000}, {State: capture.OwnerOnCPU, Count: 1, TotalNS: 2_000_000}}},
		{Type: "rwsem:W", Lock: 0xffff8881237e5a10, Comm: "evil\x1b[2J", PID: 3150, TID: 3164, Count: 2, TotalNS: 3_000_000,
			StackReason: capture.OwnerStackRan, States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 2, TotalNS: 3_000_000}}},
		{Type: "spinlock", Lock: 0xffff88813bd2f1c0, Name: "runqueues+0x1c0", Reason: capture.OwnerNoField, Count: 7, TotalNS: 11_564},
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, c, SummaryOptions{By: OwnerView, Top: 3, RawAddresses: true}); err != nil {
		t.Fatal(err)
	}
	rows := tableCells(b.String())
	want := [][]string{
		{"waits", "total wait", "owner state", "type", "lock", "name", "owner", "owner stack"},
		{"4", "8.00 ms", "disk_sleep 75%, on_cpu 25%", "rwsem:W", "0xffff8881237e5a10", "-", "evil?[2J 3150/3164", "io_schedule+0x46 < folio_wait_bit_common+0x13d < evil?[2J+0x1"},
		{"2", "3.00 ms", "on_cpu 100%", "rwsem:W", "0xffff8881237e5a10", "-", "evil?[2J 3150/3164", "none: " + capture.OwnerStackRan},
		{"7", "11.56 us", "-", "spinlock", "0xffff88813bd2f1c0", "runqueues+0x1c0", "unknown: " + capture.OwnerNoField, "-"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("owner table\n got %q\nwant %q\n%s", rows, want, b.String())
	}
	if strings.Contains(b.String(), "more owner") {
		t.Errorf("owners left out of a table of all three:\n%s", b.String())
	}
	b.Reset()
	if err := WriteSummary(&b, c, SummaryOptions{By: OwnerView, Top: 1}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "... 2 more owners not shown") {
		t.Errorf("the owner left out is not mentioned:\n%s", b.String())
	}
	b.Reset()
	if err := WriteSummary(&b, c, SummaryOptions{By: OwnerView}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "unknown: "+capture.OwnerNoField) {
		t.Errorf("no unknown owner with its reason:\n%s", b.String())
	}
	ext4, err := capture.NewFilter(nil, []string{"ext4"})
	if err != nil {
		t.Fatal(err)
	}
	err = WriteSummary(&b, c, SummaryOptions{By: OwnerView, Filter: ext4})
	if err == nil || !strings.Contains(err.Error(), "--by owner takes no lock, type, thread, cgroup or callstack filter") {
		t.Errorf("a filter with --by owner: %v", err)
	}
	c.Owners = nil
	b.Reset()
	if err := WriteSummary(&b, c, SummaryOptions{By: OwnerView}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(withoutPeoplesLines(b.String()), "no lock owners in this capture: capture with --owners\n") {
		t.Errorf("a capture without owners:\n%s", b.String())
	}
}

// TestWriteSummaryHashesAddresses: by default the summary shows kernel addresses (callers and frames
// kallsyms could not name, locks, owners' stacks) as the ids the HTML report and the exports of the
// same key show, in every grouping that has them, and leaves the capture as it was; RawAddresses
// shows the addresses.
func TestWriteSummaryHashesAddresses(t *testing.T) {
	c, _ := knownCapture(t)
	ownerFrame := capture.Addr(0xffffffffc0a85678)
	c.Owners = []capture.Owner{{Type: "rwsem:W", Lock: 0xffff8881237e5a10, Comm: "ct-inode-0", PID: 3150, TID: 3164, Count: 1, TotalNS: 10,
		Stack: []string{"io_schedule+0x46", ownerFrame.String()}, States: []capture.OwnerState{{State: capture.OwnerOnCPU, Count: 1, TotalNS: 10}}}}
	key := []byte("the key of one capture's outputs")
	ids := capture.NewAddressHasher(key)
	shown := map[string][]capture.Addr{ // the addresses each grouping shows
		"caller":  {0xffffffffc0a81234},
		OwnerView: {0xffff8881237e5a10, ownerFrame},
	}
	for _, r := range c.Records {
		shown["lock"] = append(shown["lock"], r.Lock)
	}
	for by, addrs := range shown {
		var raw, hashed bytes.Buffer
		if err := WriteSummary(&raw, c, SummaryOptions{By: by, RawAddresses: true}); err != nil {
			t.Fatal(err)
		}
		if err := WriteSummary(&hashed, c, SummaryOptions{By: by, AddressKey: key}); err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			if !strings.Contains(raw.String(), a.String()) {
				t.Errorf("--by %s --raw-addresses: no %s in\n%s", by, a, raw.String())
			}
			if id := ids.ID(a).HashedString(); !strings.Contains(hashed.String(), id) {
				t.Errorf("--by %s: no id %s of %s, as the report shows it, in\n%s", by, id, a, hashed.String())
			}
		}
		if strings.Contains(hashed.String(), "0xffff") {
			t.Errorf("--by %s: a kernel address in\n%s", by, hashed.String())
		}
		var drawn bytes.Buffer // a key of its own when none is given
		if err := WriteSummary(&drawn, c, SummaryOptions{By: by}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(drawn.String(), "0xffff") {
			t.Errorf("--by %s without a key: a kernel address in\n%s", by, drawn.String())
		}
	}
	if c.Meta.AddressesHashed || c.Records[9].Caller != "0xffffffffc0a81234" || c.Owners[0].Stack[1] != ownerFrame.String() {
		t.Error("writing the summary hashed the capture itself")
	}
}

// An owner that was runnable as the waits began had left its CPU: the summary must not say it
// never did, as the page does not.
func TestOwnerStackTextAgreesWithState(t *testing.T) {
	for _, c := range []struct {
		states []string
		want   string
	}{
		{[]string{capture.OwnerOnCPU}, "none: " + capture.OwnerStackRan},
		{[]string{capture.OwnerRunnable}, "none: the owner was already off its CPU"},
	} {
		got := ownerStackText(nil, capture.OwnerStackRan, c.states)
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("states %v: owner stack %q, want it to start %q", c.states, got, c.want)
		}
	}
	if got := ownerStackText([]string{"__schedule+0x1", "rwsem_down_write_slowpath+0x2"}, "", nil); got != "rwsem_down_write_slowpath+0x2" {
		t.Errorf("owner stack %q, want the scheduler's frame left out", got)
	}
}

// TestWriteSummaryTypeThreadCgroupFilters: perf's -Y (a type, or a type without ":R"/":W" for both),
// --tid and -G (a cgroup and its descendants) keep the records they name, and the summary says how
// much that is.
func TestWriteSummaryTypeThreadCgroupFilters(t *testing.T) {
	c, _ := knownCapture(t)
	tid, cgroup := c.Records[0].TID, c.Records[0].Cgroup
	parent := cgroup[:strings.LastIndex(cgroup, "/")]
	for _, tc := range []struct {
		name  string
		o     SummaryOptions
		keeps func(capture.Record) bool
	}{
		{"-Y rwsem", SummaryOptions{Types: []string{"rwsem"}}, func(r capture.Record) bool { return strings.HasPrefix(r.Type, "rwsem:") }},
		{"-Y mutex,rwsem:R", SummaryOptions{Types: []string{"mutex", "rwsem:R"}}, func(r capture.Record) bool { return r.Type == "mutex" || r.Type == "rwsem:R" }},
		{"--tid", SummaryOptions{TIDs: []uint32{tid}}, func(r capture.Record) bool { return r.TID == tid }},
		{"-G parent", SummaryOptions{Cgroups: []string{parent + "/"}}, func(r capture.Record) bool { return strings.HasPrefix(r.Cgroup, parent+"/") }},
	} {
		var kept []capture.Record
		for _, r := range c.Records {
			if tc.keeps(r) {
				kept = append(kept, r)
			}
		}
		if len(kept) == 0 || len(kept) == len(c.Records) {
			t.Fatalf("%s: the fixture has %d of %d records to keep: the case proves nothing", tc.name, len(kept), len(c.Records))
		}
		if got := tc.o.Select(c).Records; !slices.EqualFunc(got, kept, func(a, b capture.Record) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
			t.Errorf("%s: Select keeps %d records, want %d", tc.name, len(got), len(kept))
		}
		var b bytes.Buffer
		if err := WriteSummary(&b, c, tc.o); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("filters keep %d of %d records", len(kept), len(c.Records)); !strings.Contains(b.String(), want) {
			t.Errorf("%s: want %q in\n%s", tc.name, want, b.String())
		}
	}
}

// TestWriteSummaryRowsOnly is perf's -q: the rows as the table shows them, and nothing else.
func TestWriteSummaryRowsOnly(t *testing.T) {
	c, _ := knownCapture(t)
	c.Owners = []capture.Owner{
		{Type: "rwsem:W", Lock: 0xffff8881237e5a10, Comm: "writer", PID: 3150, TID: 3164, Count: 4, TotalNS: 8_000_000, StackReason: capture.OwnerStackRan},
		{Type: "spinlock", Lock: 0xffff88813bd2f1c0, Reason: capture.OwnerNoField, Count: 7, TotalNS: 11_564},
	}
	for _, by := range SummaryViews() {
		var full, rows bytes.Buffer
		o := SummaryOptions{By: by, Top: 1, RawAddresses: true}
		if err := WriteSummary(&full, c, o); err != nil {
			t.Fatal(err)
		}
		o.RowsOnly = true
		if err := WriteSummary(&rows, c, o); err != nil {
			t.Fatal(err)
		}
		// The full summary's header, blank line, then its row.
		want := strings.Split(withoutPeoplesLines(full.String()), "\n")[2] + "\n"
		if rows.String() != want {
			t.Errorf("--by %s, rows only:\n%q\nwant the one row of the table\n%q", by, rows.String(), want)
		}
	}
}

// TestWriteSummarySeparated is perf's -x: a "# output:" header of perf's columns then klockstat's,
// raw numbers separated as the header is, and every other line a comment.
func TestWriteSummarySeparated(t *testing.T) {
	c, _ := knownCapture(t)
	c.Records[0].Comm = "a;b" // a separator inside a cell stays one cell
	for _, by := range []string{"caller", "thread"} {
		var b bytes.Buffer
		if err := WriteSummary(&b, c, SummaryOptions{By: by, Separator: ";", RawAddresses: true}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		heads := []string{"contended", "total wait", "max wait", "avg wait"}
		view, _ := summaryViewOf(by)
		if want := "# output: " + strings.Join(slices.Concat(heads, view.heads, []string{"spinning"}), "; "); lines[0] != want {
			t.Errorf("--by %s: header %q, want %q", by, lines[0], want)
		}
		groups := capture.GroupBy(c.Records, view.key)
		capture.SortGroups(groups, capture.StatWaitTotal)
		rows := 0
		for _, line := range lines[1:] {
			if line == "" || strings.HasPrefix(line, "# ") {
				continue
			}
			cells := strings.Split(line, "; ")
			if len(cells) != len(heads)+len(view.heads)+1 {
				t.Errorf("--by %s: row %q has %d cells, the header %d", by, line, len(cells), len(heads)+len(view.heads)+1)
				continue
			}
			g := groups[rows]
			if want := []string{fmt.Sprint(g.Count), fmt.Sprint(g.TotalNS), fmt.Sprint(g.MaxNS)}; !slices.Equal(cells[:3], want) {
				t.Errorf("--by %s: row %q, want the raw numbers %q", by, line, want)
			}
			rows++
		}
		if rows != len(groups) || !strings.Contains(b.String(), "\n# "+healthLine(c.Meta, len(c.Records))+"\n") {
			t.Errorf("--by %s: %d rows of %d groups, and want the health line as a comment:\n%s", by, rows, len(groups), b.String())
		}
	}
}
