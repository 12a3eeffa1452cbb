// Command klockstat finds where a Linux kernel waits on contended locks: it
// captures lock:contention_begin/end with eBPF for a fixed window or while a
// command runs, and summarises the waits by lock type, caller and stack.
package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/cgroups"
	"github.com/klockstat/klockstat/collector"
	"github.com/klockstat/klockstat/internal/inputfile"
	"github.com/klockstat/klockstat/lockspec"
	"github.com/klockstat/klockstat/report"
)

// version is set at release time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// usageError is a mistake on the command line: exit status 2, with a hint.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func main() {
	status, err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(os.Stderr, "klockstat: %s\n", line)
		}
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(os.Stderr, "Run 'klockstat --help' for usage.")
			status = 2
		} else if status == 0 {
			status = 1
		}
	}
	os.Exit(status)
}

// run executes one klockstat invocation and returns the process exit status.
func run(args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 {
		switch args[0] {
		case "version":
			fmt.Fprintln(stdout, versionString())
			return 0, nil
		case "report":
			return runReport(args[1:], stdout, stderr)
		case "diff":
			return runDiff(args[1:], stdout, stderr)
		}
	}
	opts, err := parseCaptureFlags(args, stderr)
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0, nil
		}
		return 0, err
	}
	return runCapture(opts, stdout, stderr)
}

func versionString() string {
	ebpfVersion := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/cilium/ebpf" {
				ebpfVersion = dep.Version
			}
		}
	}
	return fmt.Sprintf("klockstat %s (%s, cilium/ebpf %s, %s/%s)", version, runtime.Version(), ebpfVersion, runtime.GOOS, runtime.GOARCH)
}

// captureOptions is everything the capture command line says.
type captureOptions struct {
	duration    time.Duration
	durationSet bool
	jsonPath    string
	htmlPath    string
	exports     exportPaths
	viewFlags   viewFlags
	summary     report.SummaryOptions // from viewFlags
	rawAddrs    bool
	top         int
	quiet       bool
	cfg         collector.Config
	command     []string
	commandLine []string
	inputs      []input       // files read, which no output may overwrite
	dests       []destination // where outputs(c) go, from planOutputs
}

