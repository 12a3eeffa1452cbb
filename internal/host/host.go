// Package host describes the machine klockstat runs on: the kernel's release
// and build (uname), the architecture, the host name and the CPUs. A
// capture's metadata, the benchmark's header and the collector's kernel
// checks all read them here.
package host

import (
	"bufio"
	"io"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Info is what a capture records of its machine.
type Info struct {
	Kernel      string // uname -r, e.g. "6.1.0-18-amd64"
	KernelBuild string // uname -v, e.g. "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)"
	Arch        string // uname -m
	Hostname    string
	CPUs        int
	CPUModel    string // "" when /proc/cpuinfo names none (arm64 kernels print none)
}

// Read describes this machine. A part that cannot be read stays empty: the
// description is for a reader, and nothing fails for its lack.
func Read() Info {
	var info Info
	if u, ok := uname(); ok {
		info.Kernel = unix.ByteSliceToString(u.Release[:])
		info.KernelBuild = unix.ByteSliceToString(u.Version[:])
		info.Arch = unix.ByteSliceToString(u.Machine[:])
	}
	info.Hostname, _ = os.Hostname()
	info.CPUs = runtime.NumCPU()
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		info.CPUModel = CPUModel(f)
		f.Close()
	}
	return info
}

// KernelRelease is the running kernel's release (uname -r), or "" when it
// cannot be read.
func KernelRelease() string {
	u, ok := uname()
	if !ok {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

func uname() (*unix.Utsname, bool) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return nil, false
	}
	return &u, true
}

// CPUModel is the first "model name" of a /proc/cpuinfo, or "" when it has
// none.
func CPUModel(cpuinfo io.Reader) string {
	sc := bufio.NewScanner(cpuinfo)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
