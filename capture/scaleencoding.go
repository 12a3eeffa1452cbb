package capture

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// SweepFormatVersion is the JSON "sweep_version" WriteSweep writes and the only one ParseSweep
// accepts. A sweep holds captures in the capture format of FormatVersion.
const SweepFormatVersion = 1

// Bounds of a sweep ParseSweep accepts, far above what `klockstat scale` writes (a level per power of
// two up to twice the CPUs, a few repeats): a forged file cannot make the report draw a million
// levels or runs. The captures are bounded as Parse bounds them.
const (
	MaxSweepLevels = 64
	MaxSweepRuns   = 1024 // over all levels
	MaxSweepLevel  = 1 << 20
	maxTailLines   = 100
	// MinSweepMetric and MaxSweepMetric bound a run's metric (besides 0), far beyond a throughput
	// that a command prints, so that every figure derived from it (work, speedup, wait per unit of
	// work) stays a finite number.
	MinSweepMetric = 1e-9
	MaxSweepMetric = 1e18
)

// ErrUnsupportedSweepVersion is returned by ParseSweep for a sweep of another format version.
var ErrUnsupportedSweepVersion = errors.New("unsupported sweep format version")

// IsSweep reports whether data looks like a sweep, not a capture: a JSON object with a
// "sweep_version" field. It decides which parser to try; the parser decides whether it is one.
func IsSweep(data []byte) bool {
	var header struct {
		Version *json.RawMessage `json:"sweep_version"`
	}
	return jsonv2.Unmarshal(data, &header, jsonv2.RejectUnknownMembers(false)) == nil && header.Version != nil
}

// Write encodes s as indented JSON with a trailing newline; nil lists are written as [].
func (s *Sweep) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("encoding sweep: %w", err)
	}
	return nil
}

// MarshalJSON implements json.Marshaler.
func (s Sweep) MarshalJSON() ([]byte, error) {
	type plain Sweep
	s.CommandLine = nonNil(s.CommandLine)
	s.Command = nonNil(s.Command)
	s.Levels = nonNil(s.Levels)
	return json.Marshal(plain(s))
}

// MarshalJSON implements json.Marshaler.
func (l SweepLevel) MarshalJSON() ([]byte, error) {
	type plain SweepLevel
	l.Runs = nonNil(l.Runs)
	return json.Marshal(plain(l))
}

// MarshalJSON implements json.Marshaler.
func (r SweepRun) MarshalJSON() ([]byte, error) {
	type plain SweepRun
	r.Argv = nonNil(r.Argv)
	return json.Marshal(plain(r))
}

// sweepJSON is a sweep as it is decoded: the captures are kept as JSON text, for Parse to decode
// and validate each.
type sweepJSON struct {
	Version     *int      `json:"sweep_version"`
	Tool        string    `json:"tool"`
	ToolVersion string    `json:"tool_version"`
	CommandLine []string  `json:"command_line"`
	Command     []string  `json:"command"`
	Metric      string    `json:"metric"`
	CPUs        int       `json:"cpus"`
	Start       time.Time `json:"start"`
	Interrupted bool      `json:"interrupted"`
	Cost        SweepCost `json:"cost"`
	Levels      []struct {
		N    int `json:"n"`
		Runs []struct {
			Argv     []string       `json:"argv"`
			WallNS   int64          `json:"wall_ns"`
			Exit     *int           `json:"exit"`
			Metric   *float64       `json:"metric"`
			Failed   string         `json:"failed"`
			Tail     []string       `json:"tail"`
			Matched  string         `json:"matched"`
			Stop     string         `json:"stop"`
			Overhead int64          `json:"overhead_ns"`
			Capture  jsontext.Value `json:"capture"`
		} `json:"runs"`
	} `json:"levels"`
}

