package srcline

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klockstat/klockstat/kallsyms"
)

// ErrNoSymtab is returned by ReadSymbols for an image without a symbol table (.symtab): a
// stripped one such as /boot's vmlinuz holds none.
var ErrNoSymtab = errors.New("no symbol table (.symtab)")

// elfSymbol is one entry of an ELF symbol table.
type elfSymbol struct {
	name        string
	value, size uint64
	info        byte
	section     elf.SectionIndex
}

// ReadSymbols reads the data symbols of the kernel image at path from its symbol table: its
// objects (STT_OBJECT) and the linker's markers (STT_NOTYPE, "_text", "_end"), in kallsyms' form
// (nm's type letter from their section, their size), at the addresses the image was linked at; and
// the image's build id ("" when it has none). It needs no DWARF. Its memory is bounded: see
// MaxSymbolTable.
func ReadSymbols(path string) (syms []kallsyms.Symbol, buildID string, err error) {
	f, err := openImageFile(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: not an ELF image: %w", path, err)
	}
	if buildID, err = elfBuildID(ef, st.Size()); err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", path, err)
	}
	all, err := readSymtab(ef, st.Size())
	if err != nil {
		return nil, buildID, fmt.Errorf("reading %s: %w", path, err)
	}
	for _, s := range all {
		typ := elf.ST_TYPE(s.info)
		if typ != elf.STT_OBJECT && typ != elf.STT_NOTYPE || s.value == 0 || s.name == "" {
			continue
		}
		if letter := nmType(ef, s); letter != 0 {
			syms = append(syms, kallsyms.Symbol{Addr: s.value, Type: letter, Name: s.name, Size: s.size})
		}
	}
	return syms, buildID, nil
}

// nmType is the letter nm gives a symbol from its section: t for code, b for bss, d for writable
// data, r for read-only data, uppercase when global or weak; 0 for a symbol of no allocated
// section (absolute, undefined, debug).
func nmType(f *elf.File, s elfSymbol) byte {
	if s.section == elf.SHN_UNDEF || int(s.section) >= len(f.Sections) {
		return 0
	}
	sec := f.Sections[s.section]
	var c byte
	switch {
	case sec.Flags&elf.SHF_ALLOC == 0:
		return 0
	case sec.Flags&elf.SHF_EXECINSTR != 0:
		c = 't'
	case sec.Type == elf.SHT_NOBITS:
		c = 'b'
	case sec.Flags&elf.SHF_WRITE != 0:
		c = 'd'
	default:
		c = 'r'
	}
	if b := elf.ST_BIND(s.info); b == elf.STB_GLOBAL || b == elf.STB_WEAK {
		c -= 'a' - 'A'
	}
	return c
}

// readSymtab reads f's .symtab and its names, refusing sections larger than MaxSymbolTable or than
// the file (of fileSize bytes) before reading them.
func readSymtab(f *elf.File, fileSize int64) ([]elfSymbol, error) {
	tab := f.SectionByType(elf.SHT_SYMTAB)
	if tab == nil {
		return nil, ErrNoSymtab
	}
	if f.Class != elf.ELFCLASS64 || tab.Entsize != elf.Sym64Size {
		return nil, fmt.Errorf("symbol table of %v with entries of %d bytes: only ELF64's %d-byte entries are read", f.Class, tab.Entsize, elf.Sym64Size)
	}
	if int(tab.Link) >= len(f.Sections) || tab.Link == 0 || f.Sections[tab.Link].Type != elf.SHT_STRTAB {
		return nil, fmt.Errorf("symbol table %s links to no string table (section %d)", tab.Name, tab.Link)
	}
	entries, err := readSection(tab, fileSize, MaxSymbolTable)
	if err != nil {
		return nil, err
	}
	raw, err := readSection(f.Sections[tab.Link], fileSize, MaxSymbolTable)
	if err != nil {
		return nil, err
	}
	names := string(raw) // one copy; names are substrings of it
	syms := make([]elfSymbol, 0, len(entries)/elf.Sym64Size)
	for off := elf.Sym64Size; off+elf.Sym64Size <= len(entries); off += elf.Sym64Size { // entry 0 is null
		e := entries[off : off+elf.Sym64Size]
		s := elfSymbol{
			info:    e[4],
			section: elf.SectionIndex(f.ByteOrder.Uint16(e[6:])),
			value:   f.ByteOrder.Uint64(e[8:]),
			size:    f.ByteOrder.Uint64(e[16:]),
		}
		if start := f.ByteOrder.Uint32(e); int64(start) < int64(len(names)) {
			s.name = names[start:]
			if end := strings.IndexByte(s.name, 0); end >= 0 {
				s.name = s.name[:end]
			}
		}
		syms = append(syms, s)
	}
	return syms, nil
}

// readSection reads a section whole, decompressed, once CheckSection has found that the file holds
// what its header says it stores (fileSize bytes in all) and that it is at most limit bytes once
// decompressed: a hostile header is refused in one line, before any memory is taken for it.
func readSection(s *elf.Section, fileSize int64, limit uint64) ([]byte, error) {
	if s.Type == elf.SHT_NOBITS {
		return nil, fmt.Errorf("section %s holds no data", s.Name)
	}
	if err := CheckSection(s, fileSize, limit); err != nil {
		return nil, err
	}
	b := make([]byte, s.Size)
	// Size is the decompressed size a compressed section declares: no more is inflated.
	if _, err := io.ReadFull(s.Open(), b); err != nil {
		return nil, fmt.Errorf("reading section %s: %w", s.Name, err)
	}
	return b, nil
}

// elfBuildID is the GNU build id of f's notes, in hex, "" when it has none; each note section is
// read through readSection, first of all the image's sections.
func elfBuildID(f *elf.File, fileSize int64) (string, error) {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		b, err := readSection(s, fileSize, MaxNotes)
		if err != nil {
			return "", err
		}
		if id := ParseBuildID(b, f.ByteOrder); id != "" {
			return id, nil
		}
	}
	return "", nil
}
