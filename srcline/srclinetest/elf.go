package srclinetest

import (
	"bytes"
	"compress/zlib"
	"debug/elf"
	"encoding/binary"
	"os"
	"testing"
)

// Section is a section of a forged ELF file (WriteELF).
type Section struct {
	Name  string
	Type  elf.SectionType
	Flags elf.SectionFlag
	Addr  uint64
	Data  []byte
	// Inflated, when not 0, makes the section compressed (SHF_COMPRESSED, zlib): Data is deflated
	// and the section claims to inflate to Inflated bytes, whatever Data's size.
	Inflated uint64
	// Offset and Size, when not 0, replace the section's place in the file and the size its header
	// declares instead of Data's: a section past the file's end, spanning a sparse file, claiming
	// more than the file holds, or the size of a NOBITS section (.bss), which has no Data.
	Offset, Size uint64
	Link         uint32
	// Entsize, when not 0, is the size of the section's entries; a SHT_SYMTAB's is otherwise 24,
	// ELF64's.
	Entsize uint64
}

// Symbol is a symbol of Symtab, in the section of index Section (0: undefined).
type Symbol struct {
	Name        string
	Value, Size uint64
	Bind        elf.SymBind
	Type        elf.SymType
	Section     elf.SectionIndex
}

// Symtab are the sections .symtab and .strtab of syms (after the null symbol), to be the sections
// at index at and at+1 of WriteELF.
func Symtab(syms []Symbol, at uint32) []Section {
	strtab := []byte{0}
	var tab bytes.Buffer
	binary.Write(&tab, binary.LittleEndian, elf.Sym64{})
	for _, s := range syms {
		binary.Write(&tab, binary.LittleEndian, elf.Sym64{
			Name: uint32(len(strtab)), Info: elf.ST_INFO(s.Bind, s.Type), Shndx: uint16(s.Section), Value: s.Value, Size: s.Size,
		})
		strtab = append(append(strtab, s.Name...), 0)
	}
	return []Section{
		{Name: ".symtab", Type: elf.SHT_SYMTAB, Data: tab.Bytes(), Link: at + 1, Entsize: elf.Sym64Size},
		{Name: ".strtab", Type: elf.SHT_STRTAB, Data: strtab},
	}
}

// BuildIDNote is a note section holding the GNU build id id.
func BuildIDNote(id []byte) Section {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, [3]uint32{4, uint32(len(id)), 3})
	b.WriteString("GNU\x00")
	b.Write(id)
	for b.Len()%4 != 0 {
		b.WriteByte(0)
	}
	return Section{Name: ".note.gnu.build-id", Type: elf.SHT_NOTE, Data: b.Bytes()}
}

// WriteELF writes a little-endian ELF64 executable for x86-64 of the given sections to path, small
// whatever its sections claim: inputs a forged vmlinux is made of. A section .shstrtab naming
// them is added last.
func WriteELF(tb testing.TB, path string, sections ...Section) {
	tb.Helper()
	names := []byte{0}
	nameOff := make([]uint32, len(sections)+1)
	for i, s := range sections {
		nameOff[i] = uint32(len(names))
		names = append(append(names, s.Name...), 0)
	}
	nameOff[len(sections)] = uint32(len(names))
	names = append(names, ".shstrtab\x00"...)
	sections = append(sections, Section{Name: ".shstrtab", Type: elf.SHT_STRTAB, Data: names})

	var body bytes.Buffer
	body.Write(make([]byte, 64)) // the ELF header, written last
	headers := make([]elf.Section64, 1, len(sections)+1)
	for i, s := range sections {
		data, flags := s.Data, uint64(s.Flags)
		if s.Inflated != 0 {
			var z bytes.Buffer
			binary.Write(&z, binary.LittleEndian, elf.Chdr64{Type: uint32(elf.COMPRESS_ZLIB), Size: s.Inflated, Addralign: 1})
			zw := zlib.NewWriter(&z)
			zw.Write(data)
			zw.Close()
			data, flags = z.Bytes(), flags|uint64(elf.SHF_COMPRESSED)
		}
		off, size := uint64(body.Len()), uint64(len(data))
		body.Write(data)
		if s.Offset != 0 {
			off = s.Offset
		}
		if s.Size != 0 {
			size = s.Size
		}
		h := elf.Section64{Name: nameOff[i], Type: uint32(s.Type), Flags: flags, Addr: s.Addr, Off: off, Size: size, Link: s.Link, Addralign: 1, Entsize: s.Entsize}
		if s.Type == elf.SHT_SYMTAB {
			if h.Entsize == 0 {
				h.Entsize = elf.Sym64Size
			}
			h.Info = 1
		}
		headers = append(headers, h)
	}
	for body.Len()%8 != 0 {
		body.WriteByte(0)
	}
	shoff := body.Len()
	binary.Write(&body, binary.LittleEndian, headers)
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
	if err := os.WriteFile(path, out, 0o644); err != nil {
		tb.Fatal(err)
	}
}
