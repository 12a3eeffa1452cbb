package cli

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/collector"
	"github.com/klockstat/klockstat/internal/host"
	"github.com/klockstat/klockstat/internal/inputfile"
	"github.com/klockstat/klockstat/kallsyms"
	"github.com/klockstat/klockstat/lockspec"
	"github.com/klockstat/klockstat/report"
	"github.com/klockstat/klockstat/whatif"
)

const whatifUsage = `Usage: klockstat whatif [--lock LOCK] [--caller FRAME] [--from FILE [--level N]] [--delays LIST] [--repeat R] [--metric REGEX] [flags] -- COMMAND [ARGS...]

Measures how much COMMAND's throughput depends on one kernel lock, and predicts the gain of
shortening its critical section. COMMAND runs without and with a delay added right after each
waiter of the lock acquires it (lock:contention_end), so the lock is held longer exactly where it
was contended, at a few sizes, --repeat times each, the sizes alternating. The reading fits time
per unit of work against the hold time added per unit of work: a slope near 1 means each
microsecond added lands on the workload's critical path. Work per run is --metric's match in the
output, as for klockstat scale; without --metric every run is the same work.

The lock: --lock (addresses, ids, names or struct fields, as -L takes them) and --caller (a
substring of the caller frame), among the locks of the capture or sweep of --from (with --level N,
that level's capture, and {N} in COMMAND is N), or else of a baseline capture of one run of
COMMAND; without them the lock with the most wait (of a sweep, the top scaling culprit).

This perturbs the machine on purpose: each delay spins on a CPU for at most 100 us, at most
--budget per CPU a second, counted by the kernel. On a mutex acquired in its wait loop, the spin runs
with the mutex's wait_lock held and interrupts off (the report says how many did). A spinning lock
is refused without --allow-spin. The delays stop when klockstat exits, on a signal or an error.
Needs root.

Flags:
%s`

// whatifOptions is everything the whatif command line says.
type whatifOptions struct {
	locks        []string
	caller       string
	from         string
	level        int
	levelGiven   bool
	delays       []uint64 // nil: scaled to the lock's wait
	repeat       int
	metric       *regexp.Regexp
	unit         string
	budget       time.Duration
	allowSpin    bool
	unlockedOnly bool
	limit        time.Duration
	limited      bool
	htmlPath     string
	jsonPath     string
	quiet        bool
	command      []string
	commandLine  []string
	commandOut   io.Writer
	outs         []output
	dests        []destination
	experiment   *whatif.Experiment // when the outputs are written
}

