package kallsyms

import (
	"errors"
	"fmt"
	"slices"
)

// imageAnchors are the markers of the kernel's code that /proc/kallsyms lists on every kernel
// and a vmlinux's symbol table has too: the distance between an anchor's two addresses is the
// offset KASLR moved the running kernel by, the same for each.
var imageAnchors = []string{"_text", "_stext", "_etext", "_sinittext", "_einittext"}

// ErrImageMismatch is WithImage's error when the image's anchors are not where the running
// kernel's are, shifted by one offset: the image is another kernel's.
var ErrImageMismatch = errors.New("the image's code is not laid out as the running kernel's")

// WithImage returns a table that also has the data symbols of the kernel image whose symbol table
// syms is (vmlinux's .symtab, at the addresses it was linked at; Module ""), moved by the offset
// KASLR moved the running kernel by, so that Data names static objects kallsyms does not list
// (CONFIG_KALLSYMS_ALL off). The offset is taken from the first of imageAnchors both list and
// checked against every other they both list: at least one other must agree, else the error wraps
// ErrImageMismatch. Data symbols below the image's first anchor are not moved and not added: on
// x86-64 they are per-CPU offsets, linked at 0. k itself is left as it is.
func (k *Table) WithImage(syms []Symbol) (*Table, uint64, error) {
	if k.restricted {
		return nil, 0, errors.New("kallsyms hides the kernel's addresses (kernel.kptr_restrict): the image cannot be placed")
	}
	running, linked := anchorAddrs(k.syms), anchorAddrs(syms)
	var first string
	var offset uint64
	agree := 0
	for _, name := range imageAnchors {
		r, ok := running[name]
		l, ok2 := linked[name]
		switch {
		case !ok || !ok2:
		case first == "":
			first, offset = name, r-l
		case r-l != offset:
			return nil, 0, fmt.Errorf("%w: %s is %#x past its address in the image, %s %#x", ErrImageMismatch, first, offset, name, r-l)
		default:
			agree++
		}
	}
	if agree == 0 {
		return nil, 0, fmt.Errorf("%w: kallsyms and the image share fewer than two of %v, so the offset cannot be checked", ErrImageMismatch, imageAnchors)
	}
	merged := make([]Symbol, len(k.syms), len(k.syms)+len(syms))
	copy(merged, k.syms)
	for _, s := range syms {
		end := s.Name == "_end" || s.Name == "__bss_stop"
		if s.Module != "" || s.Addr < linked[first] || !isDataType(s.Type) && !end {
			continue
		}
		s.Addr += offset
		merged = append(merged, s)
	}
	t := &Table{syms: merged, noData: k.noData}
	t.index()
	return t, offset, nil
}

// anchorAddrs are the addresses of the imageAnchors of vmlinux among syms, the first of each name.
func anchorAddrs(syms []Symbol) map[string]uint64 {
	addrs := map[string]uint64{}
	for _, s := range syms {
		if _, seen := addrs[s.Name]; !seen && s.Module == "" && s.Addr != 0 && slices.Contains(imageAnchors, s.Name) {
			addrs[s.Name] = s.Addr
		}
	}
	return addrs
}
