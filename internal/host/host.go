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
	"slices"
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

// PreemptRT reports whether the running kernel is built with PREEMPT_RT, where spinlock_t and
// rwlock_t are rtmutex-based and sleep: uname's version names the preemption model.
func PreemptRT() bool {
	u, ok := uname()
	return ok && strings.Contains(unix.ByteSliceToString(u.Version[:]), "PREEMPT_RT")
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
	return cpuinfoField(cpuinfo, "model name")
}

// Hypervisor reports whether a /proc/cpuinfo has the x86 "hypervisor" flag,
// which a CPU has when the kernel runs as a guest of a hypervisor. arm64
// kernels print no such flag.
func Hypervisor(cpuinfo io.Reader) bool {
	return slices.Contains(strings.Fields(cpuinfoField(cpuinfo, "flags")), "hypervisor")
}

// InGuest reports whether this kernel runs as a guest of a hypervisor
// (Hypervisor of /proc/cpuinfo); false when that cannot be read.
func InGuest() bool {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	return Hypervisor(f)
}

// cpuinfoField is the value of the first line of a /proc/cpuinfo with that
// key, or "" when none has it.
func cpuinfoField(cpuinfo io.Reader, key string) string {
	sc := bufio.NewScanner(cpuinfo)
	sc.Buffer(nil, 1<<20) // a flags line of a recent x86 CPU runs past a kilobyte
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
