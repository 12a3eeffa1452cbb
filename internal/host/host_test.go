package host

import (
	"os"
	"strings"
	"testing"
)

func TestCPUModel(t *testing.T) {
	for _, tc := range []struct {
		name, cpuinfo, want string
	}{
		{"x86", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nflags\t\t: fpu\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n", "Intel(R) Xeon(R) CPU @ 2.20GHz"},
		{"first of two", "model name\t: first\nmodel name\t: second\n", "first"},
		{"arm64 names none", "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n", ""},
		{"key inside a value", "flags\t\t: model name\n", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CPUModel(strings.NewReader(tc.cpuinfo)); got != tc.want {
				t.Errorf("CPUModel = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReadMatchesProc checks uname's fields against the files procfs shows
// them in.
func TestReadMatchesProc(t *testing.T) {
	info := Read()
	for _, tc := range []struct{ file, got string }{
		{"/proc/sys/kernel/osrelease", info.Kernel},
		{"/proc/sys/kernel/version", info.KernelBuild},
		{"/proc/sys/kernel/hostname", info.Hostname},
	} {
		b, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSpace(string(b)); tc.got != want {
			t.Errorf("%s: read %q, want %q", tc.file, tc.got, want)
		}
	}
	if got := KernelRelease(); got != info.Kernel {
		t.Errorf("KernelRelease() = %q, Read().Kernel = %q", got, info.Kernel)
	}
	if info.CPUs < 1 || info.Arch == "" {
		t.Errorf("Read() = %+v: want CPUs and Arch", info)
	}
}

func TestHypervisor(t *testing.T) {
	for _, tc := range []struct {
		name, cpuinfo string
		want          bool
	}{
		{"guest", "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr hypervisor lahf_lm\n", true},
		{"guest, flag last", "flags\t\t: fpu hypervisor\n", true},
		{"bare metal", "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr lahf_lm\n", false},
		{"a longer flag only", "flags\t\t: fpu hypervisor_x\n", false},
		{"not in flags", "model name\t: hypervisor\nflags\t\t: fpu\n", false},
		{"arm64 prints no flags", "processor\t: 0\nFeatures\t: fp asimd\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Hypervisor(strings.NewReader(tc.cpuinfo)); got != tc.want {
				t.Errorf("Hypervisor = %v, want %v", got, tc.want)
			}
		})
	}
}
