package cli

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
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

// TestVmlinuxForceIsRecorded: a capture given the lines of another build with --vmlinux-force
// keeps both build ids, and the run, a later summary and the page all say the lines may not match.
func TestVmlinuxForceIsRecorded(t *testing.T) {
	bin := srclinetest.Build(t, "-g", "-O2")
	dir := t.TempDir()
	in, out, page := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json"), filepath.Join(dir, "page.html")
	kernel := strings.Repeat("ab", 20)
	sourceCapture(t, in, bin, kernel)
	var stdout, stderr bytes.Buffer
	if _, err := run([]string{"report", in, "--vmlinux", bin, "--vmlinux-force", "--json", out, "-o", ""}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	const mayNotMatch = "(--vmlinux-force): they may not match the frames"
	if !strings.Contains(stderr.String(), "warning: the source lines are from a vmlinux of build id") || !strings.Contains(stderr.String(), mayNotMatch) {
		t.Errorf("the forced run does not warn:\n%s", stderr.String())
	}
	if c := readCaptureFile(t, out); c.Meta.KernelBuildID != kernel || c.Sources == nil || c.Sources.BuildID == kernel {
		t.Fatalf("the capture does not keep both build ids: kernel %q, sources %+v", c.Meta.KernelBuildID, c.Sources)
	}
	stdout.Reset()
	if _, err := run([]string{"report", out, "-o", page}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), mayNotMatch) {
		t.Errorf("the summary of the forced capture does not warn:\n%s", stdout.String())
	}
	if html, err := os.ReadFile(page); err != nil || !strings.Contains(string(html), mayNotMatch) {
		t.Errorf("the page of the forced capture does not warn (%v)", err)
	}
}

// TestVmlinuxRefusedAtOnce: a FIFO, a compression bomb and a truncated image given to --vmlinux are
// refused in one line, at once, naming the file.
func TestVmlinuxRefusedAtOnce(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.json")
	sourceCapture(t, in, srclinetest.Build(t, "-g"), "")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	bomb := filepath.Join(dir, "bomb")
	srclinetest.WriteELF(t, bomb,
		srclinetest.Section{Name: ".debug_info", Type: elf.SHT_PROGBITS, Data: []byte("x"), Inflated: 4 << 30},
		srclinetest.Section{Name: ".debug_line", Type: elf.SHT_PROGBITS, Data: []byte("x")})
	for path, want := range map[string]string{
		fifo: fifo + ": a named pipe (FIFO), not a regular file: give the vmlinux file itself",
		bomb: "section .debug_info: 4 GiB once inflated, more than the 2 GiB klockstat reads",
	} {
		start := time.Now()
		var stdout, stderr bytes.Buffer
		_, err := run([]string{"report", in, "--vmlinux", path, "-o", ""}, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--vmlinux %s: %v, want one line with %q", filepath.Base(path), err, want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("--vmlinux %s: refused after %v", filepath.Base(path), d)
		}
	}
}
