package collector

import (
	"strings"
	"testing"

	"github.com/klockstat/klockstat/internal/testenv"
	"github.com/klockstat/klockstat/kallsyms"
)

// preemptRT reports whether the kernel is a PREEMPT_RT one, whose
// spinlock_t is an rtmutex (rt_spin_lock).
func preemptRT(t *testing.T) bool {
	t.Helper()
	ksyms, err := kallsyms.Load()
	if err != nil {
		t.Fatal(err)
	}
	return ksyms.TextNames()["rt_spin_lock"]
}

// TestPreemptRTTypes captures, on a PREEMPT_RT kernel, the locks that
// become rtmutexes there: a spinlock_t (the eventfd's wait-queue lock) is
// an rtmutex, an rwlock_t (a file's f_owner lock) an rwlock-rt, and
// mmap_lock stays an rw_semaphore (rwsem), although it announces its waits
// with the contention flags of an rwlock-rt, and those for its inner
// rtmutex with those of an rtmutex: its acquire function on the stack
// tells them apart.
func TestPreemptRTTypes(t *testing.T) {
	testenv.RequireRoot(t)
	if !preemptRT(t) {
		t.Skip("not a PREEMPT_RT kernel: no rt_spin_lock in /proc/kallsyms")
	}
	w := startWorkload(t, "-lock", "mmap,spin,fown", "-threads", "4")
	c := w.capture(t, "auto")
	w.run(t)
	w.stopWhen(t, c, 1000)
	cp, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Validate(); err != nil {
		t.Fatalf("captured data does not validate: %v", err)
	}
	checkHistogramsMatchRecords(t, cp)

	// The acquire functions of each type: none of another type's may be on
	// the stack of a wait (its own may not be: down_read and down_write
	// tail-call their slow paths).
	acquire := map[string][]string{
		"rwsem:R":     {"down_read", "down_read_killable", "down_read_interruptible"},
		"rwsem:W":     {"down_write", "down_write_killable"},
		"rwlock-rt:R": {"rt_read_lock"},
		"rwlock-rt:W": {"rt_write_lock"},
		"rtmutex":     {"rt_spin_lock", "rt_mutex_lock", "rt_mutex_lock_interruptible", "rt_mutex_lock_killable", "mutex_lock", "mutex_lock_interruptible", "mutex_lock_killable", "mutex_lock_io"},
	}
	waits := map[string]uint64{} // by type and what contend did
	for _, r := range cp.Records {
		what := "other"
		switch {
		case hasFrame([]string{r.Caller}, mmapCallers...):
			what = "mmap"
		case hasFrame(r.Stack, "eventfd_write", "eventfd_read", "ksys_write", "ksys_read"):
			what = "eventfd"
		case hasFrame(r.Stack, "f_getown", "__f_setown", "f_setown", "f_modown", "do_fcntl"):
			what = "fown"
		}
		waits[r.Type+" "+what] += r.Count
		for typ, fns := range acquire {
			if _, known := acquire[r.Type]; known && typ != r.Type && hasFrame(r.Stack, fns...) {
				t.Errorf("%s wait with an acquire function of %s on the stack: %v", r.Type, typ, r.Stack)
			}
		}
	}
	t.Logf("%s on %s: waits by type and source %v; events %+v", cp.Meta.Probe, kernelRelease(), waits, cp.Meta.Events)
	for _, want := range []string{"rtmutex eventfd", "rwlock-rt:R fown", "rwlock-rt:W fown"} {
		if waits[want] == 0 {
			t.Errorf("no %s waits", want)
		}
	}
	if waits["rwsem:R mmap"]+waits["rwsem:W mmap"] == 0 {
		t.Error("no rwsem waits of mmap_lock")
	}
	// Neither the rwbase_rt waits of mmap_lock nor those for its inner
	// rtmutex are another type's.
	for key, n := range waits {
		if !strings.HasPrefix(key, "rwsem:") && strings.HasSuffix(key, " mmap") {
			t.Errorf("%d waits on mmap_lock typed %s", n, strings.Fields(key)[0])
		}
	}
}
