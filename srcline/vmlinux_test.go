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
)

// TestVmlinux resolves frames of a real kernel's debug image, KLOCKSTAT_VMLINUX (e.g. Debian's
// /usr/lib/debug/boot/vmlinux-6.1.0-54-cloud-amd64 of linux-image-6.1.0-54-cloud-amd64-dbg):
// KLOCKSTAT_VMLINUX_FRAMES frames (default 3000) in the middle of functions spread over its
// symbol table, timed, and 200 of them checked against llvm-symbolizer.
func TestVmlinux(t *testing.T) {
	path := os.Getenv("KLOCKSTAT_VMLINUX")
	if path == "" {
		t.Skip("KLOCKSTAT_VMLINUX names no kernel debug image")
	}
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
	want := symbolize(t, path, someAddrs)
	differ := 0
	for i, frame := range some {
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
	t.Logf("%d frames checked against llvm-symbolizer, %d differ", len(some), differ)
}

// spreadFrames are n frames "function+0xoff" in the middle of functions spread evenly over the
// image's symbol table, with the address llvm-symbolizer is asked for each (the one before).
func spreadFrames(t *testing.T, path string, n int) ([]string, []uint64) {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var funcs []elf.Symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			count[s.Name]++
			if s.Size > 8 {
				funcs = append(funcs, s)
			}
		}
	}
	funcs = slices.DeleteFunc(funcs, func(s elf.Symbol) bool { return count[s.Name] > 1 })
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
