package cli

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/cgroups"
	"github.com/klockstat/klockstat/collector"
	"github.com/klockstat/klockstat/internal/host"
	"github.com/klockstat/klockstat/internal/inputfile"
	"github.com/klockstat/klockstat/kallsyms"
	"github.com/klockstat/klockstat/lockspec"
	"github.com/klockstat/klockstat/report"
	"github.com/klockstat/klockstat/srcline"
)

// captureOptions is everything the capture command line says.
type captureOptions struct {
	duration    time.Duration
	durationSet bool
	captureOutputs
	cfg         collector.Config
	command     []string
	commandLine []string
	inputs      []input // files read, which no output may overwrite
}

const captureUsage = `Usage: klockstat [flags] [-- COMMAND [ARGS...]]
       klockstat report INPUT [-o OUT.html]
       klockstat diff BEFORE AFTER [-o diff.html]
       klockstat scale [--levels 1,2,4,8] [--metric REGEX] [flags] -- COMMAND {N}
       klockstat whatif [--lock LOCK] [--from FILE] [--metric REGEX] [flags] -- COMMAND
       klockstat version

Captures kernel lock contention (lock:contention_begin/end) with eBPF for
--duration, or while COMMAND runs, writes an HTML report and prints the top
waits by caller. Needs root.

Flags:
%s`

func (inv invocation) parseCaptureFlags(args []string) (*captureOptions, error) {
	fs := newFlagSet("klockstat", captureUsage, inv.stderr)
	scope := addScopeFlag(fs)
	o, err := inv.parseCaptureFlagsIn(fs, args)
	if err != nil {
		return nil, err
	}
	if err := o.setScope(*scope, fs.Changed("scope")); err != nil {
		return nil, err
	}
	return o, nil
}

// addScopeFlag adds --scope, the capture's and the sweep's.
func addScopeFlag(fs *pflag.FlagSet) *string {
	return fs.String("scope", capture.ScopeSystem, "with COMMAND, whose waits to capture: `command`, the command's process tree's only, or system, every process's with the command's told apart (see docs/scope.md)")
}

// setScope sets the collector's scope to the --scope value when a command runs; given is whether
// --scope was on the command line.
func (o *captureOptions) setScope(scope string, given bool) error {
	switch {
	case len(o.command) == 0 && given:
		return usagef("--scope %s needs a command after -- (a scope is a workload's: klockstat --scope %[1]s -- COMMAND)", scope)
	case len(o.command) == 0:
		return nil
	case scope != capture.ScopeCommand && scope != capture.ScopeSystem:
		return usagef("--scope %q: want %s or %s", scope, capture.ScopeCommand, capture.ScopeSystem)
	}
	o.cfg.Scope = scope
	return nil
}

