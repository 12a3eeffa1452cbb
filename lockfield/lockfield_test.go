package lockfield

import (
	"slices"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// Hand-built kernel types: the lock types as vmlinux spells them, and structs to find them in.
var (
	intType     = &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	rawSpinlock = &btf.Struct{Name: "raw_spinlock", Size: 4, Members: []btf.Member{{Name: "raw_lock", Type: intType}}}
	spinlock    = &btf.Struct{Name: "spinlock", Size: 4, Members: []btf.Member{{Name: "rlock", Type: rawSpinlock}}}
	spinlockT   = &btf.Typedef{Name: "spinlock_t", Type: spinlock}
	mutex       = &btf.Struct{Name: "mutex", Size: 16, Members: []btf.Member{
		{Name: "owner", Type: &btf.Int{Name: "long", Size: 8}},
		{Name: "wait_lock", Type: rawSpinlock, Offset: 64},
	}}
	rwsem = &btf.Struct{Name: "rw_semaphore", Size: 16, Members: []btf.Member{{Name: "count", Type: &btf.Int{Name: "long", Size: 8}}}}
)

// member lays out members one after the other, each at the next multiple of 8 bytes.
func members(types ...any) []btf.Member {
	var ms []btf.Member
	off := uint32(0)
	for i := 0; i < len(types); i += 2 {
		t := types[i+1].(btf.Type)
		ms = append(ms, btf.Member{Name: types[i].(string), Type: t, Offset: btf.Bits(off * 8)})
		size, err := btf.Sizeof(t)
		if err != nil {
			panic(err)
		}
		off += (uint32(size) + 7) &^ 7
	}
	return ms
}

// structOf is a named struct of those members, its size the end of the last one rounded up to 8.
func structOf(name string, types ...any) *btf.Struct {
	ms := members(types...)
	size := uint32(0)
	if n := len(ms); n > 0 {
		last, _ := btf.Sizeof(ms[n-1].Type)
		size = (ms[n-1].Offset.Bytes() + uint32(last) + 7) &^ 7
	}
	return &btf.Struct{Name: name, Size: size, Members: ms}
}

// specOf builds a spec of the types and what they refer to.
func specOf(t *testing.T, types ...btf.Type) *btf.Spec {
	t.Helper()
	b, err := btf.NewBuilder(types, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := b.Spec()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func names(fields []Field) []string {
	var out []string
	for _, f := range fields {
		out = append(out, f.String())
	}
	return out
}

func find(t *testing.T, f *Finder, q Query) []string {
	t.Helper()
	fields, err := f.Find(q)
	if err != nil {
		t.Fatal(err)
	}
	return names(fields)
}

// offsetOf is the byte offset of a member path in a struct, from the spec.
func offsetOf(t *testing.T, spec *btf.Spec, structName string, path ...string) uint32 {
	t.Helper()
	var s *btf.Struct
	if err := spec.TypeByName(structName, &s); err != nil {
		t.Fatal(err)
	}
	var off uint32
	var cur btf.Type = s
	for _, name := range path {
		var ms []btf.Member
		switch v := btf.UnderlyingType(cur).(type) {
		case *btf.Struct:
			ms = v.Members
		case *btf.Union:
			ms = v.Members
		}
		i := slices.IndexFunc(ms, func(m btf.Member) bool { return m.Name == name })
		if i < 0 {
			t.Fatalf("%s has no member %s on the path %v", structName, name, path)
		}
		off += ms[i].Offset.Bytes()
		cur = ms[i].Type
	}
	return off
}

func TestDedicatedCacheNestedField(t *testing.T) {
	inode := structOf("inode", "i_mode", intType, "i_lock", spinlockT, "i_rwsem", rwsem)
	info := structOf("ext9_inode_info", "i_flags", intType, "i_data_sem", rwsem, "vfs_inode", inode)
	spec := specOf(t, info)
	f := New(spec)

	off := offsetOf(t, spec, "ext9_inode_info", "vfs_inode", "i_rwsem")
	if got, want := find(t, f, Query{Cache: "ext9_inode_cache", Offset: off, LockType: "rwsem:W"}), []string{"ext9_inode_info.vfs_inode.i_rwsem"}; !slices.Equal(got, want) {
		t.Errorf("the inode's rwsem: got %v, want %v", got, want)
	}
	lock := offsetOf(t, spec, "ext9_inode_info", "vfs_inode", "i_lock")
	if got, want := find(t, f, Query{Cache: "ext9_inode_cache", Offset: lock, LockType: "spinlock"}), []string{"ext9_inode_info.vfs_inode.i_lock"}; !slices.Equal(got, want) {
		t.Errorf("the inode's spinlock: got %v, want %v", got, want)
	}
	if got := find(t, f, Query{Cache: "ext9_inode_cache", Offset: off, LockType: "mutex"}); len(got) != 0 {
		t.Errorf("a mutex where an rwsem is: got %v, want none", got)
	}
	if got := find(t, f, Query{Cache: "ext9_inode_cache", Offset: off + 8, LockType: "rwsem:R"}); len(got) != 0 {
		t.Errorf("inside the rwsem: got %v, want none", got)
	}
	if got := find(t, f, Query{Cache: "ext9_inode_cache", Offset: off, LockType: "rwsem:W", ObjectSize: info.Size - 8}); len(got) != 0 {
		t.Errorf("a struct bigger than the cache's objects: got %v, want none", got)
	}
}

func TestUnionsArraysAndLocksInLocks(t *testing.T) {
	bucket := structOf("bucket", "head", intType, "lock", spinlockT)
	union := &btf.Union{Size: 16, Members: []btf.Member{{Name: "m", Type: mutex}, {Name: "s", Type: spinlockT}}}
	table := structOf("table", "n", intType, "buckets", &btf.Array{Type: bucket, Index: intType, Nelems: 4}, "", union)
	spec := specOf(t, table)
	f := New(spec)

	third := offsetOf(t, spec, "table", "buckets") + 2*bucket.Size + offsetOf(t, spec, "bucket", "lock")
	if got, want := find(t, f, Query{Cache: "table", Offset: third, LockType: "spinlock"}), []string{"table.buckets[2].lock"}; !slices.Equal(got, want) {
		t.Errorf("a lock in an array: got %v, want %v", got, want)
	}
	u := offsetOf(t, spec, "table", "")
	if got, want := find(t, f, Query{Cache: "table", Offset: u}), []string{"table.m", "table.s"}; !slices.Equal(got, want) {
		t.Errorf("an anonymous union of locks, any type: got %v, want %v", got, want)
	}
	if got, want := find(t, f, Query{Cache: "table", Offset: u, LockType: "mutex"}), []string{"table.m"}; !slices.Equal(got, want) {
		t.Errorf("the union's mutex: got %v, want %v", got, want)
	}
	if got, want := find(t, f, Query{Cache: "table", Offset: u + 8, LockType: "spinlock"}), []string{"table.m.wait_lock"}; !slices.Equal(got, want) {
		t.Errorf("a mutex's own wait_lock, a spinlock of its own: got %v, want %v", got, want)
	}
	if got := find(t, f, Query{Cache: "table", Offset: u + 8, LockType: "mutex"}); len(got) != 0 {
		t.Errorf("a mutex inside a mutex: got %v, want none", got)
	}
}

func TestCacheStructConventions(t *testing.T) {
	file := structOf("file", "f_lock", spinlockT)
	kn := structOf("kernfs_node", "n", intType, "lock", mutex)
	fuse := structOf("fuse_inode", "n", intType, "lock", mutex)
	spec := specOf(t, file, kn, fuse)
	f := New(spec)
	for _, tc := range []struct{ cache, want string }{
		{"filp", "file.f_lock"},
		{"kernfs_node_cache", "kernfs_node.lock"},
		{"fuse_inode_cache", "fuse_inode.lock"},
	} {
		s := f.cacheStruct(tc.cache, 0)
		if s == nil {
			t.Errorf("%s: no struct", tc.cache)
			continue
		}
		off := offsetOf(t, spec, s.Name, tc.want[len(s.Name)+1:])
		if got := find(t, f, Query{Cache: tc.cache, Offset: off}); !slices.Equal(got, []string{tc.want}) {
			t.Errorf("%s at %#x: got %v, want %s", tc.cache, off, got, tc.want)
		}
	}
	if s := f.cacheStruct("names_cache", 0); s != nil {
		t.Errorf("names_cache holds path names, got struct %s", s.Name)
	}
}

func TestSizeClass(t *testing.T) {
	for _, tc := range []struct {
		cache  string
		lo, hi uint32
		ok     bool
	}{
		{"kmalloc-2k", 1024, 2048, true},
		{"kmalloc-cg-192", 128, 192, true},
		{"dma-kmalloc-8", 0, 8, true},
		{"kmalloc-rnd-03-1k", 512, 1024, true},
		{"kmalloc-rcl-96", 64, 96, true},
		{":0000192", 184, 192, true},
		{":a-0000064", 56, 64, true},
		{"kmalloc-3k", 0, 0, false},
		{"task_struct", 0, 0, false},
	} {
		s, ok := sizeClass(tc.cache)
		if ok != tc.ok || s.lo != tc.lo || s.hi != tc.hi {
			t.Errorf("sizeClass(%q) = (%d, %d], %v; want (%d, %d], %v", tc.cache, s.lo, s.hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}

// kmallocSpec has three structs with a mutex at offset 8: two of kmalloc-128's class (96, 128],
// one smaller that ends in a flexible array, and one of kmalloc-96's class with a mutex there too.
func kmallocSpec(t *testing.T) (*btf.Spec, []btf.Type) {
	pad := func(n uint32) btf.Type { return &btf.Array{Type: intType, Index: intType, Nelems: n / 4} }
	alpha := structOf("alpha", "a", intType, "lock", mutex, "pad", pad(80))      // 104
	beta := structOf("beta", "b", intType, "lock", mutex, "pad", pad(96))        // 120
	gamma := structOf("gamma", "g", intType, "lock", mutex, "data", pad(0))      // 24 and a flexible array
	small := structOf("small", "s", intType, "lock", mutex, "pad", pad(64))      // 88: kmalloc-96
	other := structOf("other", "o", intType, "rw", rwsem, "pad", pad(88))        // 112, an rwsem
	holder := structOf("holder", "a", &btf.Pointer{Target: alpha}, "n", intType) // points to alpha
	var takesBeta, takesHolder btf.Type = &btf.Func{Name: "use_beta", Type: &btf.FuncProto{Return: intType, Params: []btf.FuncParam{{Name: "b", Type: &btf.Pointer{Target: &btf.Const{Type: beta}}}}}, Linkage: btf.GlobalFunc},
		&btf.Func{Name: "use_holder", Type: &btf.FuncProto{Return: intType, Params: []btf.FuncParam{{Name: "h", Type: &btf.Pointer{Target: holder}}}}, Linkage: btf.GlobalFunc}
	types := []btf.Type{alpha, beta, gamma, small, other, holder, takesBeta, takesHolder}
	return specOf(t, types...), types
}

func TestKmallocCandidates(t *testing.T) {
	spec, _ := kmallocSpec(t)
	f := New(spec)
	off := offsetOf(t, spec, "alpha", "lock")
	if got, want := find(t, f, Query{Cache: "kmalloc-128", Offset: off, LockType: "mutex"}), []string{"alpha.lock", "beta.lock", "gamma.lock"}; !slices.Equal(got, want) {
		t.Errorf("kmalloc-128: got %v, want %v", got, want)
	}
	if got, want := find(t, f, Query{Cache: "kmalloc-cg-96", Offset: off, LockType: "mutex"}), []string{"gamma.lock", "small.lock"}; !slices.Equal(got, want) {
		t.Errorf("kmalloc-cg-96: got %v, want %v", got, want)
	}
	if got, want := find(t, f, Query{Cache: "kmalloc-128", Offset: off, LockType: "rwsem:R"}), []string{"other.rw"}; !slices.Equal(got, want) {
		t.Errorf("an rwsem in kmalloc-128: got %v, want %v", got, want)
	}
}

func TestCallersNarrow(t *testing.T) {
	spec, _ := kmallocSpec(t)
	f := New(spec)
	off := offsetOf(t, spec, "alpha", "lock")
	q := Query{Cache: "kmalloc-128", Offset: off, LockType: "mutex"}

	q.Callers = []string{"not_in_btf", "use_beta"}
	if got, want := find(t, f, q), []string{"beta.lock"}; !slices.Equal(got, want) {
		t.Errorf("a caller taking a struct beta: got %v, want %v", got, want)
	}
	q.Callers = []string{"use_holder"}
	if got, want := find(t, f, q), []string{"alpha.lock", "beta.lock", "gamma.lock"}; !slices.Equal(got, want) {
		t.Errorf("a caller one pointer from alpha ranks it first and keeps the others: got %v, want %v", got, want)
	}
	q.Callers = []string{"use_holder", "use_beta"}
	if got, want := find(t, f, q), []string{"beta.lock"}; !slices.Equal(got, want) {
		t.Errorf("a direct parameter beats one a pointer away: got %v, want %v", got, want)
	}
}
