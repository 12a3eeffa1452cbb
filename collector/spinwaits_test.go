package collector

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/host"
	"github.com/klockstat/klockstat/internal/testenv"
	wl "github.com/klockstat/klockstat/internal/workload"
	"github.com/klockstat/klockstat/lockspec"
)

// requireSpinlockWaits skips a test that needs spinlock waits on a kernel
// that SpinlockWaits proved shows none, and in CI only there.
func requireSpinlockWaits(t *testing.T) {
	t.Helper()
	testenv.RequireSpinlockWaits(t, SpinlockWaits, ErrSpinlockWaitsUnseen)
}

// TestSpinlockWaits runs the check on this kernel: its answer must be one of
// the three, with the evidence it claims, and known in CI.
func TestSpinlockWaits(t *testing.T) {
	testenv.RequireRoot(t)
	began := time.Now()
	err := SpinlockWaits()
	took := time.Since(began)
	var unseen *SpinlockUnseenError
	switch {
	case err == nil:
		t.Logf("spinlock waits can be seen (guest: %v), answered in %v", host.InGuest(), took)
	case errors.As(err, &unseen):
		t.Logf("answered in %v: %v", took, err)
		if !host.InGuest() {
			t.Errorf("spinlock waits unseen outside a guest: %v", err)
		}
		if unseen.Events != 0 || unseen.Overlapped < spinCheckMinOps || unseen.Overlapped > unseen.Ops[0]+unseen.Ops[1] || unseen.CPUs[0] == unseen.CPUs[1] {
			t.Errorf("unseen claimed on weak evidence: %+v", unseen)
		}
		if unseen.Elapsed < spinCheckWindow {
			t.Errorf("unseen claimed after %v, before the %v window closed", unseen.Elapsed, spinCheckWindow)
		}
	case testenv.InCI():
		t.Fatalf("whether spinlock waits can be seen is unknown: %v", err)
	default:
		t.Skipf("whether spinlock waits can be seen is unknown: %v", err)
	}
	if again := SpinlockWaits(); !errors.Is(again, err) && again != err {
		t.Errorf("second answer %v differs from the first, %v: it is cached", again, err)
	}
}

// TestSpinCounterCounts checks the check's instrument: the per-thread
// contention_begin counter that it reads 0 from when waits are unseen
// counts the mutex waits of a pipe contended by two threads, which every
// kernel with the tracepoint announces. They run until the first, for up to
// 10 s: on a machine busy with other work they seldom run at once.
func TestSpinCounterCounts(t *testing.T) {
	testenv.RequireRoot(t)
	id, err := tracepointID("lock", contentionTracepoint)
	if err != nil {
		t.Fatal(err)
	}
	var mutexes, spins []int
	defer func() {
		for _, fd := range slices.Concat(mutexes, spins) {
			unix.Close(fd)
		}
	}()
	sum := func(fds []int) uint64 {
		var n uint64
		for _, fd := range fds {
			c, err := readCount(fd)
			if err != nil {
				t.Error(err)
			}
			n += c
		}
		return n
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var openErr error
	res, err := wl.Run(ctx, wl.Options{Lock: string(wl.Pipe), Threads: 2, Duration: 10 * time.Second,
		Started: func(tids []int) {
			for _, tid := range tids {
				m, err := countBegins(id, tid, "flags & 32") // LCB_F_MUTEX
				s, serr := countBegins(id, tid, spinFilter)
				if openErr = errors.Join(err, serr); openErr != nil {
					cancel()
					return
				}
				mutexes, spins = append(mutexes, m), append(spins, s)
			}
			go func() {
				for ctx.Err() == nil && sum(mutexes) == 0 {
					time.Sleep(time.Millisecond)
				}
				cancel()
			}()
		}})
	if err = errors.Join(err, openErr); err != nil {
		t.Fatal(err)
	}
	mutexWaits, spinWaits := sum(mutexes), sum(spins)
	t.Logf("%d pipe operations in %v: %d mutex waits, %d plain spinlock waits announced", res.Ops, time.Duration(res.DurationNS), mutexWaits, spinWaits)
	if mutexWaits == 0 {
		t.Errorf("the counter saw no mutex wait of two threads writing and reading one pipe %d times", res.Ops)
	}
}

func TestUnseenTypes(t *testing.T) {
	spec := loadSpec(t, "spinlock", "rwlock:R", "mutex")
	unseen := &SpinlockUnseenError{Ops: [2]uint64{1e5, 1e5}, Overlapped: 2e5, CPUs: [2]int{0, 1}}
	want := []capture.UnseenType{{Type: "spinlock", Reason: spinUnseenReason}}
	tracepoint, _ := backendByName("tp_btf")
	function, _ := backendByName("fentry")
	for _, tc := range []struct {
		name    string
		b       Backend
		spinErr error
		want    []capture.UnseenType
	}{
		{"unseen, tracepoint backend", tracepoint, unseen, want},
		{"unseen, wrapped", tracepoint, errors.Join(errors.New("x"), unseen), want},
		{"unseen, function probes time the acquires", function, unseen, nil},
		{"seen", tracepoint, nil, nil},
		{"unknown", tracepoint, errors.New("fewer than 2 CPUs"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unseenTypes(spec, tc.b, tc.spinErr); !slices.Equal(got, tc.want) {
				t.Errorf("unseenTypes = %v, want %v", got, tc.want)
			}
		})
	}
	if !needsSpinCheck(spec) || needsSpinCheck(loadSpec(t, "rwlock:R", "rwlock:W", "mutex")) {
		t.Error("needsSpinCheck: want true with spinlock, false with only rwlocks and mutex")
	}
	if plainSpin(lockspec.Type{Flags: []lockspec.Flag{lockspec.FlagSpin, lockspec.FlagSpin | lockspec.FlagRead}}) {
		t.Error("plainSpin true for a type announced with SPIN|READ too")
	}
}
