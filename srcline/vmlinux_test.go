package srcline

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/srcline/srclinetest"
)

// TestVmlinux resolves frames of a real kernel's debug image, KLOCKSTAT_VMLINUX (e.g. Debian's
// /usr/lib/debug/boot/vmlinux-6.1.0-54-cloud-amd64 of linux-image-6.1.0-54-cloud-amd64-dbg):
// KLOCKSTAT_VMLINUX_FRAMES frames (default 3000) in the middle of functions spread over its
// symbol table, timed, and 200 of them checked against llvm-symbolizer. With
// KLOCKSTAT_VMLINUX_CAPTURE, a capture taken on that kernel (the kernel matrix's 6.1 guest saves
// one), it also resolves every frame of the capture's stacks and checks each against
// llvm-symbolizer.
func TestVmlinux(t *testing.T) {
	path := os.Getenv("KLOCKSTAT_VMLINUX")
	if path == "" {
		t.Skip("KLOCKSTAT_VMLINUX names no kernel debug image")
	}
	t.Run("spread", func(t *testing.T) { testSpreadFrames(t, path) })
	if cp := os.Getenv("KLOCKSTAT_VMLINUX_CAPTURE"); cp != "" {
		t.Run("capture", func(t *testing.T) { testCaptureFrames(t, path, cp) })
	}
}

func testSpreadFrames(t *testing.T, path string) {
	n := 3000
	if s := os.Getenv("KLOCKSTAT_VMLINUX_FRAMES"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil {
			t.Fatalf("KLOCKSTAT_VMLINUX_FRAMES=%q: %v", s, err)
		}
	}
	frames, addrs := spreadFrames(t, path, n)

	start := time.Now()
	im, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	opened := time.Since(start)
	got, skipped, err := im.Resolve(frames)
	if err != nil {
		t.Fatal(err)
	}
	resolved := time.Since(start) - opened
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	var usage syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	t.Logf("%s: opened in %v, %d frames resolved in %v (%d unresolved: %+v); heap %d MiB, max RSS %d MiB (mapped sections' pages included)",
		filepath.Base(path), opened.Round(time.Millisecond), len(got), resolved.Round(time.Millisecond), skipped.Total(), skipped,
		mem.HeapSys>>20, usage.Maxrss>>10)
	if len(got) < len(frames)*9/10 {
		t.Errorf("%d of %d frames resolved", len(got), len(frames))
	}

	// The oracle, on every 15th frame.
	var some []string
	var someAddrs []uint64
	for i := 0; i < len(frames) && len(some) < 200; i += 15 {
		if _, ok := got[frames[i]]; ok {
			some, someAddrs = append(some, frames[i]), append(someAddrs, addrs[i])
		}
	}
	differ := compareWithSymbolizer(t, path, some, someAddrs, got)
	t.Logf("%d frames checked against llvm-symbolizer, %d differ", len(some), differ)
}

