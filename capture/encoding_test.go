package capture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// testCapture is a capture with every field set and every list of the JSON non-empty.
func testCapture(t testing.TB) *Capture {
	t.Helper()
	exit := 3
	spin := Histogram{Type: "spinlock"}
	for _, ns := range []uint64{120, 480, 2500, 90, 1_000_000} {
		spin.Add(ns)
	}
	mutex := Histogram{Type: "mutex"}
	mutex.Add(40_000)
	cmdStart, cmdEnd := int64(1_200_000), int64(9_990_000_000)
	mutexHold := Histogram{Type: "mutex"}
	for _, ns := range []uint64{700, 1500, 300} {
		mutexHold.Add(ns)
	}
	c := &Capture{
		Version: FormatVersion,
		Meta: Meta{
			Tool: "klockstat", ToolVersion: "v0.1.0", Kernel: "6.8.0-45-generic", KernelBuild: "#45-Ubuntu SMP PREEMPT_DYNAMIC",
			Arch: "amd64", Hostname: "bench1", CPUModel: "AMD EPYC 7B13", CPUs: 8,
			Start:       time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC),
			DurationNS:  10_000_000_000,
			CommandLine: []string{"klockstat", "-o", "out.json", "--", "make", "-j8"},
			Workload:    []string{"make", "-j8"}, WorkloadExit: &exit,
			Probe: "fentry",
			Acquire: &Acquire{
				ThresholdNS: 250,
				Calibration: Calibration{Method: "uncontended pipe writes", Samples: 4096, P50NS: 80, P99NS: 125, MaxNS: 9000, Rule: "2 × p99"},
				Uncontended: 123456, Holds: 3,
				Functions: []string{"_raw_spin_lock", "mutex_lock"},
				Skipped:   []Skipped{{Function: "mutex_lock_io", Type: "mutex", Reason: "not in this kernel"}},
			},
			StackDepth: 16, Types: []string{"spinlock", "mutex"}, PIDs: []uint32{42, 4242}, Comm: "make",
			Cgroups:            []string{"/system.slice/<b>ctr</b>.scope"},
			MapSizes:           map[string]uint32{"records": 16384, "stacks": 4096},
			Events:             Events{Begin: 1000, End: 990, Waits: 985, InProgress: 1, Nested: 2, UnmatchedBegin: 3, UnmatchedEnd: 4},
			Lost:               []Lost{{Reason: "aggregation map full", Count: 7}},
			Programs:           []ProgramStats{{Name: "contention_begin", RunCount: 1000, RunTimeNS: 90_000, RecursionMisses: 1}},
			KallsymsRestricted: true,
			KallsymsNoData:     true,
			StaticNamesFrom:    "/usr/lib/debug/boot/vmlinux-6.8.0-45-generic",
			Warnings:           []string{"kernel.bpf_stats_enabled was 0"},
			Unseen:             []UnseenType{{Type: "spinlock", Reason: "this guest spins in virt_spin_lock() without paravirtual spinlocks, before the contention tracepoint"}},
		},
		Records: []Record{
			{Type: "spinlock", Lock: 0xffff888100a3c2d8, Name: "jiffies_lock", Comm: "cc1\x1b[2J", PID: 42, TID: 43,
				CgroupID: 4711, Cgroup: "/system.slice/<b>ctr</b>.scope/\u202eevil\x1b[2J",
				Count: 4, TotalNS: 1_002_690, SpinNS: 1_002_690, MinNS: 90, MaxNS: 1_000_000, InProgress: 1, Caller: "tick_do_update_jiffies64+0x2f",
				Stack: []string{"queued_spin_lock_slowpath+0x1c", "tick_do_update_jiffies64+0x2f", "0xffffffff81234567"}},
			{Type: "spinlock", Lock: 0xffff888100a3c2d8, Name: "jiffies_lock", Comm: "make", PID: 42, TID: 42, CgroupID: 4712,
				Count: 1, TotalNS: 480, MinNS: 480, MaxNS: 480, Caller: "tick_do_update_jiffies64+0x2f", Stack: []string{}},
			{Type: "mutex", Lock: 0xffffffff82a0c1e0, Name: "", Static: true, Comm: "make", PID: 42, TID: 42,
				Count: 1, TotalNS: 40_000, SpinNS: 1_500, MinNS: 40_000, MaxNS: 40_000, Caller: "", Stack: []string{"0xffffffff81000000"},
				HoldCount: 1, HoldTotalNS: 700, HoldMinNS: 700, HoldMaxNS: 700},
			{Type: "mutex", Lock: 0xffffffff82a0c1e0, Name: "", Static: true, Comm: "make", PID: 42, TID: 44,
				Caller: "pipe_write+0x3c", Stack: []string{"pipe_write+0x3c"},
				HoldCount: 2, HoldTotalNS: 1800, HoldMinNS: 300, HoldMaxNS: 1500},
		},
		Histograms:     []Histogram{spin, mutex},
		HoldHistograms: []Histogram{mutexHold},
		Timeline: &Timeline{BucketNS: 1 << 26, CommandStartNS: &cmdStart, CommandEndNS: &cmdEnd, Series: []TimelineSeries{
			{Type: "spinlock", Count: []uint64{1, 0, 3}, TotalNS: []uint64{90, 0, 2210}},
			{Type: "mutex", Count: []uint64{0, 1, 0}, TotalNS: []uint64{0, 40_000, 0}},
		}},
		Owners: []Owner{
			{Type: "mutex", Lock: 0xffffffff82a0c1e0, Comm: "kworker\x1b]0;pwn\x07", PID: 7, TID: 9, Count: 1, TotalNS: 40_000,
				Stack: []string{"__schedule+0x2a1", "0xffffffff81000000"}, States: []OwnerState{{State: OwnerDiskSleep, Count: 1, TotalNS: 40_000}}},
			{Type: "spinlock", Lock: 0xffff888100a3c2d8, Name: "jiffies_lock", Reason: OwnerNoField, Count: 5, TotalNS: 1_003_170, Stack: []string{}, States: []OwnerState{}},
			{Type: "mutex", Lock: 0xffffffff82a0c1e0, Comm: "kworker\x1b]0;pwn\x07", PID: 7, TID: 9, Count: 1, TotalNS: 20_000,
				Stack: []string{}, StackReason: OwnerStackRan, States: []OwnerState{{State: OwnerOnCPU, Count: 1, TotalNS: 20_000}}},
			{Type: "mutex", Lock: 0xffffffff82a0c1e0, Comm: "kworker\x1b]0;pwn\x07", PID: 7, TID: 9, Count: 1, TotalNS: 7_000,
				Stack: []string{"copy_page+0x10", "generic_perform_write+0x90"}, Where: OwnerStackOnCPU, Samples: 3,
				States: []OwnerState{{State: OwnerOnCPU, Count: 1, TotalNS: 7_000}}},
		},
		OwnerChains: []OwnerChain{
			{Type: "mutex", Lock: 0xffffffff82a0c1e0, Comm: "kworker\x1b]0;pwn\x07", TID: 9, EndType: "mutex", EndLock: 0xffff888100a3c2e0,
				EndTID: 11, EndComm: "<b>b</b>", Depth: 1, Count: 1, TotalNS: 40_000},
		},
	}
	c.Sort()
	return c
}

