package lockfield

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/klockstat/klockstat/internal/testenv"
)

// kernelTypes reads this machine's BTF, world-readable: no root needed.
func kernelTypes(t *testing.T) *btf.Spec {
	t.Helper()
	spec, err := btf.LoadSpec("/sys/kernel/btf/vmlinux")
	if errors.Is(err, os.ErrNotExist) && !testenv.InCI() {
		t.Skip("no /sys/kernel/btf/vmlinux: the kernel was built without CONFIG_DEBUG_INFO_BTF")
	}
	if err != nil {
		t.Fatalf("reading the kernel's BTF: %v", err)
	}
	return spec
}

func TestKernelInodeRwsem(t *testing.T) {
	spec := kernelTypes(t)
	off := offsetOf(t, spec, "ext4_inode_info", "vfs_inode", "i_rwsem")
	got := find(t, New(spec), Query{Cache: "ext4_inode_cache", Offset: off, LockType: "rwsem:W", Callers: []string{"ext4_buffered_write_iter"}})
	if want := []string{"ext4_inode_info.vfs_inode.i_rwsem"}; !slices.Equal(got, want) {
		t.Errorf("ext4_inode_cache+%#x: got %v, want %v", off, got, want)
	}
}

func TestKernelRenameMutex(t *testing.T) {
	spec := kernelTypes(t)
	var sb *btf.Struct
	if err := spec.TypeByName("super_block", &sb); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(kmallocClasses, func(c uint32) bool { return c >= sb.Size })
	if i < 0 {
		t.Fatalf("struct super_block of %d bytes is bigger than the kmalloc caches", sb.Size)
	}
	cache := fmt.Sprintf("kmalloc-%d", kmallocClasses[i])
	if kmallocClasses[i] >= 1024 {
		cache = fmt.Sprintf("kmalloc-%dk", kmallocClasses[i]/1024)
	}
	off := offsetOf(t, spec, "super_block", "s_vfs_rename_mutex")
	got := find(t, New(spec), Query{Cache: cache, Offset: off, LockType: "mutex", Callers: []string{"lock_rename", "do_renameat2"}})
	t.Logf("%s+%#x: %v", cache, off, got)
	if !slices.Contains(got, "super_block.s_vfs_rename_mutex") {
		t.Errorf("%s+%#x: got %v, want super_block.s_vfs_rename_mutex among them", cache, off, got)
	}
}
