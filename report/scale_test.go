package report

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
)

// An unnamed lock of scaleSweep, whose address the page must not show.
const scaleRawLock = capture.Addr(0xffff888100c0ffee)

// scaleSweep is a sweep at levels 1, 2 and 4 on 2 CPUs: hot_lock's wait per unit of work grows as
// the square of the level, the unnamed lock's linearly; throughput is 1000 × √N. Level 4 has a
// failed run besides.
func scaleSweep(t testing.TB) *capture.Sweep {
	t.Helper()
	s := &capture.Sweep{Version: capture.SweepFormatVersion, Tool: "klockstat", ToolVersion: "0.1.0-test", CPUs: 2,
		Command: []string{"work", "-j", "{N}", svgComm}, Metric: `ops=([0-9.]+)`}
	for _, n := range []int{1, 2, 4} {
		metric := 1000 * math.Sqrt(float64(n))
		argv := []string{"work", "-j", strconv.Itoa(n), svgComm}
		hot := uint64(10 * n * n * int(metric))
		raw := uint64(3 * n * int(metric))
		c := capturetest.Of(t, 1e9,
			capturetest.Rec("mutex", "hot_lock", "hot_caller+0x10", "work", 10, 11, 0xffffffff83000000, hot/2, hot-hot/2),
			capturetest.Rec("spinlock", "", "raw_caller+0x20", svgComm, 10, 12, scaleRawLock, raw),
		)
		c.Meta.Workload = argv
		level := capture.SweepLevel{N: n, Runs: []capture.SweepRun{{Argv: argv, WallNS: 1e9, Metric: &metric, OverheadNS: 2e6, Capture: c}}}
		if n == 4 {
			exit := 2
			level.Runs = append(level.Runs, capture.SweepRun{Argv: argv, WallNS: 5e8, Exit: &exit, Failed: "exit status 2",
				Tail: []string{"error: " + scriptBreak}, Capture: capturetest.Of(t, 5e8)})
		}
		s.Levels = append(s.Levels, level)
	}
	s.Cost.StartNS, s.Cost.BetweenNS = 1.5e9, 8e6
	return s
}

func writeScale(t testing.TB, s *capture.Sweep, o HTMLOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteScaleHTML(&b, s, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestScaleHTMLIsOneOfflineFile(t *testing.T) {
	s := scaleSweep(t)
	before := encodeSweepText(t, s)
	page := writeScale(t, s, HTMLOptions{})
	if after := encodeSweepText(t, s); after != before {
		t.Error("WriteScaleHTML changed the sweep")
	}
	a, err := loadAssets()
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(page, []byte(a.echarts)); n != 1 {
		t.Errorf("ECharts inlined %d times, want once", n)
	}
	for _, bad := range []string{`src="http`, `href="http`, "<script src", "<link", svgComm, scriptBreak, scaleRawLock.String()} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("the page contains %q", bad)
		}
	}
	for _, want := range []string{`id="culprit-locks"`, `id="culprit-callers"`, `id="level-frame"`, "hot_lock", "oversubscribed", "run 2 failed: exit status 2", "<svg class=\"spark\""} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if len(page) > 2<<20 {
		t.Errorf("the page of 3 small levels takes %d bytes", len(page))
	}
}

