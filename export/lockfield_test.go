package export

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
)

// fieldCapture waits on a slab lock whose field is a guess, one whose field is known, and a static
// lock, which has none.
func fieldCapture(t *testing.T) *capture.Capture {
	rename := capturetest.Rec("mutex", "&kmalloc-2k", "lock_rename+0x2c", "mv", 10, 11, 0xffff888104c2a408, 5_000)
	rename.Stack = []string{"lock_rename+0x2c", "do_renameat2+0x1f0"}
	rename.ObjectOffset, rename.Field = "0x408", "super_block.s_vfs_rename_mutex"
	rename.FieldCandidates = []string{"super_block.s_vfs_rename_mutex", "kvm_arch.lock"}
	inode := capturetest.Rec("rwsem:W", "&ext4_inode_cache", "ext4_buffered_write_iter+0x3c", "dd", 12, 12, 0xffff8881237e5a10, 9_000)
	inode.Stack = []string{"ext4_buffered_write_iter+0x3c"}
	inode.ObjectOffset, inode.Field = "0x1a8", "ext4_inode_info.vfs_inode.i_rwsem"
	jiffies := capturetest.Rec("spinlock", "jiffies_lock", "tick_do_update_jiffies64+0x2f", "swapper/0", 0, 0, 0xffffffff83a1b2c0, 700)
	jiffies.Stack = []string{"tick_do_update_jiffies64+0x2f"}
	unnamed := capturetest.Rec("spinlock", "", "__queue_work+0x1c", "kworker/0:1", 30, 30, 0xffffffff83a1c000, 400)
	unnamed.Static, unnamed.Stack = true, []string{"__queue_work+0x1c"}
	return capturetest.Of(t, 1e9, rename, inode, jiffies, unnamed)
}

func TestCSVLockField(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCSV(&b, asCaptured(fieldCapture(t))); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(name string) int { return slices.Index(rows[0], name) }
	got := map[string][]string{}
	for _, row := range rows[1:] {
		got[row[col("lock_name")]] = []string{row[col("object_offset")], row[col("field")], row[col("field_candidates")], row[col("lock_static")]}
	}
	// A static lock without a name: its name empty, and said static.
	want := map[string][]string{
		"&kmalloc-2k":       {"0x408", "super_block.s_vfs_rename_mutex", "super_block.s_vfs_rename_mutex kvm_arch.lock", ""},
		"&ext4_inode_cache": {"0x1a8", "ext4_inode_info.vfs_inode.i_rwsem", "", ""},
		"jiffies_lock":      {"", "", "", ""},
		"":                  {"", "", "", "static"},
	}
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("%q: object_offset, field, field_candidates, lock_static %q, want %q", name, got[name], w)
		}
	}
}

func TestPprofLockField(t *testing.T) {
	var b bytes.Buffer
	if err := WritePprof(&b, asCaptured(fieldCapture(t))); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]map[string][]string{}
	for _, s := range p.Sample {
		byName[strings.Join(s.Label["lock_name"], "")] = s.Label
	}
	rename := byName["&kmalloc-2k"]
	if !slices.Equal(rename["lock_field"], []string{"super_block.s_vfs_rename_mutex"}) || !slices.Equal(rename["lock_offset"], []string{"0x408"}) ||
		!slices.Equal(rename["lock_field_candidates"], []string{"super_block.s_vfs_rename_mutex", "kvm_arch.lock"}) {
		t.Errorf("the guessed rename mutex is labelled %v", rename)
	}
	if inode := byName["&ext4_inode_cache"]; !slices.Equal(inode["lock_field"], []string{"ext4_inode_info.vfs_inode.i_rwsem"}) || inode["lock_field_candidates"] != nil {
		t.Errorf("the inode's rwsem is labelled %v", inode)
	}
	if jiffies := byName["jiffies_lock"]; jiffies["lock_field"] != nil || jiffies["lock_offset"] != nil || jiffies["lock_static"] != nil {
		t.Errorf("a named static lock is labelled %v", jiffies)
	}
	if unnamed := byName[""]; !slices.Equal(unnamed["lock_static"], []string{"static"}) {
		t.Errorf("a static lock without a name is labelled %v", unnamed)
	}
}

func TestFoldedLockField(t *testing.T) {
	var b bytes.Buffer
	if err := WriteFolded(&b, asCaptured(fieldCapture(t))); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"dd;ext4_buffered_write_iter;[ext4_inode_info.vfs_inode.i_rwsem] 9000",
		"kworker/0:1;__queue_work 400",
		"mv;do_renameat2;lock_rename;[super_block.s_vfs_rename_mutex?] 5000",
		"swapper/0;tick_do_update_jiffies64 700",
	}
	if got := strings.Split(strings.TrimSpace(b.String()), "\n"); !slices.Equal(got, want) {
		t.Errorf("folded:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
