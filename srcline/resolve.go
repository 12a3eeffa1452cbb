package srcline

import (
	"debug/dwarf"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// Unresolved counts the frames Resolve left without lines, by why.
type Unresolved struct {
	Module    int // a module's frame: its DWARF is in the module's .ko, not in vmlinux
	NoSymbol  int // a function the image does not have, or an offset past its end
	Ambiguous int // a name several functions of the image have (static functions of two files)
	NoLine    int // an address no compile unit or line covers (assembly without debug info)
	Other     int // an address, a hashed id, or text: no function to look up
}

// Total is the number of frames left unresolved.
func (u Unresolved) Total() int { return u.Module + u.NoSymbol + u.Ambiguous + u.NoLine + u.Other }

// Resolve finds the source lines of frames, given as a capture writes them. A frame is a return
// address (the instruction after a call), so its line is that of the address before it: the
// call's, as perf and addr2line users expect. Frames are looked up once each, grouped by compile
// unit, so that a unit is read once however many frames it holds. The image is loaded first (Load).
func (im *Image) Resolve(frames []string) (map[string]capture.SourceFrame, Unresolved, error) {
	if err := im.Load(); err != nil {
		return nil, Unresolved{}, err
	}
	var skipped Unresolved
	out := map[string]capture.SourceFrame{}
	type want struct {
		frame    string
		function string
		pc       uint64
	}
	byUnit := map[dwarf.Offset][]want{}
	seen := map[string]bool{}
	for _, s := range frames {
		if seen[s] {
			continue
		}
		seen[s] = true
		f := capture.ParseFrame(s)
		switch {
		case f.Kind != capture.FrameSymbol:
			skipped.Other++
			continue
		case f.Module != "":
			skipped.Module++
			continue
		}
		addr, err := im.symbolAddress(f.Function, f.Offset)
		if errors.Is(err, errAmbiguous) {
			skipped.Ambiguous++
			continue
		}
		if err != nil {
			skipped.NoSymbol++
			continue
		}
		pc := addr + f.Offset
		if f.Offset > 0 {
			pc-- // inside the call the return address follows
		}
		cu, ok := im.unitOf(pc)
		if !ok {
			skipped.NoLine++
			continue
		}
		byUnit[cu] = append(byUnit[cu], want{s, f.Function, pc})
	}
	units := make([]dwarf.Offset, 0, len(byUnit))
	for cu := range byUnit {
		units = append(units, cu)
	}
	slices.Sort(units) // in file order: the mapping is read forward
	for _, cu := range units {
		wants := byUnit[cu]
		pcs := make([]uint64, len(wants))
		for i, w := range wants {
			pcs[i] = w.pc
		}
		u, err := im.readUnit(cu, pcs)
		if err != nil {
			return nil, skipped, err
		}
		for _, w := range wants {
			lines := u.lines(w.pc, w.function)
			if lines == nil {
				skipped.NoLine++
				continue
			}
			out[w.frame] = capture.SourceFrame{Lines: lines}
		}
	}
	return out, skipped, nil
}

var errAmbiguous = errors.New("several functions of that name")

// symbolAddress is the address of the function named name that holds offset off. Of several
// functions of one name, those too short to hold off are left out; if more than one is left,
// the frame cannot be told. A frame is a return address, so off may equal the size: a function
// ending in a call that never returns (__x64_sys_exit calling do_exit).
func (im *Image) symbolAddress(name string, off uint64) (uint64, error) {
	var found []uint64
	for _, s := range im.symbols[name] {
		if s.size == 0 || off < s.size || off > 0 && off == s.size {
			if !slices.Contains(found, s.addr) {
				found = append(found, s.addr)
			}
		}
	}
	switch len(found) {
	case 0:
		return 0, fmt.Errorf("no function %s", name)
	case 1:
		return found[0], nil
	}
	return 0, errAmbiguous
}

// unit is what a compile unit says of the addresses asked of it.
type unit struct {
	im      *Image
	files   []*dwarf.LineFile
	compDir string
	rows    map[uint64]lineRow        // the line of each pc asked
	chains  map[uint64][]*dwarf.Entry // per address, the function and the functions inlined into it there, outermost first
}

// readUnit reads the compile unit at cu: its line table, and the subprograms and inlined
// subroutines that hold pcs, skipping every other entry (types, variables) by its sibling link.
func (im *Image) readUnit(cu dwarf.Offset, pcs []uint64) (*unit, error) {
	r := im.dwarf.Reader()
	r.Seek(cu)
	e, err := r.Next()
	if err != nil || e == nil {
		return nil, fmt.Errorf("reading DWARF compile unit at %#x: %w", cu, orEOF(err))
	}
	u := &unit{im: im, chains: map[uint64][]*dwarf.Entry{}}
	u.compDir, _ = e.Val(dwarf.AttrCompDir).(string)
	lr, err := im.dwarf.LineReader(e)
	if err != nil {
		return nil, fmt.Errorf("reading the line table of compile unit at %#x: %w", cu, err)
	}
	if lr != nil {
		u.files = lr.Files()
		if u.rows, err = findLines(lr, pcs); err != nil {
			return nil, fmt.Errorf("compile unit at %#x: %w", cu, err)
		}
	}
	if e.Children {
		if err := u.walk(r, nil, pcs); err != nil {
			return nil, fmt.Errorf("reading the functions of compile unit at %#x: %w", cu, err)
		}
	}
	return u, nil
}

func orEOF(err error) error {
	if err == nil {
		return io.ErrUnexpectedEOF
	}
	return err
}

// walk reads the children of the entry r last returned, noting for each of pcs the chain of
// functions that hold it.
func (u *unit) walk(r *dwarf.Reader, chain []*dwarf.Entry, pcs []uint64) error {
	for {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil || e.Tag == 0 {
			return nil
		}
		switch e.Tag {
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine, dwarf.TagLexDwarfBlock:
			inside, err := u.inside(e, pcs)
			if err != nil {
				return err
			}
			if len(inside) == 0 {
				r.SkipChildren()
				continue
			}
			here := chain
			if e.Tag != dwarf.TagLexDwarfBlock {
				here = append(slices.Clip(chain), e)
				for _, pc := range inside {
					u.chains[pc] = here
				}
			}
			if e.Children {
				if err := u.walk(r, here, inside); err != nil {
					return err
				}
			}
		default:
			r.SkipChildren()
		}
	}
}

// inside are the pcs that e's address ranges hold.
func (u *unit) inside(e *dwarf.Entry, pcs []uint64) ([]uint64, error) {
	ranges, err := u.im.dwarf.Ranges(e)
	if err != nil {
		return nil, err
	}
	var in []uint64
	for _, pc := range pcs {
		for _, rg := range ranges {
			if rg[0] <= pc && pc < rg[1] {
				in = append(in, pc)
				break
			}
		}
	}
	return in, nil
}

// lines are the lines of pc, innermost first; the outermost function is named function, the
// symbol's name, which is what the frame says (the DWARF name lacks a suffix such as ".isra.0").
func (u *unit) lines(pc uint64, function string) []capture.SourceLine {
	row, ok := u.rows[pc]
	if !ok {
		return nil
	}
	chain := u.chains[pc]
	at := capture.SourceLine{File: u.fileName(row.file), Line: row.line}
	var lines []capture.SourceLine
	for i := len(chain) - 1; i >= 1; i-- {
		inl := chain[i]
		at.Function = u.im.name(inl)
		lines = append(lines, at)
		file, _ := inl.Val(dwarf.AttrCallFile).(int64)
		line, _ := inl.Val(dwarf.AttrCallLine).(int64)
		at = capture.SourceLine{File: u.fileIndexName(file), Line: int(line)}
	}
	at.Function = function
	return append(lines, at)
}

// fileIndexName is the name of the unit's file of index i.
func (u *unit) fileIndexName(i int64) string {
	if i < 0 || i >= int64(len(u.files)) {
		return ""
	}
	return u.fileName(u.files[i])
}

// fileName is a file's path, relative to the compile directory when it is under it: the
// kernel's tree is built from its top directory, so its files read "fs/namei.c".
func (u *unit) fileName(f *dwarf.LineFile) string {
	if f == nil {
		return ""
	}
	if dir := strings.TrimSuffix(u.compDir, "/"); dir != "" {
		if rel, ok := strings.CutPrefix(f.Name, dir+"/"); ok {
			return rel
		}
	}
	return f.Name
}

// name is the name of a function's entry, found through its abstract origin or specification
// when the entry is a concrete or inlined instance.
func (im *Image) name(e *dwarf.Entry) string {
	for range 8 { // origin chains are one or two links long
		if n, ok := e.Val(dwarf.AttrName).(string); ok {
			return n
		}
		off, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		if !ok {
			if off, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset); !ok {
				return "??"
			}
		}
		if n, ok := im.names[off]; ok {
			return n
		}
		r := im.dwarf.Reader()
		r.Seek(off)
		next, err := r.Next()
		if err != nil || next == nil {
			return "??"
		}
		if n, ok := next.Val(dwarf.AttrName).(string); ok {
			im.names[off] = n
			return n
		}
		e = next
	}
	return "??"
}
