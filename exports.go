package main

import (
	"crypto/rand"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/export"
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

// write writes the exports asked for. Kernel addresses become ids as in the HTML report, unless
// rawAddresses, under one key for all of them, so that they name a lock by the same id.
func (e exportPaths) write(c *capture.Capture, rawAddresses bool, stdout io.Writer) error {
	var hasher *capture.AddressHasher
	if !rawAddresses {
		key := make([]byte, 32)
		rand.Read(key) // never fails: crypto/rand.Read crashes the program rather than return an error
		hasher = capture.NewAddressHasher(key)
	}
	for _, out := range []struct {
		flag, path string
		write      func(io.Writer, *capture.Capture, *capture.AddressHasher) error
	}{
		{"--pprof", e.pprof, export.WritePprof},
		{"--folded", e.folded, export.WriteFolded},
		{"--csv", e.csv, export.WriteCSV},
	} {
		if out.path == "" {
			continue
		}
		if err := writeFile(out.path, stdout, func(w io.Writer) error { return out.write(w, c, hasher) }); err != nil {
			return fmt.Errorf("writing %s: %w", out.flag, err)
		}
	}
	return nil
}
