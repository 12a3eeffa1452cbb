package capture

import "testing"

func TestNamedShare(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []Record
		want    float64
	}{
		{"no records", nil, 0},
		{"no wait time", []Record{{Name: "rq_lock"}}, 0},
		{"all named", []Record{{Name: "rq_lock", TotalNS: 30}, {Name: "&ext4_inode_cache", TotalNS: 10}}, 1},
		{"a quarter", []Record{{Name: "mmap_lock", TotalNS: 25}, {TotalNS: 75}}, 0.25},
		{"none", []Record{{TotalNS: 5}}, 0},
	} {
		c := &Capture{Records: tc.records}
		if got := c.NamedShare(); got != tc.want {
			t.Errorf("%s: NamedShare() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
