// Command whatif checks `klockstat whatif` against reality: a workload whose lock hold time is a
// parameter ({SIZE} in its command, the bytes each operation writes under the lock) is run through
// klockstat whatif at its normal size, which predicts the gain if the lock's contended holds were
// halved; then the workload runs at the normal size and at half of it, alternating, without any
// delay, and the measured gain is set beside the prediction. It prints a Markdown table row for
// BENCHMARKS.md.
//
// As root:
//
//	go run ./bench/whatif -size 262144 -metric 'lock=inode .*ops_per_sec=([0-9.]+)' -unit write -- \
//	    ./contend -lock inode -threads 4 -duration 4s -write-size {SIZE}
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/klockstat/klockstat/internal/host"
	"github.com/klockstat/klockstat/linfit"
	"github.com/klockstat/klockstat/whatif"
)

func main() {
	size := flag.Int("size", 256<<10, "the normal `BYTES` of {SIZE}; the validation halves it")
	metric := flag.String("metric", "", "regular expression of the workload's throughput, as klockstat whatif --metric")
	unit := flag.String("unit", "op", "what one unit of work is called")
	repeat := flag.Int("repeat", 4, "runs per delay size and per hold")
	klockstat := flag.String("klockstat", "", "the klockstat binary (default: built from this module)")
	lock := flag.String("lock", "", "klockstat whatif --lock (default: its choice)")
	extra := flag.String("whatif-flags", "", "more flags of klockstat whatif, space-separated")
	keep := flag.String("json", "", "keep the experiment's JSON in `FILE`")
	flag.Parse()
	if *keep != "" {
		*extra += " --json " + *keep
	}
	if err := run(*size, *metric, *unit, *repeat, *klockstat, *lock, strings.Fields(*extra), flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "whatif bench:", err)
		os.Exit(1)
	}
}

func run(size int, metric, unit string, repeat int, bin, lock string, extra, command []string) error {
	if len(command) == 0 || metric == "" {
		return fmt.Errorf("give -metric and a command with {SIZE} after the flags")
	}
	re, err := regexp.Compile(metric)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "whatif-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin == "" {
		bin = filepath.Join(dir, "klockstat")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			return fmt.Errorf("building klockstat: %v\n%s", err, out)
		}
	}
	at := func(n int) []string {
		out := make([]string, len(command))
		for i, a := range command {
			out[i] = strings.ReplaceAll(a, "{SIZE}", strconv.Itoa(n))
		}
		return out
	}

	// The prediction, from delays at the normal size.
	jsonPath := filepath.Join(dir, "whatif.json")
	for i, f := range extra {
		if f == "--json" && i+1 < len(extra) {
			jsonPath = extra[i+1] // kept
		}
	}
	args := []string{"whatif", "-q", "-o", "", "--json", jsonPath, "--metric", metric, "--unit", unit, "--repeat", strconv.Itoa(repeat)}
	if lock != "" {
		args = append(args, "--lock", lock)
	}
	args = append(append(append(args, extra...), "--"), at(size)...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("klockstat %s: %w", strings.Join(args, " "), err)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	e, err := whatif.Parse(data)
	if err != nil {
		return err
	}
	r := e.Read()
	if r.Fit == nil {
		return fmt.Errorf("no fit: %s", r.FitError)
	}
	var half *whatif.Prediction
	for i, p := range r.Predictions {
		if p.Shrink == 0.5 {
			half = &r.Predictions[i]
		}
	}

	// The measurement: normal and half size, alternating, nothing attached.
	var x, y []float64
	for i := range 2 * repeat {
		half := i % 2
		argv := at(size >> half)
		start := time.Now()
		var out bytes.Buffer
		c := exec.Command(argv[0], argv[1:]...)
		c.Stdout, c.Stderr = io.MultiWriter(&out, os.Stderr), os.Stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
		}
		m := re.FindAllSubmatch(out.Bytes(), -1)
		if len(m) == 0 {
			return fmt.Errorf("no match of %q in the output of %s", metric, strings.Join(argv, " "))
		}
		v, err := strconv.ParseFloat(string(m[len(m)-1][1]), 64)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "whatif bench: size %d: %.1f %s/s in %v\n", size>>half, v, unit, time.Since(start).Round(time.Millisecond))
		x, y = append(x, float64(half)), append(y, v)
	}
	line, err := linfit.Fit(x, y)
	if err != nil {
		return err
	}
	// The slope is the difference of the means; as a share of the normal size's mean, the gain.
	gain, ci := line.Slope/line.Intercept, line.SlopeCI(whatif.Confidence)/line.Intercept

	m := host.Read()
	fmt.Printf("%s, %s, %d CPUs\n\n", m.CPUModel, m.Kernel, m.CPUs)
	fmt.Printf("| workload | lock | contended per %s | contended hold (mean) | slope (95%%) | R² | predicted gain, holds halved (95%%) | measured gain, size halved (95%%) |\n", unit)
	fmt.Printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	predicted := "none"
	if half != nil {
		predicted = fmt.Sprintf("%s (%s to %s)", whatif.FormatGain(half.Gain), whatif.FormatGain(half.GainLo), whatif.FormatGain(half.GainHi))
	}
	fmt.Printf("| `%s` | %s %s | %.3g | %.1f us | %.2f ± %.2f | %.2f | %s | %+.1f%% ± %.1f%% |\n",
		strings.Join(at(size), " "), e.Target.Type, e.Target.Label, r.ContendedPerWork, r.HoldMeanNS/1e3, r.Fit.Slope, r.SlopeCI, r.Fit.R2, predicted, 100*gain, 100*ci)
	fmt.Printf("\n%s\n", e.Quote(r))
	for _, n := range r.Notes {
		fmt.Printf("note: %s\n", n)
	}
	return nil
}
