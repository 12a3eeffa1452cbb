package collector

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
	"github.com/klockstat/klockstat/kallsyms"
)

// TestStaticLockMarked captures contend's flock workload, whose flocks read fs/locks.c's static
// file_rwsem and whose readers of /proc/locks write it, and checks that its waits on the semaphore are marked
// static: named file_rwsem where kallsyms lists data (CONFIG_KALLSYMS_ALL), unnamed where it lists
// section markers only, and then the capture says so.
func TestStaticLockMarked(t *testing.T) {
	testenv.RequireRoot(t)
	ksyms, err := kallsyms.Load()
	if err != nil {
		t.Fatal(err)
	}
	contend := startContend(t, "-lock", "flock", "-threads", "4", "-dir", t.TempDir(), "-duration", "10m")
	pid := uint32(contend.Process.Pid)
	onFileRwsem := func(r capture.Record) bool {
		return r.PID == pid && strings.HasPrefix(r.Type, "pcpu-sem:") && hasFrame(r.Stack, "flock_lock_inode", "locks_lock_inode_wait", "locks_start")
	}
	var cp *capture.Capture
	for round := 1; ; round++ {
		cp = captureFor(t, 2*time.Second)
		if slices.ContainsFunc(cp.Records, onFileRwsem) || round == 3 {
			break
		}
		t.Logf("round %d: no wait on file_rwsem captured; again", round)
	}
	if err := cp.Validate(); err != nil {
		t.Fatalf("captured data does not validate: %v", err)
	}
	if cp.Meta.KallsymsNoData != ksyms.NoData() {
		t.Errorf("meta kallsyms_no_data %v, but kallsyms lists no data: %v", cp.Meta.KallsymsNoData, ksyms.NoData())
	}
	want := "file_rwsem"
	if ksyms.NoData() {
		want = "" // no image is given here
	}
	var waits uint64
	for _, r := range cp.Records {
		if !onFileRwsem(r) {
			continue
		}
		waits += r.Count
		if !r.Static || r.Name != want {
			t.Errorf("%s wait on %s from %s: static %v, name %q; want static, named %q", r.Type, r.Lock, r.Caller, r.Static, r.Name, want)
		}
	}
	if waits == 0 {
		t.Fatalf("no wait of contend (pid %d) on file_rwsem among %d records", pid, len(cp.Records))
	}
	if i := slices.IndexFunc(cp.Records, func(r capture.Record) bool { return r.Static && r.Lock < 0xffffffff80000000 }); i >= 0 {
		t.Errorf("a lock below the kernel image marked static: %+v", cp.Records[i])
	}
	locks, share := capture.StaticUnnamed(cp.Records)
	t.Logf("%s on %s: %d waits on file_rwsem; %d static locks without a name, %.1f%% of the wait",
		cp.Meta.Probe, kernelRelease(), waits, locks, 100*share)
}

// captureFor captures for d.
func captureFor(t *testing.T, d time.Duration) *capture.Capture {
	t.Helper()
	c, err := Start(defaultConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(d)
	cp, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// TestAddImageSymbols names static locks from an image whose layout is the running kernel's, and
// turns an image it cannot use into one warning, keeping kallsyms alone.
func TestAddImageSymbols(t *testing.T) {
	noData, err := kallsyms.Parse(strings.NewReader("ffffffff81000000 T _stext\nffffffff81000100 T _etext\nffffffff81001000 D __start_rodata\n"))
	if err != nil {
		t.Fatal(err)
	}
	image := []kallsyms.Symbol{ // linked 16 MiB below
		{Addr: 0xffffffff80000000, Type: 'T', Name: "_stext"},
		{Addr: 0xffffffff80000100, Type: 'T', Name: "_etext"},
		{Addr: 0xffffffff80002000, Type: 'd', Name: "file_rwsem", Size: 0x90},
	}
	other := slices.Clone(image)
	other[1].Addr += 0x40
	for _, tc := range []struct {
		name    string
		syms    []kallsyms.Symbol
		err     error
		named   bool
		warning string
	}{
		{"the kernel's image", image, nil, true, ""},
		{"another layout", other, nil, false, "static locks not named from /vmlinux: the image's code is not laid out as the running kernel's"},
		{"unreadable", nil, errors.New("section .symtab claims 4294967296 bytes"), false, "static locks not named from /vmlinux: section .symtab claims 4294967296 bytes"},
	} {
		var log strings.Builder
		c := &Collector{symbols: noData, cfg: Config{Log: &log, ImageSymbols: func() (string, []kallsyms.Symbol, error) { return "/vmlinux", tc.syms, tc.err }}}
		c.addImageSymbols()
		name, _ := c.symbols.Data(0xffffffff81002010)
		if tc.named != (name == "file_rwsem+0x10") || tc.named != (c.staticFrom == "/vmlinux") {
			t.Errorf("%s: named %q, from %q; want named %v", tc.name, name, c.staticFrom, tc.named)
		}
		if tc.warning == "" && len(c.warnings) > 0 || tc.warning != "" && (len(c.warnings) != 1 || !strings.HasPrefix(c.warnings[0], tc.warning)) {
			t.Errorf("%s: warnings %q, want one starting %q", tc.name, c.warnings, tc.warning)
		}
	}
}