func (inv invocation) parseWhatifFlags(args []string) (*whatifOptions, error) {
	fs := newFlagSet("klockstat whatif", whatifUsage, inv.stderr)
	o := &whatifOptions{commandLine: append([]string{"klockstat", "whatif"}, args...)}
	var delays, metric string
	fs.StringSliceVarP(&o.locks, "lock", "L", nil, "the lock: `LIST` of addresses (0x...), ids as the report shows them, names (mmap_lock) or struct fields (super_block.s_vfs_rename_mutex)")
	fs.StringVar(&o.caller, "caller", "", "only the lock's waits whose caller frame contains `SUBSTRING` (do_renameat2)")
	fs.StringVar(&o.from, "from", "", "choose the lock among those of this capture or sweep (`FILE`, JSON or HTML) instead of a baseline run")
	fs.IntVar(&o.level, "level", 0, "with a sweep in --from, the level whose capture to read, and the {N} of COMMAND (default the highest)")
	fs.StringVar(&delays, "delays", "", "delays to add, comma `LIST` of durations, 0 for none (default 0 and 0.5x, 1x, 2x the lock's average wait, at least 10us, 20us, 40us, at most 25us, 50us, 100us and half of --budget over the lock's waits a second)")
	fs.IntVar(&o.repeat, "repeat", 3, "runs per delay")
	fs.StringVar(&metric, "metric", "", "regular expression whose first group, in the last match in the command's output, is the run's throughput")
	fs.StringVar(&o.unit, "unit", "", "what a unit of work is called in the reading (rename; default \"run\" without --metric)")
	fs.DurationVar(&o.budget, "budget", time.Duration(collector.MaxBudgetNS), "time the delays may add per CPU a second, at most 200ms")
	fs.BoolVar(&o.allowSpin, "allow-spin", false, "delay a spinning lock (spinlock, rwlock) too, perhaps with interrupts off: only if you know what it does to this machine")
	fs.BoolVar(&o.unlockedOnly, "unlocked-only", false, "leave alone a mutex acquired in its wait loop (it slept, or spun again as the first waiter), whose contention_end runs with its wait_lock held, interrupts off")
	fs.DurationVarP(&o.limit, "duration", "d", 0, "stop a run that takes longer than this (it fails)")
	fs.StringVarP(&o.htmlPath, "output", "o", "klockstat-whatif.html", "write the HTML page to `FILE` (- for stdout, \"\" for none)")
	fs.StringVar(&o.jsonPath, "json", "", "write the experiment as JSON to `FILE`")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if at := fs.ArgsLenAtDash(); at != 0 && fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q (the command goes after --)", fs.Arg(0))
	}
	o.command = fs.Args()
	o.levelGiven, o.limited = fs.Changed("level"), fs.Changed("duration")
	var err error
	if delays != "" {
		if o.delays, err = parseDelays(delays); err != nil {
			return nil, err
		}
	}
	if metric != "" {
		if o.metric, err = parseMetric(metric); err != nil {
			return nil, err
		}
	}
	switch {
	case len(o.command) == 0:
		return nil, usagef("whatif needs a command after --, e.g. klockstat whatif --metric 'rename\\s+\\d+\\s+[\\d.]+\\s+[\\d.]+\\s+[\\d.]+\\s+([\\d.]+)' -- stress-ng --rename 2 -t 5s --metrics-brief")
	case o.repeat < 1 || o.repeat > 100:
		return nil, usagef("--repeat %d: must be 1 to 100", o.repeat)
	case o.budget <= 0 || uint64(o.budget) > collector.MaxBudgetNS:
		return nil, usagef("--budget %v: must be above 0 and at most %v per CPU a second", o.budget, time.Duration(collector.MaxBudgetNS))
	case o.levelGiven && o.level < 1:
		return nil, usagef("--level %d: must be at least 1", o.level)
	case o.levelGiven && o.from == "":
		return nil, usagef("--level: with --from a sweep only")
	}
	if err := o.plan(); err != nil {
		return nil, err
	}
	o.commandOut = inv.stdout
	if slices.ContainsFunc(o.dests, func(d destination) bool { return d.stdout }) {
		o.commandOut = inv.stderr
	}
	return o, nil
}

// parseDelays reads --delays: durations, each at most the kernel's bound, each once.
func parseDelays(s string) ([]uint64, error) {
	var out []uint64
	for field := range strings.SplitSeq(s, ",") {
		field = strings.TrimSpace(field)
		d, err := time.ParseDuration(field)
		if field == "0" {
			d, err = 0, nil
		}
		switch {
		case err != nil || d < 0:
			return nil, usagef("--delays %q: %q is not a duration (e.g. --delays 0,10us,20us,40us)", s, field)
		case uint64(d) > collector.MaxDelayNS:
			return nil, usagef("--delays %q: %v is over the bound of %v a delay", s, d, time.Duration(collector.MaxDelayNS))
		case slices.Contains(out, uint64(d)):
			return nil, usagef("--delays %q: %v given twice", s, d)
		}
		out = append(out, uint64(d))
	}
	if len(out) < 2 || len(out) > whatif.MaxDelays {
		return nil, usagef("--delays %q: give two sizes or more, at most %d, e.g. --delays 0,20us,40us", s, whatif.MaxDelays)
	}
	return out, nil
}

// defaultDelays are 0 and a quarter, half and all of twice the lock's average wait, at least
// 10, 20 and 40 us (smaller effects are lost in the run-to-run noise of runs of a few seconds),
// the largest at most the bound, and at most what keeps the delays of the lock's contended
// acquisitions a second (as the capture counted them) within half the budget of the CPUs: past it
// the kernel refuses delays, and the sizes would add the same time.
func defaultDelays(meanWaitNS, waitsPerSecond float64, budgetNS uint64, cpus int) []uint64 {
	top := min(uint64(2*max(meanWaitNS, 20e3)), collector.MaxDelayNS)
	if waitsPerSecond > 0 {
		top = min(top, max(uint64(0.5*float64(budgetNS)*float64(cpus)/waitsPerSecond), 4000))
	}
	return []uint64{0, top / 4, top / 2, top}
}

