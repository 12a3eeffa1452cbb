package cli

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/report"
)

// summaryFlags are perf lock contention's options for the terminal summary (-k, -F, -t and -l as
// --by) and its filters, which a capture and `klockstat report` share. The filters also narrow the
// exports; the HTML report and the JSON keep every record.
//
// perf's -L (--lock-filter) is klockstat's --locks, the lock catalogue, since before the filters came,
// so the lock filter's short flag is -l, free in klockstat. perf's own -l (by lock) is --by lock, as
// -t, perf's by-thread, is klockstat's --types; a perf habit of -l alone fails here, wanting an
// argument, instead of doing something else.
type summaryFlags struct {
	sort, by      string
	fields        []string
	locks, frames []string
}

func (v *summaryFlags) addFlags(fs *pflag.FlagSet) {
	stats := make([]string, len(capture.GroupStats))
	for i, s := range capture.GroupStats {
		stats[i] = string(s)
	}
	defaults := make([]string, len(report.DefaultFields))
	for i, s := range report.DefaultFields {
		defaults[i] = string(s)
	}
	fs.StringVarP(&v.sort, "sort", "k", string(capture.StatWaitTotal), "sort the summary by `KEY`, largest first: "+strings.Join(stats, ", "))
	fs.StringSliceVarP(&v.fields, "fields", "F", defaults, "numbers the summary shows (`LIST` of sort keys)")
	fs.StringVar(&v.by, "by", "caller", "summary rows by `WHAT`: caller (type and caller), thread (pid and tid), lock, cgroup, or owner (the lock owners waits were charged to, with --owners)")
	fs.StringSliceVarP(&v.locks, "lock-filter", "l", nil, "only waits on these locks: `LIST` of addresses (0x...), ids as the report shows them, or names (mmap_lock)")
	fs.StringSliceVarP(&v.frames, "callstack-filter", "S", nil, "only waits with a stack frame containing one of these `SUBSTRINGS`")
}

// summaryOptions checks the flags and returns what they ask of the summary, the filter included.
func (v summaryFlags) summaryOptions() (report.SummaryOptions, error) {
	if _, err := capture.NewFilter(v.locks, nil); err != nil {
		return report.SummaryOptions{}, usagef("--lock-filter: %v", err)
	}
	filter, err := capture.NewFilter(v.locks, v.frames)
	if err != nil {
		return report.SummaryOptions{}, usagef("--callstack-filter: %v", err)
	}
	o := report.SummaryOptions{By: v.by, Sort: capture.GroupStat(v.sort), Filter: filter}
	for _, f := range v.fields {
		o.Fields = append(o.Fields, capture.GroupStat(strings.TrimSpace(f)))
	}
	for _, check := range []struct {
		flag string
		o    report.SummaryOptions
	}{{"--by", report.SummaryOptions{By: o.By}}, {"--sort", report.SummaryOptions{Sort: o.Sort}}, {"--fields", report.SummaryOptions{Fields: o.Fields}}} {
		if err := check.o.Validate(); err != nil {
			return report.SummaryOptions{}, usagef("%s: %v", check.flag, err)
		}
	}
	return o, nil
}
