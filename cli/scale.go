package cli

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/collector"
	"github.com/klockstat/klockstat/export"
	"github.com/klockstat/klockstat/internal/host"
	"github.com/klockstat/klockstat/report"
)

const scaleUsage = `Usage: klockstat scale [--levels 1,2,4,8] [--repeat R] [--metric REGEX] [flags] -- COMMAND [ARGS...]

Runs COMMAND once per level of parallelism (R times with --repeat), with every
{N} in its arguments replaced by the level and KLOCKSTAT_LEVEL=N in its
environment, and captures each run as 'klockstat -- COMMAND' would, the probes
attached once for the whole sweep. Writes a scaling report that ranks the
locks and callers whose wait per unit of work grows fastest with the level.
The work of a run is --metric's match in the command's output (a throughput,
e.g. stress-ng's bogo ops/s), or without --metric the same for every run, so
that throughput is 1 / run time. Needs root.

Flags:
%s`

// scaleOptions is everything the scale command line says.
type scaleOptions struct {
	*captureOptions
	sweepOutputs
	repeat int
	metric *regexp.Regexp
	// commandOut receives the command's stdout: klockstat's, or its stderr when an output goes to
	// stdout.
	commandOut io.Writer
}

// sweepOutputs are the files a sweep's outputs write, of the capture's output flags: the scaling
// report, the sweep JSON, the exports of every level.
type sweepOutputs struct {
	flags  *captureOutputs
	levels []int
	sweep  *capture.Sweep // when the outputs are written
	outs   []output       // by plan
	key    []byte         // the addresses' ids are under it, by plan
}

// defaultLevels are the powers of two up to twice the CPUs.
func defaultLevels(cpus int) []int {
	var levels []int
	for n := 1; n <= 2*max(cpus, 1); n *= 2 {
		levels = append(levels, n)
	}
	return levels
}

// parseLevels reads --levels: positive integers, each once; returned in increasing order.
func parseLevels(s string) ([]int, error) {
	var levels []int
	for field := range strings.SplitSeq(s, ",") {
		field = strings.TrimSpace(field)
		n, err := strconv.Atoi(field)
		if err != nil || n < 1 || n > capture.MaxSweepLevel {
			return nil, usagef("--levels %q: %q is not a level (want positive integers up to %d, e.g. --levels 1,2,4,8)", s, field, capture.MaxSweepLevel)
		}
		if slices.Contains(levels, n) {
			return nil, usagef("--levels %q: %d given twice (name each level once, e.g. --levels 1,2,4,8)", s, n)
		}
		levels = append(levels, n)
	}
	if len(levels) > capture.MaxSweepLevels {
		return nil, usagef("--levels %q: %d levels, at most %d", s, len(levels), capture.MaxSweepLevels)
	}
	slices.Sort(levels)
	return levels, nil
}

// parseMetric compiles --metric, which must capture the number in a group.
func parseMetric(s string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, usagef("--metric %q: not a regular expression: %v (Go syntax, e.g. --metric 'ops_per_sec=([0-9.]+)')", s, err)
	}
	if re.NumSubexp() < 1 {
		return nil, usagef("--metric %q: no capture group: put the number in parentheses, e.g. --metric 'bogo-ops-per-second-real-time ([0-9.]+)'", s)
	}
	return re, nil
}

