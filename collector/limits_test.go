package collector

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// allCaps are root's capabilities as CapEff shows them.
const allCaps = uint64(0x1fffeffffff)

// limitsOf are a process's limits with the given capabilities; fit is the --map-nr-entries whose maps fit.
func limitsOf(caps uint64, fit uint32) processLimits {
	return processLimits{caps: caps, openMax: 20, mapSize: 65536, fitting: func() uint32 { return fit }}
}

// TestLimitReached: errors of memory, file descriptors and capabilities name the limit first and
// the fix, with the kernel's errno only and not the library's guess about RLIMIT_MEMLOCK; others
// are not limits.
func TestLimitReached(t *testing.T) {
	// As cilium/ebpf wraps them.
	mapCreate := func(errno unix.Errno) error {
		return fmt.Errorf("loading BPF programs: map stacks: map create: %w", errno)
	}
	memlockHint := fmt.Errorf("load program: %w (MEMLOCK may be too low, consider rlimit.RemoveMemlock)", unix.EPERM)
	tests := []struct {
		name string
		err  error
		l    processLimits
		want []string // in the message, in this order; nil: not a limit
	}{
		{"ENOMEM, smaller maps fit", mapCreate(unix.ENOMEM), limitsOf(allCaps, 4096),
			[]string{"out of memory for the BPF maps of --map-nr-entries 65536", "give --map-nr-entries 4096", "(cannot allocate memory)"}},
		{"ENOMEM, no maps fit", mapCreate(unix.ENOMEM), limitsOf(allCaps, 0),
			[]string{"out of memory for the BPF maps, even at the smallest --map-nr-entries 64", "raise the memory limit"}},
		{"ENOMEM, the maps fit", mapCreate(unix.ENOMEM), limitsOf(allCaps, 65536),
			[]string{"out of memory for the BPF programs", "raise the memory limit"}},
		{"EMFILE", mapCreate(unix.EMFILE), limitsOf(allCaps, 0),
			[]string{"too many open files: the limit of 20 (ulimit -n)", "ulimit -n 1024", "(too many open files)"}},
		{"EMFILE in a verifier error", &ebpf.VerifierError{Cause: unix.EMFILE}, limitsOf(allCaps, 0),
			[]string{"too many open files", "ulimit -n"}},
		{"ENFILE", mapCreate(unix.ENFILE), limitsOf(allCaps, 0),
			[]string{"too many open files in the system", "fs.file-max"}},
		{"EPERM with CAP_BPF only", memlockHint, limitsOf(1<<capBPF, 0),
			[]string{"missing capability CAP_PERFMON: ", "CAP_SYS_ADMIN", "grant it CAP_PERFMON (operation not permitted)"}},
		{"EPERM without capabilities", memlockHint, limitsOf(0, 0),
			[]string{"missing capabilities CAP_BPF and CAP_PERFMON: ", "needs root", "CAP_SYS_ADMIN"}},
		{"EACCES with CAP_BPF and CAP_PERFMON", fmt.Errorf("attach: %w", unix.EACCES), limitsOf(1<<capBPF|1<<capPerfmon, 0),
			[]string{"missing capability CAP_SYS_ADMIN", "(permission denied)"}},
		{"EPERM as root: the kernel refused", memlockHint, limitsOf(allCaps, 0), nil},
		{"ENOENT", mapCreate(unix.ENOENT), limitsOf(0, 0), nil},
		{"not supported", fmt.Errorf("raw_tp: %w", ebpf.ErrNotSupported), limitsOf(0, 0), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := limitReached(tt.err, tt.l)
			if tt.want == nil {
				if limit != nil {
					t.Fatalf("%v taken for a limit: %v", tt.err, limit)
				}
				return
			}
			if limit == nil {
				t.Fatalf("%v not taken for a limit", tt.err)
			}
			msg := limit.Error()
			rest := msg
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("message %q lacks %q, or has it out of order", msg, w)
				}
				rest = rest[i+len(w):]
			}
			if strings.Contains(msg, "MEMLOCK") || strings.Contains(msg, "\n") {
				t.Errorf("message %q: more than one line, or the library's memlock guess", msg)
			}
			if !errors.Is(limit, tt.err) && !errors.Is(limit, errors.Unwrap(tt.err)) {
				t.Errorf("%v does not wrap %v", limit, tt.err)
			}
			if capability := strings.Contains(msg, "capabilit"); errors.Is(limit, ErrPermission) != capability {
				t.Errorf("errors.Is(%q, ErrPermission) = %v", msg, !capability)
			}
		})
	}
}

// TestRunTimeStatsUnavailable: without CAP_SYS_ADMIN the warning names it.
func TestRunTimeStatsUnavailable(t *testing.T) {
	if got := runTimeStatsUnavailable(unix.EPERM, 1<<capBPF|1<<capPerfmon); got != "probe cost not measured: enabling BPF run-time statistics needs CAP_SYS_ADMIN" {
		t.Errorf("without CAP_SYS_ADMIN: %q", got)
	}
	if got := runTimeStatsUnavailable(unix.EINVAL, allCaps); !strings.HasSuffix(got, "invalid argument") || strings.Contains(got, "CAP_") {
		t.Errorf("as root, another error: %q", got)
	}
}

