package srcline

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/srcline/srclinetest"
)

// symbolize is llvm-symbolizer's answer for one address: its functions innermost first, each
// with its file's base name and line.
func symbolize(t *testing.T, bin string, addrs []uint64) [][]capture.SourceLine {
	t.Helper()
	tool := srclinetest.RequireTool(t, "llvm-symbolizer")
	var in bytes.Buffer
	for _, a := range addrs {
		fmt.Fprintf(&in, "0x%x\n", a)
	}
	cmd := exec.Command(tool, "--inlining", "--obj="+bin)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("llvm-symbolizer: %v", err)
	}
	var all [][]capture.SourceLine
	for block := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n\n") {
		lines := strings.Split(block, "\n")
		var frame []capture.SourceLine
		for i := 0; i+1 < len(lines); i += 2 {
			where := strings.Split(lines[i+1], ":") // file:line:column
			if len(where) < 3 {
				t.Fatalf("llvm-symbolizer wrote %q", lines[i+1])
			}
			line, err := strconv.Atoi(where[len(where)-2])
			if err != nil {
				t.Fatalf("llvm-symbolizer wrote %q: %v", lines[i+1], err)
			}
			frame = append(frame, capture.SourceLine{Function: lines[i], File: filepath.Base(strings.Join(where[:len(where)-2], ":")), Line: line})
		}
		all = append(all, frame)
	}
	if len(all) != len(addrs) {
		t.Fatalf("llvm-symbolizer answered %d addresses of %d", len(all), len(addrs))
	}
	return all
}

func functionSymbol(t *testing.T, bin, name string) elf.Symbol {
	t.Helper()
	for _, s := range srclinetest.Functions(t, bin) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no function %s in %s", name, bin)
	return elf.Symbol{}
}

// TestResolveMatchesSymbolizer resolves every offset of a function into which two levels of
// functions are inlined, as frames "outer+0xoff", and checks each against llvm-symbolizer at the
// address before it (a frame is a return address).
func TestResolveMatchesSymbolizer(t *testing.T) {
	bin := srclinetest.Build(t, "-g", "-O2")
	sym := functionSymbol(t, bin, "outer")
	im, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()

	var frames []string
	var addrs []uint64
	for off := uint64(0); off < sym.Size; off++ {
		frames = append(frames, capture.Frame{Kind: capture.FrameSymbol, Function: "outer", Offset: off}.String())
		addrs = append(addrs, sym.Value+max(off, 1)-1)
	}
	got, skipped, err := im.Resolve(frames)
	if err != nil {
		t.Fatal(err)
	}
	want := symbolize(t, bin, addrs)
	deepest := 0
	for i, frame := range frames {
		lines := got[frame].Lines
		if len(lines) == 0 {
			t.Errorf("%s: not resolved (%+v); llvm-symbolizer: %v", frame, skipped, want[i])
			continue
		}
		for k := range lines {
			lines[k].File = filepath.Base(lines[k].File)
		}
		if fmt.Sprint(lines) != fmt.Sprint(want[i]) {
			t.Errorf("%s: %v, llvm-symbolizer says %v", frame, lines, want[i])
		}
		deepest = max(deepest, len(lines))
	}
	if deepest < 3 {
		t.Errorf("no frame of outer inside innermost inlined into middle: the program tests no inlining (deepest chain %d)", deepest)
	}
}

// TestResolveSkips checks the frames an image cannot resolve are counted by why, not guessed.
func TestResolveSkips(t *testing.T) {
	bin := srclinetest.Build(t, "-g", "-O2")
	im, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	sym := functionSymbol(t, bin, "take")
	frames := []string{
		"xfs_ilock+0x4c [xfs]",
		"no_such_function+0x10",
		fmt.Sprintf("take+0x%x", sym.Size+16), // past its end
		"0xffffffff81234567",
		"[unknown]",
		"take+0x4",
	}
	got, skipped, err := im.Resolve(frames)
	if err != nil {
		t.Fatal(err)
	}
	want := Unresolved{Module: 1, NoSymbol: 2, Other: 2}
	if skipped != want {
		t.Errorf("unresolved %+v, want %+v", skipped, want)
	}
	if len(got) != 1 || got["take+0x4"].Lines[0].Function != "take" {
		t.Errorf("resolved %v, want take+0x4 alone, in take", got)
	}
}

func TestOpenRefusesNoDWARF(t *testing.T) {
	bin := srclinetest.Build(t, "-O2")
	if _, err := Open(bin); err == nil || !strings.Contains(err.Error(), ErrNoDWARF.Error()) {
		t.Errorf("Open of a program without -g: %v, want %v", err, ErrNoDWARF)
	}
}

func TestBuildIDMatchesFile(t *testing.T) {
	bin := srclinetest.Build(t, "-g")
	im, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	note, err := f.Section(".note.gnu.build-id").Data()
	if err != nil {
		t.Fatal(err)
	}
	// The note's descriptor is its last 20 bytes (SHA-1).
	want := fmt.Sprintf("%x", note[len(note)-20:])
	if im.BuildID() != want {
		t.Errorf("build id %q, want %q", im.BuildID(), want)
	}
}

func TestOpenRefusesNotELF(t *testing.T) {
	text := filepath.Join(t.TempDir(), "vmlinux")
	if err := os.WriteFile(text, []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(text)
	if err == nil || !strings.Contains(err.Error(), "not an ELF file, so not a vmlinux") {
		t.Errorf("Open of a text file: %v, want it named not an ELF file", err)
	}
}
