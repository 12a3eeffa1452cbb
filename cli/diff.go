package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/report"
)

const diffUsage = `Usage: klockstat diff BEFORE AFTER [flags]

Compares two captures (capture JSON files or klockstat HTML reports): rows
are matched by lock type, caller function and lock name, threads merged,
totals per second of capture; lock owners (--owners in both) by lock type,
lock name, thread name and stack functions.

Flags:
%s`

// runDiff compares two captures: terminal summary, HTML page, and with
// --fail-over an exit status for CI.
func (inv invocation) runDiff(args []string) (int, error) {
	fs := newFlagSet("klockstat diff", diffUsage, inv.stderr)
	var (
		page                pageFlags
		by                  string
		threads, lockCgroup bool
		abs                 bool
		failOver            float64
	)
	page.addFlags(fs, pageHelp{
		page: "HTML comparison", defaultPath: "klockstat-diff.html", addressesIn: "HTML comparison",
		quiet: "no terminal summary (--fail-over still explains a failure on stderr)",
	})
	fs.BoolVarP(&threads, "threads", "t", false, "match rows by thread name too (--by thread)")
	fs.BoolVarP(&lockCgroup, "lock-cgroup", "g", false, "match rows by cgroup path too (--by cgroup)")
	fs.StringVar(&by, "by", "caller", "match rows by `caller`, or by thread name (thread, -t) or cgroup path (cgroup, -g) too")
	fs.BoolVar(&abs, "absolute", false, "compare raw totals instead of per-second rates")
	fs.Float64Var(&failOver, "fail-over", -1, "exit with status 1 when total wait grows by more than `PCT` percent")
	if err := parseFlags(fs, args); err != nil {
		return 0, cmp.Or(movedFlagError(args, err), err)
	}
	noteRenamed(fs)
	by, err := summaryFlags{by: by, threads: threads, lockCgroup: lockCgroup}.grouping()
	switch {
	case err != nil:
		return 0, err
	case fs.NArg() != 2:
		return 0, cmp.Or(movedFlagError(args, nil), usagef("diff takes BEFORE and AFTER (capture JSON files or klockstat HTML reports), got %d arguments", fs.NArg()))
	case by != "caller" && by != "thread" && by != "cgroup":
		return 0, usagef("--by %q: want caller, thread or cgroup", by)
	case fs.Changed("fail-over") && (failOver < 0 || math.IsNaN(failOver) || math.IsInf(failOver, 0)):
		return 0, usagef("--fail-over %v: want a percentage of 0 or more", failOver)
	}
	if err := page.validate(); err != nil {
		return 0, err
	}
	html := output{flag: "--output", path: page.htmlPath, secret: page.rawAddrs}
	dests, err := planOutputs([]output{html}, []input{{"BEFORE", fs.Arg(0)}, {"AFTER", fs.Arg(1)}})
	if err != nil {
		return 0, err
	}
	before, err := report.ReadInputFile(fs.Arg(0), inv.stdin)
	if err != nil {
		return 0, err
	}
	after, err := report.ReadInputFile(fs.Arg(1), inv.stdin)
	if err != nil {
		return 0, err
	}
	if !page.rawAddrs {
		// One key for both sides, the page and the summary, so that an address has one id in all.
		key := inv.addressKey()
		before.HashAddresses(key)
		after.HashAddresses(key)
	}
	// The captures hold ids already, or are shown raw: their analyses hash nothing.
	d := report.Compare(report.Analyze(before, true, nil), report.Analyze(after, true, nil), capture.DiffOptions{ByThread: by == "thread", ByCgroup: by == "cgroup", Absolute: abs, Top: page.top})

	html.write = func(w io.Writer) error {
		return report.WriteDiffHTML(w, d, report.HTMLOptions{Top: page.top, RawAddresses: page.rawAddrs})
	}
	out, unguard := inv.guardStdout()
	writeErr := writeAll([]output{html}, dests, out.stdout)
	writeErr = errors.Join(writeErr, page.writeSummary(out, dests, dests[0], "diff", func(w io.Writer) error {
		return report.WriteDiffSummary(w, d, page.top)
	}))
	unguard()
	if writeErr != nil {
		return 0, writeErr
	}
	if fs.Changed("fail-over") {
		if ok, grew := d.FailOver(failOver); !ok {
			_, _, pct := d.TotalWaitChange()
			fmt.Fprintf(inv.stderr, "klockstat: total wait grew %+.1f%%, more than --fail-over %v%%; rows that grew most:\n", pct, failOver)
			if err := report.WriteDiffRows(inv.stderr, d, grew); err != nil {
				return 0, err
			}
			return 1, nil
		}
	}
	return 0, nil
}
