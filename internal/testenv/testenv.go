// Package testenv holds what klockstat's kernel tests share: the root check
// that may skip only outside CI, and building the contention workload.
//
// Test binaries copied to a machine without the source tree or a Go
// toolchain (the kernel-matrix VMs of tests/vm) are pointed at what they
// need by two environment variables:
//
//   - KLOCKSTAT_TEST_ROOT: the directory standing for the source tree,
//     returned by ModuleRoot; set, it also tells a test that it runs in an
//     emulated guest.
//   - KLOCKSTAT_TEST_BINDIR: a directory of prebuilt executables, named as
//     Build names them (contend, klockstat), that Build returns instead of
//     running go build.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// InCI reports whether the tests run in CI, where a kernel test that this
// machine supports must not skip.
func InCI() bool { return os.Getenv("CI") == "true" }

// RequireRoot skips a test that loads BPF programs when not root, and fails
// it in CI, which always runs as root.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if InCI() {
		tb.Fatal("kernel test needs root, and CI runs as root: refusing to skip")
	}
	tb.Skip("skipping kernel test: needs root to load BPF programs (run go test as root)")
}

var builds sync.Map // package path -> *buildResult

type buildResult struct {
	once sync.Once
	path string
	err  error
}

// Build compiles a main package of this module (e.g. "./examples/contend")
// once per test binary and returns the executable's path, or returns the
// prebuilt executable of that name in KLOCKSTAT_TEST_BINDIR if set.
func Build(tb testing.TB, pkg string) string {
	tb.Helper()
	v, _ := builds.LoadOrStore(pkg, &buildResult{})
	r := v.(*buildResult)
	name := filepath.Base(pkg)
	if pkg == "." {
		name = "klockstat"
	}
	r.once.Do(func() {
		if dir := os.Getenv("KLOCKSTAT_TEST_BINDIR"); dir != "" {
			r.path = filepath.Join(dir, name)
			if _, err := os.Stat(r.path); err != nil {
				r.err = fmt.Errorf("prebuilt binary from KLOCKSTAT_TEST_BINDIR: %w", err)
			}
			return
		}
		dir, err := os.MkdirTemp("", "klockstat-test-bin-")
		if err != nil {
			r.err = err
			return
		}
		// Readable by all: tests also run the binary as an unprivileged user.
		if err := os.Chmod(dir, 0o755); err != nil {
			r.err = err
			return
		}
		r.path = filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", r.path, pkg)
		cmd.Dir = ModuleRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			r.err = &buildError{pkg: pkg, out: string(out), err: err}
		}
	})
	if r.err != nil {
		tb.Fatalf("building %s: %v", pkg, r.err)
	}
	return r.path
}

type buildError struct {
	pkg, out string
	err      error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// Emulated reports whether the tests run in a kernel-matrix guest (KLOCKSTAT_TEST_ROOT set),
// whose two vCPUs are emulated in turn on one host thread: short critical sections seldom
// meet there, and a vCPU switched out in the middle of a timed spin finishes it late.
func Emulated() bool { return os.Getenv("KLOCKSTAT_TEST_ROOT") != "" }

// ModuleRoot is the directory holding go.mod, or KLOCKSTAT_TEST_ROOT if set.
func ModuleRoot() string {
	if dir := os.Getenv("KLOCKSTAT_TEST_ROOT"); dir != "" {
		return dir
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// RequireSpinlockWaits skips a test that needs the kernel to announce
// spinlock waits when check proved that it cannot (SpinlockWaitsSeen).
func RequireSpinlockWaits(tb testing.TB, check func() error, unseen error) {
	tb.Helper()
	if err := check(); !SpinlockWaitsSeen(tb, check, unseen) {
		tb.Skipf("skipping: the test needs spinlock waits, and %v", err)
	}
}

// SpinlockWaitsSeen reports whether the kernel announces spinlock waits,
// as check answers (collector.SpinlockWaits): false only when it proved
// that it cannot (an error matching unseen, collector.ErrSpinlockWaitsUnseen),
// which no kernel setting would change, so a test may then skip or pick
// another lock in CI too. A check that could not tell (the kernel-matrix
// guests under emulation run one CPU at a time, so the check's threads
// seldom overlap) proves nothing: the test runs as where they show, and
// its own assertions decide, so neither a skip nor a refusal hides a
// kernel that shows them.
func SpinlockWaitsSeen(tb testing.TB, check func() error, unseen error) bool {
	tb.Helper()
	err := check()
	switch {
	case err == nil:
		return true
	case errors.Is(err, unseen):
		return false
	}
	tb.Logf("whether this kernel shows spinlock waits is not known (%v): the test runs as where they show", err)
	return true
}
