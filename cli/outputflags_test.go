package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestPageFlagsInEveryCommand checks that the capture, report and diff take the page flags alike,
// and that only the capture and report write a capture's outputs.
func TestPageFlagsInEveryCommand(t *testing.T) {
	pageFlags := []string{"-o, --output FILE", "-E, --entries int", "--raw-addresses", "-q, --quiet"}
	captureFlags := []string{"--json FILE", "--pprof FILE", "--folded FILE", "--csv FILE", "-k, --key KEY", "-L, --lock-filter LIST", "-l, --lock-addr", "-x, --field-separator SEP"}
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
		for _, args := range [][]string{{"-E", "0"}, {"--entries", "-3"}} {
			_, err := run(slices.Concat(tc.command, args, tc.inputs), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), "must be at least 1") {
				t.Errorf("%q %q: err %v, want --entries rejected", tc.command, args, err)
			}
		}
	}
}