func encode(t testing.TB, c *Capture) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	c := testCapture(t)
	data := encode(t, c)
	if !bytes.HasSuffix(data, []byte("}\n")) {
		t.Errorf("encoding does not end in a newline: %q", data[len(data)-10:])
	}
	if !bytes.Contains(data, []byte(`"lock": "0xffff888100a3c2d8"`)) {
		t.Errorf("lock address not encoded as a hex string:\n%s", data)
	}
	got, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("round trip changed the capture:\n got %+v\nwant %+v", got, c)
	}
}

// slabRecord is a wait on a lock inside a slab object, whose field BTF guessed.
func slabRecord() Record {
	return Record{Type: "mutex", Lock: 0xffff888104c2a408, Name: "&kmalloc-2k", ObjectOffset: "0x408", Field: "super_block.s_vfs_rename_mutex",
		FieldCandidates: []string{"super_block.s_vfs_rename_mutex", "kvm_arch.lock"}, Comm: "mv", PID: 50, TID: 50,
		Count: 1, TotalNS: 700, MinNS: 700, MaxNS: 700, Caller: "lock_rename+0x2c", Stack: []string{"lock_rename+0x2c"}}
}

func TestRoundTripLockField(t *testing.T) {
	c := testCapture(t)
	c.Records = append(c.Records, slabRecord())
	data := encode(t, c)
	for _, want := range []string{`"object_offset": "0x408"`, `"field": "super_block.s_vfs_rename_mutex"`, `"field_candidates": [`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("encoding lacks %s", want)
		}
	}
	if n := bytes.Count(data, []byte(`"field"`)); n != 1 {
		t.Errorf("%d records write a field, want the one that has one", n)
	}
	got, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("round trip changed the capture:\n got %+v\nwant %+v", got.Records, c.Records)
	}
}

