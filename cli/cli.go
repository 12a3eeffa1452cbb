// Package cli is klockstat's command line: the capture (a fixed window or
// while a command runs), `klockstat report`, `klockstat diff`, `klockstat
// scale` and `klockstat version`, their flags, and the files they write. The
// klockstat command is a call to Main.
package cli

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/klockstat/klockstat/internal/termsafe"
	"github.com/spf13/pflag"
)

// Main runs one klockstat invocation with args, the command line without the
// program's name, and returns the process exit status. version is the
// program's, as `klockstat version` and a capture's metadata show it. Errors
// are printed on stderr, one "klockstat: " line each; a mistake on the command
// line exits with status 2.
func Main(version string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	inv := invocation{version: version, stdin: stdin, stdout: stdout, stderr: stderr}
	status, err := inv.run(args)
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "klockstat: %s\n", termsafe.String(line)) // errors quote files, processes, kernels
		}
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(stderr, "Run 'klockstat --help' for usage.")
			status = 2
		} else if status == 0 {
			status = 1
		}
	}
	return status
}

// invocation is what one run of klockstat is given besides its arguments.
type invocation struct {
	version string
	// stdin is read for an input named "-" and handed to a command klockstat runs, as are stdout
	// and stderr.
	stdin          io.Reader
	stdout, stderr io.Writer
}

// run executes one klockstat invocation and returns the process exit status.
func (inv invocation) run(args []string) (int, error) {
	command := inv.runCapture
	if len(args) > 0 {
		switch args[0] {
		case "version":
			fmt.Fprintln(inv.stdout, inv.versionString())
			return 0, nil
		case "report":
			command, args = inv.runReport, args[1:]
		case "diff":
			command, args = inv.runDiff, args[1:]
		case "scale":
			command, args = inv.runScale, args[1:]
		case "whatif":
			command, args = inv.runWhatif, args[1:]
		}
	}
	status, err := command(args)
	if errors.Is(err, pflag.ErrHelp) {
		return 0, nil // the help is printed
	}
	return status, err
}

func (inv invocation) versionString() string {
	ebpfVersion := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/cilium/ebpf" {
				ebpfVersion = dep.Version
			}
		}
	}
	return fmt.Sprintf("klockstat %s (%s, cilium/ebpf %s, %s/%s)", inv.version, runtime.Version(), ebpfVersion, runtime.GOOS, runtime.GOARCH)
}

// usageError is a mistake on the command line: exit status 2, with a hint.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// newFlagSet is the flag set of one command: its flags listed in the order they are added, after
// usage, which the help prints with the flags' lines in place of its %s.
func newFlagSet(name, usage string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() { fmt.Fprintf(stderr, usage, fs.FlagUsages()) }
	return fs
}

// parseFlags parses args into fs: pflag.ErrHelp for --help, which the help has answered, and a
// usageError for any other failure.
func parseFlags(fs *pflag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil || errors.Is(err, pflag.ErrHelp):
		return err
	case strings.Contains(err.Error(), "missing unit in duration"):
		err = fmt.Errorf("%w (durations need a unit: 10s, 500ms, 2m)", err)
	}
	return usageError{err}
}