// plan decides where the outputs go.
func (o *whatifOptions) plan() error {
	o.outs = []output{
		{flag: "--json", path: o.jsonPath, secret: true, write: func(w io.Writer) error { return o.experiment.Write(w) }},
		{flag: "--output", path: o.htmlPath, write: func(w io.Writer) error { return report.WriteWhatifHTML(w, o.experiment) }},
	}
	var ins []input
	if o.from != "" {
		ins = append(ins, input{"--from", o.from})
	}
	var err error
	o.dests, err = planOutputs(o.outs, ins)
	return err
}

// runWhatif runs the experiment and writes its outputs. Its status is 1 when a run failed,
// 128+signal when a signal cut it short.
func (inv invocation) runWhatif(args []string) (int, error) {
	signals, stopSignals := notifyStopSignals()
	defer stopSignals()
	o, err := inv.parseWhatifFlags(args)
	if err != nil {
		return 0, err
	}
	argv, base, source, culprit, err := inv.whatifBaseline(o)
	if sig := pendingSignal(signals); sig != nil {
		return 128 + int(sig.(syscall.Signal)), fmt.Errorf("%v before the delays began: nothing delayed or written", sig)
	}
	if err != nil {
		return 0, err
	}
	target, err := chooseTarget(base, o.locks, o.caller, culprit)
	if err != nil {
		return 0, err
	}
	catalogue, err := lockspec.Default()
	if err != nil {
		return 0, err
	}
	target.Source = source
	typ, known := catalogue.Lookup(target.Type)
	switch {
	case !known && !o.allowSpin:
		return 0, usagef("%q is no lock type of the embedded catalogue: whether it spins is unknown, and a delay there may spin with interrupts off; --allow-spin if you know what that does to this machine", target.Type)
	case known && typ.Spinning() && !o.allowSpin:
		return 0, usagef("%s is a spinning lock: a delay there spins with the lock held, perhaps with interrupts off; --allow-spin if you know what that does to this machine", target.Label)
	}
	cfg, err := delayConfig(o, target)
	if err != nil {
		return 0, err
	}
	cfg.Flags = typ.Flags
	machine := host.Read()
	e := &whatif.Experiment{
		Version: whatif.FormatVersion, Tool: "klockstat", ToolVersion: inv.version, CommandLine: o.commandLine,
		Command: argv, Unit: o.unit, Kernel: machine.Kernel, CPUModel: machine.CPUModel, CPUs: machine.CPUs,
		Start: time.Now(), Target: target, Repeat: o.repeat,
		Bounds: whatif.Bounds{MaxDelayNS: collector.MaxDelayNS, BudgetNS: cfg.BudgetNS, AllowSpin: o.allowSpin, UnlockedOnly: o.unlockedOnly},
	}
	if o.metric != nil {
		e.Metric = o.metric.String()
	}
	e.DelaysNS = o.delays
	if e.DelaysNS == nil {
		e.DelaysNS = defaultDelays(target.MeanWaitNS, target.WaitsPerSecond, cfg.BudgetNS, machine.CPUs)
	}
	o.experiment = e
	// The runs end as scale's do, by process group, which its orphans must not outlive.
	if err := becomeSubreaper(); err != nil {
		return 0, err
	}

	status, err := inv.whatifRuns(o, cfg, signals)
	if err != nil {
		return 0, err
	}
	return status, inv.writeWhatif(o)
}