// ParseSweep decodes and validates a sweep written by Write: its version, the bounds above, levels
// positive and increasing, and each capture as Parse validates one. Fields it does not know are
// ignored.
func ParseSweep(data []byte) (*Sweep, error) {
	var in sweepJSON
	if err := jsonv2.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("decoding sweep: %w", err)
	}
	if in.Version == nil {
		return nil, errors.New(`decoding sweep: no "sweep_version" field, not a klockstat sweep`)
	}
	if *in.Version != SweepFormatVersion {
		return nil, fmt.Errorf("%w %d: this klockstat reads version %d", ErrUnsupportedSweepVersion, *in.Version, SweepFormatVersion)
	}
	if len(in.Levels) > MaxSweepLevels {
		return nil, fmt.Errorf("invalid sweep: %d levels, more than the %d klockstat reads", len(in.Levels), MaxSweepLevels)
	}
	if in.CPUs < 0 {
		return nil, fmt.Errorf("invalid sweep: %d CPUs", in.CPUs)
	}
	if in.Cost.StartNS < 0 || in.Cost.BetweenNS < 0 {
		return nil, fmt.Errorf("invalid sweep: cost start_ns %d, between_ns %d: want 0 or more", in.Cost.StartNS, in.Cost.BetweenNS)
	}
	s := &Sweep{
		Version: *in.Version, Tool: in.Tool, ToolVersion: in.ToolVersion, CommandLine: in.CommandLine, Command: in.Command,
		Metric: in.Metric, CPUs: in.CPUs, Start: in.Start, Interrupted: in.Interrupted, Cost: in.Cost,
	}
	if err := checkSweepStrings(s.CommandLine, s.Command); err != nil {
		return nil, fmt.Errorf("invalid sweep: command: %w", err)
	}
	runs := 0
	for i, l := range in.Levels {
		if l.N < 1 || l.N > MaxSweepLevel {
			return nil, fmt.Errorf("invalid sweep: level %d out of range (want 1 to %d)", l.N, MaxSweepLevel)
		}
		if i > 0 && l.N <= in.Levels[i-1].N {
			return nil, fmt.Errorf("invalid sweep: level %d after %d, levels must increase", l.N, in.Levels[i-1].N)
		}
		if runs += len(l.Runs); runs > MaxSweepRuns {
			return nil, fmt.Errorf("invalid sweep: more than %d runs", MaxSweepRuns)
		}
		level := SweepLevel{N: l.N}
		for j, r := range l.Runs {
			run := SweepRun{Argv: r.Argv, WallNS: r.WallNS, Exit: r.Exit, Metric: r.Metric, Failed: r.Failed, Tail: r.Tail, Matched: r.Matched, Stop: r.Stop, OverheadNS: r.Overhead}
			if err := run.validate(); err != nil {
				return nil, fmt.Errorf("invalid sweep: level %d run %d: %w", l.N, j+1, err)
			}
			if len(r.Capture) > 0 && r.Capture.Kind() != 'n' {
				c, err := Parse(r.Capture)
				if err != nil {
					return nil, fmt.Errorf("level %d run %d: %w", l.N, j+1, err)
				}
				run.Capture = c
			}
			level.Runs = append(level.Runs, run)
		}
		s.Levels = append(s.Levels, level)
	}
	return s, nil
}

// validate checks what a run holds besides its capture.
func (r SweepRun) validate() error {
	switch {
	case r.WallNS < 0 || r.OverheadNS < 0:
		return fmt.Errorf("wall_ns %d, overhead_ns %d: want 0 or more", r.WallNS, r.OverheadNS)
	case r.Metric != nil && !(*r.Metric == 0 || *r.Metric >= MinSweepMetric && *r.Metric <= MaxSweepMetric):
		return fmt.Errorf("metric %g, want 0 or a number from %g to %g", *r.Metric, MinSweepMetric, MaxSweepMetric)
	case len(r.Tail) > maxTailLines:
		return fmt.Errorf("%d lines of output, at most %d", len(r.Tail), maxTailLines)
	case strings.ContainsRune(r.Failed, '\n') || strings.ContainsRune(r.Stop, '\n') || strings.ContainsRune(r.Matched, '\n'):
		return errors.New("failure, stop or matched line of more than one line")
	}
	return checkSweepStrings(r.Argv, r.Tail, []string{r.Matched, r.Stop})
}

// maxArgs bounds a command line: Linux takes at most 2 MiB of arguments.
const maxArgs = 1 << 16

// checkSweepStrings refuses a list longer than maxArgs and a string longer than MaxStringLen.
func checkSweepStrings(lists ...[]string) error {
	for _, l := range lists {
		if len(l) > maxArgs {
			return fmt.Errorf("a list of %d strings, more than %d", len(l), maxArgs)
		}
		for _, s := range l {
			if len(s) > MaxStringLen {
				return fmt.Errorf("a string of %d bytes, more than the %d of a capture's longest", len(s), MaxStringLen)
			}
		}
	}
	return nil
}
