// Package srcline resolves kernel stack frames, as a capture writes them ("do_renameat2+0x221"),
// to the source lines and inlined functions of a vmlinux built with DWARF debug information.
//
// A frame is found by its function's address in the image's own symbol table, plus its offset:
// no KASLR arithmetic, so a capture resolves on any machine that has its kernel's debug image. A
// kernel's DWARF is hundreds of megabytes: an Image maps the file and reads only the compile
// units that hold the frames asked for, each once, and keeps from each only the lines and inlined
// functions of those frames.
package srcline

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"syscall"

	"github.com/klockstat/klockstat/internal/inputfile"
)

// Image is a vmlinux (or a program) with DWARF, open for resolving frames. It is not safe for
// concurrent use.
type Image struct {
	path    string
	file    *os.File
	size    int64  // of the file
	mapped  []byte // the whole file, mapped read-only; nil when it could not be
	elf     *elf.File
	dwarf   *dwarf.Data
	buildID string
	symbols map[string][]symbol     // function symbols by name
	units   []unitRange             // address ranges of the compile units, sorted by start
	names   map[dwarf.Offset]string // names of abstract functions, by their entry
	loaded  bool                    // Load has run, with loadErr
	loadErr error
}

type symbol struct{ addr, size uint64 }

// unitRange is one address range of a compile unit, whose entry is at cu.
type unitRange struct {
	lo, hi uint64
	cu     dwarf.Offset
}

// ErrNoDWARF is returned by Open for a file without DWARF line information: a vmlinux built
// without CONFIG_DEBUG_INFO, or a stripped one such as /boot's.
var ErrNoDWARF = errors.New("no DWARF debug information")

// openImageFile opens a kernel image for reading, refusing anything but a regular file (a FIFO,
// a device) without blocking.
func openImageFile(path string) (*os.File, error) {
	f, err := inputfile.OpenRegular(path)
	if err != nil {
		var notRegular *inputfile.NotRegularError
		if errors.As(err, &notRegular) {
			return nil, fmt.Errorf("%w: give the vmlinux file itself", err)
		}
		return nil, fmt.Errorf("opening the vmlinux: %w", err)
	}
	return f, nil
}

