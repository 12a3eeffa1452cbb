package report

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/srcline"
)

// nextStep is a command a summary suggests after what was captured, and why.
type nextStep struct {
	command string // shell-quoted, as it can be pasted
	why     string
}

// nextStepRules suggest the next commands, each from the capture and the summary's options alone,
// in the order the summary lists them: what the capture missed first, then where to look next.
var nextStepRules = []func(an *model, o SummaryOptions) (nextStep, bool){
	mapSizeStep, stacksStep, ownersStep, byOwnerStep, sourcesStep, scopeStep, scaleStep, diffStep,
}

// nextSteps are the steps of the rules that fit the capture of an and o.
func nextSteps(an *model, o SummaryOptions) []nextStep {
	var steps []nextStep
	for _, rule := range nextStepRules {
		if s, ok := rule(an, o); ok {
			steps = append(steps, s)
		}
	}
	return steps
}

// mapSizeStep: events were lost to a full BPF map, so the capture again with --map-nr-entries four
// times the size of the largest map that was full, replacing the -M the capture was given.
func mapSizeStep(an *model, _ SummaryOptions) (nextStep, bool) {
	c := an.c
	var lost, size uint64
	var full []string // the maps that were full, with their sizes
	for _, l := range c.Meta.Lost {
		switch {
		case l.Map != "":
			lost += l.Count
			if n, ok := c.Meta.MapSizes[l.Map]; ok && !slices.Contains(full, fmt.Sprintf("%s (%d entries)", l.Map, n)) {
				full = append(full, fmt.Sprintf("%s (%d entries)", l.Map, n))
				size = max(size, uint64(n))
			}
		case strings.Contains(l.Reason, "map full"): // a capture that does not name the map
			lost += l.Count
		}
	}
	if lost == 0 {
		return nextStep{}, false
	}
	if len(full) == 0 { // none named: the largest map, as before the maps were named
		for _, n := range c.Meta.MapSizes {
			size = max(size, uint64(n))
		}
	}
	if size == 0 {
		return nextStep{}, false
	}
	events := "events"
	if lost == 1 {
		events = "event"
	}
	why := fmt.Sprintf("%d %s lost to full maps of %d entries", lost, events, size)
	if len(full) > 0 {
		why = fmt.Sprintf("%d %s lost to full maps: %s, which -M (--map-nr-entries) sizes", lost, events, strings.Join(full, ", "))
	}
	return nextStep{command: recapture(c.Meta, mapSizeFlags, "-M", strconv.FormatUint(min(4*size, math.MaxUint32), 10)), why: why}, true
}

// mapSizeFlags are the names of --map-nr-entries, which mapSizeStep replaces.
var mapSizeFlags = []string{"map-nr-entries", "map-size", "M"}

// stacksStep: the capture took no stacks (--max-stack 0), so its waits have no caller.
func stacksStep(an *model, _ SummaryOptions) (nextStep, bool) {
	c := an.c
	if c.Meta.StackDepth != 0 || !contended(c.Records) {
		return nextStep{}, false
	}
	return nextStep{
		command: recapture(c.Meta, []string{"max-stack", "stack-depth"}),
		why:     "stacks were off (--max-stack 0): callers and stacks need them",
	}, true
}

// minOwnerShare is the part of the wait that must be slept on locks for --owners to be suggested:
// below it most of the wait is spun, on locks whose owner or blocker it cannot name.
const minOwnerShare = 0.5

// ownersStep: the capture has no owners, and most of its wait was slept on sleeping locks, whose
// holder (read from the lock) or blocker (the thread that woke the waiters) --owners names.
func ownersStep(an *model, _ SummaryOptions) (nextStep, bool) {
	c := an.c
	if len(c.Owners) > 0 {
		return nextStep{}, false
	}
	var slept, total uint64
	for _, r := range c.Records {
		total += r.TotalNS
		if sleepingLock(r.Type) {
			slept += r.TotalNS - min(r.SpinNS, r.TotalNS)
		}
	}
	if total == 0 || float64(slept) <= minOwnerShare*float64(total) {
		return nextStep{}, false
	}
	return nextStep{
		command: recapture(c.Meta, nil, "--owners"),
		why:     fmt.Sprintf("who held or blocked the locks: %s of the wait slept on sleeping locks", percentOf(slept, total)),
	}, true
}

