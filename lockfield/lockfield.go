// Package lockfield guesses which struct field a lock inside a slab object is, from the kernel's
// BTF: a lock that the slab allocator can only name by its cache ("&kmalloc-2k") at an offset in
// its object (0x408) becomes a field path ("super_block.s_vfs_rename_mutex").
//
// For a dedicated cache the object's struct follows from the cache's name (cacheStruct); for a
// kmalloc cache, or a merged cache named by its size (":0000192"), every struct of the cache's
// size class is a candidate. A candidate must have a member of the lock's type at that offset,
// found through nested structs, unions and arrays. The functions of the waiter's stack narrow the
// candidates where their BTF prototypes take a pointer to one of the structs. The package reads
// nothing but the *btf.Spec it is given: tests run from hand-built specs.
package lockfield

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// Query is a lock inside a slab object to find the field of.
type Query struct {
	Cache      string   // the slab cache's name: "ext4_inode_cache", "kmalloc-2k", ":0000192"
	ObjectSize uint32   // the cache's object size in bytes, 0 when unknown: a dedicated cache's struct is no bigger
	Offset     uint32   // the lock's offset in its object
	LockType   string   // the capture's lock type ("mutex", "rwsem:W", "spinlock"); "" or an unknown one matches every lock type
	Callers    []string // functions of the waiter's stack, innermost first, that may narrow the candidates
}

// Field is a struct member a lock may be.
type Field struct {
	Struct string // the object's struct: "ext4_inode_info"
	Path   string // the member's path in it: "vfs_inode.i_rwsem", "buckets[3].lock"
	// via are the named structs the path passes through ("inode" for vfs_inode.i_rwsem), which
	// a caller taking a pointer to them also narrows to.
	via []string
}

// String is the field as the capture names it: "ext4_inode_info.vfs_inode.i_rwsem".
func (f Field) String() string { return f.Struct + "." + f.Path }

// Finder answers queries from one kernel's BTF. It indexes the spec's structs on the first
// query of a size-named cache, a pass over the whole spec, and is not safe for concurrent use.
type Finder struct {
	spec    *btf.Spec
	bySize  []*btf.Struct      // the named structs, by size; nil until a size-named cache is queried
	handled map[string]handled // by function, as handles found them
}

// New returns a Finder over the kernel's types.
func New(spec *btf.Spec) *Finder {
	return &Finder{spec: spec, handled: map[string]handled{}}
}

// Find returns the fields the lock may be, best first: one when it is known, none when no struct
// fits. A dedicated cache whose struct BTF lacks, or an offset beyond the object, finds none. The
// error is a spec that cannot be read.
func (f *Finder) Find(q Query) ([]Field, error) {
	var structs []*btf.Struct
	if size, ok := sizeClass(q.Cache); ok {
		if err := f.index(); err != nil {
			return nil, err
		}
		structs = f.sized(size.lo, size.hi)
	} else {
		s := f.cacheStruct(q.Cache, q.ObjectSize)
		if s == nil {
			return nil, nil
		}
		structs = []*btf.Struct{s}
	}
	types := lockTypeNames(q.LockType)
	var fields []Field
	for _, s := range structs {
		if q.Offset >= s.Size && !flexible(s) {
			continue
		}
		walk(s, q.Offset*8, "", nil, types, func(path string, via []string) {
			fields = append(fields, Field{Struct: s.Name, Path: path, via: via})
		})
	}
	return f.narrow(fields, q.Callers), nil
}

// span is a range of struct sizes (lo, hi].
type span struct{ lo, hi uint32 }

// kmallocClasses are the sizes of the kmalloc caches ("kmalloc-96", "kmalloc-2k"): an allocation
// takes the smallest that fits, so a struct in kmalloc-N is bigger than the class below N.
var kmallocClasses = []uint32{8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192}

// sizeClass returns the sizes of the structs a size-named cache may hold: a kmalloc cache
// ("kmalloc-2k", "kmalloc-cg-192", "dma-kmalloc-64", "kmalloc-rnd-03-1k"), whose class follows from
// its name, or a merged cache named by its object size (":0000192", ":a-0000064"), which merges
// caches less than a pointer smaller (mm/slab_common.c, find_mergeable).
func sizeClass(cache string) (span, bool) {
	if strings.HasPrefix(cache, ":") {
		digits := cache[strings.LastIndexAny(cache, ":-")+1:]
		n, err := strconv.ParseUint(digits, 10, 32)
		if err != nil {
			return span{}, false
		}
		if n < 8 {
			return span{lo: 0, hi: uint32(n)}, true
		}
		return span{lo: uint32(n) - 8, hi: uint32(n)}, true
	}
	if !strings.Contains(cache, "kmalloc-") {
		return span{}, false
	}
	suffix := cache[strings.LastIndexByte(cache, '-')+1:]
	mult := uint64(1)
	if strings.HasSuffix(suffix, "k") {
		suffix, mult = strings.TrimSuffix(suffix, "k"), 1024
	}
	n, err := strconv.ParseUint(suffix, 10, 32)
	if err != nil {
		return span{}, false
	}
	size := uint32(n * mult)
	i := slices.Index(kmallocClasses, size)
	if i < 0 {
		return span{}, false
	}
	lo := uint32(0)
	if i > 0 {
		lo = kmallocClasses[i-1]
	}
	return span{lo: lo, hi: size}, true
}

// index lists the spec's named structs by size, once.
func (f *Finder) index() error {
	if f.bySize != nil {
		return nil
	}
	f.bySize = []*btf.Struct{}
	for t, err := range f.spec.All() {
		if err != nil {
			return fmt.Errorf("reading the kernel's types: %w", err)
		}
		if s, ok := t.(*btf.Struct); ok && s.Name != "" {
			f.bySize = append(f.bySize, s)
		}
	}
	slices.SortFunc(f.bySize, func(a, b *btf.Struct) int {
		if a.Size != b.Size {
			return int(a.Size) - int(b.Size)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return nil
}

// sized returns the structs of a size in (lo, hi], and the smaller ones ending in a flexible array,
// which are allocated with room for their elements.
func (f *Finder) sized(lo, hi uint32) []*btf.Struct {
	end, _ := slices.BinarySearchFunc(f.bySize, hi+1, func(s *btf.Struct, size uint32) int { return int(s.Size) - int(size) })
	var out []*btf.Struct
	for _, s := range f.bySize[:end] {
		if s.Size > lo || flexible(s) {
			out = append(out, s)
		}
	}
	return out
}

// flexible reports whether a struct ends in a flexible array member ("struct x { ...; int a[]; }").
func flexible(s *btf.Struct) bool {
	if len(s.Members) == 0 {
		return false
	}
	a, ok := btf.UnderlyingType(s.Members[len(s.Members)-1].Type).(*btf.Array)
	return ok && a.Nelems == 0
}
