package collector

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/klockstat/klockstat/cgroups"
)

// BPF maps are kernel memory charged to the memory cgroup of the process that creates them (Linux
// 5.11+), so a cgroup's limit can refuse maps the machine has memory for.

// memoryCgroup is the directory of a memory cgroup of this process and how its version names the
// limit and usage files.
type memoryCgroup struct {
	dir, mount   string // the cgroup's directory, and the hierarchy's mount above it
	limit, usage string // file names, e.g. memory.max and memory.current
	// fileKeys are the memory.stat keys of the page cache, which the usage counts and the kernel
	// reclaims before it refuses memory: left out of the usage, the rest is what klockstat
	// and the cgroup's other processes hold.
	fileKeys []string
}

// memoryCgroupHeadroom is how much more memory the memory cgroups of this process allow it: the
// least over them of their headroom. ok is false when no limit can be read.
func memoryCgroupHeadroom() (headroom uint64, ok bool) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return 0, false
	}
	headroom = ^uint64(0)
	for _, cg := range memoryCgroups(string(own), string(mounts)) {
		if h, limited := cg.headroom(); limited {
			headroom, ok = min(headroom, h), true
		}
	}
	return headroom, ok
}

// headroom is the least, over the cgroup and its ancestors up to the mount, of the limit less the
// usage, page cache left out. ok is false when none has a limit.
func (cg memoryCgroup) headroom() (headroom uint64, ok bool) {
	headroom = ^uint64(0)
	for dir := cg.dir; strings.HasPrefix(dir, cg.mount); dir = filepath.Dir(dir) {
		limit, errLimit := readCgroupNumber(filepath.Join(dir, cg.limit))
		usage, errUsage := readCgroupNumber(filepath.Join(dir, cg.usage))
		if stat, err := os.ReadFile(filepath.Join(dir, "memory.stat")); err == nil {
			for _, key := range cg.fileKeys {
				usage -= min(usage, cgroupStat(string(stat), key))
			}
		}
		if errLimit == nil && errUsage == nil {
			headroom, ok = min(headroom, limit-min(usage, limit)), true
		}
		if dir == cg.mount {
			break
		}
	}
	return headroom, ok
}

// readCgroupNumber reads a cgroup file of one number; v2's "max" fails to parse, as no limit.
func readCgroupNumber(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// cgroupStat is the value of key in the text of a memory.stat file, 0 when it is missing.
func cgroupStat(stat, key string) uint64 {
	for _, line := range strings.Split(stat, "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// memoryCgroups finds the directories of the memory cgroups a process is in from its
// /proc/PID/cgroup ("ID:CONTROLLERS:PATH" lines) and mountinfo: in the cgroup2 hierarchy ("0::PATH"),
// and in a cgroup v1 hierarchy with the memory controller.
func memoryCgroups(cgroup, mountinfo string) []memoryCgroup {
	var out []memoryCgroup
	for _, line := range strings.Split(cgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		v2 := parts[0] == "0" && parts[1] == ""
		if !v2 && !strings.Contains(","+parts[1]+",", ",memory,") {
			continue
		}
		cg := memoryCgroup{limit: "memory.limit_in_bytes", usage: "memory.usage_in_bytes", fileKeys: []string{"total_active_file", "total_inactive_file"}}
		fstype, option := "cgroup", "memory"
		if v2 {
			cg.limit, cg.usage, cg.fileKeys = "memory.max", "memory.current", []string{"active_file", "inactive_file"}
			fstype, option = "cgroup2", ""
		}
		h, found, err := cgroups.FindMount(strings.NewReader(mountinfo), fstype, option)
		if err != nil || !found {
			continue
		}
		cg.dir, cg.mount = h.DirOf(parts[2]), h.Mount
		out = append(out, cg)
	}
	return out
}
