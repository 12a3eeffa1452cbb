package collector

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/cgroups"
	"github.com/klockstat/klockstat/internal/testenv"
)

// testCgroup makes a cgroup of its own under parent, named to break whatever treats a path as
// trusted, and returns its directory, its path in the hierarchy and its id.
func testCgroup(t *testing.T, h cgroups.Hierarchy, parent, name string) (dir, path string, id uint64) {
	t.Helper()
	dir = filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeCgroup(dir) })
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	return dir, h.PathOf(dir), st.Ino
}

// removeCgroup removes an empty cgroup, waiting for the tasks that just left it to be gone: rmdir
// says EBUSY until then.
func removeCgroup(dir string) error {
	var err error
	for range 50 {
		if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// startInCgroup starts contend as a process born in the cgroup of dir (clone3 CLONE_INTO_CGROUP).
func startInCgroup(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return startContendWith(t, &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}, args...)
}

// TestCgroups runs contend in a cgroup of its own and finds its waits carrying that cgroup's id and
// path; then, filtered on that cgroup, a capture keeps only the waits of its descendant, where a
// second contend runs, and not those of a contend running outside at the same time; the
// descendant, removed before the capture ends, keeps its path.
func TestCgroups(t *testing.T) {
	testenv.RequireRoot(t)
	h, err := cgroups.Find()
	if err != nil {
		t.Fatal(err)
	}
	parentDir, parentPath, parentID := testCgroup(t, h, h.Mount, "klockstat-test <b>&'"+filepath.Base(t.TempDir()))
	childDir, childPath, childID := testCgroup(t, h, parentDir, "child \"x\"")

	cfg := defaultConfig(t)
	cfg.Spec = loadSpec(t, "rwsem:R", "rwsem:W")
	var pid uint32
	cp := capture1(t, cfg, func() {
		cmd := startInCgroup(t, parentDir, "-lock", "mmap", "-threads", "4", "-duration", "1s")
		pid = uint32(cmd.Process.Pid)
		waitContend(t, cmd)
	})
	var inParent int
	for _, r := range cp.Records {
		if r.PID != pid {
			continue
		}
		inParent++
		if r.CgroupID != parentID || r.Cgroup != parentPath {
			t.Errorf("record of contend (pid %d): cgroup %d %q, want %d %q", pid, r.CgroupID, r.Cgroup, parentID, parentPath)
		}
	}
	if inParent == 0 {
		t.Fatalf("no record of contend (pid %d) among %d records", pid, len(cp.Records))
	}

	cfg.Cgroups = []string{parentDir}
	var inside, outside uint32
	cp = capture1(t, cfg, func() {
		out := startContend(t, "-lock", "mmap", "-threads", "4", "-duration", "1s")
		in := startInCgroup(t, childDir, "-lock", "mmap", "-threads", "4", "-duration", "1s")
		inside, outside = uint32(in.Process.Pid), uint32(out.Process.Pid)
		waitContend(t, in)
		waitContend(t, out)
		if err := removeCgroup(childDir); err != nil {
			t.Fatalf("removing %s: %v", childDir, err)
		}
	})
	if want := []string{parentPath}; len(cp.Meta.Cgroups) != 1 || cp.Meta.Cgroups[0] != parentPath {
		t.Errorf("meta cgroups %q, want %q", cp.Meta.Cgroups, want)
	}
	var kept int
	for _, r := range cp.Records {
		if r.PID == outside {
			t.Errorf("record of contend outside the cgroup (pid %d) passed the filter", outside)
		}
		if r.CgroupID != childID || r.Cgroup != childPath {
			t.Errorf("record of pid %d (%s): cgroup %d %q, want only %d %q", r.PID, r.Comm, r.CgroupID, r.Cgroup, childID, childPath)
		}
		if r.PID == inside {
			kept++
		}
	}
	if kept == 0 {
		t.Fatalf("no record of contend in %s (pid %d) among %d records", childPath, inside, len(cp.Records))
	}
	if !hasWarning(cp, "cgroups removed during the capture", childPath) {
		t.Errorf("no warning names the removed cgroup %s: %q", childPath, cp.Meta.Warnings)
	}
}

func hasWarning(cp *capture.Capture, parts ...string) bool {
	for _, w := range cp.Meta.Warnings {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(w, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestCgroupPathsOfRemovedCgroups names the records of a cgroup listed at the start and removed
// before the end by the start's path, those of a cgroup never listed by id only, and says so in
// warnings. A plain directory stands in for the hierarchy: only inode numbers and paths matter.
func TestCgroupPathsOfRemovedCgroups(t *testing.T) {
	mount := t.TempDir()
	for _, d := range []string{"kept", "removed <b>"} {
		if err := os.Mkdir(filepath.Join(mount, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ino := func(dir string) uint64 {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(mount, dir), &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	kept, removed := ino("kept"), ino("removed <b>")
	p := &cgroupPaths{hierarchy: cgroups.Hierarchy{Mount: mount, Root: "/"}}
	if p.start, p.err = p.hierarchy.Paths(); p.err != nil {
		t.Fatal(p.err)
	}
	if err := os.Remove(filepath.Join(mount, "removed <b>")); err != nil {
		t.Fatal(err)
	}
	records := []capture.Record{{CgroupID: kept}, {CgroupID: removed}, {CgroupID: 1 << 40}, {CgroupID: 0}}
	warnings := p.name(records, p.atEnd())
	for i, want := range []string{"/kept", "/removed <b>", "", ""} {
		if records[i].Cgroup != want {
			t.Errorf("record of cgroup %d: path %q, want %q", records[i].CgroupID, records[i].Cgroup, want)
		}
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "removed during the capture") || !strings.Contains(warnings[0], "/removed <b>") ||
		warnings[1] != "cgroups created and removed during the capture, their waits shown by cgroup id only: 1" {
		t.Errorf("warnings %q", warnings)
	}
}