// Open opens the image at path and reads its build id, from its notes. Its symbols and DWARF
// are read by Load, or the first Resolve, so that an image refused for its build id costs nothing
// more; Open checks already that they are there and within the file and the limits (bounds.go).
// Debug sections are mapped, not read, where they are not compressed, so that only the pages of
// the compile units a lookup touches take memory. Anything but a regular file is refused without
// blocking.
func Open(path string) (*Image, error) {
	f, err := openImageFile(path)
	if err != nil {
		return nil, err
	}
	im := &Image{path: path, file: f, names: map[dwarf.Offset]string{}}
	if err := im.open(); err != nil {
		im.Close()
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return im, nil
}

func (im *Image) open() error {
	st, err := im.file.Stat()
	if err != nil {
		return err
	}
	im.size = st.Size()
	if st.Size() > 0 && st.Size() == int64(int(st.Size())) {
		if m, err := syscall.Mmap(int(im.file.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE); err == nil {
			im.mapped = m
		}
	}
	im.elf, err = elf.NewFile(im.file)
	var notELF *elf.FormatError
	switch {
	case errors.As(err, &notELF):
		return fmt.Errorf("not an ELF file, so not a vmlinux (the kernel's debug image, e.g. /usr/lib/debug/boot/vmlinux-RELEASE): %w", err)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("the ELF headers end past the file's %d bytes: the file is truncated (a download or copy cut short?)", im.size)
	case err != nil:
		return err
	case im.elf.Type == elf.ET_REL:
		return errors.New("a relocatable object, not a linked image")
	}
	if im.buildID, err = elfBuildID(im.elf, im.size); err != nil {
		return err
	}
	return im.checkSections()
}

// checkSections checks, before any is read, that the sections Load reads are there, lie within
// the file, and fit the limits of bounds.go.
func (im *Image) checkSections() error {
	if s := im.elf.SectionByType(elf.SHT_SYMTAB); s != nil {
		if err := CheckSection(s, im.size, MaxSymbolTable); err != nil {
			return err
		}
		if int(s.Link) < len(im.elf.Sections) && s.Link > 0 {
			if err := CheckSection(im.elf.Sections[s.Link], im.size, MaxSymbolTable); err != nil {
				return err
			}
		}
	}
	for _, name := range []string{"info", "line"} {
		if s := im.elf.Section(".debug_" + name); s == nil || s.Type == elf.SHT_NOBITS {
			return ErrNoDWARF
		}
	}
	inflated := uint64(0)
	for _, name := range dwarfSections {
		s := im.elf.Section(".debug_" + name)
		if s == nil {
			continue
		}
		limit := uint64(math.MaxUint64) // mapped: the file's size bounds it
		if s.Flags&elf.SHF_COMPRESSED != 0 || im.mapped == nil {
			limit = MaxInflated - inflated
		}
		if err := CheckSection(s, im.size, limit); err != nil {
			return err
		}
		if limit != math.MaxUint64 {
			inflated += s.Size
		}
	}
	return nil
}

// dwarfSections are the DWARF sections, less ".debug_", that lines and inlined functions need.
// A kernel's location lists and call frames are as large as the rest and not needed here.
var dwarfSections = []string{"abbrev", "info", "line", "ranges", "str", "addr", "line_str", "rnglists", "str_offsets"}

// Load reads the image's symbols and indexes its DWARF compile units, once; Resolve calls it.
func (im *Image) Load() error {
	if !im.loaded {
		im.loaded = true
		im.loadErr = im.load()
	}
	return im.loadErr
}

func (im *Image) load() error {
	if err := im.readSymbols(); err != nil {
		return err
	}
	if err := im.readDWARF(); err != nil {
		return err
	}
	return im.indexUnits()
}

// Close unmaps and closes the image.
func (im *Image) Close() error {
	if im.mapped != nil {
		syscall.Munmap(im.mapped)
		im.mapped = nil
	}
	return im.file.Close()
}

// Path is the file the image was opened from.
func (im *Image) Path() string { return im.path }

// BuildID is the image's GNU build id in hex, "" when it has none.
func (im *Image) BuildID() string { return im.buildID }

// section returns the contents of the named section: a slice of the mapping when the section is
// stored as it is, else a copy read (and decompressed) from the file; nil when there is none.
func (im *Image) section(name string) ([]byte, error) {
	s := im.elf.Section(name)
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	if s.Flags&elf.SHF_COMPRESSED == 0 && im.mapped != nil && s.Offset+s.Size <= uint64(len(im.mapped)) {
		return im.mapped[s.Offset : s.Offset+s.Size : s.Offset+s.Size], nil
	}
	b, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("section %s: %w", name, err)
	}
	return b, nil
}

// readDWARF reads the sections that lines and inlined functions need (dwarfSections), and no other.
func (im *Image) readDWARF() error {
	get := map[string][]byte{}
	for _, name := range dwarfSections {
		b, err := im.section(".debug_" + name)
		if err != nil {
			return err
		}
		get[name] = b
	}
	if get["info"] == nil || get["line"] == nil {
		return ErrNoDWARF
	}
	d, err := dwarf.New(get["abbrev"], nil, nil, get["info"], get["line"], nil, get["ranges"], get["str"])
	if err != nil {
		return fmt.Errorf("reading DWARF: %w", err)
	}
	for _, name := range []string{"addr", "line_str", "rnglists", "str_offsets"} {
		if get[name] != nil {
			if err := d.AddSection(".debug_"+name, get[name]); err != nil {
				return fmt.Errorf("reading DWARF section %s: %w", name, err)
			}
		}
	}
	im.dwarf = d
	return nil
}

// readSymbols indexes the function symbols of .symtab by name, read within MaxSymbolTable.
func (im *Image) readSymbols() error {
	syms, err := readSymtab(im.elf, im.size)
	if err != nil {
		return fmt.Errorf("reading the symbol table: %w", err)
	}
	im.symbols = map[string][]symbol{}
	for _, s := range syms {
		if elf.ST_TYPE(s.info) == elf.STT_FUNC && s.value != 0 {
			im.symbols[s.name] = append(im.symbols[s.name], symbol{s.value, s.size})
		}
	}
	return nil
}

// indexUnits reads the address ranges of every compile unit, reading each unit's first entry only.
func (im *Image) indexUnits() error {
	r := im.dwarf.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return fmt.Errorf("reading DWARF compile units: %w", err)
		}
		if e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			ranges, err := im.dwarf.Ranges(e)
			if err == nil {
				for _, rg := range ranges {
					if rg[0] < rg[1] {
						im.units = append(im.units, unitRange{rg[0], rg[1], e.Offset})
					}
				}
			}
		}
		r.SkipChildren()
	}
	slices.SortFunc(im.units, func(a, b unitRange) int {
		if a.lo != b.lo {
			if a.lo < b.lo {
				return -1
			}
			return 1
		}
		return 0
	})
	return nil
}

// unitOf is the compile unit whose ranges hold pc.
func (im *Image) unitOf(pc uint64) (dwarf.Offset, bool) {
	i, _ := slices.BinarySearchFunc(im.units, pc, func(u unitRange, pc uint64) int {
		if u.lo <= pc {
			return -1
		}
		return 1
	})
	// i is the first range starting after pc; ranges may nest, so look back a little.
	for k := i - 1; k >= 0 && k >= i-8; k-- {
		if u := im.units[k]; u.lo <= pc && pc < u.hi {
			return u.cu, true
		}
	}
	return 0, false
}

// ParseBuildID finds the GNU build id among ELF notes (a note section, or /sys/kernel/notes) and
// returns it in hex; "" when there is none.
func ParseBuildID(notes []byte, order binary.ByteOrder) string {
	for len(notes) >= 12 {
		nameLen, descLen, typ := order.Uint32(notes), order.Uint32(notes[4:]), order.Uint32(notes[8:])
		nameEnd := 12 + align4(uint64(nameLen))
		descEnd := nameEnd + align4(uint64(descLen))
		if descEnd > uint64(len(notes)) {
			return ""
		}
		name := notes[12 : 12+nameLen]
		if typ == ntGNUBuildID && bytes.Equal(bytes.TrimRight(name, "\x00"), []byte("GNU")) {
			return hex.EncodeToString(notes[nameEnd : nameEnd+uint64(descLen)])
		}
		notes = notes[descEnd:]
	}
	return ""
}

// ntGNUBuildID is the type of the GNU build id note (NT_GNU_BUILD_ID of elf.h).
const ntGNUBuildID = 3

func align4(n uint64) uint64 { return (n + 3) &^ 3 }