// parseCaptureFlagsIn parses the capture flags in fs, which may hold a subcommand's own flags.
func (inv invocation) parseCaptureFlagsIn(fs *pflag.FlagSet, args []string) (*captureOptions, error) {
	o := &captureOptions{commandLine: append([]string{"klockstat"}, args...)}
	o.sources.capturing = true
	var (
		locksPath string
		pids      []string
		mapSize   uint32
		ignored   bool
	)
	fs.DurationVarP(&o.duration, "duration", "d", 10*time.Second, "capture window; with COMMAND, a limit on top of the command's run")
	o.captureOutputs.addFlags(fs, "no progress line, and the summary's rows alone, as perf's -q")
	o.views.addCgroupFilter(fs, "capture only tasks in these cgroups or their descendants (`PATH` as /proc/PID/cgroup shows it after 0::, or its directory; repeatable or comma list)")
	fs.StringSliceVarP(&pids, "pid", "p", nil, "capture only these processes (`PID`, repeatable or comma list)")
	fs.StringVar(&o.cfg.Comm, "comm", "", "capture only processes whose main thread is named `NAME`")
	fs.IntVar(&o.cfg.StackDepth, "max-stack", 16, fmt.Sprintf("kernel stack frames per wait, 0 for none (max %d)", collector.MaxStackDepth))
	fs.IntVar(&o.cfg.StackSkip, "stack-skip", 0, "frames to drop at the top of each stack, after the tracing frames klockstat drops itself (perf's default 3 is those)")
	fs.Uint32VarP(&mapSize, "map-nr-entries", "M", 65536, "entries of the BPF aggregation, stack and per-thread maps")
	fs.BoolVar(&o.cfg.Owners, "owners", false, "charge each wait to the lock's owner when it began, with the owner's state and stack (see README)")
	fs.IntVar(&o.cfg.OwnerSampleHz, "owner-sample-hz", collector.DefaultOwnerSampleHz, fmt.Sprintf("with --owners, sample lock owners with waiters on their CPU this many times a second, per CPU, for the stacks of their critical sections; 0 for none (max %d)", collector.MaxOwnerSampleHz))
	fs.StringVar(&o.cfg.Probe, "probe", "auto", "probe backend: "+strings.Join(collector.BackendNames(), ", ")+
		" (auto: the contention tracepoints where the kernel has them, else the lock functions with fentry, else kprobes)")
	fs.StringVar(&locksPath, "locks", "", "lock types and functions from `FILE` instead of the embedded locks.json")
	// perf lock contention's -a (all CPUs) and -b (BPF) are what klockstat always does.
	fs.BoolVarP(&ignored, "all-cpus", "a", false, "")
	fs.BoolVarP(&ignored, "use-bpf", "b", false, "")
	for _, perfOnly := range []string{"all-cpus", "use-bpf"} {
		if err := fs.MarkHidden(perfOnly); err != nil {
			panic(err) // the flag was added above
		}
	}
	addRenamed(fs, "stack-depth", "", "max-stack")
	addRenamed(fs, "map-size", "", "map-nr-entries")

	if err := parseFlags(fs, args); err != nil {
		return nil, cmp.Or(movedFlagError(args, err), err)
	}
	noteRenamed(fs)
	o.durationSet = fs.Changed("duration")
	if at := fs.ArgsLenAtDash(); at >= 0 {
		o.command = fs.Args()[at:]
		if at > 0 {
			return nil, cmp.Or(movedFlagError(args, nil), usagef("unexpected argument %q before -- (a command goes after --)", fs.Args()[0]))
		}
		if len(o.command) == 0 {
			return nil, usagef("no command after --")
		}
	} else if fs.NArg() > 0 {
		return nil, cmp.Or(movedFlagError(args, nil), usagef("unexpected argument %q (a command goes after --, e.g. klockstat -- make -j8)", fs.Arg(0)))
	}
	if o.duration <= 0 {
		return nil, usagef("--duration %v: must be positive", o.duration)
	}
	if err := o.captureOutputs.validate(inv.addressKey()); err != nil {
		return nil, err
	}
	if err := o.sources.checkKernel(srcline.RunningBuildID()); err != nil {
		return nil, err
	}
	o.cfg.ImageSymbols = func() (string, []kallsyms.Symbol, error) {
		return o.sources.dataSymbols(srcline.RunningBuildID(), host.Read().Kernel)
	}
	// The collector captures these types and cgroups only: no record is left for them to filter.
	types, cgroupArg := o.summary.Types, o.views.cgroups
	o.summary.Types, o.summary.Cgroups = nil, nil
	o.cfg.MapSize = mapSize
	o.cfg.Owners = o.cfg.Owners || o.views.lockOwner
	if o.quiet {
		o.cfg.Log = io.Discard // the capture's warnings keep them
	}
	if o.cfg.StackSkip < 0 {
		return nil, usagef("--stack-skip %d: want 0 or more frames", o.cfg.StackSkip)
	}

	if fs.Changed("pid") && len(pids) == 0 {
		return nil, usagef("empty --pid list (give process ids, e.g. -p 1234,5678, or leave out -p for all)")
	}
	ids, err := idList("--pid", "process", pids)
	if err != nil {
		return nil, err
	}
	for _, pid := range ids {
		if errors.Is(unix.Kill(int(pid), 0), unix.ESRCH) {
			fmt.Fprintf(inv.stderr, "klockstat: warning: --pid %d: no such process; its waits are captured only if a process of that id runs during the capture\n", pid)
		}
	}
	o.cfg.PIDs = ids

	if cgroupArg != nil {
		if o.cfg.Cgroups, err = cgroupDirs(cgroupArg); err != nil {
			return nil, err
		}
	}

	source, data := lockspec.EmbeddedSource, lockspec.Embedded()
	if locksPath != "" {
		if data, err = readLocks(locksPath, inv.stdin); err != nil {
			return nil, usageError{fmt.Errorf("reading --locks: %w", err)}
		}
		source = inputfile.Name(locksPath)
		o.inputs = append(o.inputs, input{"--locks", locksPath})
	}
	spec, err := lockspec.Parse(source, data)
	if err != nil {
		return nil, usageError{err}
	}
	if types != nil {
		if types, err = catalogueTypes(spec.Names(), types); err != nil {
			return nil, err
		}
	}
	if o.cfg.Spec, err = spec.Select(types); err != nil {
		return nil, usageError{err}
	}
	if err := o.cfg.Validate(); err != nil {
		return nil, usageError{err}
	}
	if err := o.plan(o.inputs); err != nil {
		return nil, err
	}
	return o, nil
}

