package cli

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/klockstat/klockstat/export"
	"github.com/klockstat/klockstat/report"
)

// exportPaths are the files --pprof, --folded and --csv write, "" for none and "-" for stdout.
type exportPaths struct {
	pprof, folded, csv string
}

// addFlags adds the export flags, which a capture and `klockstat report` share.
func (e *exportPaths) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&e.pprof, "pprof", "", "also write the waits as a gzipped pprof profile to `FILE` (go tool pprof, Pyroscope, Parca)")
	fs.StringVar(&e.folded, "folded", "", "also write the waits as folded stacks to `FILE` (flamegraph.pl, inferno, speedscope)")
	fs.StringVar(&e.csv, "csv", "", "also write one CSV row per record to `FILE` (spreadsheets)")
}

// outputs are the exports asked for, writing an: its addresses as ids, as in the summary and the
// HTML report of the same analysis, unless rawAddresses. A nil an is enough to plan them.
func (e exportPaths) outputs(an *report.Analysis, rawAddresses bool) []output {
	var outs []output
	for _, out := range []struct {
		flag, path string
		write      func(io.Writer, export.Analysis) error
	}{
		{"--pprof", e.pprof, export.WritePprof},
		{"--folded", e.folded, export.WriteFolded},
		{"--csv", e.csv, export.WriteCSV},
	} {
		outs = append(outs, output{flag: out.flag, path: out.path, secret: rawAddresses,
			write: func(w io.Writer) error { return out.write(w, an) }})
	}
	return outs
}
