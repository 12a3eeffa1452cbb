package cli

import (
	"errors"
	"io"
	"path/filepath"
	"testing"
)

// TestSavedCapture: the summary's next steps name the JSON written, else the capture a report read,
// else the HTML report written, as the user wrote the path; never stdout, a device, an output that
// failed, nor stdin.
func TestSavedCapture(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "before.json")
	writeText(t, in, "{}")
	json, html := filepath.Join(dir, "c.json"), filepath.Join(dir, "r.html")
	report := []input{{reportInput, in}}
	for _, tc := range []struct {
		name       string
		json, html string
		jsonFails  bool
		ins        []input
		want       string
	}{
		{"json and html written", json, html, false, nil, json},
		{"html only", "", html, false, nil, html},
		{"json to stdout", "-", html, false, nil, html},
		{"json failed", json, html, true, nil, html},
		{"html to a device", "", "/dev/null", false, nil, ""},
		{"nothing written", "", "", false, nil, ""},
		{"report of a file", "", html, false, report, in},
		{"report writing json", json, html, false, report, json},
		{"report of stdin", "", html, false, []input{{reportInput, "-"}}, html},
		{"a capture's other input", "", "", false, []input{{"--locks", in}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write := func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }
			writeJSON := write
			if tc.jsonFails {
				writeJSON = func(io.Writer) error { return errors.New("no space left on device") }
			}
			outs := []output{{flag: "--json", path: tc.json, write: writeJSON}, {flag: "--output", path: tc.html, write: write}}
			dests, err := planOutputs(outs, tc.ins)
			if err != nil {
				t.Fatal(err)
			}
			if err := writeAll(outs, dests, io.Discard); (err != nil) != tc.jsonFails {
				t.Fatalf("writeAll: %v", err)
			}
			if got := savedCapture(outs, dests, tc.ins); got != tc.want {
				t.Errorf("savedCapture = %q, want %q", got, tc.want)
			}
		})
	}
}