// testCaptureFrames resolves every frame of the stacks of the capture at capturePath, which must
// have been taken on the kernel of the image at path, and checks each against llvm-symbolizer.
// A real capture's stacks cross functions the kernel inlines (inode_lock, mmap_read_lock, ...):
// at least one frame must resolve to an inlined function. Every frame must resolve but those that
// cannot: a module's, one of a name several functions have, and the outermost of a stack, the
// entry code's (entry_SYSCALL_64_after_hwframe, asm_exc_page_fault: assembly, without DWARF).
func testCaptureFrames(t *testing.T, path, capturePath string) {
	f, err := os.Open(capturePath)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := capture.Read(f)
	f.Close()
	if err != nil {
		t.Fatalf("KLOCKSTAT_VMLINUX_CAPTURE: %v", err)
	}
	im, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	if cp.Meta.KernelBuildID != im.BuildID() {
		t.Fatalf("the capture's kernel build id is %q, the image's %q: not the debug image of the captured kernel",
			cp.Meta.KernelBuildID, im.BuildID())
	}

	var frames []string
	seen := map[string]bool{}
	outermost := map[string]bool{}
	for _, r := range cp.Records {
		for _, frame := range r.Stack {
			if !seen[frame] {
				seen[frame] = true
				frames = append(frames, frame)
			}
		}
		if len(r.Stack) > 0 {
			outermost[r.Stack[len(r.Stack)-1]] = true
		}
	}
	if len(frames) == 0 {
		t.Fatalf("%s has no stacks", capturePath)
	}
	got, skipped, err := im.Resolve(frames)
	if err != nil {
		t.Fatal(err)
	}
	if len(got)*4 < len(frames)*3 {
		t.Errorf("%d of the capture's %d frames resolved (unresolved: %+v)", len(got), len(frames), skipped)
	}

	unique, count := uniqueFunctions(t, path)
	var missing []string
	for _, frame := range frames {
		fr := capture.ParseFrame(frame)
		if _, ok := got[frame]; !ok && fr.Module == "" && count[fr.Function] < 2 && !outermost[frame] {
			missing = append(missing, frame)
		}
	}
	if len(missing) > 0 {
		t.Errorf("frames of vmlinux inside stacks not resolved: %v", missing)
	}

	// llvm-symbolizer is given the address of each frame's function in the symbol table; a name
	// several functions share is left to Resolve alone.
	funcs := map[string]elf.Symbol{}
	for _, s := range unique {
		funcs[s.Name] = s
	}
	var checked []string
	var addrs []uint64
	inlined := 0
	for _, frame := range frames {
		sf, ok := got[frame]
		if !ok {
			continue
		}
		if len(sf.Lines) > 1 {
			inlined++
		}
		fr := capture.ParseFrame(frame)
		s, ok := funcs[fr.Function]
		if !ok {
			continue
		}
		addr := s.Value + fr.Offset
		if fr.Offset > 0 {
			addr-- // inside the call the return address follows, as Resolve reads it
		}
		checked, addrs = append(checked, frame), append(addrs, addr)
	}
	differ := compareWithSymbolizer(t, path, checked, addrs, got)
	t.Logf("%s: %d frames, %d resolved (%d unresolved: %+v), %d through inlined functions; %d checked against llvm-symbolizer, %d differ",
		filepath.Base(capturePath), len(frames), len(got), skipped.Total(), skipped, inlined, len(checked), differ)
	if inlined == 0 {
		t.Errorf("no frame of the capture resolved to an inlined function: its stacks test no inlining")
	}
}

// compareWithSymbolizer checks the lines Resolve found for each of frames (got) against
// llvm-symbolizer's at the frame's address in addrs, and returns how many differ.
func compareWithSymbolizer(t *testing.T, path string, frames []string, addrs []uint64, got map[string]capture.SourceFrame) int {
	t.Helper()
	if len(frames) == 0 {
		t.Error("no frame to check against llvm-symbolizer")
		return 0
	}
	want := symbolize(t, path, addrs)
	differ := 0
	for i, frame := range frames {
		lines := slices.Clone(got[frame].Lines)
		for k := range lines {
			lines[k].File = filepath.Base(lines[k].File)
		}
		// The outermost is named by the symbol, llvm-symbolizer by DWARF ("f.isra.0" is "f").
		w := slices.Clone(want[i])
		if len(w) > 0 && len(lines) == len(w) {
			w[len(w)-1].Function = lines[len(lines)-1].Function
		}
		if fmt.Sprint(lines) != fmt.Sprint(w) {
			differ++
			t.Errorf("%s: %v, llvm-symbolizer says %v", frame, lines, want[i])
		}
	}
	return differ
}

// uniqueFunctions are the image's function symbols whose name no other function has, in
// symbol-table order, and the number of functions of each name.
func uniqueFunctions(t *testing.T, path string) ([]elf.Symbol, map[string]int) {
	t.Helper()
	count := map[string]int{}
	funcs := slices.DeleteFunc(srclinetest.Functions(t, path), func(s elf.Symbol) bool { return s.Value == 0 })
	for _, s := range funcs {
		count[s.Name]++
	}
	return slices.DeleteFunc(funcs, func(s elf.Symbol) bool { return count[s.Name] > 1 }), count
}

// spreadFrames are n frames "function+0xoff" in the middle of functions spread evenly over the
// image's symbol table, with the address llvm-symbolizer is asked for each (the one before).
func spreadFrames(t *testing.T, path string, n int) ([]string, []uint64) {
	unique, _ := uniqueFunctions(t, path)
	funcs := slices.DeleteFunc(unique, func(s elf.Symbol) bool { return s.Size <= 8 })
	var frames []string
	var addrs []uint64
	step := max(1, len(funcs)/n)
	for i := 0; i < len(funcs) && len(frames) < n; i += step {
		s := funcs[i]
		off := s.Size / 2
		frames = append(frames, capture.Frame{Kind: capture.FrameSymbol, Function: s.Name, Offset: off}.String())
		addrs = append(addrs, s.Value+off-1)
	}
	return frames, addrs
}
