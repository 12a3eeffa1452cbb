package collector

import (
	"os"
	"regexp"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
	"github.com/klockstat/klockstat/srcline"
)

// TestCaptureForSourceLines captures waits whose stacks pass through functions the kernel
// inlines (inode_lock in the write path, mmap_write_lock_killable in mmap and munmap, both
// wrappers of the rwsem calls) and, when KLOCKSTAT_TEST_CAPTURE_OUT names a file, saves the
// capture there: the kernel matrix (tests/vm) brings it out of a guest and resolves its frames
// against that kernel's debug image on the host (TestVmlinux in srcline/), which the guest has no
// room for.
func TestCaptureForSourceLines(t *testing.T) {
	testenv.RequireRoot(t)
	var pid uint32
	cp := capture1(t, defaultConfig(t), func() {
		cmd := startContend(t, "-lock", "inode,mmap", "-threads", "4", "-duration", "2s", "-dir", t.TempDir())
		pid = uint32(cmd.Process.Pid)
		waitContend(t, cmd)
	})

	// The command line notes the build id, not the collector: do as it does, since the host
	// looks the frames up only in the image of that build id.
	cp.Meta.KernelBuildID = srcline.RunningBuildID()
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(cp.Meta.KernelBuildID) {
		t.Errorf("kernel build id %q, want 40 hex digits (/sys/kernel/notes)", cp.Meta.KernelBuildID)
	}
	var writes, mappings int
	for _, r := range cp.Records {
		if r.PID != pid || r.Count == 0 {
			continue
		}
		switch {
		case hasFrame(r.Stack, "vfs_write"):
			writes++
		case hasFrame(r.Stack, "vm_mmap_pgoff", "__vm_munmap"):
			mappings++
		}
	}
	if writes == 0 || mappings == 0 {
		t.Fatalf("contend (pid %d) waited with stacks through vfs_write in %d records and through vm_mmap_pgoff or __vm_munmap in %d, want both, among %d records",
			pid, writes, mappings, len(cp.Records))
	}
	t.Logf("%d records of contend's writes and %d of its mappings among %d", writes, mappings, len(cp.Records))

	out := os.Getenv("KLOCKSTAT_TEST_CAPTURE_OUT")
	if out == "" {
		return
	}
	saveCapture(t, cp, out)
	// What the host will read: the file must parse as a capture again.
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	back, err := capture.Read(f)
	if err != nil {
		t.Fatalf("reading back %s: %v", out, err)
	}
	if len(back.Records) != len(cp.Records) {
		t.Errorf("%s holds %d records, the capture %d", out, len(back.Records), len(cp.Records))
	}
}

// saveCapture writes cp to the file path as `klockstat -o` does.
func saveCapture(t *testing.T, cp *capture.Capture, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("KLOCKSTAT_TEST_CAPTURE_OUT: %v", err)
	}
	if err := cp.Write(f); err != nil {
		f.Close()
		t.Fatalf("writing the capture to %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("writing the capture to %s: %v", path, err)
	}
}
