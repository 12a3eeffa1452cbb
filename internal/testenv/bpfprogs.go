package testenv

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
)

// BPFPrograms are the ids of the BPF programs process pid holds open, from /proc/PID/fdinfo: that
// process's own, whatever other test binaries (go test runs packages at once) load meanwhile.
func BPFPrograms(pid int) []ebpf.ProgramID {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fdinfo")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // it exited
	}
	var ids []ebpf.ProgramID
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "prog_id:"); ok {
				if id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
					ids = append(ids, ebpf.ProgramID(id))
				}
			}
		}
		f.Close()
	}
	return ids
}

// WaitUnloaded waits up to 5 s for the kernel to free the programs ids, which it does after an RCU
// grace period once their last reference is gone, and returns those still loaded.
func WaitUnloaded(ids []ebpf.ProgramID) []ebpf.ProgramID {
	deadline := time.Now().Add(5 * time.Second)
	for {
		var loaded []ebpf.ProgramID
		for _, id := range ids {
			p, err := ebpf.NewProgramFromID(id)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err == nil {
				p.Close()
			}
			loaded = append(loaded, id)
		}
		if len(loaded) == 0 || time.Now().After(deadline) {
			return loaded
		}
		time.Sleep(20 * time.Millisecond)
	}
}
