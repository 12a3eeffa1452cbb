package srcline

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klockstat/klockstat/kallsyms"
)

// testSection is a section of an ELF64 image written by writeELF. claim, when not 0, is the size
// its header declares instead of len(data).
type testSection struct {
	name    string
	typ     elf.SectionType
	flags   elf.SectionFlag
	addr    uint64
	data    []byte
	size    uint64 // of a NOBITS section
	claim   uint64
	link    uint32
	entsize uint64
}

// writeELF writes a little-endian x86-64 ELF64 executable of the sections (after the null
// section, and before .shstrtab, which it adds): debug/elf reads images, it cannot write them.
func writeELF(t *testing.T, sections []testSection) []byte {
	t.Helper()
	shstrtab := []byte{0}
	nameOff := make([]uint32, len(sections)+1)
	for i, s := range append(sections, testSection{name: ".shstrtab"}) {
		nameOff[i] = uint32(len(shstrtab))
		shstrtab = append(append(shstrtab, s.name...), 0)
	}
	sections = append(sections, testSection{name: ".shstrtab", typ: elf.SHT_STRTAB, data: shstrtab})

	var body bytes.Buffer
	body.Write(make([]byte, 64)) // the header, written last
	headers := []elf.Section64{{}}
	for i, s := range sections {
		size := uint64(len(s.data))
		if s.typ == elf.SHT_NOBITS {
			size = s.size
		}
		if s.claim != 0 {
			size = s.claim
		}
		headers = append(headers, elf.Section64{
			Name: nameOff[i], Type: uint32(s.typ), Flags: uint64(s.flags), Addr: s.addr,
			Off: uint64(body.Len()), Size: size, Link: s.link, Addralign: 1, Entsize: s.entsize,
		})
		body.Write(s.data)
	}
	shoff := body.Len()
	for _, h := range headers {
		binary.Write(&body, binary.LittleEndian, h)
	}
	out := body.Bytes()
	hdr := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Shoff: uint64(shoff), Ehsize: 64, Shentsize: 64, Shnum: uint16(len(headers)), Shstrndx: uint16(len(headers) - 1),
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS], hdr.Ident[elf.EI_DATA], hdr.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	var h bytes.Buffer
	binary.Write(&h, binary.LittleEndian, hdr)
	copy(out, h.Bytes())
	return out
}

// testSymbol is a symbol of symtabSections, in the section of index section (0: undefined).
type testSymbol struct {
	name        string
	value, size uint64
	bind        elf.SymBind
	typ         elf.SymType
	section     elf.SectionIndex
}

// symtabSections are .symtab and .strtab of syms, to be the sections at index at and at+1.
func symtabSections(syms []testSymbol, at uint32) []testSection {
	strtab := []byte{0}
	var tab bytes.Buffer
	binary.Write(&tab, binary.LittleEndian, elf.Sym64{})
	for _, s := range syms {
		binary.Write(&tab, binary.LittleEndian, elf.Sym64{
			Name: uint32(len(strtab)), Info: elf.ST_INFO(s.bind, s.typ), Shndx: uint16(s.section), Value: s.value, Size: s.size,
		})
		strtab = append(append(strtab, s.name...), 0)
	}
	return []testSection{
		{name: ".symtab", typ: elf.SHT_SYMTAB, data: tab.Bytes(), link: at + 1, entsize: elf.Sym64Size},
		{name: ".strtab", typ: elf.SHT_STRTAB, data: strtab},
	}
}

// buildIDNote is a GNU build id note of id.
func buildIDNote(id []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, [3]uint32{4, uint32(len(id)), ntGNUBuildID})
	b.WriteString("GNU\x00")
	b.Write(id)
	return b.Bytes()
}

const testBase = 0xffffffff81000000

