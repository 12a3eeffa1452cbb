package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPlanOutputsLeavesFilesAsTheyWere checks that the check before a capture changes nothing: an
// existing file keeps its content, a new one is not left behind, nor is a temporary file.
func TestPlanOutputsLeavesFilesAsTheyWere(t *testing.T) {
	dir := t.TempDir()
	keep, fresh := filepath.Join(dir, "keep.json"), filepath.Join(dir, "new.html")
	writeText(t, keep, "precious")
	if _, err := planOutputs([]output{{flag: "--json", path: keep}, {flag: "--output", path: fresh}}, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(keep); string(b) != "precious" {
		t.Errorf("planOutputs changed %s to %q", keep, b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("planOutputs left %d files in %s, want only keep.json", len(entries), dir)
	}
}

// TestWriteOutputKeepsThePreviousFile checks that a write that fails halfway (a full disk, an
// encoding error) leaves the file it would replace whole, and no temporary file.
func TestWriteOutputKeepsThePreviousFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	writeText(t, path, "the previous report")
	failing := output{flag: "--output", path: path, write: func(w io.Writer) error {
		io.WriteString(w, "half a rep")
		return errors.New("no space left on device")
	}}
	dests, err := planOutputs([]output{failing}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeAll([]output{failing}, dests, io.Discard); err == nil || !strings.Contains(err.Error(), "writing --output "+path+": no space left") {
		t.Errorf("writeAll error %v, want it to name --output and the failure", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "the previous report" {
		t.Errorf("a failed write left %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a failed write left %d files, want the previous report only", len(entries))
	}
}

// TestWriteOutputModes checks that a file with raw kernel addresses is readable by its owner only,
// and that others keep the usual mode, replacing a file of another mode.
func TestWriteOutputModes(t *testing.T) {
	dir := t.TempDir()
	secret, public := filepath.Join(dir, "c.json"), filepath.Join(dir, "r.html")
	writeText(t, secret, "old") // 0644: the new file must not inherit it
	outs := []output{
		{flag: "--json", path: secret, secret: true, write: func(w io.Writer) error { _, err := io.WriteString(w, "{}"); return err }},
		{flag: "--output", path: public, write: func(w io.Writer) error { _, err := io.WriteString(w, "<html>"); return err }},
	}
	dests, err := planOutputs(outs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeAll(outs, dests, io.Discard); err != nil {
		t.Fatal(err)
	}
	umask := os.FileMode(syscall.Umask(0))
	syscall.Umask(int(umask))
	for path, want := range map[string]os.FileMode{secret: 0o600, public: 0o666 &^ umask} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", path, st.Mode().Perm(), want)
		}
	}
}

// TestPlanOutputsNamesTheProblem checks the line for each output that cannot be written.
func TestPlanOutputsNamesTheProblem(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("nowhere/r.html", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	socket, err := net.Listen("unix", filepath.Join(dir, "socket"))
	if err != nil {
		t.Fatal(err)
	}
	defer socket.Close()
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "no", "r.html"), "--output " + filepath.Join(dir, "no", "r.html") + ": cannot create output file: no directory " + filepath.Join(dir, "no")},
		{dir, "--output " + dir + ": is a directory"},
		{filepath.Join(dir, "dangling"), ": a symlink to nowhere/r.html, which does not exist"},
		{filepath.Join(dir, "socket"), "--output " + filepath.Join(dir, "socket") + ": is a socket, not a file (give a file name, or - for stdout)"},
	} {
		_, err := planOutputs([]output{{flag: "--output", path: tc.path}}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("planOutputs(%s) = %v, want an error containing %q", tc.path, err, tc.want)
		}
	}
}

// TestPlanOutputsDevNull checks that /dev/null is no clash when stdout goes there too, as under
// cron: writing to it in place is the same as writing to stdout.
func TestPlanOutputsDevNull(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	stdout := os.Stdout
	os.Stdout = null
	defer func() { os.Stdout = stdout }()
	dests, err := planOutputs([]output{{flag: "--json", path: os.DevNull}, {flag: "--output", path: os.DevNull}}, nil)
	if err != nil {
		t.Fatalf("--json and --output to /dev/null with stdout there: %v", err)
	}
	for _, d := range dests {
		if d.stdout || !d.inPlace {
			t.Errorf("/dev/null planned as %+v, want written in place", d)
		}
	}
}

// TestPlanOutputsStreamsToAFIFO checks that a named pipe with a reader is written in place: it
// streams the output to another program, as a pipe at /dev/fd/N does.
func TestPlanOutputsStreamsToAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	dests, err := planOutputs([]output{{flag: "--json", path: fifo}}, nil)
	if err != nil {
		t.Fatalf("--json to a FIFO with a reader: %v", err)
	}
	if !dests[0].inPlace {
		t.Errorf("FIFO planned as %+v, want written in place", dests[0])
	}
}

// TestNamedTempFileReplaces checks the file system without O_TMPFILE's way to replace a file: a
// named new file, whose name says which process writes it, renamed over the output.
func TestNamedTempFileReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.html")
	writeText(t, path, "the previous report")
	f, err := createTemp(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if prefix := fmt.Sprintf(".r.html.%d.", os.Getpid()); !strings.HasPrefix(filepath.Base(f.Name()), prefix) {
		t.Errorf("new file named %s, want %s followed by a random part: no later run could tell whose it is", f.Name(), prefix)
	}
	if _, err := io.WriteString(f, "the new report"); err != nil {
		t.Fatal(err)
	}
	if err := (&tempFile{File: f, name: f.Name()}).replace(path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "the new report" {
		t.Errorf("r.html holds %q after the replace", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory after the replace, want r.html only", len(entries))
	}
}
