package collector

import (
	"fmt"
	"testing"
)

// TestMemoryCgroupsAtEscapedMounts finds memory cgroups whose hierarchies are mounted at paths that
// mountinfo escapes: a space is "\040" there, and the directory must have the space.
func TestMemoryCgroupsAtEscapedMounts(t *testing.T) {
	mountinfo := `33 25 0:28 /jobs\040a /sys/fs/cgroup/my\040memory rw,relatime - cgroup cgroup rw,memory
40 25 0:35 / /run/cgroup\040v2 rw,relatime - cgroup2 cgroup2 rw,nsdelegate
`
	cgroup := "4:memory:/jobs a/abc\n0::/pod 1\n"
	got := fmt.Sprint(memoryCgroups(cgroup, mountinfo))
	want := fmt.Sprint([]memoryCgroup{
		{dir: "/sys/fs/cgroup/my memory/abc", mount: "/sys/fs/cgroup/my memory", limit: "memory.limit_in_bytes", usage: "memory.usage_in_bytes", fileKeys: []string{"total_active_file", "total_inactive_file"}},
		{dir: "/run/cgroup v2/pod 1", mount: "/run/cgroup v2", limit: "memory.max", usage: "memory.current", fileKeys: []string{"active_file", "inactive_file"}},
	})
	if got != want {
		t.Errorf("memoryCgroups\n got %s\nwant %s", got, want)
	}
}