func encodeSweepText(t testing.TB, s *capture.Sweep) string {
	t.Helper()
	var b bytes.Buffer
	if err := s.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestScaleHTMLEmbedsEveryLevelAndEveryDiff(t *testing.T) {
	s := scaleSweep(t)
	page := writeScale(t, s, HTMLOptions{})
	pages := scalePages(t, page)
	if len(pages.Levels) != len(s.Levels) || len(pages.Diffs) != len(s.Levels)*(len(s.Levels)-1)/2 {
		t.Fatalf("%d level pages and %d diffs, want %d and every pair", len(pages.Levels), len(pages.Diffs), len(s.Levels))
	}
	a, _ := loadAssets()
	for _, p := range pages.Levels {
		html := inflate(t, p.Page)
		if !strings.Contains(html, "<script>"+echartsMark+"</script>") || strings.Contains(html, string(a.echarts)) {
			t.Errorf("level %d's page keeps its ECharts or lacks the mark", p.A)
		}
		// The level's own report: it carries that level's capture.
		c := pageCapture(t, html)
		if c.Meta.Workload[2] != strconv.Itoa(p.A) || !c.Meta.AddressesHashed {
			t.Errorf("level %d's page holds the capture of %q (hashed %v)", p.A, c.Meta.Workload, c.Meta.AddressesHashed)
		}
	}
}

func TestScaleHTMLReadsBack(t *testing.T) {
	s := scaleSweep(t)
	back, ok, err := readSweep(writeScale(t, s, HTMLOptions{}), MaxInputSize)
	if err != nil || !ok {
		t.Fatalf("reading the sweep back: %v (a sweep: %v)", err, ok)
	}
	want, got := s.Analyze(), back.Analyze()
	if len(got.Locks) != len(want.Locks) || got.Locks[0].Name != want.Locks[0].Name || got.Locks[0].Growth != want.Locks[0].Growth {
		t.Errorf("culprits read back %+v, want %+v", got.Locks, want.Locks)
	}
	for _, l := range back.Levels {
		for _, r := range l.Runs {
			for _, rec := range r.Capture.Records {
				if rec.Lock == scaleRawLock {
					t.Error("the embedded sweep holds a raw address")
				}
			}
		}
	}
	// A capture JSON is no sweep: the report command reads it as a capture.
	var c bytes.Buffer
	if err := s.Levels[0].Runs[0].Capture.Write(&c); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := readSweep(c.Bytes(), MaxInputSize); ok || err != nil {
		t.Errorf("a capture read as a sweep: %v %v", ok, err)
	}
}

// scaleSummary is the terminal summary of s.
func scaleSummary(t *testing.T, s *capture.Sweep, o ScaleSummaryOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteScaleSummary(&b, s, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestScaleSummary(t *testing.T) {
	s := scaleSweep(t)
	out := scaleSummary(t, s, ScaleSummaryOptions{Top: 5, RawAddresses: true})
	a := s.Analyze()
	lines := strings.Split(out, "\n")
	for _, st := range a.Levels {
		row := ""
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 0 && f[0] == strconv.Itoa(st.N) {
				row = l
				break
			}
		}
		if !strings.Contains(row, FormatNumber(st.Throughput)) || !strings.Contains(row, percent(st.Efficiency)) {
			t.Errorf("level %d row %q lacks throughput %s and efficiency %s", st.N, row, FormatNumber(st.Throughput), percent(st.Efficiency))
		}
	}
	if !strings.Contains(out, "1 failed") || !strings.Contains(out, "oversubscribed") {
		t.Errorf("summary lacks the failed run or the oversubscribed level:\n%s", out)
	}
	culprits := out[strings.Index(out, "Scaling culprits"):]
	if first := strings.Index(culprits, "hot_lock"); first < 0 || strings.Index(culprits, scaleRawLock.String()) < first {
		t.Errorf("hot_lock is not the first culprit, before the unnamed lock shown by its address:\n%s", culprits)
	}
}

// scalePages are the level and diff pages a scaling report embeds.
func scalePages(t testing.TB, page []byte) embeddedPages {
	t.Helper()
	content, err := embeddedElement(page, "klockstat-scale-pages")
	if err != nil {
		t.Fatal(err)
	}
	var pages embeddedPages
	if err := json.Unmarshal(content, &pages); err != nil {
		t.Fatal(err)
	}
	return pages
}

// pageCapture reads the capture a level's page embeds, its ECharts put back.
func pageCapture(t testing.TB, html string) *capture.Capture {
	t.Helper()
	a, err := loadAssets()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ReadInput(strings.NewReader(strings.Replace(html, echartsMark, string(a.echarts), 1)))
	if err != nil {
		t.Fatalf("reading the capture of a level's page: %v", err)
	}
	return c
}

// inflate decodes an embedded page: base64 of gzip.
func inflate(t testing.TB, b64 string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	html, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(html)
}

// The page says its ids are hashed exactly when every capture's are: with raw addresses asked for,
// a sweep of raw captures is shown raw, and one with a capture hashed before (a sweep JSON written
// hashed in part) is hashed throughout, in the page, the levels' pages and the embedded sweep.
func TestScaleHTMLHashesAllCapturesOrNone(t *testing.T) {
	for _, tc := range []struct {
		name        string
		hashedLevel int // the index of the level whose capture comes hashed, -1 for none
		wantHashed  bool
	}{
		{"no capture hashed", -1, false},
		{"the middle level's capture hashed", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scaleSweep(t)
			if tc.hashedLevel >= 0 {
				s.Levels[tc.hashedLevel].Runs[0].Capture.HashAddresses([]byte("the key of an earlier output"))
			}
			page := writeScale(t, s, HTMLOptions{RawAddresses: true})
			if said := bytes.Contains(page, []byte("kernel addresses are shown as ids hashed")); said != tc.wantHashed {
				t.Errorf("the page says hashed: %v, want %v", said, tc.wantHashed)
			}
			back, _, err := readSweep(page, MaxInputSize)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range back.Levels {
				for _, r := range l.Runs {
					if r.Capture.Meta.AddressesHashed != tc.wantHashed {
						t.Errorf("level %d: the embedded capture is hashed: %v, want %v", l.N, r.Capture.Meta.AddressesHashed, tc.wantHashed)
					}
				}
			}
			for _, p := range scalePages(t, page).Levels {
				html := inflate(t, p.Page)
				if said := strings.Contains(html, "kernel addresses are shown as ids hashed"); said != tc.wantHashed {
					t.Errorf("level %d's page says hashed: %v, want %v", p.A, said, tc.wantHashed)
				}
				if c := pageCapture(t, html); c.Meta.AddressesHashed != tc.wantHashed {
					t.Errorf("level %d's page holds a capture hashed: %v, want %v", p.A, c.Meta.AddressesHashed, tc.wantHashed)
				}
			}
			if raw := bytes.Contains(page, []byte(scaleRawLock.String())); raw == tc.wantHashed {
				t.Errorf("the page shows the raw address of the unnamed lock: %v, want %v", raw, !tc.wantHashed)
			}
		})
	}
}

// The terminal names an unnamed lock by its id, the one the scaling report of the same key shows,
// and never by its address unless asked to.
func TestScaleSummaryHashesAddresses(t *testing.T) {
	s := scaleSweep(t)
	key := []byte("one key for the summary and the page")
	out := scaleSummary(t, s, ScaleSummaryOptions{Top: 5, AddressKey: key})
	id := capture.NewAddressHasher(key).ID(scaleRawLock).HashedString()
	if strings.Contains(out, scaleRawLock.String()) || !strings.Contains(out, id) {
		t.Errorf("summary shows the address %s or lacks its id %s:\n%s", scaleRawLock, id, out)
	}
	if page := string(writeScale(t, s, HTMLOptions{AddressKey: key})); !strings.Contains(page, id) {
		t.Errorf("the scaling report of the same key lacks the id %s", id)
	}
}

// -q: the two tables' rows alone, no headers, notes or cost.
func TestScaleSummaryRowsOnly(t *testing.T) {
	s := scaleSweep(t)
	out := scaleSummary(t, s, ScaleSummaryOptions{Top: 5, RowsOnly: true})
	for _, prose := range []string{"level", "Scaling culprits", "Sweep cost", "failed:"} {
		if strings.Contains(out, prose) {
			t.Errorf("-q summary has %q:\n%s", prose, out)
		}
	}
	an := s.Analyze()
	var rows int
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) != "" {
			rows++
		}
	}
	if want := len(an.Levels) + min(5, len(an.Locks)); rows != want || !strings.Contains(out, "hot_lock") {
		t.Errorf("-q summary has %d rows, want %d (levels and culprits) with hot_lock:\n%s", rows, want, out)
	}
}

