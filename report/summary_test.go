package report

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
)

// summaryCapture has five caller groups: one with very wide numbers, one with a caller that tries to
// clear the screen, one without a caller and one merged from two records.
func summaryCapture() *capture.Capture {
	return &capture.Capture{
		Version: capture.FormatVersion,
		Meta: capture.Meta{
			CPUs: 1, DurationNS: 1_000_000_000,
			Events:   capture.Events{Begin: 1000, Waits: 990, InProgress: 2},
			Programs: []capture.ProgramStats{{Name: "contention_begin", RunTimeNS: 600_000}, {Name: "contention_end", RunTimeNS: 400_000}},
			Warnings: []string{"thread \x1b]0;pwned\x07 renamed itself", "stack map too small"},
		},
		Records: []capture.Record{
			{Type: "spinlock", Caller: "c+0x1", Count: 1, TotalNS: 10, MinNS: 10, MaxNS: 10},
			{Type: "spinlock", Caller: "b+0x1", PID: 1, TID: 1, Count: 2, TotalNS: 500, MinNS: 200, MaxNS: 300},
			{Type: "rwsem", Caller: "", Count: 1, TotalNS: 812, MinNS: 812, MaxNS: 812},
			{Type: "mutex", Caller: "\x1b[2Jevil\u202e+0x1", Comm: "\x1b[31m", Count: 3, TotalNS: 3_000_000, MinNS: 100_000, MaxNS: 2_500_000},
			{Type: "spinlock", Caller: "b+0x1", PID: 1, TID: 2, Count: 2, TotalNS: 700, MinNS: 300, MaxNS: 400},
			{Type: "spinlock", Caller: "a_very_long_function_name+0x1234", Count: 123456789012, TotalNS: 7_200_000_000_000, MinNS: 1, MaxNS: 3_600_000_000_000},
		},
	}
}

// summary is the summary of c's top n groups without its headline and next steps.
func summary(t *testing.T, c *capture.Capture, n int) string {
	t.Helper()
	return withoutPeoplesLines(written(t, func(w io.Writer) error { return WriteSummary(w, c, SummaryOptions{Top: n}) }))
}

