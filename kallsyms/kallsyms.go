// Package kallsyms reads the kernel's symbol table, /proc/kallsyms, and
// names the kernel addresses of stacks and locks. It needs no root to parse;
// only the real file's addresses are hidden from other users.
package kallsyms

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Symbol is one /proc/kallsyms entry.
type Symbol struct {
	Addr   uint64
	Type   byte   // nm-style type letter: uppercase is global
	Name   string // e.g. "vm_mmap_pgoff", "bpf_prog_6deef7357e7b4530_sd_fw_ingress"
	Module string // "" for vmlinux, "bpf" for BPF programs and trampolines
	// Size is the object's size in bytes where an image's symbol table gives it (WithImage); 0 when
	// unknown, as in every /proc/kallsyms entry.
	Size uint64
}

// Table is a sorted symbol table. Build it once; lookups binary-search.
type Table struct {
	syms []Symbol // by address; aliases best first

	// Indices into syms, one per distinct address: the best alias among the
	// symbols each lookup may answer with.
	text  []int32 // code of vmlinux and modules
	image []int32 // code and data of vmlinux, so Data can tell it is in text

	dataStart, dataEnd uint64 // static data of vmlinux: [dataStart, dataEnd)
	// Static's range: from the first vmlinux data symbol past its first function (per-CPU
	// symbols linked at 0 come before) to where its static data ends at the latest.
	staticStart, staticEnd uint64
	restricted             bool
	noData                 bool // vmlinux lists no data symbols but section markers (CONFIG_KALLSYMS_ALL off)
}

// MaxSymbolSize bounds how far past the last symbol of a module (or of
// vmlinux, when its end marker is missing) an address may lie and still be
// attributed to that symbol. kallsyms has no sizes; the largest function of a
// 6.18 x86-64 vmlinux is about 20 KiB.
const MaxSymbolSize = 64 << 10

// Parse reads the /proc/kallsyms format: "ffffffff81000000 T _stext",
// with a "\t[module]" suffix for module symbols. Malformed lines are errors
// naming the line number. If every address is zero (kptr_restrict, or not
// root) the table is Restricted and lookups find nothing.
func Parse(r io.Reader) (*Table, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading kallsyms: %w", err)
	}
	// Names and modules are substrings of this one string, so parsing
	// allocates nothing per line and module names are shared for free.
	input := string(raw)

	syms := make([]Symbol, 0, strings.Count(input, "\n")+1)
	allZero := true
	for lineNo := 1; input != ""; lineNo++ {
		var line string
		line, input, _ = strings.Cut(input, "\n")
		sym, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("kallsyms line %d: %w", lineNo, err)
		}
		if sym.Addr != 0 {
			allZero = false
		}
		syms = append(syms, sym)
	}

	k := &Table{syms: syms, restricted: len(syms) > 0 && allZero}
	if !k.restricted {
		k.index()
		k.noData = !slices.ContainsFunc(k.syms, func(s Symbol) bool {
			return s.Module == "" && s.Addr != 0 && isDataType(s.Type) && !isSectionMarker(s.Name)
		})
	}
	return k, nil
}

// parseLine parses "<hex addr> <type> <name>[\t[<module>]]".
func parseLine(line string) (Symbol, error) {
	space := strings.IndexByte(line, ' ')
	if space < 0 {
		return Symbol{}, fmt.Errorf("want \"<address> <type> <name>\", got %q", line)
	}
	addr, err := strconv.ParseUint(line[:space], 16, 64)
	if err != nil {
		return Symbol{}, fmt.Errorf("parsing address: %w", err)
	}
	rest := line[space+1:]
	if len(rest) < 3 || !isLetter(rest[0]) || rest[1] != ' ' {
		return Symbol{}, fmt.Errorf("want a one-letter type and a name after the address, got %q", rest)
	}
	sym := Symbol{Addr: addr, Type: rest[0], Name: rest[2:]}

	if tab := strings.IndexByte(sym.Name, '\t'); tab >= 0 {
		module := sym.Name[tab+1:]
		sym.Name = sym.Name[:tab]
		if len(module) < 3 || module[0] != '[' || module[len(module)-1] != ']' ||
			strings.ContainsAny(module[1:len(module)-1], "[]\t ") {
			return Symbol{}, fmt.Errorf("want \"[module]\" after the name, got %q", module)
		}
		sym.Module = module[1 : len(module)-1]
	}
	if sym.Name == "" || strings.IndexByte(sym.Name, ' ') >= 0 {
		return Symbol{}, fmt.Errorf("malformed symbol name %q", sym.Name)
	}
	return sym, nil
}

