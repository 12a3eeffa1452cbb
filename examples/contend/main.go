// Command contend creates real Linux kernel lock contention for klockstat's tests, demos and benchmarks.
//
//	contend [-lock mmap,inode,pipe,spin,fault,threads,hog,relay,chain,fown,preempt] [-threads N] [-duration D] [-ops N] [-name PREFIX] [-dir DIR] [-json]
//
// Each named lock gets its own workers, all running at once. Once every
// worker has started, contend prints "ready pid=<pid>" to stderr; at the end
// it prints one line per lock and a total to stdout. SIGINT and SIGTERM stop
// the workers early and still print the results.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/klockstat/klockstat/internal/workload"
)

// lockList collects -lock values, given repeatedly or comma-separated.
type lockList []string

func (l *lockList) String() string { return strings.Join(*l, ",") }

func (l *lockList) Set(v string) error {
	for name := range strings.SplitSeq(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			*l = append(*l, name)
		}
	}
	return nil
}

// report is the -json output.
type report struct {
	Locks []workload.Result `json:"locks"`
	Total workload.Result   `json:"total"`
	PID   int               `json:"pid"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("contend", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var locks lockList
	fs.Var(&locks, "lock", "kernel lock to contend, repeatable or comma-separated: "+strings.Join(workload.Names(), ", ")+" (default mmap)")
	threads := fs.Int("threads", max(4, 2*runtime.NumCPU()), "worker threads per lock")
	duration := fs.Duration("duration", 5*time.Second, "how long to run; 0 = until -ops or a signal")
	ops := fs.Uint64("ops", 0, "stop each worker after this many operations; 0 = unlimited")
	name := fs.String("name", "", "thread name prefix; workers are named PREFIX-<i> (default ct-<lock>)")
	dir := fs.String("dir", "", "directory for the inode workload's file (default $TMPDIR or /tmp)")
	writeSize := fs.Int("write-size", 0, "bytes of each write of the inode workload and each message of the pipe workload, copied under the lock: the hold time (default a page, 64 bytes)")
	asJSON := fs.Bool("json", false, "print the results as one JSON object")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintln(stdout, "usage: contend [flags]")
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintf(stderr, "contend: %v; run contend -h for the flags\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "contend: unexpected argument %q: contend takes only flags\n", fs.Arg(0))
		return 2
	}
	if len(locks) == 0 {
		locks = lockList{string(workload.Mmap)}
	}

	opts := make([]workload.Options, len(locks))
	seen := make(map[string]bool)
	for i, lock := range locks {
		if seen[lock] {
			fmt.Fprintf(stderr, "contend: -lock %s given twice: name each lock once\n", lock)
			return 2
		}
		seen[lock] = true
		opts[i] = workload.Options{Lock: lock, Threads: *threads, Duration: *duration, Ops: *ops, NamePrefix: *name, Dir: *dir, WriteSize: *writeSize}
		if err := opts[i].Validate(); err != nil {
			fmt.Fprintf(stderr, "contend: %v\n", err)
			return 2
		}
	}

	results, err := runAll(ctx, opts, func() { fmt.Fprintf(stderr, "ready pid=%d\n", os.Getpid()) })
	if err != nil {
		fmt.Fprintf(stderr, "contend: %v\n", err)
	}
	if len(results) > 0 {
		if werr := writeResults(stdout, results, *asJSON); werr != nil {
			fmt.Fprintf(stderr, "contend: writing results: %v\n", werr)
			return 1
		}
	}
	if err != nil {
		return 1
	}
	return 0
}

// runAll runs one workload per option set at once and calls ready when all of
// their workers have started. The first error cancels the other workloads.
func runAll(ctx context.Context, opts []workload.Options, ready func()) ([]workload.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var started atomic.Int32
	results := make([]workload.Result, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		o.Started = func([]int) {
			if started.Add(1) == int32(len(opts)) {
				ready()
			}
		}
		wg.Go(func() {
			results[i], errs[i] = workload.Run(ctx, o)
			if errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	// A workload that failed to set up has no result to report.
	ran := results[:0]
	for _, r := range results {
		if r.Lock != "" {
			ran = append(ran, r)
		}
	}
	return ran, errors.Join(errs...)
}

// total sums results as if they were one workload that ran as long as the longest.
func total(results []workload.Result) workload.Result {
	t := workload.Result{Lock: "total", TIDs: []int{}}
	for _, r := range results {
		t.Threads += r.Threads
		t.Ops += r.Ops
		t.DurationNS = max(t.DurationNS, r.DurationNS)
		t.TIDs = append(t.TIDs, r.TIDs...)
	}
	if t.DurationNS > 0 {
		t.OpsPerSec = float64(t.Ops) / time.Duration(t.DurationNS).Seconds()
	}
	return t
}

func writeResults(w io.Writer, results []workload.Result, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(report{Locks: results, Total: total(results), PID: os.Getpid()})
	}
	for _, r := range append(results, total(results)) {
		if _, err := fmt.Fprintf(w, "lock=%s threads=%d ops=%d duration=%.2fs ops_per_sec=%.1f\n",
			r.Lock, r.Threads, r.Ops, time.Duration(r.DurationNS).Seconds(), r.OpsPerSec); err != nil {
			return err
		}
	}
	return nil
}
