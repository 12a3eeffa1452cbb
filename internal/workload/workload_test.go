package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// comm returns the kernel's name for thread tid of this process.
func comm(t *testing.T, tid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/comm", tid))
	if err != nil {
		t.Fatalf("reading comm of thread %d: %v", tid, err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// truncateComm mirrors the kernel's TASK_COMM_LEN (16 bytes with the NUL).
func truncateComm(name string) string {
	if len(name) > 15 {
		return name[:15]
	}
	return name
}

func TestRun(t *testing.T) {
	for i, lock := range Names() {
		for _, prefix := range []string{"", "<svg/onload=x>"} {
			t.Run(lock+"/prefix="+prefix, func(t *testing.T) {
				dir := t.TempDir()
				o := Options{
					Lock:       lock,
					Threads:    2 + i%3,
					Duration:   300 * time.Millisecond,
					NamePrefix: prefix,
					Dir:        dir,
				}
				wantPrefix := prefix
				if wantPrefix == "" {
					wantPrefix = "ct-" + lock
				}
				var startedTIDs []int
				o.Started = func(tids []int) {
					startedTIDs = tids
					// The workers are alive and named until Run returns.
					for w, tid := range tids {
						name := fmt.Sprintf("%s-%d", wantPrefix, w)
						if (Lock(lock) == Hog || Lock(lock) == Preempt) && w == 0 {
							name = wantPrefix + "-" + HogThread // the hog is named apart
						}
						if Lock(lock) == Preempt && w == 1 {
							name = wantPrefix + "-" + BusyThread
						}
						if Lock(lock) == Relay && w < 2 {
							name = fmt.Sprintf("%s-%s%d", wantPrefix, RelayThread, w)
						}
						if Lock(lock) == Chain && w < 2 {
							name = wantPrefix + "-" + []string{ChainHolder, ChainLink}[w]
						}
						if got, want := comm(t, tid), truncateComm(name); got != want {
							t.Errorf("worker %d: comm = %q, want %q", w, got, want)
						}
					}
				}

				res, err := Run(context.Background(), o)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if res.Lock != lock || res.Threads != o.Threads {
					t.Errorf("Result lock=%q threads=%d, want %q and %d", res.Lock, res.Threads, lock, o.Threads)
				}
				if res.Ops == 0 {
					t.Error("no operations done")
				}
				if res.DurationNS <= 0 {
					t.Errorf("DurationNS = %d, want > 0", res.DurationNS)
				}
				wantRate := float64(res.Ops) / (float64(res.DurationNS) / 1e9)
				if math.Abs(res.OpsPerSec-wantRate) > 1e-9*wantRate {
					t.Errorf("OpsPerSec = %v, want ops/duration = %v", res.OpsPerSec, wantRate)
				}
				if len(res.TIDs) != o.Threads {
					t.Fatalf("got %d TIDs %v, want %d", len(res.TIDs), res.TIDs, o.Threads)
				}
				seen := make(map[int]bool)
				for _, tid := range res.TIDs {
					if tid <= 0 || seen[tid] {
						t.Errorf("TIDs %v: %d is not a distinct thread ID", res.TIDs, tid)
					}
					seen[tid] = true
				}
				if !slices.Equal(startedTIDs, res.TIDs) {
					t.Errorf("Started got TIDs %v, Result has %v", startedTIDs, res.TIDs)
				}
				entries, err := os.ReadDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					t.Errorf("left behind %s in Dir", e.Name())
				}
			})
		}
	}
}

func TestRunOpsLimit(t *testing.T) {
	for _, lock := range Names() {
		t.Run(lock, func(t *testing.T) {
			const threads, perThread = 3, 50
			res, err := Run(context.Background(), Options{Lock: lock, Threads: threads, Ops: perThread, Dir: t.TempDir()})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Ops != threads*perThread {
				t.Errorf("Ops = %d, want %d threads x %d", res.Ops, threads, perThread)
			}
		})
	}
}

func TestRunStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	res, err := Run(ctx, Options{Lock: string(Pipe), Threads: 2, Started: func([]int) { cancel() }})
	if err != nil {
		t.Fatalf("Run stopped by its context: %v, want no error", err)
	}
	if len(res.TIDs) != 2 {
		t.Errorf("got %d TIDs, want 2", len(res.TIDs))
	}
}

func TestRunRejects(t *testing.T) {
	valid := Options{Lock: string(Mmap), Threads: 2, Duration: time.Second}
	tests := []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"zero threads", func(o *Options) { o.Threads = 0 }, "threads must be at least 1"},
		{"negative threads", func(o *Options) { o.Threads = -3 }, "threads must be at least 1"},
		{"unknown lock", func(o *Options) { o.Lock = "futex" }, `unknown lock "futex"`},
		{"empty lock", func(o *Options) { o.Lock = "" }, `unknown lock ""`},
		{"negative duration", func(o *Options) { o.Duration = -time.Second }, "duration must not be negative"},
		{"no stop condition", func(o *Options) { o.Duration = 0 }, "no stop condition"},
		{"NUL in name", func(o *Options) { o.NamePrefix = "a\x00b" }, "NUL"},
		{"missing dir", func(o *Options) { o.Lock, o.Dir = string(Inode), "/nonexistent/contend" }, "creating the shared file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid
			tt.change(&o)
			_, err := Run(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestUnknownLockIsSentinel(t *testing.T) {
	err := Options{Lock: "nope", Threads: 1}.Validate()
	if !errors.Is(err, ErrUnknownLock) {
		t.Errorf("Validate error = %v, want one wrapping ErrUnknownLock", err)
	}
}