func parseCaptureFlags(args []string, stderr io.Writer) (*captureOptions, error) {
	fs := pflag.NewFlagSet("klockstat", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: klockstat [flags] [-- COMMAND [ARGS...]]
       klockstat report INPUT [-o OUT.html]
       klockstat diff BEFORE AFTER [-o diff.html]
       klockstat version

Captures kernel lock contention (lock:contention_begin/end) with eBPF for
--duration, or while COMMAND runs, writes an HTML report and prints the top
waits by caller. Needs root.

Flags:
%s`, fs.FlagUsages())
	}
	o := &captureOptions{commandLine: append([]string{"klockstat"}, args...)}
	var (
		locksPath string
		types     []string
		pids      []string
		cgroupArg []string
		mapSize   uint32
	)
	fs.DurationVarP(&o.duration, "duration", "d", 10*time.Second, "capture window; with COMMAND, a limit on top of the command's run")
	fs.StringVarP(&o.htmlPath, "output", "o", "klockstat-report.html", "write the HTML report to `FILE` (- for stdout, \"\" for none)")
	fs.StringVar(&o.jsonPath, "json", "", "write the capture as JSON to `FILE` (- for stdout)")
	fs.BoolVar(&o.rawAddrs, "raw-addresses", false, "show real kernel addresses in the HTML report and the exports instead of hashed ids")
	fs.IntVarP(&o.top, "top", "n", 20, "rows in the terminal summary")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress line and no terminal summary")
	o.exports.addFlags(fs)
	o.viewFlags.addFlags(fs)
	fs.StringVarP(&locksPath, "locks", "L", "", "lock types and functions from `FILE` instead of the embedded locks.json")
	fs.StringSliceVarP(&types, "types", "t", nil, "capture only these lock `TYPES` (comma list, e.g. mutex,rwsem:W)")
	fs.StringSliceVarP(&pids, "pid", "p", nil, "capture only these processes (`PID`, repeatable or comma list)")
	fs.StringVar(&o.cfg.Comm, "comm", "", "capture only processes whose main thread is named `NAME`")
	fs.StringSliceVarP(&cgroupArg, "cgroup", "G", nil, "capture only tasks in these cgroups or their descendants (`PATH` as /proc/PID/cgroup shows it after 0::, or its directory; repeatable or comma list)")
	fs.IntVar(&o.cfg.StackDepth, "stack-depth", 16, fmt.Sprintf("kernel stack frames per wait, 0 for none (max %d)", collector.MaxStackDepth))
	fs.Uint32Var(&mapSize, "map-size", 65536, "entries of the BPF aggregation, stack and per-thread maps")
	fs.BoolVar(&o.cfg.Owners, "owners", false, "charge each wait to the lock's owner when it began, with the owner's state and stack (see README)")
	fs.StringVar(&o.cfg.Probe, "probe", "auto", "probe backend: "+strings.Join(collector.BackendNames(), ", ")+
		" (auto: the contention tracepoints where the kernel has them, else the lock functions with fentry, else kprobes)")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, err
		}
		if strings.Contains(err.Error(), "missing unit in duration") {
			err = fmt.Errorf("%w (durations need a unit: 10s, 500ms, 2m)", err)
		}
		return nil, usageError{err}
	}
	o.durationSet = fs.Changed("duration")
	if at := fs.ArgsLenAtDash(); at >= 0 {
		o.command = fs.Args()[at:]
		if at > 0 {
			return nil, usagef("unexpected argument %q before -- (a command goes after --)", fs.Args()[0])
		}
		if len(o.command) == 0 {
			return nil, usagef("no command after --")
		}
	} else if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q (a command goes after --, e.g. klockstat -- make -j8)", fs.Arg(0))
	}
	if o.duration <= 0 {
		return nil, usagef("--duration %v: must be positive", o.duration)
	}
	if o.top < 1 {
		return nil, usagef("--top %d: must be at least 1", o.top)
	}
	var err error
	if o.summary, err = o.viewFlags.summaryOptions(); err != nil {
		return nil, err
	}
	o.cfg.MapSize = mapSize

	if fs.Changed("pid") && len(pids) == 0 {
		return nil, usagef("empty --pid list (give process ids, e.g. -p 1234,5678, or leave out -p for all)")
	}
	for _, p := range pids {
		pid, err := strconv.ParseUint(strings.TrimSpace(p), 10, 32)
		if err != nil || pid == 0 {
			return nil, usagef("--pid %q: not a process id (want a positive number)", p)
		}
		if errors.Is(unix.Kill(int(pid), 0), unix.ESRCH) {
			fmt.Fprintf(stderr, "klockstat: warning: --pid %d: no such process; its waits are captured only if a process of that id runs during the capture\n", pid)
		}
		o.cfg.PIDs = append(o.cfg.PIDs, uint32(pid))
	}

	if fs.Changed("cgroup") {
		if o.cfg.Cgroups, err = cgroupDirs(cgroupArg); err != nil {
			return nil, err
		}
	}

	source, data := lockspec.EmbeddedSource, lockspec.Embedded()
	if locksPath != "" {
		if data, err = readLocks(locksPath); err != nil {
			return nil, usageError{fmt.Errorf("reading --locks: %w", err)}
		}
		source = inputfile.Name(locksPath)
		o.inputs = append(o.inputs, input{"--locks", locksPath})
	}
	spec, err := lockspec.Parse(source, data)
	if err != nil {
		return nil, usageError{err}
	}
	if o.cfg.Spec, err = spec.Select(types); err != nil {
		return nil, usageError{err}
	}
	if err := o.cfg.Validate(); err != nil {
		return nil, usageError{err}
	}
	if o.dests, err = planOutputs(o.outputs(nil), o.inputs); err != nil {
		return nil, err
	}
	return o, nil
}

// cgroupDirs resolves the --cgroup values to the directories of their cgroups.
func cgroupDirs(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, usagef("empty --cgroup list (give cgroup paths, e.g. -G /system.slice/cron.service, or leave out -G for all)")
	}
	h, err := cgroups.Find()
	if err != nil {
		return nil, usagef("--cgroup: %v", err)
	}
	var dirs []string
	for _, name := range names {
		dir, err := h.Dir(name)
		if err != nil {
			return nil, usagef("--cgroup: %v", err)
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

func runCapture(o *captureOptions, stdout, stderr io.Writer) (int, error) {
	signals, stopSignals := notifyStopSignals()
	defer stopSignals()
	coll, err := collector.Start(o.cfg)
	if err != nil {
		return 0, err
	}
	defer coll.Close()

	var (
		work              *workload
		cmdDone           <-chan error
		exitCode          *int
		cmdStart, cmdExit time.Time
	)
	if len(o.command) > 0 {
		cmdStart = time.Now()
		if work, err = startWorkload(o.command); err != nil {
			return 0, err
		}
		cmdDone = work.done
	}

	var deadline <-chan time.Time
	if work == nil || o.durationSet {
		timer := time.NewTimer(o.duration)
		defer timer.Stop()
		deadline = timer.C
	}
	progress := newProgress(stderr, o, coll)
	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()

	var interrupted os.Signal
wait:
	for {
		select {
		case <-deadline:
			break wait
		case err := <-cmdDone:
			cmdExit = time.Now()
			cmdDone = nil
			exitCode = commandStatus(err)
			break wait
		case interrupted = <-signals:
			if work != nil && cmdDone != nil {
				work.signal(interrupted)
			}
			break wait
		case <-ticker.C:
			progress.update()
		}
	}
	progress.clear()

	c, err := coll.Stop()
	coll.Close() // the probes go now, not after the command
	if err != nil {
		return 0, err
	}
	// The outputs are written when the window ends, not when a command that outlives it exits:
	// its exit status is then missing from them.
	fillMeta(&c.Meta, o, exitCode)
	if c.Timeline != nil && work != nil {
		c.Timeline.CommandStartNS = sinceStart(c.Meta.Start, cmdStart)
		c.Timeline.CommandEndNS = sinceStart(c.Meta.Start, cmdExit)
	}
	writeErr := writeOutputs(c, o, stdout, stderr)

	status := 0
	switch {
	case cmdDone != nil:
		status = work.wait(signals, stderr)
	case exitCode != nil:
		status = *exitCode
	case interrupted != nil:
		status = 128 + int(interrupted.(syscall.Signal))
	}
	return status, writeErr
}

// sinceStart is how long after start at was, or nil for a time that never came (zero).
func sinceStart(start, at time.Time) *int64 {
	if at.IsZero() {
		return nil
	}
	ns := at.Sub(start).Nanoseconds()
	return &ns
}

// commandStatus turns cmd.Wait's result into a shell-style exit status.
func commandStatus(err error) *int {
	status := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = 128 + int(ws.Signal())
		} else {
			status = ee.ExitCode()
		}
	} else if err != nil {
		status = 1
	}
	return &status
}

func fillMeta(m *capture.Meta, o *captureOptions, exitCode *int) {
	m.Tool = "klockstat"
	m.ToolVersion = version
	m.CommandLine = o.commandLine
	m.Workload = o.command
	m.WorkloadExit = exitCode
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:])
		m.KernelBuild = unix.ByteSliceToString(u.Version[:])
		m.Arch = unix.ByteSliceToString(u.Machine[:])
	}
	m.Hostname, _ = os.Hostname()
	m.CPUs = runtime.NumCPU()
	m.CPUModel = cpuModel()
}

// cpuModel reads the first "model name" of /proc/cpuinfo; "" when absent
// (arm64 kernels print none).
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// maxLocksSize bounds a --locks file: the embedded catalogue is about 6 KiB.
const maxLocksSize = 16 << 20

// readLocks reads a lock catalogue, refusing what is not a regular file or stdin and what is over
// maxLocksSize.
func readLocks(path string) ([]byte, error) {
	f, err := inputfile.Open(path, os.Stdin, maxLocksSize)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return inputfile.ReadAll(f, maxLocksSize, 0)
}

// outputs are the files the options write, writing c; nil c is enough to plan them.
func (o *captureOptions) outputs(c *capture.Capture) []output {
	outs := []output{{flag: "--json", path: o.jsonPath, secret: true, write: func(w io.Writer) error { return c.Write(w) }}}
	selected := c
	if c != nil {
		selected = c.Select(o.summary.Filter)
	}
	// One key for the report and the exports, so that they name a lock by the same id.
	key := make([]byte, 32)
	rand.Read(key) // never fails: crypto/rand.Read crashes the program rather than return an error
	outs = append(outs, o.exports.outputs(selected, o.rawAddrs, key)...)
	return append(outs, output{flag: "--output", path: o.htmlPath, secret: o.rawAddrs, write: func(w io.Writer) error {
		return report.WriteHTML(w, c, report.HTMLOptions{Top: o.top, RawAddresses: o.rawAddrs, AddressKey: key})
	}})
}

// writeOutputs writes every output and the summary, and reports every failure: one that cannot be
// written does not keep the others from being written.
func writeOutputs(c *capture.Capture, o *captureOptions, stdout io.Writer, stderr io.Writer) error {
	outs := o.outputs(c)
	err := writeAll(outs, o.dests, stdout)
	if o.quiet {
		return err
	}
	// The summary makes way on stdout for a file written there.
	summary := stdout
	if slices.ContainsFunc(o.dests, func(d destination) bool { return d.stdout }) {
		summary = stderr
	}
	htmlFile := false
	for i, out := range outs {
		htmlFile = htmlFile || out.flag == "--output" && out.path != "" && !o.dests[i].stdout
	}
	so := o.summary
	so.Top = o.top
	if serr := report.WriteSummary(summary, c, so); serr != nil {
		return errors.Join(err, fmt.Errorf("writing the summary: %w", serr))
	}
	if htmlFile {
		fmt.Fprintf(summary, "report: %s\n", o.htmlPath)
	}
	return err
}

// runDiff compares two captures: terminal summary, HTML page, and with
// --fail-over an exit status for CI.
func runDiff(args []string, stdout, stderr io.Writer) (int, error) {
	fs := pflag.NewFlagSet("klockstat diff", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	var (
		htmlPath, by string
		top          int
		raw, abs     bool
		quiet        bool
		failOver     float64
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: klockstat diff BEFORE AFTER [flags]

Compares two captures (capture JSON files or klockstat HTML reports): rows
are matched by lock type, caller function and lock name, threads merged,
totals per second of capture; lock owners (--owners in both) by lock type,
lock name, thread name and stack functions.

Flags:
%s`, fs.FlagUsages())
	}
	fs.StringVarP(&htmlPath, "output", "o", "klockstat-diff.html", "write the HTML comparison to `FILE` (- for stdout, \"\" for none)")
	fs.IntVarP(&top, "top", "n", 20, "rows in the terminal summary")
	fs.StringVar(&by, "by", "caller", "match rows by `caller`, or by thread name (thread) or cgroup path (cgroup) too")
	fs.BoolVar(&abs, "absolute", false, "compare raw totals instead of per-second rates")
	fs.Float64Var(&failOver, "fail-over", -1, "exit with status 1 when total wait grows by more than `PCT` percent")
	fs.BoolVar(&raw, "raw-addresses", false, "show real kernel addresses instead of hashed ids")
	fs.BoolVarP(&quiet, "quiet", "q", false, "no terminal summary (--fail-over still explains a failure on stderr)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0, nil
		}
		return 0, usageError{err}
	}
	switch {
	case fs.NArg() != 2:
		return 0, usagef("diff takes BEFORE and AFTER (capture JSON files or klockstat HTML reports), got %d arguments", fs.NArg())
	case by != "caller" && by != "thread" && by != "cgroup":
		return 0, usagef("--by %q: want caller, thread or cgroup", by)
	case top < 1:
		return 0, usagef("--top %d: must be at least 1", top)
	case fs.Changed("fail-over") && (failOver < 0 || math.IsNaN(failOver) || math.IsInf(failOver, 0)):
		return 0, usagef("--fail-over %v: want a percentage of 0 or more", failOver)
	}
	page := output{flag: "--output", path: htmlPath, secret: raw}
	dests, err := planOutputs([]output{page}, []input{{"BEFORE", fs.Arg(0)}, {"AFTER", fs.Arg(1)}})
	if err != nil {
		return 0, err
	}
	before, err := report.ReadInputFile(fs.Arg(0), os.Stdin)
	if err != nil {
		return 0, err
	}
	after, err := report.ReadInputFile(fs.Arg(1), os.Stdin)
	if err != nil {
		return 0, err
	}
	d := capture.Compare(before, after, capture.DiffOptions{ByThread: by == "thread", ByCgroup: by == "cgroup", Absolute: abs, Top: top})

	page.write = func(w io.Writer) error {
		return report.WriteDiffHTML(w, d, report.HTMLOptions{Top: top, RawAddresses: raw})
	}
	writeErr := writeAll([]output{page}, dests, stdout)
	if !quiet {
		summary := stdout
		if dests[0].stdout {
			summary = stderr
		}
		if err := report.WriteDiffSummary(summary, d, top); err != nil {
			writeErr = errors.Join(writeErr, fmt.Errorf("writing the summary: %w", err))
		}
		if htmlPath != "" && !dests[0].stdout {
			fmt.Fprintf(summary, "diff: %s\n", htmlPath)
		}
	}
	if writeErr != nil {
		return 0, writeErr
	}
	if fs.Changed("fail-over") {
		if ok, grew := d.FailOver(failOver); !ok {
			_, _, pct := d.TotalWaitChange()
			fmt.Fprintf(stderr, "klockstat: total wait grew %+.1f%%, more than --fail-over %v%%; rows that grew most:\n", pct, failOver)
			if err := report.WriteDiffRows(stderr, d, grew); err != nil {
				return 0, err
			}
			return 1, nil
		}
	}
	return 0, nil
}

