package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
)

func TestScopeFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the collector's scope
	}{
		{[]string{"-o", "", "--", "true"}, capture.ScopeSystem},
		{[]string{"-o", "", "--scope", "command", "--", "true"}, capture.ScopeCommand},
		{[]string{"-o", "", "--scope=system", "--", "true"}, capture.ScopeSystem},
		{[]string{"-o", ""}, ""},
	} {
		var stderr bytes.Buffer
		o, err := invocation{stdin: strings.NewReader(""), stderr: &stderr}.parseCaptureFlags(tc.args)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if o.cfg.Scope != tc.want {
			t.Errorf("%q: scope %q, want %q", tc.args, o.cfg.Scope, tc.want)
		}
	}
}

func TestScopeFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "", "--scope", "command"}, "--scope command needs a command after --"},
		{[]string{"-o", "", "--scope", "tree", "--", "true"}, `--scope "tree": want command or system`},
	} {
		var stderr bytes.Buffer
		_, err := invocation{stdin: strings.NewReader(""), stderr: &stderr}.parseCaptureFlags(tc.args)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one usage line containing %q", tc.args, err, tc.want)
		}
	}
}

// scale takes --scope as a capture does, system by default.
func TestScaleScopeFlag(t *testing.T) {
	for args, want := range map[string]string{"": capture.ScopeSystem, "--scope=command": capture.ScopeCommand, "--scope=system": capture.ScopeSystem} {
		argv := append(strings.Fields(args), "-o", "", "--", "true", "{N}")
		o, err := (invocation{stdin: strings.NewReader(""), stderr: &bytes.Buffer{}}).parseScaleFlags(argv)
		if err != nil || o.cfg.Scope != want {
			t.Errorf("scale %q: scope %v (%v), want %q", argv, o, err, want)
			continue
		}
	}
	if _, err := (invocation{stdin: strings.NewReader(""), stderr: &bytes.Buffer{}}).parseScaleFlags([]string{"--scope", "tree", "--", "true", "{N}"}); err == nil || !strings.Contains(err.Error(), `--scope "tree"`) {
		t.Errorf("scale --scope tree: error %v, want it refused", err)
	}
}