// TestMemoryCgroups finds the memory cgroups of a process in the cgroup2 hierarchy and in a v1
// hierarchy with the memory controller, under mounts of a subtree too.
func TestMemoryCgroups(t *testing.T) {
	mountinfo := `25 30 0:23 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
33 25 0:28 / /sys/fs/cgroup/memory rw,relatime shared:13 - cgroup cgroup rw,memory
34 25 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
40 25 0:35 /kubepods /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate
`
	cgroup := `9:cpu:/job
4:memory:/process_api/abc
0::/kubepods/pod1
`
	got := fmt.Sprint(memoryCgroups(cgroup, mountinfo))
	want := fmt.Sprint([]memoryCgroup{
		{dir: "/sys/fs/cgroup/memory/process_api/abc", mount: "/sys/fs/cgroup/memory", limit: "memory.limit_in_bytes", usage: "memory.usage_in_bytes", fileKeys: []string{"total_active_file", "total_inactive_file"}},
		{dir: "/sys/fs/cgroup/unified/pod1", mount: "/sys/fs/cgroup/unified", limit: "memory.max", usage: "memory.current", fileKeys: []string{"active_file", "inactive_file"}},
	})
	if got != want {
		t.Errorf("memoryCgroups\n got %s\nwant %s", got, want)
	}
	if got := memoryCgroups("0::/\n", "34 25 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"); len(got) != 0 {
		t.Errorf("without a cgroup2 mount: %v", got)
	}
	stat := "cache 4096\nactive_file 8192\ninactive_file 12288\n"
	if cgroupStat(stat, "active_file") != 8192 || cgroupStat(stat, "inactive_file") != 12288 || cgroupStat(stat, "shmem") != 0 {
		t.Errorf("cgroupStat misreads %q", stat)
	}
}

// TestMemoryCgroupHeadroom reads the least headroom over a cgroup and its ancestors, page cache left
// out of the usage, from files laid out as a v2 hierarchy.
func TestMemoryCgroupHeadroom(t *testing.T) {
	mount := t.TempDir()
	dir := filepath.Join(mount, "a", "b")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(dir, name, value string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(dir, "memory.max", "max\n")
	write(dir, "memory.current", "1000\n")
	write(filepath.Join(mount, "a"), "memory.max", "100000\n")
	write(filepath.Join(mount, "a"), "memory.current", "70000\n")
	write(filepath.Join(mount, "a"), "memory.stat", "active_file 5000\ninactive_file 15000\n")
	write(mount, "memory.max", "1000000\n")
	write(mount, "memory.current", "10000\n")
	cg := memoryCgroup{dir: dir, mount: mount, limit: "memory.max", usage: "memory.current", fileKeys: []string{"active_file", "inactive_file"}}
	// a: 100000 - (70000 - 20000) of page cache.
	if got, ok := cg.headroom(); !ok || got != 50000 {
		t.Errorf("headroom %d %v, want 50000 from a's limit", got, ok)
	}
	unlimited := memoryCgroup{dir: dir, mount: dir, limit: "memory.max", usage: "memory.current"}
	if got, ok := unlimited.headroom(); ok {
		t.Errorf("a cgroup without a limit: headroom %d", got)
	}
}

// TestMapMemoryRefusedInCgroup: maps that would take more than half of what the memory cgroup
// allows are refused before any is created, with the largest --map-nr-entries whose maps take a quarter.
func TestMapMemoryRefusedInCgroup(t *testing.T) {
	const cpus = 2
	cfg := Config{Spec: loadSpec(t), Probe: "auto", StackDepth: 16, MapSize: 65536}
	need, err := cfg.mapBytes(cpus)
	if err != nil {
		t.Fatal(err)
	}
	plenty := 16 * need
	if err := cfg.refuseMapMemory(cpus, plenty, plenty, true); err != nil {
		t.Errorf("with room for the maps: %v", err)
	}
	err = cfg.refuseMapMemory(cpus, plenty, need, true)
	if err == nil {
		t.Fatal("maps of all a cgroup's headroom not refused")
	}
	m := regexp.MustCompile(`^--map-nr-entries 65536: .*memory cgroup.*: give --map-nr-entries (\d+)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("refusal %q does not name the cgroup and a --map-nr-entries", err)
	}
	size, _ := strconv.Atoi(m[1])
	fits := func(size int) bool {
		c := cfg
		c.MapSize = uint32(size)
		b, err := c.mapBytes(cpus)
		return err == nil && b <= need/4
	}
	if !fits(size) || fits(2*size) {
		t.Errorf("--map-nr-entries %d suggested: want the largest power-of-two fraction of 65536 whose maps take a quarter of %d bytes", size, need)
	}
	if err := cfg.refuseMapMemory(cpus, plenty, 0, false); err != nil {
		t.Errorf("outside a memory cgroup: %v", err)
	}
	if err := cfg.refuseMapMemory(cpus, plenty, 1<<20, true); err == nil || !strings.Contains(err.Error(), "raise") {
		t.Errorf("in a cgroup with room for no maps: %v, want the limit to raise", err)
	}
}