// runReport re-renders a capture JSON or an earlier HTML report.
func runReport(args []string, stdout, stderr io.Writer) (int, error) {
	fs := pflag.NewFlagSet("klockstat report", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	o := &captureOptions{}
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: klockstat report INPUT [flags]

Re-renders the HTML report and the summary from a capture JSON (--json) or
from an earlier klockstat HTML report, which carries its capture.

Flags:
%s`, fs.FlagUsages())
	}
	fs.StringVarP(&o.htmlPath, "output", "o", "klockstat-report.html", "write the HTML report to `FILE` (- for stdout, \"\" for none)")
	fs.StringVar(&o.jsonPath, "json", "", "also write the capture as JSON to `FILE` (- for stdout)")
	fs.IntVarP(&o.top, "top", "n", 20, "rows in the summary and on the report's first page")
	fs.BoolVar(&o.rawAddrs, "raw-addresses", false, "show real kernel addresses instead of hashed ids")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no terminal summary")
	o.exports.addFlags(fs)
	o.viewFlags.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0, nil
		}
		return 0, usageError{err}
	}
	if fs.NArg() != 1 {
		return 0, usagef("report takes one INPUT (a capture JSON or a klockstat HTML report), got %d", fs.NArg())
	}
	if o.top < 1 {
		return 0, usagef("--top %d: must be at least 1", o.top)
	}
	var err error
	if o.summary, err = o.viewFlags.summaryOptions(); err != nil {
		return 0, err
	}
	inputPath := fs.Arg(0)
	if o.dests, err = planOutputs(o.outputs(nil), []input{{"INPUT", inputPath}}); err != nil {
		return 0, err
	}
	c, err := report.ReadInputFile(inputPath, os.Stdin)
	if err != nil {
		return 0, err
	}
	if o.rawAddrs && c.Meta.AddressesHashed {
		fmt.Fprintf(stderr, "klockstat: warning: %s holds hashed addresses only; --raw-addresses cannot restore them (re-render from the capture JSON)\n", inputPath)
	}
	return 0, writeOutputs(c, o, stdout, stderr)
}

// progress draws one self-overwriting status line on a terminal.
type progress struct {
	w     io.Writer
	o     *captureOptions
	coll  *collector.Collector
	start time.Time
	shown bool
}

func newProgress(w io.Writer, o *captureOptions, coll *collector.Collector) *progress {
	f, ok := w.(*os.File)
	if o.quiet || !ok || !isTerminal(f) {
		return nil
	}
	return &progress{w: w, o: o, coll: coll, start: time.Now()}
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func (p *progress) update() {
	if p == nil {
		return
	}
	elapsed := time.Since(p.start).Round(100 * time.Millisecond)
	window := fmt.Sprintf("%v left", max(p.o.duration-elapsed, 0).Round(time.Second))
	if len(p.o.command) > 0 && !p.o.durationSet {
		window = "while " + p.o.command[0] + " runs"
	}
	fmt.Fprintf(p.w, "\r\x1b[Kklockstat: %v elapsed, %s, %d contention events (%s probe); Ctrl-C stops and reports",
		elapsed, window, p.coll.Events(), p.coll.Backend())
	p.shown = true
}

func (p *progress) clear() {
	if p != nil && p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
