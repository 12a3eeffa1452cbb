package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/pflag"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/report"
)

// pageFlags are the flags of every command that writes an HTML page and a terminal summary: the
// capture, report and diff.
type pageFlags struct {
	htmlPath string // "-" for stdout, "" for none
	top      int
	rawAddrs bool
	quiet    bool
}

// pageHelp is what the help of pageFlags says differently for each command.
type pageHelp struct {
	page        string // what --output writes, e.g. "HTML report"
	defaultPath string
	addressesIn string // the outputs --raw-addresses changes, e.g. "HTML report and the exports"
	quiet       string // what --quiet leaves out
}

func (p *pageFlags) addFlags(fs *pflag.FlagSet, h pageHelp) {
	fs.StringVarP(&p.htmlPath, "output", "o", h.defaultPath, "write the "+h.page+" to `FILE` (- for stdout, \"\" for none)")
	fs.IntVarP(&p.top, "entries", "E", 20, "rows in the terminal summary and on the "+h.page+"'s first page")
	fs.BoolVar(&p.rawAddrs, "raw-addresses", false, "show real kernel addresses in the "+h.addressesIn+" instead of hashed ids")
	fs.BoolVarP(&p.quiet, "quiet", "q", false, h.quiet)
	addRenamed(fs, "top", "n", "entries")
}

func (p pageFlags) validate() error {
	if p.top < 1 {
		return usagef("--entries %d: must be at least 1", p.top)
	}
	return nil
}

// writeSummary writes the terminal summary with write, unless quiet, and then, as "label: path",
// the HTML page if writeAll wrote it to a file. The summary makes way on stdout for a file written
// there.
func (p pageFlags) writeSummary(inv invocation, dests []destination, page destination, label string, write func(io.Writer) error) error {
	if p.quiet {
		return nil
	}
	return p.writeSummaryLines(inv, dests, page, label, "", write)
}

// writeSummaryLines is writeSummary for a summary that --quiet cuts down to its rows, as perf's -q
// does, rather than leaves out: write does the cutting, and the page's path is left out. comment
// starts the page's line: "# " between separated values.
func (p pageFlags) writeSummaryLines(inv invocation, dests []destination, page destination, label, comment string, write func(io.Writer) error) error {
	summary := inv.stdout
	if slices.ContainsFunc(dests, func(d destination) bool { return d.stdout }) {
		summary = inv.stderr
	}
	if err := write(summary); err != nil {
		return fmt.Errorf("writing the summary: %w", err)
	}
	if !p.quiet && p.htmlPath != "" && !page.stdout && page.written {
		fmt.Fprintf(summary, "%s%s: %s\n", comment, label, p.htmlPath)
	}
	return nil
}

// captureOutputs are the flags of the commands that write a capture's outputs, the capture and
// report, and the outputs they plan.
type captureOutputs struct {
	pageFlags
	sources  sourceFlags
	jsonPath string
	exports  exportPaths
	views    summaryFlags
	summary  report.SummaryOptions // from views, by validate
	dests    []destination         // where outputs(c) go, by plan
	ins      []input               // the files the command reads, by plan
}

func (o *captureOutputs) addFlags(fs *pflag.FlagSet, quietHelp string) {
	o.pageFlags.addFlags(fs, pageHelp{
		page: "HTML report", defaultPath: "klockstat-report.html", addressesIn: "HTML report and the exports", quiet: quietHelp,
	})
	fs.StringVar(&o.jsonPath, "json", "", "write the capture as JSON to `FILE` (- for stdout)")
	o.sources.addFlags(fs)
	o.exports.addFlags(fs)
	o.views.addFlags(fs)
}

// validate checks the flags and sets summary, whose lock ids are hashed under key.
func (o *captureOutputs) validate(key []byte) error {
	if err := o.pageFlags.validate(); err != nil {
		return err
	}
	if err := o.sources.open(); err != nil {
		return err
	}
	var err error
	o.summary, err = o.views.summaryOptions()
	// An id -L names is the boot's id of a lock: it matches the lock in a capture of raw
	// addresses too.
	o.summary.Filter = o.summary.Filter.UnderKey(key)
	return err
}

// plan decides where every output goes before the capture is read or made (see planOutputs).
func (o *captureOutputs) plan(ins []input) error {
	var err error
	o.ins = ins
	o.dests, err = planOutputs(o.outputs(nil, nil), ins)
	return err
}

// outputs are the files the options write, writing c, the page and the exports from an, c's
// analysis; nil c and an are enough to plan them.
func (o *captureOutputs) outputs(c *capture.Capture, an *report.Analysis) []output {
	outs := []output{{flag: "--json", path: o.jsonPath, secret: true, write: func(w io.Writer) error { return c.Write(w) }}}
	selected := an
	if an != nil {
		selected = an.Select(o.summary)
	}
	outs = append(outs, o.exports.outputs(selected, o.rawAddrs)...)
	return append(outs, output{flag: "--output", path: o.htmlPath, secret: o.rawAddrs, write: func(w io.Writer) error {
		return an.WriteHTML(w, report.HTMLOptions{Top: o.top})
	}})
}

// write writes every output and the summary, and reports every failure: one that cannot be
// written does not keep the others from being written.
func (o *captureOutputs) write(inv invocation, c *capture.Capture) error {
	if err := o.sources.resolve(inv, c, o.quiet); err != nil {
		return err
	}
	inv, unguard := inv.guardStdout()
	defer unguard()
	// One key for the report, the exports and the summary, so that they name a lock by the same id.
	key := inv.addressKey()
	an := report.Analyze(c, o.rawAddrs, key)
	outs := o.outputs(c, an)
	err := writeAll(outs, o.dests, inv.stdout)
	if _, stopped := errors.AsType[*interruptedWrite](err); stopped {
		return err
	}
	so := o.summary
	so.Top, so.RowsOnly, so.RawAddresses, so.AddressKey = o.top, o.quiet, o.rawAddrs, key
	so.Saved = savedCapture(outs, o.dests, o.ins)
	html := o.dests[len(outs)-1] // outputs puts --output last
	comment := ""
	if so.Separator != "" {
		comment = "# "
	}
	serr := o.writeSummaryLines(inv, o.dests, html, "report", comment, func(w io.Writer) error {
		return an.WriteSummary(w, so)
	})
	return errors.Join(err, serr)
}