// index sorts the symbols and builds the lookup indices.
func (k *Table) index() {
	// /proc/kallsyms lists vmlinux in the kernel's own order of preference
	// among aliases, so keep input order where aliasRank ties.
	slices.SortStableFunc(k.syms, func(a, b Symbol) int { return cmp.Compare(a.Addr, b.Addr) })
	for i := 0; i < len(k.syms); {
		j := i + 1
		for j < len(k.syms) && k.syms[j].Addr == k.syms[i].Addr {
			j++
		}
		if j-i > 1 {
			slices.SortStableFunc(k.syms[i:j], func(a, b Symbol) int {
				return cmp.Compare(aliasRank(a), aliasRank(b))
			})
		}
		i = j
	}

	k.text, k.image, k.dataStart, k.dataEnd, k.staticStart, k.staticEnd = nil, nil, 0, 0, 0, 0
	var endMarker, bssStop, lastData, lastImage, firstText uint64
	for i, s := range k.syms {
		// A zero address is an unresolved or per-CPU symbol; never an answer.
		if s.Addr == 0 {
			continue
		}
		text, data := isTextType(s.Type), isDataType(s.Type)
		if text {
			k.text = appendAlias(k.text, k.syms, i)
		}
		if s.Module != "" {
			continue
		}
		if text || data {
			k.image = appendAlias(k.image, k.syms, i)
			lastImage = s.Addr
		}
		if text && firstText == 0 {
			firstText = s.Addr
		}
		if data {
			if k.dataStart == 0 {
				k.dataStart = s.Addr
			}
			if k.staticStart == 0 && firstText != 0 && s.Addr > firstText {
				k.staticStart = s.Addr
			}
			lastData = s.Addr
		}
		switch s.Name {
		case "_end":
			endMarker = s.Addr
		case "__bss_stop":
			bssStop = s.Addr
		}
	}
	switch {
	case k.dataStart == 0:
		// No static data symbols: Data never answers.
	case endMarker != 0:
		k.dataEnd = endMarker
	case bssStop != 0:
		k.dataEnd = bssStop
	default:
		k.dataEnd = lastData + min(MaxSymbolSize, ^uint64(0)-lastData)
	}
	k.staticEnd = k.dataEnd
	if k.staticStart != 0 && endMarker == 0 && bssStop == 0 {
		// No end marker: bound the image by the most its tail past the last symbol listed can
		// hold, and never past a module's code (modules, BPF programs), which lies above it.
		k.staticEnd = max(k.dataEnd, lastImage+min(MaxStaticTail, ^uint64(0)-lastImage))
		for _, s := range k.syms {
			if s.Module != "" && s.Addr > k.staticStart && s.Addr < k.staticEnd {
				k.staticEnd = s.Addr
			}
		}
	}
}

// MaxStaticTail bounds how far past the last vmlinux symbol kallsyms lists the kernel image's
// static data may reach when kallsyms lists no end marker (_end, __bss_stop), as without
// CONFIG_KALLSYMS_ALL: what follows the last marker listed (the end of the init sections) is
// .data..nosave, .bss and .brk. On a 6.18 x86-64 guest the bss ends 1.2 MiB past the last marker
// (/proc/iomem's "Kernel bss"); the largest static arrays a kernel may have, lockdep's tables,
// take some MiB with the default limits. Nothing but the image is mapped there on x86-64 (modules start at the
// image area's end, 512 MiB or 1 GiB past its start); where modules (or BPF programs) lie above
// the image, their first listed symbol ends the range.
const MaxStaticTail = 64 << 20

// appendAlias appends syms[i] to idx unless idx already ends with a better
// alias at the same address.
func appendAlias(idx []int32, syms []Symbol, i int) []int32 {
	if n := len(idx); n > 0 && syms[idx[n-1]].Addr == syms[i].Addr {
		return idx
	}
	return append(idx, int32(i))
}

