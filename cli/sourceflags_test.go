package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/kallsyms"
	"github.com/klockstat/klockstat/srcline"
	"github.com/klockstat/klockstat/srcline/srclinetest"
)

// sourceCapture writes a capture whose frames are functions of the program at bin, as if it were
// the captured kernel of build id buildID, and returns its frames.
func sourceCapture(t *testing.T, path, bin, buildID string) []string {
	t.Helper()
	var frames []string
	for _, s := range srclinetest.Functions(t, bin) {
		if s.Name == "outer" || s.Name == "take" {
			frames = append(frames, fmt.Sprintf("%s+0x%x", s.Name, s.Size/2))
		}
	}
	if len(frames) != 2 {
		t.Fatalf("frames %v, want one in outer and one in take", frames)
	}
	frames = append(frames, "xfs_ilock+0x4c [xfs]")
	c := &capture.Capture{
		Version: capture.FormatVersion,
		Meta:    capture.Meta{Tool: "klockstat", DurationNS: int64(time.Second), CPUs: 2, Probe: "rawtp", StackDepth: 16, KernelBuildID: buildID},
		Records: []capture.Record{{Type: "mutex", Lock: 0xffff888100a3c2d8, Comm: "w", PID: 7, TID: 8, Count: 1, TotalNS: 100, MinNS: 100, MaxNS: 100, Caller: frames[0], Stack: frames}},
	}
	h := capture.NewHistogram("mutex", make([]uint64, capture.NumBuckets))
	h.Add(100)
	c.Histograms = []capture.Histogram{h}
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	return frames
}

// TestReportVmlinux re-renders a capture with --vmlinux: its JSON gains the lines srcline gives
// the frames; a vmlinux of another build is refused, naming both build ids, unless forced.
func TestReportVmlinux(t *testing.T) {
	bin := srclinetest.Build(t, "-g", "-O2")
	im, err := srcline.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	frames := sourceCapture(t, in, bin, im.BuildID())
	want, _, err := im.Resolve(frames)
	if err != nil {
		t.Fatal(err)
	}

	var stdout, stderr bytes.Buffer
	if status, err := run([]string{"report", in, "--vmlinux", bin, "--json", out, "-o", ""}, &stdout, &stderr); err != nil || status != 0 {
		t.Fatalf("report --vmlinux: status %d, %v\n%s", status, err, stderr.String())
	}
	got := readCaptureFile(t, out)
	if got.Sources == nil || got.Sources.BuildID != im.BuildID() || !reflect.DeepEqual(got.Sources.Frames, want) || len(want) != 2 {
		t.Errorf("sources %+v, want build id %s and %+v", got.Sources, im.BuildID(), want)
	}
	if !strings.Contains(stderr.String(), "source lines of 2 frames") || !strings.Contains(stderr.String(), "1 of modules") {
		t.Errorf("stderr does not say what was resolved:\n%s", stderr.String())
	}
	other := filepath.Join(dir, "other.json")
	sourceCapture(t, other, bin, strings.Repeat("ab", 20))
	stderr.Reset()
	_, err = run([]string{"report", other, "--vmlinux", bin, "--json", out, "-o", ""}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), im.BuildID()) || !strings.Contains(err.Error(), strings.Repeat("ab", 20)) || !strings.Contains(err.Error(), "--vmlinux-force") {
		t.Errorf("a vmlinux of another build: %v, want a refusal naming both build ids and --vmlinux-force", err)
	}
	if status, err := run([]string{"report", "-q", other, "--vmlinux", bin, "--vmlinux-force", "--json", out, "-o", ""}, &stdout, &stderr); err != nil || status != 0 {
		t.Fatalf("report --vmlinux-force: status %d, %v", status, err)
	}
	if got := readCaptureFile(t, out); got.Sources == nil || len(got.Sources.Frames) != 2 {
		t.Errorf("--vmlinux-force: sources %+v, want the 2 frames", got.Sources)
	}

	if _, err := run([]string{"report", in, "--vmlinux", filepath.Join(dir, "none")}, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "--vmlinux") {
		t.Errorf("a missing --vmlinux: %v, want an error naming the flag", err)
	}
	if _, err := run([]string{"report", in, "--vmlinux-force"}, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "without --vmlinux") {
		t.Errorf("--vmlinux-force alone: %v, want a usage error", err)
	}
}

// TestDataSymbols reads the data symbols that name static locks from --vmlinux, which needs no
// DWARF when capturing; an image of another build is refused in one warning line unless forced.
func TestDataSymbols(t *testing.T) {
	bin := srclinetest.Build(t, "-O2") // no DWARF
	_, id, err := srcline.ReadSymbols(bin)
	if err != nil || id == "" {
		t.Fatalf("ReadSymbols: build id %q, %v", id, err)
	}
	if err := (&sourceFlags{vmlinux: bin}).open(); err == nil || !strings.Contains(err.Error(), "no DWARF") {
		t.Errorf("report's --vmlinux without DWARF: %v, want a refusal", err)
	}
	if err := (&sourceFlags{vmlinux: bin, capturing: true}).open(); err != nil {
		t.Errorf("capture's --vmlinux without DWARF: %v, want it taken for its symbol table", err)
	}
	other := strings.Repeat("ab", 20)
	for _, tc := range []struct {
		name    string
		flags   sourceFlags
		buildID string
		want    bool   // symbols read
		err     string // "" for none
	}{
		{"the running kernel's", sourceFlags{vmlinux: bin}, id, true, ""},
		{"another build", sourceFlags{vmlinux: bin}, other, false, "build id " + id + ", but the running kernel's is " + other + " (--vmlinux-force uses it anyway)"},
		{"another build, forced", sourceFlags{vmlinux: bin, force: true}, other, true, ""},
		{"unknown running build", sourceFlags{vmlinux: bin}, "", true, ""},
		{"missing", sourceFlags{vmlinux: filepath.Join(t.TempDir(), "none")}, id, false, "opening the vmlinux"},
		{"none given, none installed", sourceFlags{}, other, false, ""},
	} {
		path, syms, err := tc.flags.dataSymbols(tc.buildID, "no-such-release")
		hasSink := slices.ContainsFunc(syms, func(s kallsyms.Symbol) bool { return s.Name == "sink" && s.Type == 'B' })
		if hasSink != tc.want || (path != "") != (tc.want || tc.err != "") {
			t.Errorf("%s: path %q, %d symbols (sink %v); want symbols %v", tc.name, path, len(syms), hasSink, tc.want)
		}
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
		}
	}
}