// A level 1 that made a tenth of its throughput per instance is flagged, in the terminal and on the
// page, with the likely reasons; the own-thread figures and the other processes' wait are shown.
func TestScaleSuspectBaselineAndOwnWaits(t *testing.T) {
	s := scaleSweep(t)
	slow := *s.Levels[0].Runs[0].Metric / 10
	s.Levels[0].Runs[0].Metric = &slow
	for i := range s.Levels {
		for j := range s.Levels[i].Runs {
			m := &s.Levels[i].Runs[j].Capture.Meta
			m.Scope, m.CommandPIDs = capture.ScopeSystem, []uint32{10}
			m.CommandProcesses, m.CommandThreads, m.CommandThreadNS = 3, 5, 5e9
		}
	}
	// Level 1's capture again, as scaleSweep makes it, with an outside process's wait added.
	c := capturetest.Of(t, 1e9,
		capturetest.Rec("mutex", "hot_lock", "hot_caller+0x10", "work", 10, 11, 0xffffffff83000000, 5000, 5000),
		capturetest.Rec("spinlock", "", "raw_caller+0x20", svgComm, 10, 12, scaleRawLock, 3000),
		capturetest.Rec("rwsem:R", "mmap_lock", "other+0x1", "other", 77, 77, 0xffffffff84000000, 2e9))
	c.Meta.Scope, c.Meta.CommandPIDs = capture.ScopeSystem, []uint32{10}
	c.Meta.CommandProcesses, c.Meta.CommandThreads, c.Meta.CommandThreadNS = 3, 5, 5e9
	s.Levels[0].Runs[0].Capture = c
	s.Levels[0].Runs[0].Matched = "work: ops=100.0 <matched>"
	out := scaleSummary(t, s, ScaleSummaryOptions{Top: 5})
	row1 := ""
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "1" {
			row1 = line
			break
		}
	}
	for _, want := range []string{"suspect baseline", "5", "3", "2.00 s"} {
		if !strings.Contains(row1, want) {
			t.Errorf("level 1 row %q lacks %q", row1, want)
		}
	}
	for _, want := range []string{"waiting (own threads)", "Level 1 made", "I/O-bound", "--repeat"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "mmap_lock") {
		t.Errorf("the other process's lock is a culprit:\n%s", out)
	}
	page := string(writeScale(t, s, HTMLOptions{}))
	for _, want := range []string{"suspect baseline", "I/O-bound", "Others' wait", "over the time its threads were alive", "run 1: work: ops=100.0 &lt;matched&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
