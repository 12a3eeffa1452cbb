package kallsyms

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// noDataFixture is /proc/kallsyms of a kernel without CONFIG_KALLSYMS_ALL, in the shape of Linux
// 6.18 on an x86-64 guest (issue 30): its only data symbols are section markers, and it lists no
// _sdata, __bss_start, __bss_stop or _end. The lines are that kernel's, a few functions kept.
const noDataFixture = `ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81001000 T __pfx_do_one_initcall
ffffffff81001010 T do_one_initcall
ffffffff81234560 T locks_lock_inode_wait
ffffffff82276f48 T _etext
ffffffff82400000 D __start_rodata
ffffffff82861560 D __start_ro_after_init
ffffffff828c7000 R __start_BTF
ffffffff82e0ab90 R __stop_BTF
ffffffff83000000 D __start_init_stack
ffffffff83229a48 D __start_once
ffffffff8324f728 D __start___dyndbg
ffffffff83780000 T _sinittext
ffffffff83780000 B __init_begin
ffffffff83780010 T start_kernel
ffffffff837f6810 T _einittext
ffffffff838e9b80 D __start_mcount_loc
ffffffff83b24748 R __start_runtime_ptr_USER_PTR_MAX
ffffffff83b24974 R __stop_runtime_ptr_USER_PTR_MAX
`

func TestKallsymsNoData(t *testing.T) {
	k := mustParse(t, noDataFixture)
	if !k.NoData() {
		t.Errorf("NoData() = false for a table whose data symbols are all section markers")
	}
	if all := mustParse(t, kallsymsFixture); all.NoData() {
		t.Errorf("NoData() = true for a table listing data objects (CONFIG_KALLSYMS_ALL)")
	}
	// The data section of this kernel (/proc/iomem's "Kernel data") and its bss ("Kernel bss").
	const dataLock, bssLock = 0xffffffff83012340, 0xffffffff83c00000
	for _, addr := range []uint64{dataLock, bssLock, 0xffffffff82400010} {
		if name, ok := k.Data(addr); ok {
			t.Errorf("Data(%#x) = %q with only section markers; want none", addr, name)
		}
	}
	last := uint64(0xffffffff83b24974) // the last symbol listed
	tests := []struct {
		name string
		addr uint64
		want bool
	}{
		{"rodata", 0xffffffff82400010, true},
		{"data (file_rwsem's section)", dataLock, true},
		{"bss, past the last marker", bssLock, true},
		{"init data after init text", 0xffffffff838e9b90, true},
		{"just under the bound", last + MaxStaticTail - 1, true},
		{"at the bound", last + MaxStaticTail, false},
		{"text", 0xffffffff81234570, false},
		{"init text", 0xffffffff83780020, false},
		{"between _etext and the first data marker", 0xffffffff823fff00, false},
		{"heap", 0xffff888100000040, false},
		{"vmalloc", 0xffffc90000001000, false},
		{"per-CPU offset", 0x1a000, false},
		{"module", 0xffffffffc0001200, false},
	}
	for _, tt := range tests {
		if got := k.Static(tt.addr); got != tt.want {
			t.Errorf("%s: Static(%#x) = %v, want %v", tt.name, tt.addr, got, tt.want)
		}
	}
}

func TestKallsymsStaticEnds(t *testing.T) {
	// With an end marker, the static data ends there.
	all := mustParse(t, kallsymsFixture)
	for addr, want := range map[uint64]bool{0xffffffff81500004: true, 0xffffffff815fffff: true, 0xffffffff81600000: false} {
		if got := all.Static(addr); got != want {
			t.Errorf("with _end: Static(%#x) = %v, want %v", addr, got, want)
		}
	}
	// A module's code above the image ends it, though within MaxStaticTail of its last symbol.
	module := uint64(0xffffffff83b24974 + 8<<20)
	k := mustParse(t, noDataFixture+fmt.Sprintf("%x t mod_fn\t[mymod]\n", module))
	if !k.Static(module - 1) {
		t.Errorf("Static(%#x), below the module, = false; want true", module-1)
	}
	if k.Static(module + 0x200) {
		t.Errorf("Static(%#x), in the module, = true; want false", module+0x200)
	}
	// Per-CPU symbols listed as data at their offsets, before the image: the range starts past
	// its first function still, and the heap is not in it.
	percpu := mustParse(t, "0000000000001000 D runqueues\n0000000000002000 d cpu_number\n"+noDataFixture)
	for addr, want := range map[uint64]bool{0xffff888100000040: false, 0x1008: false, 0xffffffff83012340: true} {
		if got := percpu.Static(addr); got != want {
			t.Errorf("with per-CPU data symbols: Static(%#x) = %v, want %v", addr, got, want)
		}
	}
	// Restricted addresses: nothing is static.
	if r := mustParse(t, zeroAddresses(noDataFixture)); !r.Restricted() || r.Static(0) || r.NoData() {
		t.Errorf("restricted table: Restricted %v, Static(0) %v, NoData %v; want true, false, false", r.Restricted(), r.Static(0), r.NoData())
	}
}

