package export

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/report"
)

// TestExportsHashAddresses: given an analysis that hashes, no export holds a kernel address, and all
// of them name a lock or an unnamed frame by the same id, that of the analysis's key.
func TestExportsHashAddresses(t *testing.T) {
	c := hostileCapture(t)
	key := []byte("a key for this test only")
	var raw []string // every address of the capture, as the exports would write it
	for _, r := range c.Records {
		if r.Count == 0 {
			continue // not exported
		}
		raw = append(raw, r.Lock.String(), strings.TrimPrefix(r.Lock.String(), "0x"))
		for _, f := range r.Stack {
			if strings.HasPrefix(f, "0x") {
				raw = append(raw, f, strings.TrimPrefix(f, "0x"))
			}
		}
	}
	ids := capture.NewAddressHasher(key)
	wantLock := ids.ID(c.Records[0].Lock).HashedString()
	wantFrame := ids.Frame("0xffffffffc0a81234")

	an := report.Analyze(c, false, key)
	var csvOut, folded, pprofOut bytes.Buffer
	if err := WriteCSV(&csvOut, an); err != nil {
		t.Fatal(err)
	}
	if err := WriteFolded(&folded, an); err != nil {
		t.Fatal(err)
	}
	if err := WritePprof(&pprofOut, an); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&pprofOut)
	if err != nil {
		t.Fatal(err)
	}
	var pprofText strings.Builder
	for _, s := range p.Sample {
		fmt.Fprintln(&pprofText, s.Label, s.NumLabel)
	}
	for _, fn := range p.Function {
		fmt.Fprintln(&pprofText, fn.Name)
	}
	for _, loc := range p.Location {
		if loc.Address != 0 {
			t.Errorf("pprof location %d keeps address %#x", loc.ID, loc.Address)
		}
	}
	for name, out := range map[string]string{"csv": csvOut.String(), "folded": folded.String(), "pprof": pprofText.String()} {
		for _, a := range raw {
			if strings.Contains(out, a) {
				t.Errorf("%s export holds address %s", name, a)
			}
		}
		if !strings.Contains(out, wantFrame) {
			t.Errorf("%s export lacks the unnamed frame's id %s", name, wantFrame)
		}
		if name != "folded" && !strings.Contains(out, wantLock) {
			t.Errorf("%s export lacks the first lock's id %s", name, wantLock)
		}
	}
}
