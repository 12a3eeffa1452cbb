package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klockstat/klockstat/internal/testenv"
)

// fault is one case of the fault matrix: bad input, a clash of files, a fault while writing, a
// signal. Each names what klockstat must do, and was a hang, a loss or a leak before it did.
type fault struct {
	name string
	// capture: the case loads BPF (needs root); the others must fail or work without it.
	capture bool
	// args are klockstat's arguments; the function may prepare files in dir.
	args func(t *testing.T, dir string) []string
	// prefix runs klockstat under another command, e.g. prlimit.
	prefix []string
	// stdin, when set, is fed to klockstat.
	stdin  func(t *testing.T, dir string) *os.File
	status int
	// stderr must contain each of stderr and none of notStderr.
	stderr, notStderr []string
	// check, when set, looks at what is left in dir after klockstat ended.
	check func(t *testing.T, dir, stdout string)
}

// TestFaultMatrix runs the klockstat binary on every fault of the matrix, each in a directory of its
// own with a capture x.json and a report x.html to play with.
func TestFaultMatrix(t *testing.T) {
	bin := testenv.Build(t, ".")
	for _, f := range faults() {
		t.Run(f.name, func(t *testing.T) {
			if f.capture {
				testenv.RequireRoot(t)
			}
			dir := t.TempDir()
			writeCapture(t, filepath.Join(dir, "x.json"), 1000)
			writeCapture(t, filepath.Join(dir, "x2.json"), 1500)
			argv := append(append(slices.Clone(f.prefix), bin), f.args(t, dir)...)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if f.stdin != nil {
				in := f.stdin(t, dir)
				defer in.Close()
				cmd.Stdin = in
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if status := exitStatus(t, err); status != f.status {
					t.Errorf("exit status %d, want %d\nstderr: %s", status, f.status, stderr.String())
				}
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("klockstat %q still running after a minute\nstderr: %s", cmd.Args[1:], stderr.String())
			}
			for _, want := range f.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			for _, unwanted := range f.notStderr {
				if strings.Contains(stderr.String(), unwanted) {
					t.Errorf("stderr shows %q:\n%s", unwanted, stderr.String())
				}
			}
			if f.check != nil {
				f.check(t, dir, stdout.String())
			}
		})
	}
}

func fixed(args ...string) func(*testing.T, string) []string {
	return func(*testing.T, string) []string { return args }
}

// fileIn opens path under dir as klockstat's stdin.
func fileIn(path string) func(*testing.T, string) *os.File {
	return func(t *testing.T, dir string) *os.File { return openFile(t, filepath.Join(dir, path)) }
}