// catalogueTypes are the types of the catalogue's names that the values of -Y name, as perf's -Y
// does ("rwsem" is rwsem:R and rwsem:W).
func catalogueTypes(names, values []string) ([]string, error) {
	var types []string
	for _, value := range values {
		matched := false
		for _, name := range names {
			if report.TypeFilterMatches(name, value) {
				matched = true
				if !slices.Contains(types, name) {
					types = append(types, name)
				}
			}
		}
		if !matched {
			return nil, usagef("--type-filter: unknown lock type %q (known: %s)", value, strings.Join(names, ", "))
		}
	}
	return types, nil
}

// cgroupDirs resolves the --cgroup values to the directories of their cgroups. A value is one
// cgroup's path, commas and all, if there is such a cgroup (a cgroup's name may hold a comma), and
// else a comma list, split as pflag splits its lists (CSV: a quoted part keeps its commas).
func cgroupDirs(values []string) ([]string, error) {
	if !slices.ContainsFunc(values, func(v string) bool { return v != "" }) {
		return nil, usagef("empty --cgroup-filter list (give cgroup paths, e.g. -G /system.slice/cron.service, or leave out -G for all)")
	}
	h, err := cgroups.Find()
	if err != nil {
		return nil, usagef("--cgroup-filter: %v", err)
	}
	var dirs []string
	for _, value := range values {
		if value == "" {
			continue
		}
		dir, wholeErr := h.Dir(value)
		if wholeErr == nil {
			dirs = append(dirs, dir)
			continue
		}
		if !strings.Contains(value, ",") {
			return nil, usagef("--cgroup-filter: %v", wholeErr)
		}
		names, err := csv.NewReader(strings.NewReader(value)).Read()
		if err != nil {
			return nil, usagef("--cgroup-filter %s: neither a cgroup nor a comma list: %v", value, err)
		}
		for _, name := range names {
			dir, err := h.Dir(name)
			if err != nil {
				return nil, usagef("--cgroup-filter %s: neither a cgroup nor a list of cgroups: %v", value, err)
			}
			dirs = append(dirs, dir)
		}
	}
	return dirs, nil
}

// maxLocksSize bounds a --locks file: the embedded catalogue is about 6 KiB.
const maxLocksSize = 16 << 20

// readLocks reads a lock catalogue, refusing what is not a regular file or stdin and what is over
// maxLocksSize.
func readLocks(path string, stdin io.Reader) ([]byte, error) {
	f, err := inputfile.Open(path, stdin, maxLocksSize)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return inputfile.ReadAll(f, maxLocksSize, 0)
}