// imageSymbols is the symbol table of the image of noDataFixture's kernel, linked at base: its
// anchors, objects with their sizes, a per-CPU object linked at 0 and its end.
func imageSymbols(base uint64) []Symbol {
	return []Symbol{
		{Addr: base, Type: 'T', Name: "_text"},
		{Addr: base, Type: 'T', Name: "_stext"},
		{Addr: base + 0x1276f48, Type: 'T', Name: "_etext"},
		{Addr: base + 0x2780000, Type: 'T', Name: "_sinittext"},
		{Addr: base + 0x27f6810, Type: 'T', Name: "_einittext"},
		{Addr: base + 0x2000040, Type: 'D', Name: "tasklist_lock", Size: 8},
		{Addr: base + 0x2012340, Type: 'd', Name: "file_rwsem", Size: 0x90},
		{Addr: base + 0x2b40000, Type: 'b', Name: "bss_lock", Size: 0x40},
		{Addr: 0x1a000, Type: 'D', Name: "runqueues", Size: 0x1000},
		{Addr: base + 0x2c56000, Type: 'B', Name: "_end"},
	}
}

func TestKallsymsWithImage(t *testing.T) {
	const linked, running = 0xffffffff80000000, 0xffffffff81000000 // the image as linked; KASLR moved it by 16 MiB
	k := mustParse(t, noDataFixture)
	m, offset, err := k.WithImage(imageSymbols(linked))
	if err != nil {
		t.Fatalf("WithImage: %v", err)
	}
	if offset != running-linked {
		t.Errorf("offset = %#x, want %#x", offset, uint64(running-linked))
	}
	tests := []struct {
		addr uint64
		want string
	}{
		{running + 0x2012340, "file_rwsem"},
		{running + 0x2012350, "file_rwsem+0x10"},
		{running + 0x2012340 + 0x90, ""}, // past its size
		{running + 0x2000040, "tasklist_lock"},
		{running + 0x2b40008, "bss_lock+0x8"},
		{0x1a000 + running - linked, ""}, // a per-CPU offset is not moved into the image
		{0x1a000, ""},
		{running + 0x2c56000, ""}, // _end
	}
	for _, tt := range tests {
		name, ok := m.Data(tt.addr)
		if ok != (tt.want != "") || name != tt.want {
			t.Errorf("merged Data(%#x) = %q, %v; want %q", tt.addr, name, ok, tt.want)
		}
	}
	if _, ok := k.Data(running + 0x2012340); ok {
		t.Errorf("WithImage changed the table it was called on")
	}
	if !m.NoData() {
		t.Errorf("merged NoData() = false: it says what kallsyms lists, not the image")
	}
	// The image's _end bounds the static data exactly now.
	if !m.Static(running+0x2c55fff) || m.Static(running+0x2c56000) {
		t.Errorf("merged Static around _end = %v, %v; want true, false", m.Static(running+0x2c55fff), m.Static(running+0x2c56000))
	}
	// Functions still resolve through kallsyms.
	if got := m.FormatFrame(0xffffffff81234570); got != "locks_lock_inode_wait+0x10" {
		t.Errorf("merged FormatFrame = %q, want locks_lock_inode_wait+0x10", got)
	}
}

func TestKallsymsWithImageMismatch(t *testing.T) {
	k := mustParse(t, noDataFixture)
	// Another build: its _etext is elsewhere relative to _text.
	other := imageSymbols(0xffffffff80000000)
	other[2].Addr += 0x1000
	if _, _, err := k.WithImage(other); !errors.Is(err, ErrImageMismatch) {
		t.Errorf("WithImage of another layout: err %v, want ErrImageMismatch", err)
	}
	// One anchor in common: the offset cannot be checked.
	if _, _, err := k.WithImage(imageSymbols(0xffffffff80000000)[:1]); !errors.Is(err, ErrImageMismatch) {
		t.Errorf("WithImage with one anchor: err %v, want ErrImageMismatch", err)
	}
	restricted := mustParse(t, zeroAddresses(noDataFixture))
	if _, _, err := restricted.WithImage(imageSymbols(0xffffffff80000000)); err == nil {
		t.Errorf("WithImage on a restricted table: no error")
	}
}

// zeroAddresses is a kallsyms text with every address 0, as kptr_restrict shows it.
func zeroAddresses(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if len(l) > 16 {
			lines[i] = strings.Repeat("0", 16) + l[16:]
		}
	}
	return strings.Join(lines, "")
}