// TestStaticOmitted checks that a record of a lock that is not static, and a meta whose kallsyms
// listed data, write nothing new: captures of other kernels read as before.
func TestStaticOmitted(t *testing.T) {
	c := testCapture(t)
	data := encode(t, c)
	if n := bytes.Count(data, []byte(`"static": true`)); n != 2 {
		t.Errorf("%d records write static, want the 2 static ones:\n%s", n, data)
	}
	c.Meta.KallsymsNoData, c.Meta.StaticNamesFrom = false, ""
	for i := range c.Records {
		c.Records[i].Static = false
	}
	data = encode(t, c)
	for _, field := range []string{`"static"`, `"kallsyms_no_data"`, `"static_names_from"`} {
		if bytes.Contains(data, []byte(field)) {
			t.Errorf("encoding has %s where it is false or empty", field)
		}
	}
}

func TestParseRefusesTooManyFieldCandidates(t *testing.T) {
	c := testCapture(t)
	r := slabRecord()
	r.FieldCandidates = frames(MaxFieldCandidates + 1)
	c.Records = append(c.Records, r)
	_, err := Parse(encode(t, c))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than the %d field candidates klockstat takes", MaxFieldCandidates)) {
		t.Errorf("Parse() = %v, want it to refuse %d field candidates", err, MaxFieldCandidates+1)
	}
}

func TestEmptyListsEncodeAsArrays(t *testing.T) {
	c := &Capture{Version: FormatVersion, Records: []Record{{Type: "mutex", Count: 1}}, Histograms: []Histogram{{Type: "mutex", SubBucketBits: SubBucketBits}}}
	data := encode(t, c)
	if bytes.Contains(data, []byte("null")) {
		t.Errorf("nil lists encoded as null:\n%s", data)
	}
	for _, want := range []string{`"command_line": []`, `"workload": []`, `"types": []`, `"pids": []`, `"map_sizes": {}`,
		`"lost": []`, `"programs": []`, `"warnings": []`, `"stack": []`, `"buckets": []`, `"owners": []`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("encoding lacks %s:\n%s", want, data)
		}
	}
	if bytes.Contains(data, []byte("workload_exit")) {
		t.Error("workload_exit written without a workload exit status")
	}
	// The same holds when the capture is marshalled directly, as the HTML report does.
	direct, err := json.Marshal(&Capture{})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(direct, []byte("null")) {
		t.Errorf("json.Marshal wrote null: %s", direct)
	}
	if _, err := Read(bytes.NewReader(data)); err != nil {
		t.Errorf("reading a capture with empty lists: %v", err)
	}
}