// written is what write writes.
func written(t *testing.T, write func(io.Writer) error) string {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// cellEnds returns where each cell ends in line, searching each after the previous one.
func cellEnds(t *testing.T, line string, cells []string) []int {
	t.Helper()
	var ends []int
	from := 0
	for _, cell := range cells {
		i := strings.Index(line[from:], cell)
		if i < 0 {
			t.Fatalf("line %q lacks %q after column %d", line, cell, from)
		}
		from += i + len(cell)
		ends = append(ends, from)
	}
	return ends
}

func TestWriteSummaryTable(t *testing.T) {
	out := summary(t, summaryCapture(), 4)
	lines := strings.Split(out, "\n")
	// perf's columns in perf's order, then klockstat's spinning.
	header := []string{"contended", "total wait", "max wait", "avg wait", "type", "caller", "spinning"}
	// Groups by total wait, with the two b+0x1 records merged.
	rows := [][]string{
		{"123456789012", FormatDuration(7_200_000_000_000), FormatDuration(3_600_000_000_000), FormatDuration(7_200_000_000_000 / 123456789012.0), "spinlock", "a_very_long_function_name+0x1234", "0 ns"},
		{"3", FormatDuration(3_000_000), FormatDuration(2_500_000), FormatDuration(1_000_000), "mutex", "?[2Jevil?+0x1", "0 ns"},
		{"4", FormatDuration(1200), FormatDuration(400), FormatDuration(300), "spinlock", "b+0x1", "0 ns"},
		{"1", FormatDuration(812), FormatDuration(812), FormatDuration(812), "rwsem", "[unknown]", "0 ns"},
	}
	if len(lines) < len(rows)+3 || lines[1] != "" {
		t.Fatalf("want a header, a blank line and %d rows:\n%s", len(rows), out)
	}
	want := cellEnds(t, lines[0], header)
	const caller = 5
	callerStart := want[caller] - len("caller")
	for i, row := range rows {
		line := lines[i+2]
		got := cellEnds(t, line, row)
		// Right-aligned columns end where their header ends; the caller starts where its header starts.
		for col := range row {
			if col != caller && got[col] != want[col] {
				t.Errorf("row %d column %q ends at %d, header at %d:\n%s\n%s", i, header[col], got[col], want[col], lines[0], line)
			}
		}
		if start := got[caller] - len(row[caller]); start != callerStart {
			t.Errorf("row %d: caller at %d, header at %d:\n%s\n%s", i, start, callerStart, lines[0], line)
		}
	}
	if lines[6] != "... 1 more caller not shown" {
		t.Errorf("line after the table = %q, want the count of omitted groups", lines[6])
	}
	if strings.Contains(out, "c+0x1") {
		t.Errorf("the smallest group is shown despite n=4:\n%s", out)
	}
}

func TestWriteSummaryAll(t *testing.T) {
	for _, n := range []int{0, 5, 100} {
		out := summary(t, summaryCapture(), n)
		if !strings.Contains(out, "c+0x1") || strings.Contains(out, "not shown") {
			t.Errorf("n=%d: want all five groups and no omission line:\n%s", n, out)
		}
	}
}

func TestWriteSummaryHealth(t *testing.T) {
	c := summaryCapture()
	out := summary(t, c, 0)
	// 1 ms of probe time over 1000 events, and over 1 s on 1 CPU.
	wantHealth := "1000 contention events in 1.00 s, 990 waits (2 in progress); probe cost 1000 ns/event, 0.10% CPU"
	if !strings.Contains(out, "\n"+wantHealth+"\n") {
		t.Errorf("health line missing, want %q:\n%s", wantHealth, out)
	}
	if strings.Contains(out, "lost") {
		t.Errorf("lost events mentioned although none were lost:\n%s", out)
	}

	c.Meta.Lost = []capture.Lost{{Reason: "aggregation map full", Count: 5}, {Reason: "stack map full", Count: 2}}
	out = summary(t, c, 0)
	if want := ", 990 waits (2 in progress), 7 lost (aggregation map full: 5, stack map full: 2); "; !strings.Contains(out, want) {
		t.Errorf("want %q in:\n%s", want, out)
	}

	// An idle machine: a few events, and threads exiting all the while. Under minCostEvents the
	// first runs' cold caches and first stack walks would pass for a cost per event.
	for _, events := range []uint64{1, minCostEvents - 1} {
		idle := summaryCapture()
		idle.Meta.Events.Begin = events
		idle.Meta.Programs = []capture.ProgramStats{
			{Name: "tp_contention_begin", RunCount: events, RunTimeNS: 1_000_000, Begins: true},
			{Name: "raw_thread_free", RunCount: 400, RunTimeNS: 160_000, Hook: "sched_process_free"},
			{Name: "raw_owner_switch", RunCount: 2000, RunTimeNS: 300_000, Hook: "sched_switch"},
			{Name: "raw_tree_fork", RunCount: 30, RunTimeNS: 9_000, Hook: "sched_process_fork"},
		}
		out = summary(t, idle, 0)
		want := fmt.Sprintf("probe cost 1.47 ms in all (%d %s, too few for a cost per event: %d at least), 0.15%% CPU; 400 thread exits at 400 ns; 2000 context switches at 150 ns; 30 forks at 300 ns\n",
			events, plural(int(events), "event", "events"), minCostEvents)
		if !strings.Contains(out, want) {
			t.Errorf("%d events: want %q in:\n%s", events, want, out)
		}
		if strings.Contains(out, "ns/event") {
			t.Errorf("%d events: a cost per event is given:\n%s", events, out)
		}
	}

	// Sampled statistics: the cost over the runs of the samples, the share over their time, and
	// the runs counted as samples; the threshold applies to the events measured, not to all.
	sampled := summaryCapture()
	sampled.Meta.Events.Begin = 20 * minCostEvents
	sampled.Meta.ProgramsMeasuredNS = 100_000_000
	sampled.Meta.Programs = []capture.ProgramStats{
		{Name: "tp_contention_begin", RunCount: 2 * minCostEvents, RunTimeNS: 1_500_000, Begins: true},
		{Name: "tp_contention_end", RunCount: 2 * minCostEvents, RunTimeNS: 500_000},
		{Name: "raw_thread_free", RunCount: 40, RunTimeNS: 16_000, Hook: "sched_process_free"},
	}
	if out, want := summary(t, sampled, 0), "; probe cost 1000 ns/event, 2.02% CPU, sampled 10% of the time; 40 sampled thread exits at 400 ns\n"; !strings.Contains(out, want) {
		t.Errorf("sampled: want %q in:\n%s", want, out)
	}
	sampled.Meta.Programs[0].RunCount = minCostEvents - 1
	out = summary(t, sampled, 0)
	if want := fmt.Sprintf("; probe cost 2.02 ms in the samples (%d events, too few for a cost per event: %d at least), 2.02%% CPU, sampled 10%% of the time;", minCostEvents-1, minCostEvents); !strings.Contains(out, want) {
		t.Errorf("sampled, %d events measured of %d: want %q in:\n%s", minCostEvents-1, sampled.Meta.Events.Begin, want, out)
	}

	// A quiet machine's few events all outside the windows: measured, and none counted.
	for i := range sampled.Meta.Programs {
		sampled.Meta.Programs[i].RunCount, sampled.Meta.Programs[i].RunTimeNS = 0, 0
	}
	if out, want := summary(t, sampled, 0), "; probe cost no run counted in the 10% of the time sampled\n"; !strings.Contains(out, want) {
		t.Errorf("sampled, no run counted: want %q in:\n%s", want, out)
	}

	c.Meta.Programs = nil
	if out := summary(t, c, 0); !strings.Contains(out, "probe cost not measured") {
		t.Errorf("probe cost without run times:\n%s", out)
	}
}

func TestWriteSummaryWarningsAndControlCharacters(t *testing.T) {
	out := summary(t, summaryCapture(), 0)
	for _, bad := range []string{"\x1b", "\x07", "\u202e"} {
		if strings.Contains(out, bad) {
			t.Errorf("output contains %q:\n%q", bad, out)
		}
	}
	if !strings.HasSuffix(out, "\nwarning: thread ?]0;pwned? renamed itself\nwarning: stack map too small\n") {
		t.Errorf("warnings not printed last, one per line and neutralised:\n%s", out)
	}
}

func TestWriteSummaryEmpty(t *testing.T) {
	out := summary(t, &capture.Capture{}, 10)
	if !strings.HasPrefix(out, "no lock contention recorded\n") {
		t.Errorf("empty capture:\n%s", out)
	}
}

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		ns   float64
		want string
	}{
		{0, "0 ns"},
		{812, "812 ns"},
		{999, "999 ns"},
		{999.4, "999 ns"},
		{999.5, "1.00 us"}, // rounds to 1000 ns
		{1000, "1.00 us"},
		{15_640, "15.64 us"},
		{999_990, "999.99 us"},
		{999_996, "1.00 ms"}, // would be 1000.00 us
		{1_040_000, "1.04 ms"},
		{999_990_000, "999.99 ms"},
		{999_999_999, "1.00 s"},
		{2_500_000_000, "2.50 s"},
		{3_600_000_000_000, "3600.00 s"},
		{-1500, "-1.50 us"},
		{-0.2, "0 ns"},
	} {
		if got := FormatDuration(tc.ns); got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.ns, got, tc.want)
		}
	}
}

