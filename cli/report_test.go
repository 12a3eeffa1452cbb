package cli

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
)

// TestReportRerendersTheSameData renders a capture, re-renders it from the
// JSON and from the HTML report, and checks both carry the same capture.
func TestReportRerendersTheSameData(t *testing.T) {
	dir := t.TempDir()
	c := &capture.Capture{
		Version: capture.FormatVersion,
		Meta:    capture.Meta{Tool: "klockstat", DurationNS: int64(time.Second), CPUs: 2, Probe: "rawtp", StackDepth: 16},
		Records: []capture.Record{
			{Type: "mutex", Lock: 0xffff888100a3c2d8, Comm: "<svg/onload=x>", PID: 7, TID: 8, Count: 3, TotalNS: 300, MinNS: 50, MaxNS: 200, Caller: "anon_pipe_write+0x43", Stack: []string{"__mutex_lock+0x1", "anon_pipe_write+0x43"}},
			{Type: "rwsem:W", Lock: 0xffff888100a3c000, Name: "mmap_lock", Comm: "w", PID: 7, TID: 9, Count: 1, TotalNS: 1000, MinNS: 1000, MaxNS: 1000, Caller: "vm_mmap_pgoff+0xe0", Stack: []string{"vm_mmap_pgoff+0xe0"}},
		},
	}
	for _, r := range c.Records {
		h := capture.NewHistogram(r.Type, make([]uint64, capture.NumBuckets))
		h.Add(r.MinNS)
		for i := uint64(1); i < r.Count; i++ {
			h.Add(r.MaxNS)
		}
		h.TotalNS = r.TotalNS
		c.Histograms = append(c.Histograms, h)
	}
	c.Sort() // as captures are written, and as a report holds the records
	jsonPath := filepath.Join(dir, "c.json")
	saveCapture(t, jsonPath, c)

	fromJSON, fromHTML := filepath.Join(dir, "a.html"), filepath.Join(dir, "b.html")
	for _, args := range [][]string{{"report", "-q", jsonPath, "-o", fromJSON}, {"report", "-q", fromJSON, "-o", fromHTML}} {
		var stdout, stderr bytes.Buffer
		if status, err := run(args, &stdout, &stderr); err != nil || status != 0 {
			t.Fatalf("klockstat %q: status %d, %v\n%s", args, status, err, stderr.String())
		}
	}
	a, b := readCaptureFile(t, fromJSON), readCaptureFile(t, fromHTML)
	var ja, jb bytes.Buffer
	a.Write(&ja)
	b.Write(&jb)
	if ja.String() != jb.String() {
		t.Errorf("re-rendering the HTML report changed its capture:\n%s\n---\n%s", ja.String(), jb.String())
	}
	if len(a.Records) != len(c.Records) || a.Records[0].Comm != c.Records[0].Comm {
		t.Errorf("report lost records: %+v", a.Records)
	}
	if !a.Meta.AddressesHashed || a.Records[0].Lock == c.Records[0].Lock {
		t.Errorf("report shows the real lock address %v", a.Records[0].Lock)
	}
}