func faults() []fault {
	return []fault{
		{
			name:   "a failed output does not keep the others from being written",
			args:   fixed("report", "x.json", "--json", "/dev/full", "-o", "r.html"),
			status: 1,
			stderr: []string{"klockstat: writing --json /dev/full: ", "no space left on device"},
			check: func(t *testing.T, dir, stdout string) {
				readCaptureFile(t, filepath.Join(dir, "r.html"))
				if !strings.Contains(stdout, "anon_pipe_write") || !strings.Contains(stdout, "report: r.html") {
					t.Errorf("no summary after the failed --json:\n%s", stdout)
				}
			},
		},
		{
			name: "a write cut short leaves the previous file whole",
			args: func(t *testing.T, dir string) []string {
				writeText(t, filepath.Join(dir, "r.html"), "the previous report")
				return []string{"report", "-q", "x.json", "-o", "r.html"}
			},
			prefix: []string{"prlimit", "--fsize=100000"}, // a report is a megabyte: the disk is "full" at 100 kB
			status: 1,
			stderr: []string{"klockstat: writing --output r.html: ", "file too large"},
			check: func(t *testing.T, dir, _ string) {
				if b, _ := os.ReadFile(filepath.Join(dir, "r.html")); string(b) != "the previous report" {
					t.Errorf("r.html holds %d bytes of something else, want the previous report", len(b))
				}
				if entries, _ := os.ReadDir(dir); len(entries) != 3 {
					t.Errorf("%d files left in the directory, want x.json, x2.json and r.html: a temporary file stayed", len(entries))
				}
			},
		},
		{
			name:   "the capture JSON is readable by its owner only",
			args:   fixed("report", "-q", "x.json", "--json", "c.json", "-o", "r.html"),
			status: 0,
			check: func(t *testing.T, dir, _ string) {
				for name, want := range map[string]os.FileMode{"c.json": 0o600, "r.html": 0o644} {
					if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Mode().Perm() != want {
						t.Errorf("%s: mode %v (%v), want %v", name, st.Mode().Perm(), err, want)
					}
				}
			},
		},
		{
			name:   "an output over an input is refused",
			args:   fixed("diff", "x.json", "x2.json", "-o", "x.json"),
			status: 2,
			stderr: []string{"klockstat: --output x.json is BEFORE: writing it would destroy the input"},
			check:  func(t *testing.T, dir, _ string) { readCaptureFile(t, filepath.Join(dir, "x.json")) },
		},
		{
			name: "an output over an input by another name is refused",
			args: func(t *testing.T, dir string) []string {
				return []string{"report", "./x.json", "--json", filepath.Join("..", filepath.Base(dir), "x.json")}
			},
			status: 2,
			stderr: []string{"is INPUT: writing it would destroy the input"},
		},
		{
			name:   "two outputs to one file are refused",
			args:   fixed("report", "x.json", "-o", "same", "--json", "./same"),
			status: 2,
			stderr: []string{"klockstat: --json and --output both write to the same file"},
		},
		{
			name:   "/dev/stdout and - are the same",
			args:   fixed("report", "x.json", "-o", "/dev/stdout", "--json", "-"),
			status: 2,
			stderr: []string{"klockstat: --json and --output both write to stdout"},
		},
		{
			name:   "diff reads stdin once",
			args:   fixed("diff", "-", "-"),
			stdin:  fileIn("x.json"),
			status: 2,
			stderr: []string{"klockstat: BEFORE and AFTER both read stdin"},
		},
		{
			name: "a dangling symlink at -o is named",
			args: func(t *testing.T, dir string) []string {
				if err := os.Symlink("nowhere/r.html", filepath.Join(dir, "r.html")); err != nil {
					t.Fatal(err)
				}
				return []string{"report", "x.json", "-o", "r.html"}
			},
			status: 1,
			stderr: []string{"klockstat: --output r.html: a symlink to nowhere/r.html, which does not exist"},
		},
		{
			name:   "diff -q prints no summary",
			args:   fixed("diff", "-q", "-o", "", "x.json", "x2.json"),
			status: 0,
			check: func(t *testing.T, _, stdout string) {
				if stdout != "" {
					t.Errorf("diff -q printed %q", stdout)
				}
			},
		},
		{
			name:   "report of /dev/zero is refused at once",
			args:   fixed("report", "/dev/zero", "-o", ""),
			status: 1,
			stderr: []string{"klockstat: /dev/zero: a character device, not a regular file"},
		},
		{
			name: "report of a FIFO is refused, not waited on",
			args: func(t *testing.T, dir string) []string {
				if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
					t.Fatal(err)
				}
				return []string{"report", "fifo", "-o", ""}
			},
			status: 1,
			stderr: []string{"klockstat: fifo: a named pipe (FIFO), not a regular file"},
		},
		{
			name:   "report - reads stdin",
			args:   fixed("report", "-", "-o", "r.html"),
			stdin:  fileIn("x.json"),
			status: 0,
			check: func(t *testing.T, dir, stdout string) {
				readCaptureFile(t, filepath.Join(dir, "r.html"))
				if !strings.Contains(stdout, "anon_pipe_write") {
					t.Errorf("no summary of the capture read from stdin:\n%s", stdout)
				}
			},
		},
		{
			name:   "report of stdin from /dev/zero is refused after a glance",
			args:   fixed("report", "-", "-o", ""),
			stdin:  func(t *testing.T, _ string) *os.File { return openFile(t, "/dev/zero") },
			status: 1,
			stderr: []string{"klockstat: stdin: not a klockstat capture JSON or HTML report: found binary data"},
		},
		{
			name: "not a capture is described, not quoted",
			args: func(t *testing.T, dir string) []string {
				writeText(t, filepath.Join(dir, "shadow"), "root:$6$secretsecret:19000:0:99999:7:::\n")
				if err := os.Symlink("shadow", filepath.Join(dir, "link")); err != nil {
					t.Fatal(err)
				}
				return []string{"report", "link", "-o", ""}
			},
			status:    1,
			stderr:    []string{"klockstat: link: not a klockstat capture JSON or HTML report: found text that starts with neither"},
			notStderr: []string{"secret"},
		},
		{
			name: "report reads the capture a browser shows, not one in a comment",
			args: func(t *testing.T, dir string) []string {
				js, err := os.ReadFile(filepath.Join(dir, "x.json"))
				if err != nil {
					t.Fatal(err)
				}
				writeText(t, filepath.Join(dir, "c.html"), `<html><!-- <script type="application/json" id="klockstat-capture">`+string(js)+`</script> --><p>nothing</p></html>`)
				return []string{"report", "c.html", "-o", ""}
			},
			status: 1,
			stderr: []string{`c.html: not a klockstat capture JSON or HTML report: HTML without a <script id="klockstat-capture"> element`},
		},
	}
}

func openFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func writeText(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
