package srcline

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klockstat/klockstat/srcline/srclinetest"
)

var testBuildID = []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4}

// forged are the sections of a small image with a build id, a symbol table and DWARF sections
// of garbage, with the named section replaced by with.
func forged(replace string, with srclinetest.Section) []srclinetest.Section {
	sym := make([]byte, 48) // the null symbol, and a function "f" at 0x1000
	sym[24], sym[24+4] = 1, byte(elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC))
	sym[24+8+1] = 0x10
	all := []srclinetest.Section{
		srclinetest.BuildIDNote(testBuildID),
		{Name: ".symtab", Type: elf.SHT_SYMTAB, Data: sym, Link: 3},
		{Name: ".strtab", Type: elf.SHT_STRTAB, Data: []byte("\x00f\x00")},
		{Name: ".debug_info", Type: elf.SHT_PROGBITS, Data: []byte("not DWARF at all")},
		{Name: ".debug_line", Type: elf.SHT_PROGBITS, Data: []byte("nor this")},
	}
	for i := range all {
		if all[i].Name == replace {
			with.Name = replace
			all[i] = with
		}
	}
	return all
}

func writeForged(t *testing.T, replace string, with srclinetest.Section) string {
	path := filepath.Join(t.TempDir(), "vmlinux")
	srclinetest.WriteELF(t, path, forged(replace, with)...)
	return path
}

// openBounded opens path, failing the test unless it is done in a second and allocates under
// 64 MiB, and returns Open's error.
func openBounded(t *testing.T, path string) error {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	im, err := Open(path)
	if err == nil {
		err = im.Load()
		im.Close()
	}
	runtime.ReadMemStats(&after)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Open took %v", d)
	}
	if a := after.TotalAlloc - before.TotalAlloc; a > 64<<20 {
		t.Errorf("Open allocated %d MiB", a>>20)
	}
	return err
}

func TestOpenRefusesOversizedSections(t *testing.T) {
	const claim = 4 << 30
	for _, tc := range []struct {
		name    string
		section string
		with    srclinetest.Section
		want    string
	}{
		{"compressed .debug_info claiming 4 GiB", ".debug_info", srclinetest.Section{Type: elf.SHT_PROGBITS, Data: bytes.Repeat([]byte{0}, 1<<20), Inflated: claim},
			"section .debug_info: 4 GiB once inflated, more than the 2 GiB klockstat reads"},
		{"compressed .debug_info claiming 1 GiB from 1 KiB", ".debug_info", srclinetest.Section{Type: elf.SHT_PROGBITS, Data: bytes.Repeat([]byte{0}, 1<<20), Inflated: 1 << 30},
			"claiming to inflate to 1 GiB, more than 64 times"},
		{"compressed .symtab claiming 4 GiB", ".symtab", srclinetest.Section{Type: elf.SHT_SYMTAB, Data: make([]byte, 48), Inflated: claim, Link: 3},
			"section .symtab: 4 GiB once inflated, more than the 128 MiB klockstat reads"},
		{"section past the end", ".debug_line", srclinetest.Section{Type: elf.SHT_PROGBITS, Offset: 1 << 20, Size: 100},
			"section .debug_line: bytes 1048576 to 1048676, past the file's end"},
		{"note claiming 4 GiB", ".note.gnu.build-id", srclinetest.Section{Type: elf.SHT_NOTE, Data: []byte{1}, Inflated: claim},
			"section .note.gnu.build-id: 4 GiB once inflated, more than the 1 MiB klockstat reads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := openBounded(t, writeForged(t, tc.section, tc.with))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// A sparse file of 1.9 GB whose .symtab spans it is refused before the table is read.
func TestOpenRefusesHugeSymbolTable(t *testing.T) {
	path := writeForged(t, ".symtab", srclinetest.Section{Type: elf.SHT_SYMTAB, Offset: 4096, Size: 1900 << 20, Link: 3})
	if err := os.Truncate(path, 1901<<20); err != nil {
		t.Fatal(err)
	}
	err := openBounded(t, path)
	if want := "section .symtab: 1.9 GiB, more than the 128 MiB klockstat reads"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}

func TestOpenTruncated(t *testing.T) {
	path := writeForged(t, "", srclinetest.Section{})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)-100], 0o644); err != nil { // into the section headers
		t.Fatal(err)
	}
	_, err = Open(path)
	if want := "the file is truncated"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// The build id is read without touching DWARF, so that an image of another kernel is refused
// before its DWARF is read; bad DWARF fails Load.
func TestOpenReadsBuildIDFirst(t *testing.T) {
	im, err := Open(writeForged(t, "", srclinetest.Section{}))
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	if got, want := im.BuildID(), "deadbeef01020304"; got != want {
		t.Errorf("build id %q, want %q", got, want)
	}
	if im.dwarf != nil || im.symbols != nil {
		t.Error("Open read the symbols or the DWARF")
	}
	if err := im.Load(); err == nil {
		t.Error("Load of DWARF of garbage did not fail")
	}
	if _, _, err := im.Resolve([]string{"f+0x4"}); err == nil {
		t.Error("Resolve of an image that failed to load did not fail")
	}
}

func TestOpenFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Open(path); done <- err }()
	select {
	case err := <-done:
		if want := path + ": a named pipe (FIFO), not a regular file"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want %q", err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Open of a FIFO blocks")
	}
}

// FuzzOpen opens forged images: Open, Load and Resolve must fail or succeed, within bounds,
// without panicking.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	for _, with := range []srclinetest.Section{{}, {Type: elf.SHT_PROGBITS, Data: []byte("x"), Inflated: 100}} {
		path := filepath.Join(dir, "seed")
		srclinetest.WriteELF(f, path, forged(".debug_info", with)...)
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "vmlinux")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		im, err := Open(path)
		if err != nil {
			return
		}
		defer im.Close()
		im.Resolve([]string{"f+0x4", "g+0x0"})
	})
}
