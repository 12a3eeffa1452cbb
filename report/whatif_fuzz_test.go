package report

import (
	"bytes"
	"io"
	"testing"

	"github.com/klockstat/klockstat/whatif"
)

// FuzzWhatifParse: any experiment whatif.Parse accepts renders, as the terminal summary and as
// the page, without panicking or failing (a NaN or infinite figure fails the page's JSON).
func FuzzWhatifParse(f *testing.F) {
	e := &whatif.Experiment{Version: whatif.FormatVersion, Unit: "rename", CPUs: 2, DelaysNS: []uint64{0, 20000, 40000},
		Target: whatif.Target{Label: "s_vfs_rename_mutex", Type: "mutex"}, Bounds: whatif.Bounds{MaxDelayNS: 100000, BudgetNS: 200e6}}
	for i := range 9 {
		d := e.DelaysNS[i%3]
		metric := 1e9 / (10000 + float64(d)/2 + float64(i))
		e.Runs = append(e.Runs, whatif.Run{DelayNS: d, WallNS: 1e9, Metric: &metric,
			Counters: whatif.Counters{Matched: 1e5, Fired: 1e5 * d / 20000, AddedNS: uint64(metric) * d / 2, HoldSamples: 1e4, HoldNS: 2e8}})
	}
	var b bytes.Buffer
	if err := e.Write(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte(`{"whatif_version":1,"delays_ns":[0,1000],"runs":[{"delay_ns":1000,"wall_ns":1,"metric":1e-9,"counters":{"added_ns":18446744073709551615}},{"delay_ns":0,"wall_ns":1,"counters":{"hold_samples":1,"hold_ns":5}},{"delay_ns":1000,"wall_ns":9,"metric":1e18}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := whatif.Parse(data)
		if err != nil {
			return
		}
		if err := WriteWhatifSummary(io.Discard, e); err != nil {
			t.Fatalf("summary of what Parse accepted: %v", err)
		}
		if err := WriteWhatifHTML(io.Discard, e); err != nil {
			t.Fatalf("page of what Parse accepted: %v", err)
		}
	})
}
