package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/cgroups"
	"github.com/klockstat/klockstat/internal/testenv"
)

// The limits of a process, not of the kernel: a capture that runs out of memory, file descriptors
// or capabilities says so in its first line, with the fix, instead of "no probe backend works on this
// kernel".

// firstLine is the first line klockstat printed on stderr.
func firstLine(stderr string) string {
	line, _, _ := strings.Cut(stderr, "\n")
	return line
}

// TestMemoryCgroupLimitNamed runs captures in memory cgroups where the default maps do not fit: the
// first line names the memory and a -M that fits, and a capture with that -M works in the same
// cgroup. At 64 MiB the refusal is checked alone: klockstat's own heap, the kernel's BTF held for the
// whole capture among it, takes 45 to 57 MiB there, so a capture fits only now and then.
func TestMemoryCgroupLimitNamed(t *testing.T) {
	testenv.RequireRoot(t)
	for _, limit := range []int64{64 << 20, 128 << 20} {
		dir := memoryCgroup(t, limit)
		inCgroup := func(args ...string) (int, string) {
			t.Helper()
			script := `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`
			cmd, _, stderr := klockstat(t)
			cmd.Args = append([]string{"sh", "-c", script, "sh", dir, cmd.Path}, args...)
			cmd.Path = "/bin/sh"
			return exitStatus(t, cmd.Run()), stderr.String()
		}
		mib := limit >> 20
		defaultMaps := []string{"-d", "1s", "-q", "-o", ""}
		if limit > 64<<20 {
			defaultMaps = append(defaultMaps, "-M", "262144") // four times the default: more than the cgroup takes
		}
		status, stderr := inCgroup(defaultMaps...)
		line := firstLine(stderr)
		m := regexp.MustCompile(`give --map-nr-entries (\d+)`).FindStringSubmatch(line)
		// Refused before any map is created (status 2, as other -M refusals), or by the kernel.
		if status == 0 || !strings.Contains(line, "memory") || m == nil || strings.Contains(stderr, "no probe backend") {
			t.Fatalf("in %d MiB: status %d, first line %q, want the memory named with a -M that fits\nstderr: %s", mib, status, line, stderr)
		}
		if size, _ := strconv.Atoi(m[1]); size >= 65536 || size < 64 {
			t.Errorf("in %d MiB: -M %d suggested, want one under the default 65536", mib, size)
		}
		if limit == 64<<20 {
			continue
		}
		if status, stderr := inCgroup("-d", "1s", "-q", "-o", "", "-M", m[1]); status != 0 {
			t.Errorf("in %d MiB, with the suggested -M %s: status %d\nstderr: %s", mib, m[1], status, stderr)
		}
	}
}

// memoryCgroup creates a memory cgroup of limit bytes under this process's own, cgroup v2 or v1 (at
// its usual mount) as the machine has the memory controller, and removes it at the end of the test.
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var dir, limitFile string
	for _, line := range strings.Split(string(own), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			h, err := cgroups.Find()
			if err != nil {
				continue
			}
			v2, err := h.Dir(parts[2])
			controllers, _ := os.ReadFile(filepath.Join(v2, "cgroup.subtree_control"))
			if err == nil && strings.Contains(string(controllers), "memory") {
				dir, limitFile = v2, "memory.max"
			}
		case strings.Contains(","+parts[1]+",", ",memory,") && dir == "":
			var st unix.Statfs_t
			if v1 := "/sys/fs/cgroup/memory"; unix.Statfs(v1, &st) == nil && st.Type == unix.CGROUP_SUPER_MAGIC {
				dir, limitFile = filepath.Join(v1, parts[2]), "memory.limit_in_bytes"
			}
		}
	}
	if dir == "" {
		if testenv.InCI() {
			t.Fatal("no memory cgroup controller to put klockstat in, and CI has one")
		}
		t.Skip("no memory cgroup controller (v2 subtree_control or v1 at /sys/fs/cgroup/memory) to put klockstat in")
	}
	dir = filepath.Join(dir, fmt.Sprintf("klockstat-test-%d-%dm", os.Getpid(), limit>>20))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing the test cgroup: %v", err)
		}
	})
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOpenFilesLimitNamed runs a capture under ulimit -n 8, where the kernel's BTF cannot be read,
// and 20, where the maps run out of descriptors: the first line names the limit and ulimit -n.
func TestOpenFilesLimitNamed(t *testing.T) {
	testenv.RequireRoot(t)
	for _, n := range []string{"8", "20"} {
		cmd, _, stderr := klockstat(t)
		cmd.Args = []string{"sh", "-c", `ulimit -n "$1" && shift && exec "$@"`, "sh", n, cmd.Path, "-d", "1s", "-q", "-o", ""}
		cmd.Path = "/bin/sh"
		status := exitStatus(t, cmd.Run())
		line := firstLine(stderr.String())
		if status != 1 || !strings.Contains(line, "open files") || !strings.Contains(line, "ulimit -n") ||
			strings.Contains(stderr.String(), "no probe backend") || strings.Contains(stderr.String(), "BTF") {
			t.Errorf("ulimit -n %s: status %d, first line %q, want the open files limit and ulimit -n\nstderr: %s", n, status, line, stderr)
		}
	}
}