// runCapture captures for the window or while the command runs, then writes the outputs. Its
// status is the command's when there is one.
//
// The window begins when collector.Start returns: stamping the capture's start is its last step,
// and the command, if any, starts right after. A stop signal that comes before, while the flags are
// parsed or the probes loaded, attached and calibrated, ends klockstat with 128+signal, no command
// started and nothing written: there is no window to report. Loading is let finish and undone by
// Close, not cut short by an exit, so that nothing it made in the kernel is left behind. A signal
// that comes after the check ends the window as usual: the command, started, gets it passed on, and
// the capture so far is written.
func (inv invocation) runCapture(args []string) (int, error) {
	signals, stopSignals := notifyStopSignals()
	defer stopSignals()
	o, err := inv.parseCaptureFlags(args)
	if err != nil {
		return 0, err
	}
	coll, status, err := startCollector(signals, o)
	if coll == nil {
		return status, err
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
		if work, err = startWorkload(o.command, inv); err != nil {
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
	progress := newProgress(inv.stderr, o, coll)
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
	inv.fillMeta(&c.Meta, o, exitCode)
	if c.Timeline != nil && work != nil {
		c.Timeline.CommandStartNS = sinceStart(c.Meta.Start, cmdStart)
		c.Timeline.CommandEndNS = sinceStart(c.Meta.Start, cmdExit)
	}
	writeErr := o.write(inv, c)

	status = 0
	switch {
	case cmdDone != nil:
		status = work.wait(signals, inv.stderr)
	case exitCode != nil:
		status = *exitCode
	case interrupted != nil:
		status = 128 + int(interrupted.(syscall.Signal))
	}
	return status, writeErr
}

// pendingSignal returns the stop signal that has come, or nil.
func pendingSignal(signals <-chan os.Signal) os.Signal {
	select {
	case sig := <-signals:
		return sig
	default:
		return nil
	}
}

// startCollector loads and attaches the probes of o, unless a stop signal comes before they are
// attached: then it returns no collector, and the status and error to end with
// (stoppedBeforeStart). Capture and scale start alike.
func startCollector(signals <-chan os.Signal, o *captureOptions) (*collector.Collector, int, error) {
	if sig := pendingSignal(signals); sig != nil {
		status, err := stoppedBeforeStart(sig, o)
		return nil, status, err
	}
	if o.cfg.Scope != "" {
		// Go's first process start forks a child of its own to probe clone(CLONE_PIDFD), which
		// the workload's tree, rooted at klockstat, would count as the command's: probe now.
		os.FindProcess(os.Getpid())
	}
	coll, err := collector.Start(o.cfg)
	if err != nil {
		return nil, 0, err
	}
	if sig := pendingSignal(signals); sig != nil {
		coll.Close()
		status, err := stoppedBeforeStart(sig, o)
		return nil, status, err
	}
	return coll, 0, nil
}

// stoppedBeforeStart is runCapture's end for a stop signal before the window began.
func stoppedBeforeStart(sig os.Signal, o *captureOptions) (int, error) {
	notStarted := ""
	if len(o.command) > 0 {
		notStarted = ", " + o.command[0] + " not started"
	}
	status := 128 + int(sig.(syscall.Signal))
	return status, fmt.Errorf("%s before the capture began: nothing captured or written%s", unix.SignalName(sig.(syscall.Signal)), notStarted)
}

// sinceStart is how long after start at was, or nil for a time that never came (zero).
func sinceStart(start, at time.Time) *int64 {
	if at.IsZero() {
		return nil
	}
	ns := at.Sub(start).Nanoseconds()
	return &ns
}

// fillMeta records the tool, the command line and the machine in m.
func (inv invocation) fillMeta(m *capture.Meta, o *captureOptions, exitCode *int) {
	m.Tool = "klockstat"
	m.ToolVersion = inv.version
	m.CommandLine = o.commandLine
	m.Workload = o.command
	m.WorkloadExit = exitCode
	machine := host.Read()
	m.Kernel = machine.Kernel
	m.KernelBuild = machine.KernelBuild
	m.KernelBuildID = srcline.RunningBuildID()
	m.Arch = machine.Arch
	m.Hostname = machine.Hostname
	m.CPUs = machine.CPUs
	m.CPUModel = machine.CPUModel
}
