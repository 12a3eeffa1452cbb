// Package cgroups finds the groups of the cgroup v2 hierarchy that klockstat's BPF programs name by id:
// where the hierarchy is mounted, the directory of a cgroup given on the command line, and the path of
// every cgroup id, which is the inode number of the cgroup's directory.
package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNoHierarchy says that no cgroup2 file system is mounted: cgroups have ids but no paths.
var ErrNoHierarchy = errors.New("no cgroup2 file system is mounted (mount -t cgroup2 none /sys/fs/cgroup)")

// Hierarchy is one mount of the cgroup v2 hierarchy (or, from FindMount, of a v1 one).
type Hierarchy struct {
	Mount string // where it is mounted, e.g. /sys/fs/cgroup or /sys/fs/cgroup/unified
	Root  string // the cgroup path of the mount's root, "/" unless a subtree is mounted
}

// Find returns the first cgroup2 mount of /proc/self/mountinfo, or ErrNoHierarchy.
func Find() (Hierarchy, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return Hierarchy{}, fmt.Errorf("finding the cgroup2 mount: %w", err)
	}
	defer f.Close()
	h, found, err := FindMount(f, "cgroup2", "")
	if err == nil && !found {
		err = ErrNoHierarchy
	}
	return h, err
}

// FindMount returns the first mount in a mountinfo file (proc(5)) of a file system of type fstype
// with option among its super options, unless option is "": "cgroup2" and "" for the v2 hierarchy,
// "cgroup" and a controller ("memory") for a v1 one. found is false when there is none.
//
// A line reads "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS",
// its paths octal-escaped ("\040" for a space).
func FindMount(mountinfo io.Reader, fstype, option string) (h Hierarchy, found bool, err error) {
	s := bufio.NewScanner(mountinfo)
	s.Buffer(make([]byte, 0, 4096), 1<<20)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" && i >= 6 {
				sep = i
				break
			}
		}
		if sep < 0 || sep+3 >= len(fields) || fields[sep+1] != fstype {
			continue
		}
		if option == "" || slices.Contains(strings.Split(fields[sep+3], ","), option) {
			return Hierarchy{Mount: unescape(fields[4]), Root: unescape(fields[3])}, true, nil
		}
	}
	if err := s.Err(); err != nil {
		return Hierarchy{}, false, fmt.Errorf("reading mountinfo: %w", err)
	}
	return Hierarchy{}, false, nil
}

// unescape decodes mountinfo's octal escapes of space, tab, newline and backslash ("\040").
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1:i+4]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	if len(s) != 3 || s[0] > '3' {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return true
}

// Dir returns the directory of a cgroup named as perf -G names them, by its path in the hierarchy
// ("/system.slice/cron.service", as /proc/PID/cgroup shows it, or relative to the mount), or by its
// directory under the mount ("/sys/fs/cgroup/system.slice/cron.service"). It fails on anything that is
// not a cgroup2 directory.
func (h Hierarchy) Dir(name string) (string, error) {
	if strings.TrimSpace(name) == "" {
		return "", errors.New("an empty cgroup path")
	}
	clean := path.Clean("/" + name)
	dir := h.DirOf(clean)
	if mount := filepath.Clean(h.Mount); clean == mount || strings.HasPrefix(clean, mount+"/") {
		dir = clean
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("no cgroup %s: %s does not exist (give the path /proc/PID/cgroup shows after 0::, or the directory under %s)", name, dir, h.Mount)
	case err != nil:
		return "", fmt.Errorf("cgroup %s: %w", name, err)
	case !fi.IsDir():
		return "", fmt.Errorf("cgroup %s: %s is not a directory", name, dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", fmt.Errorf("cgroup %s: %w", name, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return "", fmt.Errorf("cgroup %s: %s is not in the cgroup2 hierarchy mounted on %s", name, dir, h.Mount)
	}
	return dir, nil
}

// DirOf is the directory of a cgroup under the mount, by its path in the hierarchy as
// /proc/PID/cgroup shows it. It reads nothing: Dir checks the directory is a cgroup.
func (h Hierarchy) DirOf(cgroupPath string) string {
	return filepath.Join(h.Mount, h.rel(path.Clean("/"+cgroupPath)))
}

// rel is a cgroup path relative to the mount's root.
func (h Hierarchy) rel(cgroupPath string) string {
	if h.Root != "/" && (cgroupPath == h.Root || strings.HasPrefix(cgroupPath, h.Root+"/")) {
		return strings.TrimPrefix(cgroupPath, h.Root)
	}
	return cgroupPath
}

// Paths maps the id of every cgroup of the hierarchy to its path ("/" for the root,
// "/system.slice/cron.service"). Cgroups removed while it walks are left out.
func (h Hierarchy) Paths() (map[uint64]string, error) {
	paths := map[uint64]string{}
	err := filepath.WalkDir(h.Mount, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != h.Mount {
				return nil // removed since its parent was read
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return fs.SkipDir
			}
			return err
		}
		paths[st.Ino] = h.PathOf(p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the cgroups under %s: %w", h.Mount, err)
	}
	return paths, nil
}

// PathOf is the cgroup path of a directory under the mount, as Dir returns them.
func (h Hierarchy) PathOf(dir string) string {
	rel, err := filepath.Rel(h.Mount, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return dir
	}
	return path.Join(h.Root, filepath.ToSlash(rel))
}