// A sum that saturates shows as a lower bound, not as the small number it would wrap around to.
func TestWriteSummarySaturatedSums(t *testing.T) {
	out := summary(t, saturatingCapture(t), 0)
	if !strings.Contains(out, ">=18446744073709551615") {
		t.Errorf("saturated count not flagged:\n%s", out)
	}
}

func TestHookRunsCountsOneAsOne(t *testing.T) {
	cases := []struct {
		event string
		n     uint64
		want  string
	}{
		{"sched_process_free", 1, "thread exit"},
		{"sched_process_free", 2, "thread exits"},
		{"sched_switch", 1, "context switch"},
		{"sched_process_fork", 5, "forks"},
		{"sched_wakeup", 1, "sched_wakeup run"},
	}
	for _, c := range cases {
		if got := hookRuns(c.event, c.n); got != c.want {
			t.Errorf("hookRuns(%q, %d) = %q, want %q", c.event, c.n, got, c.want)
		}
	}
}

// unseenSpin is the reason a capture of a guest without paravirtual spinlocks gives.
var unseenSpin = []capture.UnseenType{{Type: "spinlock", Reason: "this guest spins in virt_spin_lock() without paravirtual spinlocks, before the contention tracepoint"}}

// A capture whose kernel could not show spinlock waits says so after its health line, in plain
// words, and a summary filtered to spinlocks does not pass their absence for no contention.
func TestWriteSummaryUnseen(t *testing.T) {
	c := summaryCapture()
	c.Records = slices.DeleteFunc(c.Records, func(r capture.Record) bool { return r.Type == "spinlock" })
	c.Meta.Unseen = unseenSpin
	out := summary(t, c, 0)
	const want = "\nspinlock waits cannot be seen on this kernel: this guest spins in virt_spin_lock() without paravirtual spinlocks, before the contention tracepoint\nwarning: "
	if !strings.Contains(out, want) {
		t.Errorf("want %q between the health line and the warnings in:\n%s", want, out)
	}
	filtered := written(t, func(w io.Writer) error { return WriteSummary(w, c, SummaryOptions{Types: []string{"spinlock"}}) })
	if !strings.Contains(filtered, "no contention matches the filters, and spinlock waits cannot be seen on this kernel (below)\n") {
		t.Errorf("a spinlock filter on a capture that could not see them:\n%s", filtered)
	}
	mutexes := written(t, func(w io.Writer) error { return WriteSummary(w, c, SummaryOptions{Types: []string{"rwsem:W"}}) })
	if !strings.Contains(mutexes, "no contention matches the filters\n") {
		t.Errorf("a filter on a type the kernel shows blames the unseen spinlocks:\n%s", mutexes)
	}

	c.Meta.Unseen = nil
	if out := summary(t, c, 0); strings.Contains(out, "cannot be seen") {
		t.Errorf("a capture that saw every type says one is unseen:\n%s", out)
	}
}

// A capture whose records were all left out (or never kept) still has the kernel's counts of
// events: the health line says that no record holds those waits, so the counts do not read as
// waits the summary shows.
func TestHealthLineOfNoRecords(t *testing.T) {
	c := &capture.Capture{Records: []capture.Record{}, Meta: capture.Meta{DurationNS: 2e9, Events: capture.Events{Begin: 53, End: 53, Waits: 53}}}
	var b bytes.Buffer
	if err := WriteSummary(&b, c, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	if want := "53 contention events in 2.00 s, 53 waits, none of them in the records;"; !strings.Contains(b.String(), want) {
		t.Errorf("summary of no records:\n%s\nwant %q", b.String(), want)
	}
	c.Records = []capture.Record{{Type: "mutex", Lock: 1, TID: 1, Count: 53, TotalNS: 530, MinNS: 10, MaxNS: 10}}
	b.Reset()
	if err := WriteSummary(&b, c, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "none of them") {
		t.Errorf("a capture with records says none holds its waits:\n%s", b.String())
	}
}
