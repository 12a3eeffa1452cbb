package collector

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/lockfield"
)

func TestObjectOffset(t *testing.T) {
	// ext4_inode_cache on a 4 KiB-page machine: 2-page slabs of 1128-byte strides.
	g := slabGeometry{order: 1, slabSize: 1128, objectSize: 1120}
	slab := uint64(0xffff888104c2a000)
	if rem := slab % (uint64(pageSize) << g.order); rem != 0 {
		t.Skipf("the test's slab is not aligned to a slab of %d-byte pages", pageSize)
	}
	for _, tc := range []struct {
		name string
		g    slabGeometry
		lock uint64
		want uint32
		ok   bool
	}{
		{"first object", g, slab + 0x1a8, 0x1a8, true},
		{"fourth object", g, slab + 3*1128 + 0x1a8, 0x1a8, true},
		{"past the object, in its metadata", g, slab + 1120 + 4, 0, false},
		{"left red zone", slabGeometry{order: 1, slabSize: 1128, objectSize: 1120, redZone: true}, slab + 0x1a8, 0, false},
		{"no geometry", slabGeometry{}, slab + 0x1a8, 0, false},
	} {
		got, ok := tc.g.objectOffset(tc.lock)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: objectOffset(%#x) = %#x, %v; want %#x, %v", tc.name, tc.lock, got, ok, tc.want, tc.ok)
		}
	}
}

func TestReadSlabGeometry(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"ext4_inode_cache/order": "1\n", "ext4_inode_cache/slab_size": "1128\n", "ext4_inode_cache/object_size": "1120\n", "ext4_inode_cache/red_zone": "0\n",
		"broken/order": "x\n", "broken/slab_size": "8\n", "broken/object_size": "8\n", "broken/red_zone": "0\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g, err := readSlabGeometry(dir, "ext4_inode_cache")
	if want := (slabGeometry{order: 1, slabSize: 1128, objectSize: 1120}); err != nil || g != want {
		t.Errorf("readSlabGeometry() = %+v, %v; want %+v", g, err, want)
	}
	if _, err := readSlabGeometry(dir, "broken"); err == nil || !strings.Contains(err.Error(), "broken/order") {
		t.Errorf("a bad order: got %v, want an error naming the file", err)
	}
	if _, err := readSlabGeometry(dir, "absent"); err == nil {
		t.Error("a cache without a directory: got no error")
	}
}

func TestNameSlabFields(t *testing.T) {
	i32 := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	mutex := &btf.Struct{Name: "mutex", Size: 8, Members: []btf.Member{{Name: "owner", Type: &btf.Int{Name: "long", Size: 8}}}}
	widget := &btf.Struct{Name: "widget", Size: 24, Members: []btf.Member{{Name: "n", Type: i32}, {Name: "lock", Type: mutex, Offset: 64}, {Name: "lock2", Type: mutex, Offset: 128}}}
	gadget := &btf.Struct{Name: "gadget", Size: 24, Members: []btf.Member{{Name: "n", Type: i32}, {Name: "busy", Type: mutex, Offset: 64}}}
	useGadget := &btf.Func{Name: "gadget_poke", Type: &btf.FuncProto{Return: i32, Params: []btf.FuncParam{{Name: "g", Type: &btf.Pointer{Target: gadget}}}}, Linkage: btf.GlobalFunc}
	b, err := btf.NewBuilder([]btf.Type{widget, gadget, useGadget}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := b.Spec()
	if err != nil {
		t.Fatal(err)
	}
	const slab = 0xffff888104c20000
	geometries := map[string]slabGeometry{"widget": {slabSize: 32, objectSize: 24}, "kmalloc-32": {slabSize: 32, objectSize: 32}}
	geometry := func(cache string) (slabGeometry, error) {
		if g, ok := geometries[cache]; ok {
			return g, nil
		}
		return slabGeometry{}, errors.New("no such cache")
	}
	records := []capture.Record{
		{Type: "mutex", Lock: slab + 2*32 + 8, Name: "&widget", Caller: "widget_run+0x10", Stack: []string{"mutex_lock+0x5", "widget_run+0x10"}},
		{Type: "mutex", Lock: slab + 32 + 8, Name: "&kmalloc-32", Caller: "gadget_poke+0x1c", Stack: []string{"gadget_poke+0x1c", "ioctl+0x40"}},
		{Type: "mutex", Lock: slab + 8, Name: "&kmalloc-32", Caller: "other+0x1c", Stack: []string{"other+0x1c"}},
		{Type: "mutex", Lock: slab + 8, Name: "&kmalloc-32", Caller: "again+0x1c", Stack: []string{"again+0x1c"}},
		{Type: "mutex", Lock: slab + 0x1008, Name: "&gone_cache"},
		{Type: "mutex", Lock: 0xffffffff82a0c1e0, Name: "jiffies_lock"},
	}
	warnings := nameSlabFields(records, geometry, lockfield.New(spec))

	type fields struct {
		offset, field string
		candidates    []string
	}
	var got []fields
	for _, r := range records {
		got = append(got, fields{r.ObjectOffset, r.Field, r.FieldCandidates})
	}
	want := []fields{
		{"0x8", "widget.lock", nil},
		{"0x8", "gadget.busy", nil}, // gadget_poke takes a gadget
		{"0x8", "gadget.busy", []string{"gadget.busy", "widget.lock"}},
		{"0x8", "gadget.busy", []string{"gadget.busy", "widget.lock"}},
		{"", "", nil},
		{"", "", nil},
	}
	if !slices.EqualFunc(got, want, func(a, b fields) bool {
		return a.offset == b.offset && a.field == b.field && slices.Equal(a.candidates, b.candidates)
	}) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "gone_cache") {
		t.Errorf("warnings %q, want one naming the cache without a geometry", warnings)
	}
}

func TestSlabLocksCallers(t *testing.T) {
	records := []capture.Record{
		{Type: "rwsem:W", Lock: 1, Name: "&ext4_inode_cache", Caller: "ext4_buffered_write_iter+0x3c",
			Stack: []string{"rwsem_down_write_slowpath+0x1", "down_write+0x2", "ext4_buffered_write_iter+0x3c", "vfs_write+0x10", "xfs_x+0x1 [xfs]", "ksys_write+0x5", "do_syscall_64+0x9"}},
		{Type: "rwsem:W", Lock: 1, Name: "&ext4_inode_cache", Caller: "ext4_buffered_write_iter+0x40",
			Stack: []string{"down_write+0x2", "ext4_buffered_write_iter+0x40", "0xffffffff81000000", "new_func+0x1"}},
		{Type: "spinlock", Lock: 2, Name: "jiffies_lock"},
	}
	locks := slabLocks(records)
	if len(locks) != 1 || locks[1] == nil {
		t.Fatalf("slabLocks() = %v, want lock 1 alone", locks)
	}
	l := locks[1]
	want := []string{"ext4_buffered_write_iter", "vfs_write", "ksys_write", "new_func"}
	if l.cache != "ext4_inode_cache" || l.lockType != "rwsem:W" || !slices.Equal(l.callers, want) {
		t.Errorf("got %+v, want ext4_inode_cache, rwsem:W, callers %v (from the caller out, modules' left out)", *l, want)
	}
}
