// Package srclinetest builds the program with inlined functions that the tests of source lines
// read: a small stand-in for a vmlinux with DWARF, compiled by clang at test time.
package srclinetest

import (
	"debug/elf"
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/klockstat/klockstat/internal/testenv"
)

//go:embed testdata/inlined.c
var source []byte

// RequireTool returns the path of a program a test needs, skipping without it, failing in CI,
// which installs it (clang, llvm-symbolizer).
func RequireTool(tb testing.TB, name string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if testenv.InCI() {
			tb.Fatalf("%s not found, which CI installs: %v", name, err)
		}
		tb.Skipf("%s not found: %v", name, err)
	}
	return path
}

// Build compiles testdata/inlined.c with clang and flags (e.g. "-g", "-O2") into a temporary
// directory and returns the program's path. It has a GNU build id, as a kernel has.
func Build(tb testing.TB, flags ...string) string {
	tb.Helper()
	clang := RequireTool(tb, "clang")
	dir := tb.TempDir()
	src := filepath.Join(dir, "inlined.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, "inlined")
	args := append(append([]string{}, flags...), "-Wl,--build-id=sha1", "-o", bin, src)
	if out, err := exec.Command(clang, args...).CombinedOutput(); err != nil {
		tb.Fatalf("clang %q: %v\n%s", args, err, out)
	}
	return bin
}

// Functions are the function symbols of the ELF file at path, in symbol-table order.
func Functions(tb testing.TB, path string) []elf.Symbol {
	tb.Helper()
	f, err := elf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		tb.Fatal(err)
	}
	var funcs []elf.Symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			funcs = append(funcs, s)
		}
	}
	return funcs
}
