package capture

import (
	"strconv"
	"strings"
)

// A frame is written in a capture as text (Record.Stack, Record.Caller, Owner.Stack stay strings in
// JSON), in the forms kallsyms.Table.FormatFrame and HashAddresses write. ParseFrame is the one
// reader of that text: the flame graph, diff matching, the exports and the catalogue's caller rules
// all take a frame apart through it, so they agree on what a function is.

// FrameKind is which of the written forms a frame has.
type FrameKind uint8

const (
	// FrameText is a frame in none of the other forms ("[unknown]", a function without an offset,
	// a hand-edited capture's oddity), kept whole in Frame.Function.
	FrameText FrameKind = iota
	// FrameSymbol is a frame kallsyms named: "vm_mmap_pgoff+0xa5", or "xfs_ilock+0x4c [xfs]" in a module.
	FrameSymbol
	// FrameAddress is a frame kallsyms could not name, its raw address: "0xffffffffc0a81234".
	FrameAddress
	// FrameHashedID is the id HashAddresses put in place of a raw address: "000000001a2b3c4d".
	FrameHashedID
)

// Frame is one kernel stack frame or caller taken apart. String writes it back as it was read.
type Frame struct {
	Kind     FrameKind
	Function string // "xfs_ilock" of a FrameSymbol; the whole text of a FrameText; "" otherwise
	Offset   uint64 // 0x4c of "xfs_ilock+0x4c [xfs]"
	Module   string // "xfs" of "xfs_ilock+0x4c [xfs]"; "" for a vmlinux function
	Address  Addr   // the address of a FrameAddress, the id of a FrameHashedID
}

// ParseFrame takes apart a frame as the collector writes it: "function+0xoff" (the offset in
// lowercase hex without leading zeros), "function+0xoff [module]", a raw address "0x..." (as
// Addr's text form, which HashAddresses hashes), or a hashed id of 16 hex digits. A function and a
// module have kallsyms' syntax: not empty, no spaces or tabs, and no brackets in a module. Anything
// else is a FrameText.
//
// The collector writes every symbol with an offset, so 16 bare hex digits are always an id, whether
// or not the capture says its addresses are hashed.
func ParseFrame(s string) Frame {
	if a, ok := parseAddr(s); ok {
		return Frame{Kind: FrameAddress, Address: a}
	}
	if len(s) == 16 && isLowerHex(s) {
		id, _ := strconv.ParseUint(s, 16, 64) // cannot fail: 16 hex digits
		return Frame{Kind: FrameHashedID, Address: Addr(id)}
	}
	body, module := s, ""
	if rest, ok := strings.CutSuffix(s, "]"); ok {
		if i := strings.LastIndex(rest, " ["); i >= 0 {
			body, module = rest[:i], rest[i+2:]
			if module == "" || strings.ContainsAny(module, "[]\t ") {
				return Frame{Function: s}
			}
		}
	}
	i := strings.LastIndex(body, "+0x")
	if i <= 0 || strings.ContainsAny(body[:i], "\t ") {
		return Frame{Function: s}
	}
	off, ok := parseOffset(body[i+3:])
	if !ok {
		return Frame{Function: s}
	}
	return Frame{Kind: FrameSymbol, Function: body[:i], Offset: off, Module: module}
}

// parseOffset reads the offset FormatFrame writes: 1 to 16 lowercase hex digits, no leading zero
// unless it is the only one, so that writing it back gives the same text.
func parseOffset(digits string) (uint64, bool) {
	if len(digits) == 0 || len(digits) > 16 || len(digits) > 1 && digits[0] == '0' || !isLowerHex(digits) {
		return 0, false
	}
	off, err := strconv.ParseUint(digits, 16, 64)
	return off, err == nil
}

// String writes f as the collector does. A raw address comes back without leading zeros, the only
// part of a frame not written back exactly as ParseFrame read it.
func (f Frame) String() string {
	switch f.Kind {
	case FrameSymbol:
		return f.Function + "+0x" + strconv.FormatUint(f.Offset, 16) + f.moduleSuffix()
	case FrameAddress:
		return f.Address.String()
	case FrameHashedID:
		return f.Address.HashedString()
	}
	return f.Function
}

// Func is what a frame is counted under as a function, its offset left out (it moves with every
// build and splits a function by call site): "vm_mmap_pgoff", "xfs_ilock [xfs]". A module function
// keeps its module, which tells apart static functions of the same name in two modules. A frame
// without a function (an address, an id, text) is its whole text.
func (f Frame) Func() string {
	if f.Kind != FrameSymbol {
		return f.String()
	}
	return f.Function + f.moduleSuffix()
}

func (f Frame) moduleSuffix() string {
	if f.Module == "" {
		return ""
	}
	return " [" + f.Module + "]"
}

// Unsymbolized reports whether kallsyms could not name the frame: a raw address, or its hashed id.
// Neither says which function it is in, and the same value in two captures need not be the same
// code (module addresses move with every load, ids change with every key).
func (f Frame) Unsymbolized() bool {
	return f.Kind == FrameAddress || f.Kind == FrameHashedID
}