// aliasRank orders symbols sharing an address, lowest first: real names
// before __pfx_ padding (kernel 6.2+ puts it 16 bytes before each function,
// so it only aliases something else by accident), objects before linker
// section markers, globals before locals.
func aliasRank(s Symbol) int {
	rank := 0
	if strings.HasPrefix(s.Name, "__pfx_") {
		rank += 4
	}
	if isSectionMarker(s.Name) {
		rank += 2
	}
	if !isGlobal(s.Type) {
		rank++
	}
	return rank
}

// Load parses /proc/kallsyms.
func Load() (*Table, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil, fmt.Errorf("opening kernel symbols: %w", err)
	}
	defer f.Close()
	k, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("parsing /proc/kallsyms: %w", err)
	}
	return k, nil
}

// Restricted reports whether every address in the table was zero: the kernel
// hid them (kernel.kptr_restrict=2, or =1 without CAP_SYSLOG), so nothing can
// be resolved.
func (k *Table) Restricted() bool { return k.restricted }

// TextNames returns the names of every function of vmlinux and the modules,
// BPF programs aside. Names are listed even where kptr_restrict hides the
// addresses.
func (k *Table) TextNames() map[string]bool {
	names := make(map[string]bool)
	for _, s := range k.syms {
		if isTextType(s.Type) && s.Module != "bpf" {
			names[s.Name] = true
		}
	}
	return names
}

// Len returns the number of symbols in the table.
func (k *Table) Len() int { return len(k.syms) }

// Func resolves a code address to the function containing it: the nearest
// text symbol at or below addr. Addresses below the first text symbol, in
// the gaps after vmlinux's _etext and _einittext, or more than MaxSymbolSize
// past the last symbol of a module are unknown (ok=false).
func (k *Table) Func(addr uint64) (sym Symbol, off uint64, ok bool) {
	i := k.nearest(k.text, addr)
	if i < 0 {
		return Symbol{}, 0, false
	}
	sym = k.syms[k.text[i]]
	off = addr - sym.Addr
	if sym.Module == "" && (sym.Name == "_etext" || sym.Name == "_einittext") {
		return Symbol{}, 0, false
	}
	lastOfModule := i+1 == len(k.text) || k.syms[k.text[i+1]].Module != sym.Module
	if lastOfModule && off >= MaxSymbolSize {
		return Symbol{}, 0, false
	}
	return sym, off, true
}

// FormatFrame renders a code address as the kernel's %pS does, minus the
// function size: "vm_mmap_pgoff+0xa5", "bpf_prog_3b185187f1855c4c_x+0x4c [bpf]",
// or "0xffffffff81234567" when unknown.
func (k *Table) FormatFrame(addr uint64) string {
	sym, off, ok := k.Func(addr)
	if !ok {
		return "0x" + strconv.FormatUint(addr, 16)
	}
	b := make([]byte, 0, len(sym.Name)+len(sym.Module)+24)
	b = append(b, sym.Name...)
	b = append(b, "+0x"...)
	b = strconv.AppendUint(b, off, 16)
	if sym.Module != "" {
		b = append(b, " ["...)
		b = append(b, sym.Module...)
		b = append(b, ']')
	}
	return string(b)
}

// Data resolves the address of a static kernel object to the vmlinux data
// symbol (types d, D, b, B, r, R) containing it: "jiffies_lock",
// "init_mm+0x78". Only addresses between the first data symbol and _end (or
// __bss_stop) can match; heap addresses, per-CPU offsets, code, and addresses
// whose nearest symbol is a section marker such as __start_rodata (all a
// kernel without CONFIG_KALLSYMS_ALL lists) give ok=false.
func (k *Table) Data(addr uint64) (name string, ok bool) {
	if addr < k.dataStart || addr >= k.dataEnd {
		return "", false
	}
	i := k.nearest(k.image, addr)
	if i < 0 {
		return "", false
	}
	sym := k.syms[k.image[i]]
	if !isDataType(sym.Type) || isSectionMarker(sym.Name) {
		return "", false
	}
	off := addr - sym.Addr
	if sym.Size != 0 && off >= sym.Size {
		return "", false // past the object, in padding or an unnamed one
	}
	if off != 0 {
		return sym.Name + "+0x" + strconv.FormatUint(off, 16), true
	}
	return sym.Name, true
}

