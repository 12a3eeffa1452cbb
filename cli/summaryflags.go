package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/report"
)

// summaryFlags are perf lock contention's options for the terminal summary and its filters, with
// perf's letters and meanings, which a capture and `klockstat report` share: -k and -F; -t, -l and
// -g, perf's views by thread, lock and cgroup, beside --by; the filters -Y, -L, -S, -G and --tid;
// -x, perf's separated values. The filters also narrow the exports; the HTML report and the JSON
// keep every record. A capture hands -Y and -G to the collector instead, which then captures those
// types and cgroups only, as perf does.
//
// klockstat's spellings from before it took perf's still work with a note (--sort, --fields,
// --types, --cgroup), but where perf gives a letter another meaning the old use is refused with a
// line that names the new flag (movedFlagError): -t (--types), -l (--lock-filter) and -L (--locks).
type summaryFlags struct {
	key, by                       string
	fields                        []string
	threads, lockAddr, lockCgroup bool
	lockOwner                     bool
	locks, frames, types          []string
	cgroups, tids                 []string
	separator                     string
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
	fs.StringVarP(&v.key, "key", "k", string(capture.StatWaitTotal), "sort the summary by `KEY`, largest first: "+strings.Join(stats, ", "))
	fs.StringSliceVarP(&v.fields, "field", "F", defaults, "numbers the summary shows (`LIST` of keys): perf's before the columns that say what a row is, spin_total after")
	fs.BoolVarP(&v.threads, "threads", "t", false, "summary by thread (--by thread)")
	fs.BoolVarP(&v.lockAddr, "lock-addr", "l", false, "summary by lock (--by lock)")
	fs.BoolVarP(&v.lockCgroup, "lock-cgroup", "g", false, "summary by cgroup of the waiters (--by cgroup)")
	fs.BoolVar(&v.lockOwner, "lock-owner", false, "summary by lock owner (--by owner); a capture charges the waits to owners for it (--owners)")
	fs.StringVar(&v.by, "by", "caller", "summary rows by `WHAT`: caller (type and caller), thread (pid and tid, -t), lock (-l), cgroup (-g), or owner (the lock owners waits were charged to, with --owners)")
	fs.StringSliceVarP(&v.types, "type-filter", "Y", nil, "only these lock `TYPES` (comma list, e.g. mutex,rwsem:W; rwsem is rwsem:R and rwsem:W)")
	fs.StringSliceVarP(&v.locks, "lock-filter", "L", nil, "only waits on these locks: `LIST` of addresses (0x...), ids as the report shows them, or names (mmap_lock)")
	fs.StringSliceVarP(&v.frames, "callstack-filter", "S", nil, "only waits with a stack frame containing one of these `SUBSTRINGS`")
	fs.StringSliceVar(&v.tids, "tid", nil, "only waits of these threads (`TID`, repeatable or comma list)")
	fs.StringVarP(&v.separator, "field-separator", "x", "", "summary as values separated by `SEP`, after a \"# output:\" header, times in nanoseconds")
	addRenamed(fs, "sort", "", "key")
	addRenamed(fs, "fields", "", "field")
	addRenamed(fs, "types", "", "type-filter")
}

// addCgroupFilter adds -G: the capture's and report's help differ.
func (v *summaryFlags) addCgroupFilter(fs *pflag.FlagSet, usage string) {
	fs.StringArrayVarP(&v.cgroups, "cgroup-filter", "G", nil, usage)
	addRenamed(fs, "cgroup", "", "cgroup-filter")
}

// summaryOptions checks the flags and returns what they ask of the summary, the filters included.
func (v summaryFlags) summaryOptions() (report.SummaryOptions, error) {
	by, err := v.grouping()
	if err != nil {
		return report.SummaryOptions{}, err
	}
	for _, l := range v.locks {
		if l == "-" || strings.HasSuffix(l, ".json") || isRegularFile(l) {
			return report.SummaryOptions{}, usagef("-L %s: -L is perf's --lock-filter now, a filter of lock names and addresses: give the lock catalogue with --locks %s", l, l)
		}
	}
	if _, err := capture.NewFilter(v.locks, nil); err != nil {
		return report.SummaryOptions{}, usagef("--lock-filter: %v", err)
	}
	filter, err := capture.NewFilter(v.locks, v.frames)
	if err != nil {
		return report.SummaryOptions{}, usagef("--callstack-filter: %v", err)
	}
	o := report.SummaryOptions{By: by, Sort: capture.GroupStat(v.key), Filter: filter, Separator: v.separator}
	for _, f := range v.fields {
		o.Fields = append(o.Fields, capture.GroupStat(strings.TrimSpace(f)))
	}
	if o.Types, err = typeNames(v.types); err != nil {
		return report.SummaryOptions{}, err
	}
	if v.cgroups != nil {
		o.Cgroups = []string{}
		for _, list := range v.cgroups {
			for _, path := range strings.Split(list, ",") {
				if path = strings.TrimSpace(path); path != "" {
					o.Cgroups = append(o.Cgroups, path)
				}
			}
		}
		if len(o.Cgroups) == 0 {
			return report.SummaryOptions{}, usagef("empty --cgroup-filter list (give cgroup paths, e.g. -G /system.slice/cron.service, or leave out -G for all)")
		}
	}
	if o.TIDs, err = idList("--tid", "thread", v.tids); err != nil {
		return report.SummaryOptions{}, err
	}
	if v.separator != "" && strings.ContainsAny(v.separator, "\n\r") {
		return report.SummaryOptions{}, usagef("--field-separator %q: a separator within a line, e.g. -x ,", v.separator)
	}
	for _, check := range []struct {
		flag string
		o    report.SummaryOptions
	}{{"--by", report.SummaryOptions{By: o.By}}, {"--key", report.SummaryOptions{Sort: o.Sort}}, {"--field", report.SummaryOptions{Fields: o.Fields}}} {
		if err := check.o.Validate(); err != nil {
			return report.SummaryOptions{}, usagef("%s: %v", check.flag, err)
		}
	}
	return o, nil
}