func (inv invocation) parseScaleFlags(args []string) (*scaleOptions, error) {
	fs := newFlagSet("klockstat scale", scaleUsage, inv.stderr)
	var levelList, metric string
	o := &scaleOptions{}
	fs.StringVar(&levelList, "levels", "", "levels of parallelism, comma list (default: powers of two up to twice the CPU count)")
	fs.IntVar(&o.repeat, "repeat", 1, "runs per level")
	fs.StringVar(&metric, "metric", "", "regular expression whose first group, in the last line of the command's output with a match, is the run's throughput")
	scope := addScopeFlag(fs)
	co, err := inv.parseCaptureFlagsIn(fs, args)
	if err != nil {
		return nil, err
	}
	if err := co.setScope(*scope, fs.Changed("scope")); err != nil {
		return nil, err
	}
	o.captureOptions = co
	o.flags = &co.captureOutputs
	o.commandLine = append([]string{"klockstat", "scale"}, args...)
	if fs.Changed("levels") {
		if o.sweepOutputs.levels, err = parseLevels(levelList); err != nil {
			return nil, err
		}
	} else {
		o.sweepOutputs.levels = defaultLevels(runtime.NumCPU())
	}
	if fs.Changed("metric") {
		if o.metric, err = parseMetric(metric); err != nil {
			return nil, err
		}
	}
	switch {
	case o.repeat < 1:
		return nil, usagef("--repeat %d: must be at least 1", o.repeat)
	case len(o.sweepOutputs.levels)*o.repeat > capture.MaxSweepRuns:
		return nil, usagef("%d levels × --repeat %d: more than %d runs", len(o.levels), o.repeat, capture.MaxSweepRuns)
	case len(o.command) == 0:
		return nil, usagef("scale needs a command after --, e.g. klockstat scale -- stress-ng --fcntl {N} -t 5s --metrics-brief")
	}
	if !slices.ContainsFunc(o.command, func(a string) bool { return strings.Contains(a, "{N}") }) {
		fmt.Fprintf(inv.stderr, "klockstat: warning: no {N} in the command: every level runs the same command, unless it reads KLOCKSTAT_LEVEL from its environment (then all is well)\n")
	}
	if err := o.plan(o.inputs, fs.Changed("output"), inv.addressKey()); err != nil {
		return nil, err
	}
	o.commandOut = inv.stdout
	if slices.ContainsFunc(o.dests, func(d destination) bool { return d.stdout }) {
		o.commandOut = inv.stderr
	}
	return o, nil
}

// plan decides where every output goes (see planOutputs): the scaling report goes to
// klockstat-scale.html unless --output was given; addresses are hashed under key.
func (o *sweepOutputs) plan(ins []input, outputGiven bool, key []byte) error {
	f := o.flags
	for _, e := range []struct{ flag, path string }{{"--folded", f.exports.folded}, {"--csv", f.exports.csv}} {
		if e.path == "-" {
			return usagef("%s -: a sweep writes one file per level (FILE-levelN), give a file name", e.flag)
		}
	}
	if !outputGiven {
		f.htmlPath = "klockstat-scale.html"
	}
	o.key = key
	// One analysis of each level's capture, which all its exports write, its addresses ids under key.
	analyses := map[*capture.Capture]*report.Analysis{}
	analysisOf := func(c *capture.Capture) *report.Analysis {
		if analyses[c] == nil {
			analyses[c] = report.Analyze(c, f.rawAddrs, key)
		}
		return analyses[c]
	}
	o.outs = []output{
		{flag: "--json", path: f.jsonPath, secret: true, write: func(w io.Writer) error { return o.sweep.Write(w) }},
		{flag: "--pprof", path: f.exports.pprof, secret: f.rawAddrs, write: func(w io.Writer) error { return writeLevelPprof(w, o.sweep, analysisOf) }},
	}
	for _, e := range []struct {
		flag, path string
		write      func(io.Writer, export.Analysis) error
	}{{"--folded", f.exports.folded, export.WriteFolded}, {"--csv", f.exports.csv, export.WriteCSV}} {
		if e.path == "" {
			continue
		}
		for _, n := range o.levels {
			o.outs = append(o.outs, output{flag: e.flag, path: levelPath(e.path, n), secret: f.rawAddrs, level: n, write: func(w io.Writer) error {
				return e.write(w, analysisOf(levelCapture(o.sweep, n)))
			}})
		}
	}
	o.outs = append(o.outs, output{flag: "--output", path: f.htmlPath, secret: f.rawAddrs, write: func(w io.Writer) error {
		return report.WriteScaleHTML(w, o.sweep, report.HTMLOptions{Top: f.top, RawAddresses: f.rawAddrs, AddressKey: key})
	}})
	var err error
	f.dests, err = planOutputs(o.outs, ins)
	return err
}

