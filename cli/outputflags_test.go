package cli

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMainExitStatus checks what Main prints and returns: nothing wrong is 0, a failure 1 with
// one "klockstat: " line, a command-line mistake 2 with the hint, and --help 0.
func TestMainExitStatus(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.json")
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		stdout string
		stderr []string
	}{
		{"version", []string{"version"}, 0, "klockstat 1.2.3 (", nil},
		{"usage mistake", []string{"-n", "0"}, 2, "", []string{"klockstat: --top 0: must be at least 1\n", "Run 'klockstat --help' for usage.\n"}},
		{"failure", []string{"report", "-o", "", missing}, 1, "", []string{"klockstat: ", "nope.json"}},
		{"help", []string{"--help"}, 0, "", []string{"Usage: klockstat [flags] [-- COMMAND [ARGS...]]"}},
		{"report help", []string{"report", "-h"}, 0, "", []string{"Usage: klockstat report INPUT [flags]"}},
		{"diff help", []string{"diff", "--help"}, 0, "", []string{"Usage: klockstat diff BEFORE AFTER [flags]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			status := Main("1.2.3", tc.args, strings.NewReader(""), &stdout, &stderr)
			if status != tc.status {
				t.Errorf("status %d, want %d (stderr %q)", status, tc.status, stderr.String())
			}
			if !strings.HasPrefix(stdout.String(), tc.stdout) || tc.stdout == "" && stdout.Len() > 0 {
				t.Errorf("stdout %q, want it to start with %q", stdout.String(), tc.stdout)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr %q lacks %q", stderr.String(), want)
				}
			}
			if tc.status == 1 && strings.Contains(stderr.String(), "--help") {
				t.Errorf("a failure that is no usage mistake hints at --help: %q", stderr.String())
			}
		})
	}
}

// TestPageFlagsInEveryCommand checks that the capture, report and diff take the page flags alike,
// and that only the capture and report write a capture's outputs.
func TestPageFlagsInEveryCommand(t *testing.T) {
	pageFlags := []string{"-o, --output FILE", "-n, --top int", "--raw-addresses", "-q, --quiet"}
	captureFlags := []string{"--json FILE", "--pprof FILE", "--folded FILE", "--csv FILE", "-k, --sort KEY", "-l, --lock-filter LIST"}
	for _, tc := range []struct {
		command       []string
		inputs        []string
		defaultOutput string
		capture       bool
	}{
		{nil, nil, `(default "klockstat-report.html")`, true},
		{[]string{"report"}, []string{"in.json"}, `(default "klockstat-report.html")`, true},
		{[]string{"diff"}, []string{"a.json", "b.json"}, `(default "klockstat-diff.html")`, false},
	} {
		var stdout, stderr bytes.Buffer
		if status, err := run(append(tc.command, "--help"), &stdout, &stderr); err != nil || status != 0 {
			t.Fatalf("%q --help: status %d, err %v", tc.command, status, err)
		}
		help := stderr.String()
		for _, flag := range append(pageFlags, tc.defaultOutput) {
			if !strings.Contains(help, flag) {
				t.Errorf("%q --help lacks %q:\n%s", tc.command, flag, help)
			}
		}
		for _, flag := range captureFlags {
			if strings.Contains(help, flag) != tc.capture {
				t.Errorf("%q --help: has %q = %v, want %v", tc.command, flag, !tc.capture, tc.capture)
			}
		}
		for _, args := range [][]string{{"-n", "0"}, {"--top", "-3"}} {
			_, err := run(slices.Concat(tc.command, args, tc.inputs), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), "must be at least 1") {
				t.Errorf("%q %q: err %v, want --top rejected", tc.command, args, err)
			}
		}
	}
}