func TestAddr(t *testing.T) {
	for _, a := range []Addr{0, 1, 0xffff888100a3c2d8, 1<<64 - 1} {
		text, err := a.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Addr
		if err := back.UnmarshalText(text); err != nil || back != a {
			t.Errorf("%s: round trip gave %v, %v", text, back, err)
		}
	}
	if got := Addr(0xffffffff81234567).String(); got != "0xffffffff81234567" {
		t.Errorf("String() = %q", got)
	}
	for _, bad := range []string{"", "0x", "ffff", "0X10", "0xFFFF", "0x-1", "0x1_0", "0x10000000000000000", " 0x1", "0xg"} {
		var a Addr
		if err := a.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("UnmarshalText(%q) accepted, gave %v", bad, a)
		}
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Capture) // applied to testCapture before encoding
		edit   func(json string) string
		want   string
	}{
		{name: "not json", edit: func(string) string { return "klockstat" }, want: "decoding capture"},
		{name: "trailing data", edit: func(s string) string { return s + "{}" }, want: "decoding capture"},
		{name: "no version", edit: func(string) string { return `{"records": []}` }, want: `no "version"`},
		{name: "future version", change: func(c *Capture) { c.Version = 2 }, want: "version 2"},
		{name: "layout", change: func(c *Capture) { c.Histograms[0].SubBucketBits = 5 }, want: "histogram 0 (\"spinlock\"): layout with 5 sub-bucket bits"},
		{name: "foreign bucket", change: func(c *Capture) { c.Histograms[0].Buckets[0].HiNS++ }, want: "histogram 0 (\"spinlock\"): bucket 0: [88, 93) is not a bucket"},
		{name: "bucket order", change: func(c *Capture) {
			b := c.Histograms[0].Buckets
			b[0], b[1] = b[1], b[0]
		}, want: "bucket 1: lo_ns"},
		{name: "empty bucket", change: func(c *Capture) { c.Histograms[1].Buckets[0].Count = 0; c.Histograms[1].Count = 0 }, want: "histogram 1 (\"mutex\"): bucket 0: count is 0"},
		{name: "bucket sum", change: func(c *Capture) { c.Histograms[0].Count++ }, want: "count 6 != 5"},
		{name: "duplicate histogram", change: func(c *Capture) { c.Histograms[1] = c.Histograms[0] }, want: `histogram 1: second histogram of lock type "spinlock"`},
		{name: "zero count", change: func(c *Capture) { c.Records[2].Count = 0 }, want: "record 2: count and hold_count are 0"},
		{name: "holds only but a wait time", change: func(c *Capture) { c.Records[3].MaxNS = 5 }, want: "record 3: no waits, but total_ns 0, min_ns 0, max_ns 5"},
		{name: "spin above total", change: func(c *Capture) { c.Records[2].SpinNS = 481 }, want: "record 2: spin_ns 481 > total_ns 480"},
		{name: "owner without waits", change: func(c *Capture) { c.Owners[0].Count = 0 }, want: "owner 0: count is 0"},
		{name: "owner neither known nor not", change: func(c *Capture) { c.Owners[1].Reason = "" }, want: "owner 1: neither an owner thread nor a reason"},
		{name: "unknown owner with a thread", change: func(c *Capture) { c.Owners[1].TID = 3 }, want: "owner 1: owner thread 3, states or stack, but unknown: the lock records no owner"},
		{name: "unknown owner with a stack", change: func(c *Capture) { c.Owners[1].Stack = []string{"schedule+0x1"} }, want: "owner 1: owner thread 0, states or stack, but unknown"},
		{name: "owner stack reason unknown", change: func(c *Capture) { c.Owners[0].StackReason = "bored" }, want: `owner 0: unknown owner stack reason "bored"`},
		{name: "owner stack and a reason for none", change: func(c *Capture) {
			c.Owners[0].Stack, c.Owners[0].StackReason = []string{"schedule+0x1"}, OwnerStackRan
		}, want: "owner 0: an owner stack, and a reason for none"},
		{name: "owner stack place unknown", change: func(c *Capture) { c.Owners[3].Where = "elsewhere" }, want: `owner 3: unknown owner stack place "elsewhere"`},
		{name: "owner holder state unknown", change: func(c *Capture) { c.Owners[0].HolderState = "napping" }, want: `owner 0: unknown holder state "napping"`},
		{name: "unknown owner with a holder state", change: func(c *Capture) { c.Owners[1].HolderState = HolderRunnable }, want: "owner 1: owner thread 0, states or stack, but unknown"},
		{name: "blocker unknown", change: func(c *Capture) { c.Owners[0].Blocker = "bystander" }, want: `owner 0: unknown blocker "bystander"`},
		{name: "blocker with states", change: func(c *Capture) { c.Owners[0].Blocker = BlockerWriter }, want: "owner 0: a writer blocker with a reason, a holder state or states"},
		{name: "blocker's place for an owner", change: func(c *Capture) { c.Owners[0].Where = BlockerStackWake },
			want: `owner 0: an owner stack place "wake" for a blocker ""`},
		{name: "owner's place for a blocker", change: func(c *Capture) {
			c.Owners[0].Blocker, c.Owners[0].States, c.Owners[0].Where = BlockerReader, nil, OwnerStackOffCPU
		}, want: `owner 0: an owner stack place "off_cpu" for a blocker "reader"`},
		{name: "owner samples off CPU", change: func(c *Capture) { c.Owners[3].Where = OwnerStackOffCPU }, want: `owner 3: 3 samples for an owner stack "off_cpu"`},
		{name: "owner chain too deep", change: func(c *Capture) { c.OwnerChains[0].Depth = MaxOwnerChain + 1 }, want: "owner chain 0: depth 5 out of range (want 1 to 4)"},
		{name: "owner chain without an end", change: func(c *Capture) { c.OwnerChains[0].EndTID = 0 }, want: "owner chain 0: no owner thread, or no thread at the end"},
		{name: "owner state unknown", change: func(c *Capture) { c.Owners[0].States[0].State = "zombie" }, want: `owner 0: unknown owner state "zombie"`},
		{name: "owner states above the owner", change: func(c *Capture) { c.Owners[0].States[0].TotalNS++ }, want: "owner 0: states count 1 waits and 40001 ns, more than the owner's 1 and 40000"},
		{name: "hold total below hold max", change: func(c *Capture) { c.Records[3].HoldTotalNS = 10 }, want: "record 3: hold_total_ns 10 < hold_max_ns 1500"},
		{name: "hold time without holds", change: func(c *Capture) { c.Records[0].HoldMaxNS = 10 }, want: "record 0: no holds, but hold_total_ns 0, hold_min_ns 0, hold_max_ns 10"},
		{name: "hold min above hold max", change: func(c *Capture) { c.Records[3].HoldMinNS = 1600 }, want: "record 3: hold_min_ns 1600 > hold_max_ns 1500"},
		{name: "holds without a hold histogram", change: func(c *Capture) { c.HoldHistograms = nil }, want: `record 1: lock type "mutex" has no hold histogram`},
		{name: "hold histogram sum", change: func(c *Capture) { c.HoldHistograms[0].Count++ }, want: `hold histogram 0 ("mutex"): count 4 != 3`},
		{name: "min above max", change: func(c *Capture) { c.Records[1].MinNS, c.Records[1].MaxNS = 5, 3 }, want: "record 1: min_ns 5 > max_ns 3"},
		{name: "total below max", change: func(c *Capture) { c.Records[0].TotalNS = 10 }, want: "record 0: total_ns 10 < max_ns 1000000"},
		{name: "in progress above count", change: func(c *Capture) { c.Records[2].InProgress = 2 }, want: "record 2: in_progress 2 > count 1"},
		{name: "scope unknown", change: func(c *Capture) { c.Meta.Scope = "tree" }, want: `meta: scope "tree": want "command", "system" or none`},
		{name: "command pids unsorted", change: func(c *Capture) { c.Meta.CommandPIDs = []uint32{7, 7} }, want: "meta: command_pids: 7 after 7, not sorted and unique"},
		{name: "more events measured than counted", change: func(c *Capture) { c.Meta.ProgramsEvents, c.Meta.ProgramsMeasuredEvents = 10, 11 }, want: "meta: programs_measured_events 11, more than the 10 programs_events"},
		{name: "type without histogram", change: func(c *Capture) { c.Records[1].Type = "rwsem" }, want: `record 1: lock type "rwsem" has no histogram`},
		{name: "type with space", change: func(c *Capture) { c.Records[1].Type = "spin lock" }, want: "record 1: bad lock type name \"spin lock\""},
		{name: "timeline without width", change: func(c *Capture) { c.Timeline.BucketNS = 0 }, want: "timeline: bucket_ns is 0"},
		{name: "timeline lengths", change: func(c *Capture) { c.Timeline.Series[1].TotalNS = []uint64{0} }, want: `timeline: series 1 ("mutex"): 3 counts and 1 totals, want 3 of each`},
		{name: "timeline series lengths", change: func(c *Capture) {
			s := &c.Timeline.Series[1]
			s.Count, s.TotalNS = s.Count[:2], s.TotalNS[:2]
		}, want: `timeline: series 1 ("mutex"): 2 counts and 2 totals, want 3 of each`},
		{name: "timeline wait in no wait", change: func(c *Capture) { c.Timeline.Series[0].TotalNS[1] = 5 }, want: `bucket 1: 5 ns of wait in no wait`},
		{name: "timeline type twice", change: func(c *Capture) { c.Timeline.Series[1].Type = "spinlock" }, want: `second series of lock type "spinlock"`},
		{name: "negative duration", change: func(c *Capture) { c.Meta.DurationNS = -1 }, want: "meta: duration_ns -1"},
		{name: "numeric address", edit: func(s string) string {
			return strings.Replace(s, `"0xffff888100a3c2d8"`, "18446612136440005336", 1)
		}, want: "decoding capture"},
		{name: "negative pid", edit: func(s string) string { return strings.Replace(s, `"pid": 42,`, `"pid": -1,`, 1) }, want: `record field "pid"`},
		{name: "fractional count", edit: func(s string) string { return strings.Replace(s, `"count": 4,`, `"count": 4.5,`, 1) }, want: `record field "count"`},
		{name: "tid out of range", edit: func(s string) string { return strings.Replace(s, `"tid": 43,`, `"tid": 4294967296,`, 1) }, want: `record field "tid": 4294967296 out of range`},
		{name: "numeric name", edit: func(s string) string { return strings.Replace(s, `"name": "jiffies_lock"`, `"name": 7`, 1) }, want: `record field "name": a number, not a string`},
		{name: "static not a boolean", edit: func(s string) string { return strings.Replace(s, `"static": true`, `"static": "yes"`, 1) }, want: `record field "static": a string, not a boolean`},
		{name: "field twice", edit: func(s string) string {
			return strings.Replace(s, `"name": "jiffies_lock"`, `"name": "jiffies_lock", "name": "x"`, 1)
		}, want: "duplicate"},
		{name: "uppercase address", edit: func(s string) string {
			return strings.Replace(s, `"0xffff888100a3c2d8"`, `"0xFFFF888100A3C2D8"`, 1)
		}, want: "lowercase hex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testCapture(t)
			if tc.change != nil {
				tc.change(c)
			}
			data := string(encode(t, c))
			if tc.edit != nil {
				data = tc.edit(data)
			}
			got, err := Read(strings.NewReader(data))
			if err == nil {
				t.Fatalf("Read accepted it: %+v", got)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestReadVersionError(t *testing.T) {
	_, err := Read(strings.NewReader(`{"version": 2, "records": "a future layout"}`))
	if !errors.Is(err, ErrUnsupportedVersion) {
		t.Errorf("error %v is not ErrUnsupportedVersion", err)
	}
}

func TestMetaDerived(t *testing.T) {
	m := Meta{
		CPUs: 4, DurationNS: 2_000_000_000,
		Events:   Events{Begin: 100},
		Lost:     []Lost{{Reason: "aggregation map full", Count: 3}, {Reason: "stack map full", Count: 4}},
		Programs: []ProgramStats{{Name: "begin", RunTimeNS: 6000}, {Name: "end", RunTimeNS: 2000}},
	}
	if got := m.LostTotal(); got != 7 {
		t.Errorf("LostTotal() = %d, want 7", got)
	}
	if got := m.ProbeNSPerEvent(); got != 80 {
		t.Errorf("ProbeNSPerEvent() = %v, want 8000 ns / 100 events", got)
	}
	// Filtered and lost events cost runs too: with the begin program's runs
	// known, the cost is spread over them, not over the recorded events.
	runs := m
	runs.Programs = []ProgramStats{{Name: "begin", RunCount: 400, RunTimeNS: 6000, Begins: true}, {Name: "end", RunCount: 390, RunTimeNS: 2000}}
	if got := runs.ProbeNSPerEvent(); got != 20 {
		t.Errorf("ProbeNSPerEvent() = %v, want 8000 ns / 400 runs of the begin program", got)
	}
	// The bookkeeping programs run at thread exits and context switches:
	// apart from the per-event cost unless asked for, summed per event.
	hooks := runs
	hooks.Programs = append(slices.Clone(runs.Programs),
		ProgramStats{Name: "free", RunCount: 30, RunTimeNS: 12_000, Hook: "sched_process_free"},
		ProgramStats{Name: "switch", RunCount: 50, RunTimeNS: 5000, Hook: "sched_switch"},
		ProgramStats{Name: "free_perf", RunCount: 10, RunTimeNS: 4000, Hook: "sched_process_free"})
	if got := hooks.ProbeNSPerEvent(); got != 20 {
		t.Errorf("ProbeNSPerEvent() with hooks = %v, want the lock programs' 8000 ns / 400 runs", got)
	}
	if got := hooks.ProbeNSPerEventWithHooks(); got != 72.5 {
		t.Errorf("ProbeNSPerEventWithHooks() = %v, want (8000+12000+5000+4000) ns / 400 runs", got)
	}
	wantHooks := []HookCost{{Event: "sched_process_free", Runs: 40, RunTimeNS: 16_000}, {Event: "sched_switch", Runs: 50, RunTimeNS: 5000}}
	if got := hooks.Hooks(); !slices.Equal(got, wantHooks) {
		t.Errorf("Hooks() = %+v, want %+v", got, wantHooks)
	}
	if got := runs.Hooks(); got != nil {
		t.Errorf("Hooks() without bookkeeping programs = %+v", got)
	}
	if got, want := m.ProbeCPUShare(), 8000.0/(2e9*4); got != want {
		t.Errorf("ProbeCPUShare() = %v, want %v", got, want)
	}
	if got := m.Duration(); got != 2*time.Second {
		t.Errorf("Duration() = %v", got)
	}
	var unknown Meta
	if unknown.ProbeNSPerEvent() != 0 || unknown.ProbeCPUShare() != 0 || unknown.LostTotal() != 0 {
		t.Error("derived values of an empty Meta are not 0")
	}
}

func FuzzRead(f *testing.F) {
	f.Add(encode(f, testCapture(f)))
	f.Add(encode(f, &Capture{Version: FormatVersion}))
	for _, s := range []string{"", "null", "{}", `{"version":1}`, `{"version":1,"histograms":[{"type":"a","sub_bucket_bits":4,"count":1,"buckets":[{"lo_ns":0,"hi_ns":1,"count":1}]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Whatever Read accepts, the rest of klockstat must be able to use and write back.
		for _, h := range c.Histograms {
			s := h.Stats()
			if s.Count > 0 && (s.P50 < s.MinNS || s.P50 > s.MaxNS) {
				t.Errorf("histogram %q: p50 %d outside [%d, %d]", h.Type, s.P50, s.MinNS, s.MaxNS)
			}
		}
		for _, key := range []func(Record) string{ByCaller, ByLock, ByThread} {
			GroupBy(c.Records, key)
		}
		c.Sort()
		first := encode(t, c)
		again, err := Read(bytes.NewReader(first))
		if err != nil {
			t.Fatalf("reading back what Write wrote: %v\n%s", err, first)
		}
		if second := encode(t, again); !bytes.Equal(first, second) {
			t.Errorf("second round trip changed the encoding:\n%s\n%s", first, second)
		}
	})
}

// TestParseSharesStacks checks that records of the same stack decode into one slice of frames, that
// other stacks stay their own, and that a stack whose JSON spells a frame with escapes decodes right.
func TestParseSharesStacks(t *testing.T) {
	c := testCapture(t)
	r := c.Records[0]
	c.Records = []Record{r, r, r, r, r}
	c.Records[2].Stack = []string{"other+0x1"}
	c.Records[3].Stack = slices.Concat(r.Stack, []string{"caller+0x2"})
	data := encode(t, c)
	// The second record's first frame, escaped as another encoder may write it.
	first := []byte(`"` + r.Stack[0] + `"`)
	at := bytes.Index(data, first)
	at += bytes.Index(data[at+1:], first) + 1
	escaped := `"\u00` + fmt.Sprintf("%02x", r.Stack[0][0]) + r.Stack[0][1:] + `"`
	data = slices.Concat(data[:at], []byte(escaped), data[at+len(first):])
	got, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range got.Records {
		if !slices.Equal(rec.Stack, c.Records[i].Stack) {
			t.Errorf("record %d: stack %q, want %q", i, rec.Stack, c.Records[i].Stack)
		}
	}
	if &got.Records[0].Stack[0] != &got.Records[4].Stack[0] {
		t.Error("two records of one stack hold two copies of it")
	}
	if &got.Records[0].Stack[0] == &got.Records[3].Stack[0] {
		t.Error("a longer stack shares the slice of its prefix")
	}
	if _, err := Parse(bytes.Replace(data, []byte(`"other+0x1"`), []byte(`7`), 1)); err == nil {
		t.Error("a stack holding a number was read")
	}
}

// TestUnseenTypesEncoding checks the unseen lock types of a capture: written as "unseen_types"
// with their reasons and read back, left out of the JSON when there are none (so older readers and
// captures are unaffected), read as none from a capture that predates them, and a malformed one refused.
func TestUnseenTypesEncoding(t *testing.T) {
	c := testCapture(t)
	data := encode(t, c)
	want := `"unseen_types": [
      {
        "type": "spinlock",
        "reason": "this guest spins in virt_spin_lock() without paravirtual spinlocks, before the contention tracepoint"
      }
    ]`
	if !bytes.Contains(data, []byte(want)) {
		t.Errorf("encoding lacks %s:\n%s", want, data)
	}
	got, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if reason, ok := got.Meta.UnseenOf("spinlock"); !ok || reason != c.Meta.Unseen[0].Reason {
		t.Errorf("UnseenOf(spinlock) = %q, %v after a round trip, want %q", reason, ok, c.Meta.Unseen[0].Reason)
	}
	if _, ok := got.Meta.UnseenOf("mutex"); ok {
		t.Error("UnseenOf(mutex) says unseen, the capture says only spinlock")
	}

	c.Meta.Unseen = nil
	older := encode(t, c)
	if bytes.Contains(older, []byte("unseen_types")) {
		t.Error("a capture with every type seen writes unseen_types")
	}
	if got, err := Read(bytes.NewReader(older)); err != nil || got.Meta.Unseen != nil {
		t.Errorf("reading a capture without unseen_types: Unseen %v, error %v; want none", got.Meta.Unseen, err)
	}

	for _, bad := range []UnseenType{{Type: "", Reason: "x"}, {Type: "spin lock", Reason: "x"}, {Type: "spinlock", Reason: strings.Repeat("x", MaxStringLen+1)}} {
		c.Meta.Unseen = []UnseenType{bad}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "unseen_types[0]") {
			t.Errorf("Validate of unseen type %.20q: %v, want an error naming unseen_types[0]", bad.Type, err)
		}
	}
}

// TestTruncatedCaptureSaysSo: a capture cut short, read whole (Parse) or streamed (Decode, past the
// head it keeps), is said to be truncated.
func TestTruncatedCaptureSaysSo(t *testing.T) {
	var b bytes.Buffer
	if err := testCapture(t).Write(&b); err != nil {
		t.Fatal(err)
	}
	cut := b.Bytes()[:b.Len()/2]
	_, perr := Parse(cut)
	big := append(bytes.Repeat([]byte(" "), headBytes), cut...) // a head Decode cannot hold whole
	_, derr := Decode(bytes.NewReader(big), int64(len(big)))
	for name, err := range map[string]error{"Parse": perr, "Decode": derr} {
		if err == nil || !strings.Contains(err.Error(), "the file is truncated") {
			t.Errorf("%s of a capture cut in half: %v", name, err)
		}
	}
}