// writeWhatif writes the outputs of o.experiment, then its summary.
func (inv invocation) writeWhatif(o *whatifOptions) error {
	writeErr := writeAll(o.outs, o.dests, inv.stdout)
	summary := inv.stdout
	if slices.ContainsFunc(o.dests, func(d destination) bool { return d.stdout }) {
		summary = inv.stderr
	}
	if err := report.WriteWhatifSummary(summary, o.experiment); err != nil {
		writeErr = errors.Join(writeErr, fmt.Errorf("writing the summary: %w", err))
	}
	if html := o.dests[1]; o.htmlPath != "" && !html.stdout && html.written {
		fmt.Fprintf(summary, "whatif page: %s\n", o.htmlPath)
	}
	return writeErr
}

// whatifRuns loads the delay and runs the command at every size, --repeat rounds, each round
// starting one size later; the delay is closed before it returns, on every path.
func (inv invocation) whatifRuns(o *whatifOptions, cfg collector.DelayConfig, signals <-chan os.Signal) (int, error) {
	e := o.experiment
	d, err := collector.StartDelay(cfg)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	timed := timedCommand{out: o.commandOut, limit: o.limit, limited: o.limited, metric: o.metric}
	failed := 0
	for round := range o.repeat {
		for i := range e.DelaysNS {
			ns := e.DelaysNS[(round+i)%len(e.DelaysNS)]
			if !o.quiet {
				fmt.Fprintf(inv.stderr, "klockstat: delay %v, round %d of %d: %s\n", time.Duration(ns), round+1, o.repeat, strings.Join(e.Command, " "))
			}
			if err := d.ResetCounters(); err != nil {
				return 0, err
			}
			if err := d.SetDelay(ns); err != nil {
				return 0, err
			}
			sweepRun, sig, finish := inv.timedRun(timed, e.Command, signals)
			stopErr := d.Stop()
			counters, err := d.Counters()
			if err = errors.Join(stopErr, err); err != nil {
				return 0, err
			}
			finish(&sweepRun)
			run := whatif.Run{DelayNS: ns, WallNS: sweepRun.WallNS, Exit: sweepRun.Exit, Metric: sweepRun.Metric,
				Failed: sweepRun.Failed, Tail: sweepRun.Tail, Counters: counters}
			e.Runs = append(e.Runs, run)
			if run.Failed != "" {
				failed++
				fmt.Fprintf(inv.stderr, "klockstat: delay %v, round %d failed: %s\n", time.Duration(ns), round+1, run.Failed)
			}
			if sig != nil {
				e.Interrupted = true
				return 128 + int(sig.(syscall.Signal)), nil
			}
		}
	}
	if err := d.Close(); err != nil {
		return 0, err
	}
	if failed > 0 {
		return 1, fmt.Errorf("%d of %d runs failed (the page marks them)", failed, len(e.Runs))
	}
	return 0, nil
}

// whatifBaseline is the capture the lock is chosen from, its source, the command with {N}
// replaced, and of a sweep its top scaling culprit: --from's, or a capture of one run of the
// command.
func (inv invocation) whatifBaseline(o *whatifOptions) (argv []string, c *capture.Capture, source string, culprit *capture.Culprit, err error) {
	argv = o.command
	hasN := slices.ContainsFunc(argv, func(a string) bool { return strings.Contains(a, "{N}") })
	if o.from != "" {
		in, err := report.ReadAnyInputFile(o.from, inv.stdin)
		if err != nil {
			return nil, nil, "", nil, err
		}
		s := in.Sweep
		if s == nil {
			if o.levelGiven {
				return nil, nil, "", nil, usagef("--level %d: %s is a capture, not a sweep", o.level, o.from)
			}
			c = in.Capture
			if hasN {
				return nil, nil, "", nil, usagef("{N} in the command: give --from a sweep and --level N")
			}
			return argv, c, o.from, nil, nil
		}
		var level *capture.SweepLevel
		for i := range s.Levels {
			if l := &s.Levels[i]; l.Representative() != nil && (!o.levelGiven || l.N == o.level) {
				level = l
			}
		}
		if level == nil {
			return nil, nil, "", nil, usagef("--level %d: no run of that level counts in %s", o.level, o.from)
		}
		source = fmt.Sprintf("%s, level %d", o.from, level.N)
		if len(o.locks) == 0 && o.caller == "" {
			an := s.Analyze()
			if len(an.Locks) > 0 {
				culprit = &an.Locks[0]
			}
		}
		return substitute(argv, level.N), level.Representative().Capture, source, culprit, nil
	}
	if hasN {
		return nil, nil, "", nil, usagef("{N} in the command: give --from a sweep and --level N, or write the level")
	}
	c, err = inv.baselineCapture(argv)
	return argv, c, "a baseline run", nil, err
}