// grouping is the summary's view: --by, or one of perf's -t, -l, -g, and --lock-owner.
func (v summaryFlags) grouping() (string, error) {
	var chosen []string
	by := v.by
	for _, view := range []struct {
		set        bool
		flag, name string
	}{{v.threads, "-t", "thread"}, {v.lockAddr, "-l", "lock"}, {v.lockCgroup, "-g", "cgroup"}, {v.lockOwner, "--lock-owner", report.OwnerView}} {
		if view.set {
			chosen = append(chosen, view.flag)
			by = view.name
		}
	}
	switch {
	case len(chosen) > 1:
		return "", usagef("%s: one summary at a time: choose one", strings.Join(chosen, " and "))
	case len(chosen) == 1 && v.by != "caller" && v.by != by:
		return "", usagef("%s and --by %s: one summary at a time: choose one", chosen[0], v.by)
	}
	return by, nil
}

// typeNames checks the values of -Y: nil for none, an error for an empty list.
func typeNames(values []string) ([]string, error) {
	if values == nil {
		return nil, nil
	}
	if len(values) == 0 {
		return nil, usagef("empty --type-filter list (name lock types, e.g. -Y mutex,rwsem:W, or leave out -Y for all)")
	}
	names := []string{}
	for _, name := range values {
		if name = strings.TrimSpace(name); name == "" {
			return nil, usagef("empty lock type in --type-filter %q (name lock types, e.g. -Y mutex,rwsem:W, or leave out -Y for all)", strings.Join(values, ","))
		}
		names = append(names, name)
	}
	return names, nil
}

// idList parses a list of process or thread ids of flag: nil for none.
func idList(flag, what string, values []string) ([]uint32, error) {
	if values == nil {
		return nil, nil
	}
	if len(values) == 0 {
		return nil, usagef("empty %s list (give %s ids, e.g. %s 1234,5678, or leave it out for all)", flag, what, flag)
	}
	ids := []uint32{}
	for _, s := range values {
		id, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
		if err != nil || id == 0 {
			return nil, usagef("%s %q: not a %s id (want a positive number)", flag, s, what)
		}
		ids = append(ids, uint32(id))
	}
	return ids, nil
}

func isBool(s string) bool {
	_, err := strconv.ParseBool(s)
	return err == nil
}

func isRegularFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// addRenamed adds old, klockstat's spelling of the flag now named current, hidden from the help: it
// sets the same value, and noteRenamed says it is deprecated.
func addRenamed(fs *pflag.FlagSet, old, oldShort, current string) {
	f := fs.Lookup(current)
	fs.AddFlag(&pflag.Flag{
		Name: old, Shorthand: oldShort, Value: f.Value, DefValue: f.DefValue, NoOptDefVal: f.NoOptDefVal,
		Usage: f.Usage, Hidden: true, Annotations: map[string][]string{renamedTo: {current}},
	})
}

// renamedTo is the annotation of a flag addRenamed added: the flag's name now.
const renamedTo = "klockstat-renamed-to"

// noteRenamed writes a one-line note for each old spelling given on the command line.
func noteRenamed(fs *pflag.FlagSet) {
	fs.Visit(func(f *pflag.Flag) {
		current, ok := f.Annotations[renamedTo]
		if !ok {
			return
		}
		old := "--" + f.Name
		if f.Shorthand != "" {
			old = "-" + f.Shorthand + "/" + old
		}
		fmt.Fprintf(fs.Output(), "klockstat: note: %s is deprecated: it is %s now, as in perf lock contention\n", old, spelling(fs.Lookup(current[0])))
	})
}

// spelling is how the help names a flag: "-E/--entries".
func spelling(f *pflag.Flag) string {
	if f.Shorthand != "" {
		return "-" + f.Shorthand + "/--" + f.Name
	}
	return "--" + f.Name
}

// movedShorthands are klockstat's letters that perf gives another meaning: a value after one is
// refused by movedFlagError.
var movedShorthands = map[string]string{
	"t": "-t is perf's --threads now, a summary by thread: filter lock types with -Y/--type-filter",
	"l": "-l is perf's --lock-addr now, a summary by lock: filter locks with -L/--lock-filter",
}

// movedFlagError is the refusal of an old use of -t or -l in args: "-t mutex", "-tmutex" or
// "-t=mutex", or nil. The commands call it when the command line fails to parse, or leaves an
// argument it cannot take: a value of one of these flags, no longer taking one.
func movedFlagError(args []string, parseErr error) error {
	for i, arg := range args {
		if arg == "--" {
			break
		}
		if len(arg) < 2 || arg[0] != '-' || arg[1] == '-' {
			continue
		}
		why, moved := movedShorthands[arg[1:2]]
		switch {
		case !moved:
		case len(arg) == 2 && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			return usagef("%s %s: %s", arg, args[i+1], why)
		case len(arg) > 2 && parseErr != nil && (strings.Contains(parseErr.Error(), " in -"+arg[2:]) || arg[2] == '=' && !isBool(arg[3:])):
			return usagef("%s: %s", arg, why)
		}
	}
	return nil
}
