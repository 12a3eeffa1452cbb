package srcline

import (
	"debug/elf"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klockstat/klockstat/kallsyms"
	"github.com/klockstat/klockstat/srcline/srclinetest"
)

const testBase = 0xffffffff81000000

// testImage writes a vmlinux without DWARF: code, read-only data, data, bss, per-CPU data linked
// at 0, a build id and a symbol table of each kind of symbol; it returns its path.
func testImage(t *testing.T, id []byte) string {
	const (
		text = iota + 1
		rodata
		data
		percpu
		bss
		notes
		symtab
	)
	note := srclinetest.BuildIDNote(id)
	note.Name, note.Flags = ".notes", elf.SHF_ALLOC
	sections := []srclinetest.Section{
		{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: testBase, Data: make([]byte, 0x100)},
		{Name: ".rodata", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Addr: testBase + 0x1000, Data: make([]byte, 0x100)},
		{Name: ".data", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: testBase + 0x2000, Data: make([]byte, 0x200)},
		{Name: ".data..percpu", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: 0, Data: make([]byte, 0x100)},
		{Name: ".bss", Type: elf.SHT_NOBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: testBase + 0x3000, Size: 0x1000},
		note,
	}
	syms := []srclinetest.Symbol{
		{Name: "_text", Value: testBase, Size: 0, Bind: elf.STB_GLOBAL, Type: elf.STT_NOTYPE, Section: text},
		{Name: "_stext", Value: testBase, Size: 0, Bind: elf.STB_GLOBAL, Type: elf.STT_NOTYPE, Section: text},
		{Name: "do_one_initcall", Value: testBase + 0x10, Size: 0x40, Bind: elf.STB_GLOBAL, Type: elf.STT_FUNC, Section: text},
		{Name: "_etext", Value: testBase + 0x100, Size: 0, Bind: elf.STB_GLOBAL, Type: elf.STT_NOTYPE, Section: text},
		{Name: "linux_banner", Value: testBase + 0x1000, Size: 0x60, Bind: elf.STB_GLOBAL, Type: elf.STT_OBJECT, Section: rodata},
		{Name: "tasklist_lock", Value: testBase + 0x2000, Size: 8, Bind: elf.STB_GLOBAL, Type: elf.STT_OBJECT, Section: data},
		{Name: "file_rwsem", Value: testBase + 0x2040, Size: 0x90, Bind: elf.STB_LOCAL, Type: elf.STT_OBJECT, Section: data},
		{Name: "runqueues", Value: 0x40, Size: 0x80, Bind: elf.STB_GLOBAL, Type: elf.STT_OBJECT, Section: percpu},
		{Name: "bss_lock", Value: testBase + 0x3010, Size: 0x40, Bind: elf.STB_LOCAL, Type: elf.STT_OBJECT, Section: bss},
		{Name: "_end", Value: testBase + 0x4000, Size: 0, Bind: elf.STB_GLOBAL, Type: elf.STT_NOTYPE, Section: bss},
		{Name: "absolute", Value: 0x1234, Size: 0, Bind: elf.STB_GLOBAL, Type: elf.STT_NOTYPE, Section: elf.SHN_ABS},
		{Name: "undefined", Value: 0, Size: 0, Bind: elf.STB_GLOBAL, Type: elf.STT_NOTYPE, Section: elf.SHN_UNDEF},
	}
	return writeImage(t, append(sections, srclinetest.Symtab(syms, symtab)...))
}

// writeImage writes an image of the sections to a temporary file and returns its path.
func writeImage(t *testing.T, sections []srclinetest.Section) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vmlinux")
	srclinetest.WriteELF(t, path, sections...)
	return path
}