// sleepingLock reports whether a lock type of the built-in catalogue sleeps: --owners charges its
// waits to the owner the lock records (mutexes, rwsems, rtmutexes) or to the thread that woke the
// waiters (percpu rwsems, semaphores, rwlock-rt), and a spinning lock's to neither (docs/owners.md).
func sleepingLock(lockType string) bool {
	spec, err := lockFunctions()
	if err != nil {
		return false
	}
	t, ok := spec.Lookup(lockType)
	return ok && !t.Spinning()
}

// byOwnerStep: the capture charged waits to known owners, and the summary is not by owner.
func byOwnerStep(an *model, o SummaryOptions) (nextStep, bool) {
	c := an.c
	known := slices.ContainsFunc(c.Owners, func(ow capture.Owner) bool { return ow.Reason == "" })
	if !known || o.By == OwnerView || o.Saved == "" {
		return nextStep{}, false
	}
	return nextStep{
		command: shellJoin([]string{"klockstat", "report", o.Saved, "--by", OwnerView}),
		why:     "the owners the waits were charged to: their states and critical sections",
	}, true
}

// sourcesStep: a saved capture with stacks and no source lines, which the kernel's debug image gives
// at re-rendering: the path is where Debian's linux-image-RELEASE-dbg installs it.
func sourcesStep(an *model, o SummaryOptions) (nextStep, bool) {
	c := an.c
	if c.Sources != nil || c.Meta.StackDepth == 0 || o.Saved == "" || !contended(c.Records) {
		return nextStep{}, false
	}
	paths := srcline.Candidates("", c.Meta.Kernel)
	if len(paths) == 0 {
		return nextStep{}, false
	}
	return nextStep{
		command: shellJoin([]string{"klockstat", "report", o.Saved, "--vmlinux", paths[0]}),
		why:     "the callers' source lines and inlined functions, from the kernel's debug image (Debian: apt install linux-image-" + c.Meta.Kernel + "-dbg)",
	}, true
}

// scopeStep: a capture of every process while a workload ran, where the others' waits outweigh the
// command's.
func scopeStep(an *model, _ SummaryOptions) (nextStep, bool) {
	c := an.c
	if !an.split().ok {
		return nextStep{}, false
	}
	mine, theirs := an.command().totalNS, an.others().totalNS
	if theirs <= mine {
		return nextStep{}, false
	}
	return nextStep{
		command: recapture(c.Meta, nil, "--scope", capture.ScopeCommand),
		why:     fmt.Sprintf("the command's waits alone: %s of these were other processes'", percentOf(theirs, mine+theirs)),
	}, true
}

// minScaleShare is the part of its threads' time a workload must spend waiting for a lock
// (waitTotals.threadShare) for klockstat scale to be suggested: below it locks do not limit how
// the workload scales.
const minScaleShare = 0.01

// scaleStep: the workload takes a level of parallelism (levelArg), and its threads spent a part of
// their time waiting: how that part grows with the level is klockstat scale's question.
func scaleStep(an *model, _ SummaryOptions) (nextStep, bool) {
	c := an.c
	m := c.Meta
	if len(m.Workload) == 0 || len(m.CommandLine) > 1 && m.CommandLine[1] == "scale" {
		return nextStep{}, false
	}
	waits := an.waits()
	if an.split().ok {
		waits = an.command()
	}
	if waits.threadShare(m.DurationNS) < minScaleShare {
		return nextStep{}, false
	}
	level, levelled, ok := levelArg(m.Workload)
	if !ok {
		return nextStep{}, false
	}
	return nextStep{
		command: shellJoin(append([]string{"klockstat", "scale", "--"}, levelled...)),
		why:     fmt.Sprintf("how the waits grow with the parallelism, %s here", level),
	}, true
}