// write writes every output of o.sweep and the summary, and reports every failure. A level with no
// run that counts (it failed, or never ran) has no export files.
func (o *sweepOutputs) write(inv invocation) error {
	inv, unguard := inv.guardStdout()
	defer unguard()
	f := o.flags
	outs := slices.Clone(o.outs)
	for i, out := range outs {
		if n := out.level; n != 0 && out.path != "" && levelCapture(o.sweep, n) == nil {
			fmt.Fprintf(inv.stderr, "klockstat: %s: no %s: no run of level %d counts\n", out.flag, out.path, n)
			outs[i].path = ""
		}
	}
	err := writeAll(outs, f.dests, inv.stdout)
	html := f.dests[len(o.outs)-1] // plan puts --output last
	return errors.Join(err, f.writeSummaryLines(inv, f.dests, html, "scaling report", "", func(w io.Writer) error {
		return report.WriteScaleSummary(w, o.sweep, report.ScaleSummaryOptions{Top: f.top, RowsOnly: f.quiet, RawAddresses: f.rawAddrs, AddressKey: o.key})
	}))
}

// writeSoFar writes the sweep JSON and the scaling report of the levels done so far, where they go to
// files (each replaced whole, so a sweep killed later leaves valid ones); the sweep is marked
// interrupted until the last write.
func (o *sweepOutputs) writeSoFar(inv invocation) error {
	f := o.flags
	var outs []output
	var dests []destination
	for i, out := range o.outs {
		if d := f.dests[i]; (out.flag == "--json" || out.flag == "--output") && out.path != "" && !d.stdout && !d.inPlace {
			outs, dests = append(outs, out), append(dests, d)
		}
	}
	was := o.sweep.Interrupted
	o.sweep.Interrupted = true
	defer func() { o.sweep.Interrupted = was }()
	return writeAll(outs, dests, inv.stdout)
}

// levelPath is the file of level n's export: "-levelN" before the extension(s) of path.
func levelPath(path string, n int) string {
	dir, base := filepath.Split(path)
	stem, ext, _ := strings.Cut(base, ".")
	if ext != "" {
		ext = "." + ext
	}
	return dir + stem + "-level" + strconv.Itoa(n) + ext
}

// levelCapture is the capture level n is shown by, or nil when no run of it counts.
func levelCapture(s *capture.Sweep, n int) *capture.Capture {
	for _, l := range s.Levels {
		if r := l.Representative(); l.N == n && r != nil {
			return r.Capture
		}
	}
	return nil
}

// writeLevelPprof writes one profile of every level's capture, from its analysis, each sample
// labelled with its level.
func writeLevelPprof(w io.Writer, s *capture.Sweep, analysisOf func(*capture.Capture) *report.Analysis) error {
	var profiles []*profile.Profile
	for _, l := range s.Levels {
		r := l.Representative()
		if r == nil {
			continue
		}
		var b bytes.Buffer
		if err := export.WritePprof(&b, analysisOf(r.Capture)); err != nil {
			return err
		}
		p, err := profile.Parse(&b)
		if err != nil {
			return fmt.Errorf("reading back the profile of level %d: %w", l.N, err)
		}
		for _, sample := range p.Sample {
			if sample.Label == nil {
				sample.Label = map[string][]string{}
			}
			sample.Label["level"] = []string{strconv.Itoa(l.N)}
		}
		profiles = append(profiles, p)
	}
	if len(profiles) == 0 {
		return errors.New("no level has a run that counts")
	}
	merged, err := profile.Merge(profiles)
	if err != nil {
		return fmt.Errorf("merging the levels' profiles: %w", err)
	}
	return merged.Write(w)
}

