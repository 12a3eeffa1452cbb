package cgroups

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFindMount finds the cgroup2 mount as Find does, and a v1 hierarchy by its controller.
func TestFindMount(t *testing.T) {
	const hybrid = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
		"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
		"33 31 0:30 /job\\0401 /sys/fs/cgroup/memory\\040v1 rw,relatime shared:13 - cgroup cgroup rw,memory,memory_recursiveprot\n" +
		"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw\n"
	for _, tc := range []struct {
		name, text, fstype, option string
		want                       Hierarchy
		found                      bool
	}{
		{
			name: "hybrid: v1 controllers and cgroup2 under unified",
			text: hybrid, fstype: "cgroup2",
			want: Hierarchy{Mount: "/sys/fs/cgroup/unified", Root: "/"}, found: true,
		},
		{
			name: "hybrid: the v1 memory controller, a subtree at escaped paths",
			text: hybrid, fstype: "cgroup", option: "memory",
			want: Hierarchy{Mount: "/sys/fs/cgroup/memory v1", Root: "/job 1"}, found: true,
		},
		{
			name: "an option matches whole, not as a prefix",
			text: hybrid, fstype: "cgroup", option: "mem",
		},
		{
			name: "a subtree mounted in a container, at an escaped path",
			text: "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n" +
				"7 1 0:26 /system.slice/x.service /sys/fs/my\\040cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
			fstype: "cgroup2",
			want:   Hierarchy{Mount: "/sys/fs/my cgroup", Root: "/system.slice/x.service"}, found: true,
		},
		{
			name: "no cgroup2",
			text: "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n", fstype: "cgroup2",
		},
		{
			name: "a mount point named - is not the separator",
			text: "7 1 0:26 / - rw - cgroup2 cgroup2 rw\n", fstype: "cgroup2",
			want: Hierarchy{Mount: "-", Root: "/"}, found: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, found, err := FindMount(strings.NewReader(tc.text), tc.fstype, tc.option)
			if err != nil || got != tc.want || found != tc.found {
				t.Errorf("got %+v, %v, %v; want %+v, %v", got, found, err, tc.want, tc.found)
			}
		})
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/a\040b`:  "/a b",
		`/a\134b`:  `/a\b`,
		`/a\011`:   "/a\t",
		`/trail\0`: `/trail\0`,
		`/a\999`:   `/a\999`,
		`/plain`:   "/plain",
	} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHierarchy makes a cgroup with a name no path should break on and finds it by every form of its
// name, and its id among the paths.
func TestHierarchy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating a cgroup needs root")
	}
	h, err := Find()
	if err != nil {
		t.Fatal(err)
	}
	name := "klockstat-test <b>&\"x\" " + filepath.Base(t.TempDir())
	dir := filepath.Join(h.Mount, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	cgroupPath := filepath.Join(h.Root, name)
	for _, arg := range []string{cgroupPath, name, dir, dir + "/"} {
		got, err := h.Dir(arg)
		if err != nil || got != dir {
			t.Errorf("Dir(%q) = %q, %v; want %q", arg, got, err, dir)
		}
	}
	if got := h.PathOf(dir); got != cgroupPath {
		t.Errorf("PathOf(%q) = %q, want %q", dir, got, cgroupPath)
	}
	for _, arg := range []string{"/no/such/cgroup", "", dir + "/cgroup.procs", "/proc"} {
		if got, err := h.Dir(arg); err == nil {
			t.Errorf("Dir(%q) = %q, want an error", arg, got)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	paths, err := h.Paths()
	if err != nil {
		t.Fatal(err)
	}
	if paths[st.Ino] != cgroupPath {
		t.Errorf("id %d: path %q, want %q", st.Ino, paths[st.Ino], cgroupPath)
	}
	if err := unix.Stat(h.Mount, &st); err != nil {
		t.Fatal(err)
	}
	if paths[st.Ino] != h.Root {
		t.Errorf("the mount's root, id %d: path %q, want %q", st.Ino, paths[st.Ino], h.Root)
	}
}