// baselineCapture captures one run of argv as `klockstat -- argv` would, to a temporary JSON.
func (inv invocation) baselineCapture(argv []string) (*capture.Capture, error) {
	dir, err := os.MkdirTemp("", "klockstat-whatif-")
	if err != nil {
		return nil, fmt.Errorf("a directory for the baseline capture: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "baseline.json")
	fmt.Fprintf(inv.stderr, "klockstat: baseline capture: %s\n", strings.Join(argv, " "))
	sub := invocation{version: inv.version, stdin: inv.stdin, stdout: io.Discard, stderr: inv.stderr}
	status, err := sub.runCapture(append([]string{"-q", "-o", "", "--json", path, "--"}, argv...))
	switch {
	case err != nil:
		return nil, fmt.Errorf("baseline capture: %w", err)
	case status != 0:
		return nil, fmt.Errorf("baseline capture: %s exited with status %d", argv[0], status)
	}
	return report.ReadInputFile(path, nil)
}

// minDelayReach is the least a lock's contended acquisitions must be able to add to a run, each
// delayed by the most a delay may be, for the lock to be chosen when another can: a lock that
// made its wait in a few long waits (a one-off at start-up) takes a delay a few times a run,
// which moves no run measurably.
const minDelayReach = 0.01

// chooseTarget picks the lock: the records --lock and --caller keep, of the culprit if one is
// given, grouped by lock, the one with the most wait among those a delay can reach often enough
// (minDelayReach), else among all. Unless --lock names it, a lock is taken at one call site: a
// slab lock's label stands for every instance of its struct field, of other processes too.
func chooseTarget(c *capture.Capture, locks []string, caller string, culprit *capture.Culprit) (whatif.Target, error) {
	f, err := capture.NewFilter(locks, nil)
	if err != nil {
		return whatif.Target{}, usagef("--lock: %v", err)
	}
	by := map[string][]capture.Record{}
	for _, r := range c.Records {
		switch {
		case r.Count == 0 || !f.Keeps(r, c.Meta.AddressesHashed) || !strings.Contains(r.Caller, caller):
			continue
		case culprit != nil && (r.Type != culprit.Type || (r.Name == "" || r.LockLabel() != culprit.Name) && r.Lock != culprit.Lock):
			continue
		}
		k := capture.ByLockLabel(r)
		if len(locks) == 0 {
			k += " at " + r.Caller
		}
		by[k] = append(by[k], r)
	}
	reachable := func(rs []capture.Record) bool {
		return float64(capture.TotalsOf(rs).Count)*float64(collector.MaxDelayNS) >= minDelayReach*float64(c.Meta.DurationNS)
	}
	best := mostWait(by, reachable)
	if best == "" {
		best = mostWait(by, func([]capture.Record) bool { return true })
	}
	if best == "" {
		return whatif.Target{}, usagef("no contended lock in the capture matches --lock %s --caller %q: see klockstat report FILE -l", strings.Join(locks, ","), caller)
	}
	records := by[best]
	r0 := records[0]
	t := whatif.Target{Type: r0.Type, Label: cmp.Or(r0.FieldLabel(), r0.ObjectLabel(), r0.Lock.String())}
	switch {
	case culprit != nil:
		t.ChosenBy = "the top scaling culprit of the sweep"
	case len(locks) == 0 && caller == "":
		t.ChosenBy = "the most wait of the capture"
	default:
		t.ChosenBy = strings.TrimSpace(fmt.Sprintf("--lock %s --caller %s", strings.Join(locks, ","), caller))
	}
	for _, r := range records {
		if !slices.Contains(t.Callers, r.Caller) {
			t.Callers = append(t.Callers, r.Caller)
		}
	}
	totals := capture.TotalsOf(records)
	t.Waits, t.WaitNS = totals.Count, totals.TotalNS
	// An address names the lock when the user gave one, or when the lock has no name.
	if !c.Meta.AddressesHashed && (r0.Name == "" || slices.ContainsFunc(locks, func(l string) bool { return strings.HasPrefix(l, "0x") })) {
		for _, r := range records {
			if !slices.Contains(t.Locks, r.Lock) {
				t.Locks = append(t.Locks, r.Lock)
			}
		}
	}
	if total := c.Totals().TotalNS; total > 0 {
		t.WaitShare = float64(t.WaitNS) / float64(total)
	}
	t.MeanWaitNS = float64(t.WaitNS) / float64(t.Waits)
	if c.Meta.DurationNS > 0 {
		t.WaitsPerSecond = float64(t.Waits) / (float64(c.Meta.DurationNS) / 1e9)
	}
	if len(t.Callers) == 1 {
		t.Label += " at " + t.Callers[0]
	}
	return t, nil
}

// mostWait is the key of the records with the most wait among those keep keeps, ties to the
// first key in order; "" when it keeps none.
func mostWait(by map[string][]capture.Record, keep func([]capture.Record) bool) string {
	best := ""
	for _, k := range slices.Sorted(maps.Keys(by)) {
		if keep(by[k]) && (best == "" || capture.TotalsOf(by[k]).TotalNS > capture.TotalsOf(by[best]).TotalNS) {
			best = k
		}
	}
	return best
}

// delayConfig places the target's call sites in the running kernel.
func delayConfig(o *whatifOptions, t whatif.Target) (collector.DelayConfig, error) {
	cfg := collector.DelayConfig{BudgetNS: uint64(o.budget), AllowSpin: o.allowSpin, UnlockedOnly: o.unlockedOnly}
	tab, err := kallsyms.Load()
	if err != nil {
		return cfg, err
	}
	if tab.Restricted() {
		return cfg, errors.New("/proc/kallsyms hides addresses (kernel.kptr_restrict): the lock's call sites cannot be placed; run as root with kptr_restrict 0 or 1")
	}
	for _, frame := range t.Callers {
		a, err := collector.CallSite(tab, frame)
		if err != nil {
			return cfg, fmt.Errorf("placing the lock's caller: %w", err)
		}
		cfg.Callers = append(cfg.Callers, a)
	}
	for _, a := range t.Locks {
		cfg.Locks = append(cfg.Locks, uint64(a))
	}
	if len(cfg.Callers) > 64 || len(cfg.Locks) > 64 {
		return cfg, usagef("%s: %d call sites and %d addresses, at most 64 each: narrow it with --caller", t.Label, len(cfg.Callers), len(cfg.Locks))
	}
	return cfg, nil
}

// reportWhatif re-renders the experiment JSON at path (klockstat whatif --json) into its page and
// summary. handled is false for an input that is no experiment; stdin is never taken to be one,
// as it cannot be read twice.
func (inv invocation) reportWhatif(o *captureOutputs, path string, outputGiven bool) (handled bool, err error) {
	if path == "-" {
		return false, nil
	}
	f, err := inputfile.OpenRegular(path)
	if err != nil {
		return false, nil // the capture reader says why
	}
	defer f.Close()
	// Its first bytes tell an experiment: anything else is left unread, for the capture reader.
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	if !bytes.Contains(head[:n], []byte(`"whatif_version"`)) {
		return false, nil
	}
	st, err := f.Stat()
	if err != nil || st.Size() > report.MaxInputSize {
		return false, nil
	}
	data, err := inputfile.ReadAll(io.MultiReader(bytes.NewReader(head[:n]), f), report.MaxInputSize, st.Size())
	if err != nil {
		return true, fmt.Errorf("%s: %w", path, err)
	}
	e, err := whatif.Parse(data)
	if err != nil {
		return true, fmt.Errorf("%s: %w", inputfile.Name(path), err)
	}
	w := &whatifOptions{experiment: e, htmlPath: o.htmlPath}
	if !outputGiven {
		w.htmlPath = "klockstat-whatif.html"
	}
	w.from = path
	if err := w.plan(); err != nil {
		return true, err
	}
	return true, inv.writeWhatif(w)
}