// runScale runs the sweep and writes its outputs. Its status is 1 when a run failed, 128+signal when
// a signal cut the sweep short.
func (inv invocation) runScale(args []string) (int, error) {
	// As for a capture, a signal before the probes are attached ends the sweep with no run
	// started and nothing written.
	signals, stopSignals := notifyStopSignals()
	defer stopSignals()
	o, err := inv.parseScaleFlags(args)
	if err != nil {
		return 0, err
	}
	started := time.Now()
	coll, status, err := startCollector(signals, o.captureOptions)
	if coll == nil {
		return status, err
	}
	defer coll.Close()
	rounds, err := coll.Rounds()
	if err != nil {
		return 0, err
	}
	defer rounds.Close()
	o.sweep = &capture.Sweep{
		Version: capture.SweepFormatVersion, Tool: "klockstat", ToolVersion: inv.version,
		CommandLine: o.commandLine, Command: o.command, CPUs: host.Read().CPUs, Start: started,
	}
	if o.metric != nil {
		o.sweep.Metric = o.metric.String()
	}
	o.sweep.Cost.StartNS = time.Since(started).Nanoseconds()
	if err := becomeSubreaper(); err != nil {
		return 0, err
	}

	var interrupted os.Signal
	failed, total := 0, 0
sweep:
	for _, n := range o.sweepOutputs.levels {
		level := capture.SweepLevel{N: n}
		for i := range o.repeat {
			if !o.quiet {
				fmt.Fprintf(inv.stderr, "klockstat: level %d, run %d of %d: %s\n", n, i+1, o.repeat, strings.Join(substitute(o.command, n), " "))
			}
			run, sig, err := inv.sweepRun(o, rounds, n, signals)
			if err != nil {
				coll.Close()
				return 0, err
			}
			total++
			o.sweep.Cost.BetweenNS += run.OverheadNS
			if run.Stop != "" {
				fmt.Fprintf(inv.stderr, "klockstat: level %d, run %d: %s\n", n, i+1, run.Stop)
			}
			if run.Failed != "" {
				failed++
				fmt.Fprintf(inv.stderr, "klockstat: level %d, run %d failed: %s\n", n, i+1, run.Failed)
			}
			level.Runs = append(level.Runs, run)
			if sig != nil {
				interrupted = sig
				o.sweep.Levels = append(o.sweep.Levels, level)
				o.sweep.Interrupted = true
				break sweep
			}
		}
		o.sweep.Levels = append(o.sweep.Levels, level)
		if err := o.sweepOutputs.writeSoFar(inv); err != nil {
			fmt.Fprintf(inv.stderr, "klockstat: warning: writing the sweep after level %d: %v\n", n, err)
		}
	}
	rounds.Close()
	coll.Close() // the probes go before the outputs are rendered

	writeErr := o.sweepOutputs.write(inv)
	switch {
	case interrupted != nil:
		return 128 + int(interrupted.(syscall.Signal)), writeErr
	case failed > 0:
		return 1, errors.Join(writeErr, fmt.Errorf("%d of %d runs failed (the report marks them)", failed, total))
	}
	return 0, writeErr
}

// substitute replaces every {N} in argv with n.
func substitute(argv []string, n int) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = strings.ReplaceAll(a, "{N}", strconv.Itoa(n))
	}
	return out
}

// tailLines are the lines of a failed run's output kept in the sweep.
const tailLines = 10