// levelArg finds the one argument of a command that is its level of parallelism: a number alone
// ("stress-ng --rename 2") or make's jobs ("-j8", "--jobs=8"). It returns the level and the command
// with {N}, klockstat scale's placeholder, in its place; ok is false unless exactly one argument
// is a level.
func levelArg(argv []string) (level string, levelled []string, ok bool) {
	at := -1
	for i, a := range argv[min(len(argv), 1):] {
		prefix := ""
		for _, p := range []string{"-j", "--jobs="} {
			if strings.HasPrefix(a, p) {
				prefix = p
			}
		}
		if n, err := strconv.ParseUint(a[len(prefix):], 10, 32); err != nil || n == 0 {
			continue
		}
		if at >= 0 {
			return "", nil, false
		}
		at, level = i+1, a[len(prefix):]
		levelled = slices.Clone(argv)
		levelled[at] = prefix + "{N}"
	}
	return level, levelled, at >= 0
}

// diffStep: the capture is in a file, to be compared with one taken after a change.
func diffStep(an *model, o SummaryOptions) (nextStep, bool) {
	c := an.c
	if o.Saved == "" || !contended(c.Records) {
		return nextStep{}, false
	}
	after := "AFTER" + filepath.Ext(o.Saved)
	return nextStep{
		command: shellJoin([]string{"klockstat", "diff", o.Saved, after}),
		why:     "after a change, capture again to " + after + " and compare",
	}, true
}

// contended reports whether any record has a contended wait.
func contended(records []capture.Record) bool {
	return slices.ContainsFunc(records, func(r capture.Record) bool { return r.Count > 0 })
}

// recapture is the capture's command line (capture.Meta.CommandLine) again, without the flags
// drop names (long names, with their values) and with add before its "--": the flags' last values
// count, so add overrides the same flags before it. Without a command line, or with one that is not
// klockstat's, it is "klockstat" and add, then "..." for the rest.
func recapture(m capture.Meta, drop []string, add ...string) string {
	argv := m.CommandLine
	if len(argv) == 0 || argv[0] != "klockstat" {
		return shellJoin(append([]string{"klockstat"}, add...)) + " ..."
	}
	dash := slices.Index(argv, "--")
	if dash < 0 {
		dash = len(argv)
	}
	out := []string{argv[0]}
	for i := 1; i < dash; i++ {
		if dropped, withValue := droppedFlag(argv[i], drop); dropped {
			if !withValue {
				i++ // the value is the next argument
			}
			continue
		}
		out = append(out, argv[i])
	}
	out = append(out, add...)
	return shellJoin(append(out, argv[dash:]...))
}

// droppedFlag reports whether arg is one of the flags drop names ("max-stack" for --max-stack, "M"
// for -M), and whether it holds its value ("--max-stack=0", "-M64").
func droppedFlag(arg string, drop []string) (dropped, withValue bool) {
	if long, ok := strings.CutPrefix(arg, "--"); ok {
		name, _, withValue := strings.Cut(long, "=")
		return slices.Contains(drop, name), withValue
	}
	if short, ok := strings.CutPrefix(arg, "-"); ok && len(short) > 0 && slices.Contains(drop, short[:1]) {
		return true, len(short) > 1
	}
	return false, false
}

// writeNextSteps writes the steps under a "next steps:" line: each a shell comment that says why,
// then the command, so that the lines paste into a shell as they are.
func writeNextSteps(l lineWriter, steps []nextStep) {
	if len(steps) == 0 || l.off {
		return
	}
	l.b.WriteString("\n")
	l.printf("next steps:")
	for _, s := range steps {
		l.printf("  # %s", sanitize(s.why))
		l.printf("  %s", sanitize(s.command))
	}
}