// testImage is a vmlinux without DWARF: code, read-only data, data, bss, per-CPU data linked at 0,
// a build id and a symbol table of each kind of symbol.
func testImage(t *testing.T, id []byte) []byte {
	const (
		text = iota + 1
		rodata
		data
		percpu
		bss
		notes
		symtab
	)
	sections := []testSection{
		{name: ".text", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, addr: testBase, data: make([]byte, 0x100)},
		{name: ".rodata", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC, addr: testBase + 0x1000, data: make([]byte, 0x100)},
		{name: ".data", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, addr: testBase + 0x2000, data: make([]byte, 0x200)},
		{name: ".data..percpu", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, addr: 0, data: make([]byte, 0x100)},
		{name: ".bss", typ: elf.SHT_NOBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, addr: testBase + 0x3000, size: 0x1000},
		{name: ".notes", typ: elf.SHT_NOTE, flags: elf.SHF_ALLOC, data: buildIDNote(id)},
	}
	syms := []testSymbol{
		{"_text", testBase, 0, elf.STB_GLOBAL, elf.STT_NOTYPE, text},
		{"_stext", testBase, 0, elf.STB_GLOBAL, elf.STT_NOTYPE, text},
		{"do_one_initcall", testBase + 0x10, 0x40, elf.STB_GLOBAL, elf.STT_FUNC, text},
		{"_etext", testBase + 0x100, 0, elf.STB_GLOBAL, elf.STT_NOTYPE, text},
		{"linux_banner", testBase + 0x1000, 0x60, elf.STB_GLOBAL, elf.STT_OBJECT, rodata},
		{"tasklist_lock", testBase + 0x2000, 8, elf.STB_GLOBAL, elf.STT_OBJECT, data},
		{"file_rwsem", testBase + 0x2040, 0x90, elf.STB_LOCAL, elf.STT_OBJECT, data},
		{"runqueues", 0x40, 0x80, elf.STB_GLOBAL, elf.STT_OBJECT, percpu},
		{"bss_lock", testBase + 0x3010, 0x40, elf.STB_LOCAL, elf.STT_OBJECT, bss},
		{"_end", testBase + 0x4000, 0, elf.STB_GLOBAL, elf.STT_NOTYPE, bss},
		{"absolute", 0x1234, 0, elf.STB_GLOBAL, elf.STT_NOTYPE, elf.SHN_ABS},
		{"undefined", 0, 0, elf.STB_GLOBAL, elf.STT_NOTYPE, elf.SHN_UNDEF},
	}
	return writeELF(t, append(sections, symtabSections(syms, symtab)...))
}

func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vmlinux")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadSymbols(t *testing.T) {
	id := []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	syms, buildID, err := ReadSymbols(writeTemp(t, testImage(t, id)))
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
	syms := []testSymbol{{"_text", testBase, 0, elf.STB_GLOBAL, elf.STT_NOTYPE, 1}}
	text := testSection{name: ".text", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, addr: testBase, data: make([]byte, 16)}
	claim := func(i int, size uint64, flags elf.SectionFlag) []byte {
		s := append([]testSection{text}, symtabSections(syms, 2)...)
		s[i].claim, s[i].flags = size, s[i].flags|flags
		return writeELF(t, s)
	}
	// A compressed .symtab whose header (Chdr64) declares 4 GiB once inflated.
	var chdr bytes.Buffer
	binary.Write(&chdr, binary.LittleEndian, elf.Chdr64{Type: uint32(elf.COMPRESS_ZLIB), Size: 4 << 30, Addralign: 8})
	chdr.Write([]byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	bomb := append([]testSection{text}, symtabSections(syms, 2)...)
	bomb[1].data, bomb[1].flags = chdr.Bytes(), elf.SHF_COMPRESSED

	tests := []struct {
		name  string
		image []byte
		want  string
	}{
		{".symtab of 4 GiB in a small file", claim(1, 4<<30, 0), "past the file's end"},
		{".strtab of 4 GiB in a small file", claim(2, 4<<30, 0), "past the file's end"},
		{"compressed .symtab inflating to 4 GiB", writeELF(t, bomb), "4 GiB once inflated, more than the 128 MiB klockstat reads"},
	}
	for _, tt := range tests {
		start := time.Now()
		_, _, err := ReadSymbols(writeTemp(t, tt.image))
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want one line with %q", tt.name, err, tt.want)
		}
		if took > time.Second {
			t.Errorf("%s: refused in %v, want at once", tt.name, took)
		}
	}

	noSymtab := writeELF(t, []testSection{text})
	if _, _, err := ReadSymbols(writeTemp(t, noSymtab)); !errors.Is(err, ErrNoSymtab) {
		t.Errorf("image without .symtab: err %v, want ErrNoSymtab", err)
	}
}