// sweepRun runs the command once at level n, in a process group of its own, and cuts its round:
// the run, and the signal that interrupted it, if one did. An error is the capture's: a failing
// command is a failed run.
func (inv invocation) sweepRun(o *scaleOptions, rounds *collector.Rounds, n int, signals <-chan os.Signal) (capture.SweepRun, os.Signal, error) {
	began := time.Now()
	if err := rounds.Begin(); err != nil {
		return capture.SweepRun{Argv: substitute(o.command, n)}, nil, err
	}
	overhead := time.Since(began).Nanoseconds()
	timed := timedCommand{out: o.commandOut, limit: o.duration, limited: o.durationSet, metric: o.metric}
	run, interrupted, finish := inv.timedRun(timed, substitute(o.command, n), signals, "KLOCKSTAT_LEVEL="+strconv.Itoa(n))
	start := time.Now()
	c, err := rounds.End()
	if err != nil {
		return run, interrupted, err
	}
	inv.fillMeta(&c.Meta, o.captureOptions, run.Exit)
	c.Meta.CommandLine, c.Meta.Workload = o.commandLine, run.Argv
	run.Capture = c
	run.OverheadNS = overhead + time.Since(start).Nanoseconds()
	finish(&run)
	return run, interrupted, nil
}

// timedCommand is how timedRun runs a command: where its stdout goes, the limit on its run time,
// the --metric that reads its work.
type timedCommand struct {
	out     io.Writer
	limit   time.Duration
	limited bool
	metric  *regexp.Regexp
}

// timedRun runs argv once, in a process group of its own, without stdin, its output to t.out and
// klockstat's stderr, and returns the run timed (Argv, WallNS, Exit, Stop, Failed), the signal
// that interrupted it if one did, and finish, which reads the metric (matched line by line as the
// output streams) and the tail of the output into the run once the caller has done what follows
// the command.
func (inv invocation) timedRun(t timedCommand, argv []string, signals <-chan os.Signal, env ...string) (capture.SweepRun, os.Signal, func(*capture.SweepRun)) {
	run := capture.SweepRun{Argv: argv}
	tail := &outputTail{limit: 64 << 10}
	var metric *metricMatch
	var streams []*lineStream
	stdout, stderr := io.MultiWriter(t.out, tail), io.MultiWriter(inv.stderr, tail)
	if t.metric != nil {
		metric = &metricMatch{re: t.metric}
		streams = []*lineStream{metric.stream(), metric.stream()}
		stdout, stderr = io.MultiWriter(stdout, streams[0]), io.MultiWriter(stderr, streams[1])
	}
	// No stdin: the command runs many times.
	stdio := invocation{stdout: stdout, stderr: stderr}
	start := time.Now()
	var interrupted os.Signal
	if w, err := startGroupWorkload(run.Argv, stdio, env...); err != nil {
		run.Failed = err.Error()
	} else {
		var timedOut bool
		run.Exit, timedOut, interrupted, run.Stop = waitRun(w, t.limit, t.limited, signals)
		run.WallNS = time.Since(start).Nanoseconds()
		switch {
		case interrupted != nil:
			run.Failed = "interrupted by " + interrupted.String()
		case timedOut && run.Exit != nil && !killedBy(*run.Exit):
			run.Failed = fmt.Sprintf("ran longer than --duration %v, then exited by itself with status %d", t.limit, *run.Exit)
		case timedOut:
			run.Failed = fmt.Sprintf("ran longer than --duration %v, stopped", t.limit)
		case *run.Exit != 0:
			run.Failed = fmt.Sprintf("exit status %d", *run.Exit)
		}
	}
	return run, interrupted, func(r *capture.SweepRun) {
		if metric != nil && r.Failed == "" {
			// The streams are complete: cmd.Wait has copied all of them.
			for _, st := range streams {
				st.Close()
			}
			r.Metric, r.Matched, r.Failed = metric.value()
		}
		if r.Failed != "" {
			r.Tail = tail.lastLines(tailLines)
		}
	}
}

// killedBy reports whether a shell-style exit status is that of a process SIGTERM or SIGKILL ended.
func killedBy(status int) bool {
	return status == 128+int(syscall.SIGTERM) || status == 128+int(syscall.SIGKILL)
}

