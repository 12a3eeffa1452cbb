package srcline

import (
	"debug/elf"
	"fmt"

	"github.com/klockstat/klockstat/internal/inputfile"
)

// The limits of what an Image reads of a file into memory (README's bad-input table). A section
// stored as it is is mapped, not read, and costs only the pages a lookup touches: these bound the
// sections that are copied or inflated, so that a forged or truncated image is refused before any
// of it is read, never by running out of memory.
const (
	// MaxSymbolTable is the most bytes of a symbol table, and of its string table, read: a
	// kernel's has a few hundred thousand symbols of 24 bytes, about 10 MiB.
	MaxSymbolTable = 128 << 20
	// MaxNotes is the most bytes of a note section read for the build id: a kernel's notes are a
	// few hundred bytes.
	MaxNotes = 1 << 20
	// MaxInflated is the most bytes the compressed debug sections of an image inflate to, in all:
	// as much as a capture klockstat reads.
	MaxInflated = 2 << 30
	// maxInflateRatio is the most a compressed section of more than minRatioChecked bytes may claim
	// to inflate to, over its compressed size: DWARF compresses about 4 to 10 times, where a
	// compression bomb claims a thousand.
	maxInflateRatio = 64
	minRatioChecked = 64 << 20
)

// CheckSection refuses s, a section of an ELF file of fileSize bytes, when it does not lie within
// the file (a truncated file) or would take more than limit bytes in memory once read, inflated
// when it is compressed, or claims to inflate far more than data compresses. Nothing of s is read:
// call it before s.Data or s.Open. A section without contents (SHT_NOBITS) passes.
func CheckSection(s *elf.Section, fileSize int64, limit uint64) error {
	if s.Type == elf.SHT_NOBITS {
		return nil
	}
	if end := s.Offset + s.FileSize; end < s.Offset || fileSize < 0 || end > uint64(fileSize) {
		return fmt.Errorf("section %s: bytes %d to %d, past the file's end at %d: the file is truncated (a download or copy cut short?)",
			s.Name, s.Offset, s.Offset+s.FileSize, fileSize)
	}
	if s.Size > limit {
		return fmt.Errorf("section %s: %s%s, more than the %s klockstat reads", s.Name, inputfile.Bytes(int64(min(s.Size, 1<<62))), inflatedNote(s), inputfile.Bytes(int64(limit)))
	}
	if s.Flags&elf.SHF_COMPRESSED != 0 && s.Size > minRatioChecked && s.Size/maxInflateRatio > s.FileSize {
		return fmt.Errorf("section %s: %s compressed claiming to inflate to %s, more than %d times: not debug information",
			s.Name, inputfile.Bytes(int64(s.FileSize)), inputfile.Bytes(int64(min(s.Size, 1<<62))), maxInflateRatio)
	}
	return nil
}

// inflatedNote says that a section's size is the one it claims to inflate to.
func inflatedNote(s *elf.Section) string {
	if s.Flags&elf.SHF_COMPRESSED != 0 {
		return " once inflated"
	}
	return ""
}
