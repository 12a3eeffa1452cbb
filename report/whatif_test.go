package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/whatif"
)

// whatifFixture is an experiment of 8 runs at two delays whose time per rename grows 1 us per us
// added, with 20 us of contended hold per rename measured without delay.
func whatifFixture() *whatif.Experiment {
	e := &whatif.Experiment{
		Version: whatif.FormatVersion, Unit: "rename", CPUs: 2, CPUModel: "AMD EPYC", Kernel: "6.18.44", Metric: `rename ([\d.]+)`,
		Command: []string{"stress-ng", "--rename", "4"}, Repeat: 4, DelaysNS: []uint64{0, 40000},
		Target: whatif.Target{Label: "super_block.s_vfs_rename_mutex <b>", Type: "mutex", Callers: []string{"do_renameat2+0x221"},
			ChosenBy: "the most wait of the capture", Source: "a baseline run", Waits: 100, WaitNS: 4.6e6, WaitShare: 0.97, MeanWaitNS: 46000},
		Bounds: whatif.Bounds{MaxDelayNS: 100000, BudgetNS: 200e6},
	}
	for i := range 8 {
		d := e.DelaysNS[i%2]
		t := 50000 + float64(d)/2 + float64(i%3)*100 // ns per rename; half a delay per rename
		work := 1e5
		metric := 1e9 / t
		c := whatif.Counters{Matched: 5e4, HoldSamples: 5e4, HoldNS: 5e4 * 40000, HoldMinNS: 2000 + d}
		if d > 0 {
			c.Fired, c.AddedNS, c.FiredLocked = 5e4, uint64(5e4*float64(d)), 5e4
		}
		e.Runs = append(e.Runs, whatif.Run{DelayNS: d, WallNS: int64(t * work), Metric: &metric, Counters: c})
	}
	return e
}

func TestWhatifSummary(t *testing.T) {
	var b bytes.Buffer
	if err := WriteWhatifSummary(&b, whatifFixture()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"perturbed on purpose", "each at most 100.00 us", "at most 200.00 ms per CPU a second",
		"wait_lock held and interrupts off: 100% of these delays",
		"costs 1.00 us per rename", "by half", "to nothing", "extrapolate the line below zero",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestWhatifHTMLIsOneOfflinePage(t *testing.T) {
	var b bytes.Buffer
	e := whatifFixture()
	if err := WriteWhatifHTML(&b, e); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`id="whatif-fit"`, `id="klockstat-whatif"`, "perturbed on purpose", "s_vfs_rename_mutex &lt;b&gt;", "halving them predicts"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script src", "<link ", "http://", "https://cdn", "s_vfs_rename_mutex <b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
	// The embedded experiment reads back.
	start := strings.Index(page, `id="klockstat-whatif">`) + len(`id="klockstat-whatif">`)
	end := strings.Index(page[start:], "</script>")
	if _, err := whatif.Parse([]byte(page[start : start+end])); err != nil {
		t.Errorf("the embedded experiment: %v", err)
	}
}
