package cli

import (
	"cmp"
	"fmt"

	"github.com/klockstat/klockstat/internal/inputfile"
	"github.com/klockstat/klockstat/report"
)

const reportUsage = `Usage: klockstat report INPUT [flags]

Re-renders the HTML report and the summary from a capture JSON (--json) or
from an earlier klockstat HTML report, which carries its capture; the
scaling report from a sweep JSON or scaling report of klockstat scale; the
what-if page from an experiment JSON of klockstat whatif.

Flags:
%s`

// runReport re-renders a capture JSON or an earlier HTML report.
func (inv invocation) runReport(args []string) (int, error) {
	fs := newFlagSet("klockstat report", reportUsage, inv.stderr)
	var o captureOutputs
	o.addFlags(fs, "the summary's rows alone, as perf's -q")
	o.views.addCgroupFilter(fs, "only waits of tasks in these cgroups or their descendants (`PATH` as the summary by cgroup shows it; repeatable or comma list)")
	level := fs.Int("level", 0, "of a sweep (klockstat scale), write level `N`'s report instead of the scaling report")
	if err := parseFlags(fs, args); err != nil {
		return 0, cmp.Or(movedFlagError(args, err), err)
	}
	noteRenamed(fs)
	if fs.NArg() != 1 {
		return 0, cmp.Or(movedFlagError(args, nil), usagef("report takes one INPUT (a capture JSON or a klockstat HTML report), got %d", fs.NArg()))
	}
	if err := o.validate(inv.addressKey()); err != nil {
		return 0, err
	}
	inputPath := fs.Arg(0)
	if handled, err := inv.reportWhatif(&o, inputPath, fs.Changed("output")); handled {
		return 0, err
	}
	// Read once: whether it is a capture or a sweep decides the outputs to plan.
	in, err := report.ReadAnyInputFile(inputPath, inv.stdin)
	if err != nil {
		return 0, err
	}
	if in.Sweep != nil {
		return 0, inv.reportSweep(&o, inputPath, in.Sweep, *level, fs.Changed("level"), fs.Changed("output"))
	}
	if fs.Changed("level") {
		return 0, usagef("--level %d: %s is a capture, not a sweep of klockstat scale (leave out --level)", *level, inputfile.Name(inputPath))
	}
	if err := o.plan([]input{{"INPUT", inputPath}}); err != nil {
		return 0, err
	}
	c := in.Capture
	if o.rawAddrs && c.Meta.AddressesHashed {
		fmt.Fprintf(inv.stderr, "klockstat: warning: %s holds hashed addresses only; --raw-addresses cannot restore them (re-render from the capture JSON)\n", inputPath)
	}
	return 0, o.write(inv, c)
}