// waitRun waits for a run's command, ending its process group at the window's end, at a signal, or
// when the command exits leaving processes in it. It returns the command's exit status; whether
// the window ended it; the signal that did; and how the group was ended.
func waitRun(w *workload, limit time.Duration, limited bool, signals <-chan os.Signal) (exit *int, timedOut bool, interrupted os.Signal, stop string) {
	var deadline <-chan time.Time
	if limited {
		timer := time.NewTimer(limit)
		defer timer.Stop()
		deadline = timer.C
	}
	select {
	case err := <-w.done:
		g, sig := endGroup(w.cmd.Process.Pid, true, signals)
		return commandStatus(err), false, sig, g.String()
	case <-deadline:
		timedOut = true
	case interrupted = <-signals:
	}
	// The window ended, or a signal came, with the command running: its group gets SIGTERM, and
	// SIGKILL after the grace or at a second signal.
	g := groupEnding{signals: []string{"SIGTERM"}}
	w.signalGroup(syscall.SIGTERM)
	grace := time.NewTimer(groupGrace)
	defer grace.Stop()
	var err error
	select {
	case err = <-w.done:
	case <-grace.C:
		g.signals = append(g.signals, "SIGKILL")
		w.signalGroup(syscall.SIGKILL)
		err = <-w.done
	case sig := <-signals:
		interrupted = cmp.Or(interrupted, sig)
		g.signals = append(g.signals, "SIGKILL")
		w.signalGroup(syscall.SIGKILL)
		err = <-w.done
	}
	exit = commandStatus(err)
	// What is left of the group after its leader: the grace, then SIGKILL.
	if len(g.signals) == 1 {
		if gone, sig := waitGroup(w.cmd.Process.Pid, groupGrace, signals); !gone {
			interrupted = cmp.Or(interrupted, sig)
			g.signals = append(g.signals, "SIGKILL")
			w.signalGroup(syscall.SIGKILL)
		}
	}
	gone, _ := waitGroup(w.cmd.Process.Pid, groupGrace, nil)
	g.left = !gone
	return exit, timedOut, interrupted, g.String()
}

// outputTail keeps the last limit bytes of a command's output, written by its stdout and stderr
// at once.
type outputTail struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

func (t *outputTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *outputTail) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.buf)
}

// lastLines are the last n non-empty lines of the output, made printable.
func (t *outputTail) lastLines(n int) []string {
	var lines []string
	for line := range strings.SplitSeq(string(t.bytes()), "\n") {
		if line = strings.TrimRight(line, "\r"); strings.TrimSpace(line) != "" {
			lines = append(lines, strings.ToValidUTF8(line, "?"))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 1000 {
			lines[i] = l[:1000] + "…"
		}
	}
	return lines
}

// reportSweep re-renders s, the sweep JSON or scaling report at path, into o's outputs: the
// scaling report, or with --level the report of one level.
func (inv invocation) reportSweep(o *captureOutputs, path string, s *capture.Sweep, level int, levelGiven, outputGiven bool) error {
	ins := []input{{"INPUT", path}}
	levels := make([]int, len(s.Levels))
	for i, l := range s.Levels {
		levels[i] = l.N
	}
	if !levelGiven {
		sw := sweepOutputs{flags: o, levels: levels, sweep: s}
		if err := sw.plan(ins, outputGiven, inv.addressKey()); err != nil {
			return err
		}
		return sw.write(inv)
	}
	i := slices.Index(levels, level)
	if i < 0 || s.Levels[i].Representative() == nil {
		return usagef("--level %d: no run of that level counts in %s (levels: %s)", level, path, joinLevels(levels))
	}
	if err := o.plan(ins); err != nil {
		return err
	}
	return o.write(inv, s.Levels[i].Representative().Capture)
}

// joinLevels lists levels as --levels takes them.
func joinLevels(levels []int) string {
	texts := make([]string, len(levels))
	for i, n := range levels {
		texts[i] = strconv.Itoa(n)
	}
	return strings.Join(texts, ",")
}
