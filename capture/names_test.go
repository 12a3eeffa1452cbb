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
	} {
		c := &Capture{Records: tc.records}
		if got := c.NameShares(); got != tc.want {
			t.Errorf("%s: NameShares() = %+v, want %+v", tc.name, got, tc.want)
		}
		if got, want := c.NamedShare(), tc.want.Symbol+tc.want.SlabCache; got != want {
			t.Errorf("%s: NamedShare() = %v, want %v", tc.name, got, want)
		}
	}
}