// asNobody runs klockstat with args as the unprivileged user nobody with the capabilities caps
// (capsh's names, comma-separated) as ambient capabilities.
func asNobody(t *testing.T, caps string, args ...string) (int, string, string) {
	t.Helper()
	capsh, err := exec.LookPath("capsh")
	if err != nil {
		t.Fatalf("capsh is needed to run klockstat with some capabilities only (apt install libcap2-bin): %v", err)
	}
	cmd, stdout, stderr := klockstat(t)
	script := `exec "$0" "$@"`
	cmd.Args = append([]string{capsh, "--caps=cap_setpcap,cap_setuid,cap_setgid+ep " + caps + "+eip", "--keep=1", "--user=nobody",
		"--addamb=" + caps, "--", "-c", script, cmd.Path}, args...)
	cmd.Path = capsh
	cmd.Dir = "/"
	status := exitStatus(t, cmd.Run())
	return status, stdout.String(), stderr.String()
}

// TestCapabilitiesNamed runs a capture as nobody with CAP_BPF only: one line names the missing
// CAP_PERFMON, and CAP_SYS_ADMIN for both, with no hint about the memlock limit. With CAP_PERFMON too
// the capture works, and, as enabling run-time statistics needs CAP_SYS_ADMIN, the summary says the
// probe cost was not measured, and gives no cost.
func TestCapabilitiesNamed(t *testing.T) {
	testenv.RequireRoot(t)
	status, _, stderr := asNobody(t, "cap_bpf", "-d", "1s", "-o", "")
	if status != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "CAP_PERFMON") || !strings.Contains(stderr, "CAP_SYS_ADMIN") ||
		strings.Contains(stderr, "MEMLOCK") {
		t.Errorf("with CAP_BPF only: status %d, stderr %q, want one line naming CAP_PERFMON and CAP_SYS_ADMIN", status, stderr)
	}
	// As another process may have them on: the kernel then counts some of the programs' run time.
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		t.Fatal(err)
	}
	defer stats.Close()
	status, stdout, stderr := asNobody(t, "cap_bpf,cap_perfmon", "-d", "1s", "-o", "")
	if status != 0 {
		t.Fatalf("with CAP_BPF and CAP_PERFMON: status %d\nstderr: %s", status, stderr)
	}
	if !strings.Contains(stdout, "probe cost not measured") || strings.Contains(stdout, "ns/event") || strings.Contains(stdout, " in all (") {
		t.Errorf("with CAP_BPF and CAP_PERFMON: the summary gives a probe cost, or does not say it was not measured:\n%s", stdout)
	}
	if !strings.Contains(stderr, "CAP_SYS_ADMIN") {
		t.Errorf("with CAP_BPF and CAP_PERFMON: no warning that the probe cost needs CAP_SYS_ADMIN:\n%s", stderr)
	}
}
