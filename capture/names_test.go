package capture

import "testing"

func TestNameShares(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []Record
		want    NameShares
	}{
		{"no records", nil, NameShares{}},
		{"no wait time", []Record{{Name: "rq_lock"}}, NameShares{}},
		{"symbol and slab cache", []Record{{Name: "rq_lock", TotalNS: 30}, {Name: "&ext4_inode_cache", TotalNS: 10}}, NameShares{Symbol: 0.75, SlabCache: 0.25}},
		{"a quarter by symbol", []Record{{Name: "mmap_lock", TotalNS: 25}, {TotalNS: 75}}, NameShares{Symbol: 0.25}},
		{"slab cache only", []Record{{Name: "&kmalloc-64", TotalNS: 40}, {TotalNS: 60}}, NameShares{SlabCache: 0.4}},
		{"none", []Record{{TotalNS: 5}}, NameShares{}},
		{"a slab lock's one field names it", []Record{{Name: "&ext4_inode_cache", Field: "ext4_inode_info.vfs_inode.i_rwsem", TotalNS: 20}, {TotalNS: 80}}, NameShares{Symbol: 0.2}},
		{"a guessed field does not", []Record{{Name: "&kmalloc-2k", Field: "super_block.s_vfs_rename_mutex", FieldCandidates: []string{"super_block.s_vfs_rename_mutex", "kvm_arch.lock"}, TotalNS: 20}, {TotalNS: 80}}, NameShares{SlabCache: 0.2}},
	} {
		c := &Capture{Records: tc.records}
		if got := c.NameShares(); got != tc.want {
			t.Errorf("%s: NameShares() = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestLockLabel(t *testing.T) {
	for _, tc := range []struct {
		record Record
		want   string
	}{
		{Record{Name: "jiffies_lock"}, "jiffies_lock"},
		{Record{}, ""},
		{Record{Name: "&kmalloc-64", ObjectOffset: "0x10"}, "&kmalloc-64+0x10"},
		{Record{Name: "&ext4_inode_cache", ObjectOffset: "0x1a8", Field: "ext4_inode_info.vfs_inode.i_rwsem"}, "&ext4_inode_cache+0x1a8 (ext4_inode_info.vfs_inode.i_rwsem)"},
		{Record{Name: "&kmalloc-2k", ObjectOffset: "0x408", Field: "super_block.s_vfs_rename_mutex", FieldCandidates: []string{"super_block.s_vfs_rename_mutex", "kvm_arch.lock"}},
			"&kmalloc-2k+0x408 (super_block.s_vfs_rename_mutex?)"},
		{Record{Static: true}, UnnamedStatic},
		{Record{Name: "file_rwsem", Static: true}, "file_rwsem"},
	} {
		if got := tc.record.LockLabel(); got != tc.want {
			t.Errorf("LockLabel() of %+v = %q, want %q", tc.record, got, tc.want)
		}
	}
}

func TestStaticUnnamed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []Record
		locks   int
		share   float64
	}{
		{"no records", nil, 0, 0},
		{"two records of one lock, one other", []Record{{Lock: 1, Static: true, TotalNS: 30}, {Lock: 1, Static: true, TotalNS: 20}, {Lock: 2, TotalNS: 50}}, 1, 0.5},
		{"named static locks are not counted", []Record{{Lock: 1, Static: true, Name: "file_rwsem", TotalNS: 60}, {Lock: 2, Static: true, TotalNS: 40}}, 1, 0.4},
		{"two locks", []Record{{Lock: 1, Static: true, TotalNS: 10}, {Lock: 2, Static: true, TotalNS: 30}}, 2, 1},
		{"no wait time", []Record{{Lock: 1, Static: true}}, 1, 0},
	} {
		locks, share := StaticUnnamed(tc.records)
		if locks != tc.locks || share != tc.share {
			t.Errorf("%s: StaticUnnamed() = %d, %v; want %d, %v", tc.name, locks, share, tc.locks, tc.share)
		}
	}
}