func TestReadSymbols(t *testing.T) {
	id := []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	syms, buildID, err := ReadSymbols(testImage(t, id))
	if err != nil {
		t.Fatalf("ReadSymbols: %v", err)
	}
	if buildID != hex.EncodeToString(id) {
		t.Errorf("build id %q, want %x", buildID, id)
	}
	want := map[string]kallsyms.Symbol{
		"_text":         {Addr: testBase, Type: 'T', Name: "_text"},
		"_stext":        {Addr: testBase, Type: 'T', Name: "_stext"},
		"_etext":        {Addr: testBase + 0x100, Type: 'T', Name: "_etext"},
		"linux_banner":  {Addr: testBase + 0x1000, Type: 'R', Name: "linux_banner", Size: 0x60},
		"tasklist_lock": {Addr: testBase + 0x2000, Type: 'D', Name: "tasklist_lock", Size: 8},
		"file_rwsem":    {Addr: testBase + 0x2040, Type: 'd', Name: "file_rwsem", Size: 0x90},
		"runqueues":     {Addr: 0x40, Type: 'D', Name: "runqueues", Size: 0x80},
		"bss_lock":      {Addr: testBase + 0x3010, Type: 'b', Name: "bss_lock", Size: 0x40},
		"_end":          {Addr: testBase + 0x4000, Type: 'B', Name: "_end"},
	}
	got := map[string]kallsyms.Symbol{}
	for _, s := range syms {
		got[s.Name] = s
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %+v, want %+v", name, got[name], w)
		}
	}
	for _, name := range []string{"do_one_initcall", "absolute", "undefined"} {
		if s, ok := got[name]; ok {
			t.Errorf("%s read as %+v: functions, absolute and undefined symbols name no data", name, s)
		}
	}

	// The image names the static locks of a kernel whose kallsyms lists no data, moved by KASLR.
	const running = testBase + 0x2a000000
	k, err := kallsyms.Parse(strings.NewReader(strings.Join([]string{
		"ffffffffab000000 T _stext", "ffffffffab000000 T _text", "ffffffffab000010 T do_one_initcall",
		"ffffffffab000100 T _etext", "ffffffffab001000 D __start_rodata", "",
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	m, offset, err := k.WithImage(syms)
	if err != nil {
		t.Fatalf("WithImage: %v", err)
	}
	if offset != running-testBase {
		t.Errorf("offset %#x, want %#x", offset, uint64(running-testBase))
	}
	for addr, want := range map[uint64]string{running + 0x2048: "file_rwsem+0x8", running + 0x2000: "tasklist_lock", running + 0x3010: "bss_lock"} {
		if name, ok := m.Data(addr); !ok || name != want {
			t.Errorf("Data(%#x) = %q, %v; want %q", addr, name, ok, want)
		}
	}
}

// TestReadSymbolsHostile checks that an image whose headers claim more than the file holds, or
// more than MaxSymbolTable, is refused at once, in one line, before memory is taken for it.
func TestReadSymbolsHostile(t *testing.T) {
	syms := []srclinetest.Symbol{{Name: "_text", Value: testBase, Size: 0, Bind: elf.STB_GLOBAL, Type: elf.STT_NOTYPE, Section: 1}}
	text := srclinetest.Section{Name: ".text", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: testBase, Data: make([]byte, 16)}
	claim := func(i int, size uint64) string {
		s := append([]srclinetest.Section{text}, srclinetest.Symtab(syms, 2)...)
		s[i].Size = size
		return writeImage(t, s)
	}
	// A compressed .symtab, empty, whose header (Chdr64) declares 4 GiB once inflated.
	bomb := append([]srclinetest.Section{text}, srclinetest.Symtab(syms, 2)...)
	bomb[1].Data, bomb[1].Inflated = nil, 4<<30

	tests := []struct {
		name  string
		image string
		want  string
	}{
		{".symtab of 4 GiB in a small file", claim(1, 4<<30), "past the file's end"},
		{".strtab of 4 GiB in a small file", claim(2, 4<<30), "past the file's end"},
		{"compressed .symtab inflating to 4 GiB", writeImage(t, bomb), "4 GiB once inflated, more than the 128 MiB klockstat reads"},
	}
	for _, tt := range tests {
		start := time.Now()
		_, _, err := ReadSymbols(tt.image)
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want one line with %q", tt.name, err, tt.want)
		}
		if took > time.Second {
			t.Errorf("%s: refused in %v, want at once", tt.name, took)
		}
	}

	noSymtab := writeImage(t, []srclinetest.Section{text})
	if _, _, err := ReadSymbols(noSymtab); !errors.Is(err, ErrNoSymtab) {
		t.Errorf("image without .symtab: err %v, want ErrNoSymtab", err)
	}
}
