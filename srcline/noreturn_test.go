package srcline

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/klockstat/klockstat/srcline/srclinetest"
)

// A function whose last instruction calls a function that never returns (the kernel's
// __x64_sys_exit calling do_exit) has that call's return address at its very end: the frame's
// offset is the function's size, and its line is the call's.
const noreturnSource = `#include <stdlib.h>
__attribute__((noreturn, noinline)) void stop(int code) { exit(code); }
__attribute__((noinline)) void quit(int code) { stop(code + 1); }
int main(int argc, char **argv) { (void)argv; quit(argc); }
`

func TestResolveCallAtFunctionEnd(t *testing.T) {
	clang := srclinetest.RequireTool(t, "clang")
	dir := t.TempDir()
	src := filepath.Join(dir, "noreturn.c")
	if err := os.WriteFile(src, []byte(noreturnSource), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "noreturn")
	if out, err := exec.Command(clang, "-g", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, out)
	}
	sym := functionSymbol(t, bin, "quit")
	im, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	frame := fmt.Sprintf("quit+0x%x", sym.Size)
	got, skipped, err := im.Resolve([]string{frame})
	if err != nil {
		t.Fatal(err)
	}
	want := symbolize(t, bin, []uint64{sym.Value + sym.Size - 1})[0]
	lines := got[frame].Lines
	for k := range lines {
		lines[k].File = filepath.Base(lines[k].File)
	}
	if len(lines) == 0 || fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("%s (the return address of quit's last instruction, a call to stop): %v (unresolved %+v), llvm-symbolizer says %v",
			frame, lines, skipped, want)
	}
}