// Static reports whether addr lies in the static data of the kernel image (vmlinux): past its
// text, from the first data symbol or section marker kallsyms lists above its first function
// (__start_rodata) to _end or,
// where kallsyms lists no end marker, MaxStaticTail past its last vmlinux symbol; never at or past
// a module's code. It answers where Data cannot name the object: a lock there is a static kernel
// object, not one of the heap, a module's or a per-CPU area's.
func (k *Table) Static(addr uint64) bool {
	if k.staticStart == 0 || addr < k.staticStart || addr >= k.staticEnd {
		return false
	}
	// Code is not data: init text lies among the data sections.
	if i := k.nearest(k.text, addr); i >= 0 {
		sym := k.syms[k.text[i]]
		if sym.Name != "_etext" && sym.Name != "_einittext" && addr-sym.Addr < MaxSymbolSize {
			return false
		}
	}
	return true
}

// NoData reports whether kallsyms lists no vmlinux data symbols but section markers
// (__start_rodata, __start_BTF): the kernel was built without CONFIG_KALLSYMS_ALL, so Data names
// no static object unless an image's symbols were added (WithImage).
func (k *Table) NoData() bool { return k.noData }

// FuncBounds returns the code of the vmlinux function of that name, [lo, hi):
// from its address to the next function's, the closest kallsyms gets to a
// size. ok is false when the kernel has no such function or hides addresses.
func (k *Table) FuncBounds(name string) (lo, hi uint64, ok bool) {
	for _, s := range k.syms {
		if s.Name == name && s.Module == "" && s.Addr != 0 && isTextType(s.Type) {
			lo = s.Addr
			break
		}
	}
	return k.boundsFrom(lo)
}

// FuncBoundsNear is FuncBounds for a name that several vmlinux functions may
// have (static functions of a file that other files include): the one
// closest to the address near, which names another function of the same
// object file.
func (k *Table) FuncBoundsNear(name string, near uint64) (lo, hi uint64, ok bool) {
	dist := func(a uint64) uint64 { return max(a, near) - min(a, near) }
	for _, s := range k.syms {
		if s.Name == name && s.Module == "" && s.Addr != 0 && isTextType(s.Type) && (lo == 0 || dist(s.Addr) < dist(lo)) {
			lo = s.Addr
		}
	}
	return k.boundsFrom(lo)
}

// boundsFrom returns the code of the function at lo: up to the next one.
func (k *Table) boundsFrom(lo uint64) (uint64, uint64, bool) {
	if lo == 0 {
		return 0, 0, false
	}
	i := k.nearest(k.text, lo)
	if i < 0 || i+1 >= len(k.text) {
		return 0, 0, false
	}
	return lo, k.syms[k.text[i+1]].Addr, true
}

// nearest returns the position in idx of the last symbol at or below addr,
// or -1 if there is none.
func (k *Table) nearest(idx []int32, addr uint64) int {
	return sort.Search(len(idx), func(i int) bool { return k.syms[idx[i]].Addr > addr }) - 1
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isGlobal(typ byte) bool { return 'A' <= typ && typ <= 'Z' }

func isTextType(typ byte) bool {
	switch typ {
	case 't', 'T', 'w', 'W':
		return true
	}
	return false
}

func isDataType(typ byte) bool {
	switch typ {
	case 'd', 'D', 'b', 'B', 'r', 'R':
		return true
	}
	return false
}

// sectionBoundaries are linker-script symbols that mark where a region of the
// kernel image starts or ends rather than naming an object in it.
var sectionBoundaries = map[string]bool{
	"_text": true, "_stext": true, "_etext": true,
	"_sinittext": true, "_einittext": true,
	"_sdata": true, "_edata": true,
	"__bss_start": true, "__bss_stop": true, "_end": true,
	"__init_begin": true, "__init_end": true,
	"__brk_base": true, "__brk_limit": true,
}

func isSectionMarker(name string) bool {
	return strings.HasPrefix(name, "__start_") || strings.HasPrefix(name, "__stop_") ||
		strings.HasPrefix(name, "__end_") || sectionBoundaries[name]
}
