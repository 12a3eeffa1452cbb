package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/cgroups"
	"github.com/klockstat/klockstat/internal/testenv"
	"github.com/klockstat/klockstat/lockspec"
	"github.com/klockstat/klockstat/report"
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
	// anyStatus: the status depends on a race the case provokes, and is not checked.
	anyStatus bool
	// stderr must contain each of stderr and none of notStderr.
	stderr, notStderr []string
	// terminal runs klockstat in a session of its own with a pseudo-terminal as its controlling
	// terminal and stdin, as from a shell.
	terminal bool
	// during, when set, acts while klockstat runs: signals it, types on its terminal.
	during func(t *testing.T, r *faultRun)
	// check, when set, looks at what klockstat left: its files in r.dir, its output and status.
	check func(t *testing.T, r *faultRun)
}

// faultRun is a running case of the fault matrix.
type faultRun struct {
	dir    string
	proc   *os.Process
	stderr *lockedBuffer
	tty    *os.File // the terminal's master side, with terminal
	// Once klockstat ended: its stdout, and its exit status, -1 when a signal killed it.
	stdout string
	status int
}

// lockedBuffer is a bytes.Buffer that klockstat's stderr copier and the test may use at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls until cond holds, failing the test after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// exists reports whether name exists in dir.
func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// waitFIFOFull waits until the FIFO at path holds as much as it can: its writer is then blocked in
// the write, whatever the machine's load made it take to get there.
func waitFIFOFull(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	capacity, err := unix.FcntlInt(uintptr(fd), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		n, err := unix.IoctlGetInt(fd, unix.TIOCINQ) // FIONREAD
		if err != nil {
			t.Fatal(err)
		}
		if n >= capacity {
			return
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("the FIFO holds %d of its %d bytes after a minute: its writer never filled it", n, capacity)
		}
	}
}

// openTerminal opens a new pseudo-terminal: its master side, and the slave for the process.
func openTerminal(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, slave
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
			var stdout bytes.Buffer
			stderr := &lockedBuffer{}
			cmd.Stdout, cmd.Stderr = &stdout, stderr
			if f.stdin != nil {
				in := f.stdin(t, dir)
				defer in.Close()
				cmd.Stdin = in
			}
			run := &faultRun{dir: dir, stderr: stderr}
			if f.terminal {
				master, slave := openTerminal(t)
				defer master.Close()
				defer slave.Close()
				go io.Copy(io.Discard, master) // what klockstat or the command print on the terminal
				run.tty = master
				cmd.Stdin = slave
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			run.proc = cmd.Process
			t.Cleanup(func() { cmd.Process.Kill() }) // when during gives up: a no-op after Wait
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			if f.during != nil {
				f.during(t, run)
			}
			select {
			case err := <-done:
				run.status = exitStatus(t, err)
				if run.status != f.status && !f.anyStatus {
					t.Errorf("exit status %d, want %d\nstderr: %s", run.status, f.status, stderr.String())
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
				run.stdout = stdout.String()
				f.check(t, run)
			}
		})
	}
}

func fixed(args ...string) func(*testing.T, string) []string {
	return func(*testing.T, string) []string { return args }
}

// withFIFO makes a FIFO named fifo in the case's directory, and gives args.
func withFIFO(args ...string) func(*testing.T, string) []string {
	return func(t *testing.T, dir string) []string {
		if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
			t.Fatal(err)
		}
		return args
	}
}

// fileIn opens path under dir as klockstat's stdin.
func fileIn(path string) func(*testing.T, string) *os.File {
	return func(t *testing.T, dir string) *os.File { return openFile(t, filepath.Join(dir, path)) }
}

func faults() []fault {
	return append([]fault{
		{
			name:   "a --map-nr-entries the machine cannot hold is refused before any map is created",
			args:   fixed("-M", "100000000", "-o", ""),
			status: 2,
			stderr: []string{"klockstat: --map-nr-entries 100000000: the BPF maps would take up to ", "of kernel memory, more than a quarter of the ", "available: give a smaller --map-nr-entries"},
		},
		{
			name:   "an empty --pid list is an error, not everything",
			args:   fixed("-p", "", "-o", ""),
			status: 2,
			stderr: []string{"klockstat: empty --pid list"},
		},
		{
			name:   "an empty --cgroup-filter list is an error, not everything",
			args:   fixed("-G", "", "-o", ""),
			status: 2,
			stderr: []string{"klockstat: empty --cgroup-filter list"},
		},
		{
			name:   "a --cgroup (deprecated: -G) that does not exist is refused before any capture",
			args:   fixed("--cgroup", "/klockstat-no-such-cgroup", "-o", ""),
			status: 2,
			stderr: []string{"klockstat: note: --cgroup is deprecated: it is -G/--cgroup-filter now, as in perf lock contention\n",
				"klockstat: --cgroup-filter: no cgroup /klockstat-no-such-cgroup: ", "does not exist (give the path /proc/PID/cgroup shows after 0::"},
		},
		{
			name:   "a -G with a comma that names nothing says it is neither a cgroup nor a list",
			args:   fixed("-G", "/klockstat-no,such", "-o", ""),
			status: 2,
			stderr: []string{"klockstat: --cgroup-filter /klockstat-no,such: neither a cgroup nor a list of cgroups: no cgroup /klockstat-no: "},
		},
		{
			name:   "a -G that is a file of a cgroup, not one, is refused",
			args:   fixed("-G", "/cgroup.procs", "-o", ""),
			status: 2,
			stderr: []string{"klockstat: --cgroup-filter: cgroup /cgroup.procs: ", "cgroup.procs is not a directory"},
		},
		{
			name:   "a --cgroup-filter outside the cgroup2 hierarchy is refused",
			args:   fixed("--cgroup-filter", "/tmp", "-o", ""),
			status: 2,
			stderr: []string{"klockstat: --cgroup-filter: no cgroup /tmp: "},
		},
		{
			name:   "an empty --type-filter list is an error, not everything",
			args:   fixed("-Y", "", "-o", ""),
			status: 2,
			stderr: []string{"klockstat: empty --type-filter list"},
		},
		{
			name:    "--type-filter names are trimmed",
			capture: true,
			args:    fixed("-Y", "rwsem:W, mutex", "-d", "100ms", "-q", "-o", "", "--json", "c.json"),
			status:  0,
			check: func(t *testing.T, r *faultRun) {
				if types := readCaptureFile(t, filepath.Join(r.dir, "c.json")).Meta.Types; !slices.Equal(types, []string{"rwsem:W", "mutex"}) {
					t.Errorf("captured types %q, want rwsem:W and mutex", types)
				}
			},
		},
		{
			name:    "a --cgroup-filter path with a comma is a cgroup, and lists are still split",
			capture: true,
			args: func(t *testing.T, _ string) []string {
				comma, plain := newCgroup(t, "co,mma"), newCgroup(t, "plain")
				return []string{"-G", comma, "--cgroup-filter", "/," + plain, "-d", "100ms", "-q", "-o", "", "--json", "c.json"}
			},
			status: 0,
			check: func(t *testing.T, r *faultRun) {
				got := readCaptureFile(t, filepath.Join(r.dir, "c.json")).Meta.Cgroups
				if len(got) != 3 || !strings.HasSuffix(got[0], "-co,mma") || got[1] != "/" || !strings.HasSuffix(got[2], "-plain") {
					t.Errorf("captured cgroups %q, want the one with a comma, / and the plain one", got)
				}
			},
		},
		{
			name:    "--pid of no process warns",
			capture: true,
			args:    fixed("-p", "4194304", "-d", "100ms", "-q", "-o", ""), // above the kernel's PID_MAX_LIMIT
			status:  0,
			stderr:  []string{"klockstat: warning: --pid 4194304: no such process"},
		},
		{
			name: "a --locks file with a byte-order mark is read",
			args: func(t *testing.T, dir string) []string {
				writeText(t, filepath.Join(dir, "locks.json"), "\ufeff"+string(lockspec.Embedded()))
				return []string{"--locks", "locks.json", "-Y", "nosuch", "-o", ""} // fails after the parse, before a capture
			},
			status:    2,
			stderr:    []string{`klockstat: --type-filter: unknown lock type "nosuch"`},
			notStderr: []string{"invalid character"},
		},
		{
			name: "a bad --locks file is a usage error",
			args: func(t *testing.T, dir string) []string {
				writeText(t, filepath.Join(dir, "locks.json"), "{")
				return []string{"--locks", "locks.json", "-o", ""}
			},
			status: 2,
			stderr: []string{"klockstat: locks.json:1:2: "},
		},
		{
			name:   "--locks of /dev/zero is refused at once",
			args:   fixed("--locks", "/dev/zero", "-o", ""),
			status: 2,
			stderr: []string{"klockstat: reading --locks: /dev/zero: a character device, not a regular file"},
		},
		{
			name: "a type name a capture cannot hold is refused in --locks",
			args: func(t *testing.T, dir string) []string {
				writeText(t, filepath.Join(dir, "locks.json"), strings.Replace(string(lockspec.Embedded()), `"name": "mutex"`, `"name": "spin lock"`, 1))
				return []string{"--locks", "locks.json", "-o", ""}
			},
			status: 2,
			stderr: []string{`: types[11].name: bad lock type name "spin lock"`},
		},
		{
			name:    "outputs are written when the window ends, and a signal then reaches the command",
			capture: true,
			args:    fixed("-d", "1s", "-q", "-o", "r.html", "--json", "c.json", "--", "sleep", "60"),
			during: func(t *testing.T, r *faultRun) {
				waitFor(t, "the outputs, while sleep runs", func() bool { return exists(r.dir, "c.json") && exists(r.dir, "r.html") })
				waitFor(t, "the message that klockstat waits", func() bool { return strings.Contains(r.stderr.String(), "waiting for sleep") })
				r.proc.Signal(syscall.SIGTERM)
			},
			status: 128 + int(syscall.SIGTERM), // sleep's, killed by the SIGTERM passed on
			stderr: []string{"klockstat: capture ended; waiting for sleep (pid "},
			check: func(t *testing.T, r *faultRun) {
				if c := readCaptureFile(t, filepath.Join(r.dir, "c.json")); c.Meta.WorkloadExit != nil {
					t.Errorf("workload_exit %d in a capture written while the command ran", *c.Meta.WorkloadExit)
				}
			},
		},
		{
			name:    "a second signal ends a command that ignores the first, and klockstat",
			capture: true,
			args:    fixed("-d", "1s", "-q", "-o", "", "--json", "c.json", "--", "sh", "-c", `trap "" INT TERM HUP; while :; do sleep 0.1; done`),
			during: func(t *testing.T, r *faultRun) {
				waitFor(t, "the message that klockstat waits", func() bool { return strings.Contains(r.stderr.String(), "waiting for sh") })
				r.proc.Signal(os.Interrupt)
				time.Sleep(500 * time.Millisecond) // two signals at once would merge into one
				r.proc.Signal(os.Interrupt)
			},
			status: 128 + int(syscall.SIGINT),
			check:  func(t *testing.T, r *faultRun) { readCaptureFile(t, filepath.Join(r.dir, "c.json")) },
		},
		{
			name:    "SIGHUP ends the capture as SIGTERM does",
			capture: true,
			// The command's file shows that the capture began: a signal before ends klockstat unwritten.
			args: fixed("-d", "60s", "-q", "-o", "", "--json", "c.json", "--", "sh", "-c", "touch started; exec sleep 60"),
			during: func(t *testing.T, r *faultRun) {
				waitFor(t, "sh to start", func() bool { return exists(r.dir, "started") })
				r.proc.Signal(syscall.SIGHUP)
			},
			status: 128 + int(syscall.SIGHUP), // sleep's, killed by the SIGHUP passed on
			check: func(t *testing.T, r *faultRun) {
				if d := readCaptureFile(t, filepath.Join(r.dir, "c.json")).Meta.Duration(); d >= 60*time.Second {
					t.Errorf("capture lasted %v: SIGHUP did not end it", d)
				}
			},
		},
		{
			name:    "a killed klockstat leaves no command behind",
			capture: true,
			args:    fixed("-d", "60s", "-q", "-o", "", "--", "sleep", "60"),
			during: func(t *testing.T, r *faultRun) {
				var child int
				waitFor(t, "sleep to start", func() bool { child = childPID(r.proc.Pid); return child > 0 })
				r.proc.Kill()
				waitFor(t, fmt.Sprintf("sleep (pid %d) to die with klockstat", child), func() bool { return !running(child) })
			},
			status: -1, // killed
		},
		{
			name:     "Ctrl-C on the terminal reaches the command once",
			capture:  true,
			terminal: true,
			args: fixed("-d", "60s", "-q", "-o", "", "--json", "c.json", "--",
				"sh", "-c", `trap "echo INT >> ints" INT; touch ready; while [ ! -e stop ]; do sleep 0.1; done`),
			during: func(t *testing.T, r *faultRun) {
				waitFor(t, "sh to set its trap", func() bool { return exists(r.dir, "ready") })
				if _, err := r.tty.Write([]byte{0x03}); err != nil { // ^C
					t.Fatal(err)
				}
				waitFor(t, "the message that klockstat waits", func() bool { return strings.Contains(r.stderr.String(), "waiting for sh") })
				time.Sleep(time.Second) // for a second SIGINT, if klockstat passed its copy on
				if b, _ := os.ReadFile(filepath.Join(r.dir, "ints")); string(b) != "INT\n" {
					t.Errorf("the command got %d SIGINTs for one Ctrl-C, want 1", strings.Count(string(b), "INT"))
				}
				writeText(t, filepath.Join(r.dir, "stop"), "")
			},
			status: 0,
			check:  func(t *testing.T, r *faultRun) { readCaptureFile(t, filepath.Join(r.dir, "c.json")) },
		},
		{
			name:   "a failed output does not keep the others from being written",
			args:   fixed("report", "x.json", "--json", "/dev/full", "-o", "r.html"),
			status: 1,
			stderr: []string{"klockstat: writing --json /dev/full: ", "no space left on device"},
			check: func(t *testing.T, r *faultRun) {
				readCaptureFile(t, filepath.Join(r.dir, "r.html"))
				if !strings.Contains(r.stdout, "anon_pipe_write") || !strings.Contains(r.stdout, "report: r.html") {
					t.Errorf("no summary after the failed --json:\n%s", r.stdout)
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
			check: func(t *testing.T, r *faultRun) {
				if b, _ := os.ReadFile(filepath.Join(r.dir, "r.html")); string(b) != "the previous report" {
					t.Errorf("r.html holds %d bytes of something else, want the previous report", len(b))
				}
				if entries, _ := os.ReadDir(r.dir); len(entries) != 3 {
					t.Errorf("%d files left in the directory, want x.json, x2.json and r.html: a temporary file stayed", len(entries))
				}
			},
		},
		{
			name: "a report a full disk kept from being written is not named in the summary",
			args: func(t *testing.T, dir string) []string {
				return []string{"report", "x.json", "-o", filepath.Join(smallDisk(t, filepath.Join(dir, "disk")), "r.html")}
			},
			status: 1,
			stderr: []string{"klockstat: writing --output ", "/disk/r.html: ", "no space left on device"},
			check: func(t *testing.T, r *faultRun) {
				if !strings.Contains(r.stdout, "anon_pipe_write") || strings.Contains(r.stdout, "report: ") {
					t.Errorf("want the summary without a line for the report that was not written:\n%s", r.stdout)
				}
			},
		},
		{
			name:   "a comparison that could not be written is not named in the summary",
			args:   fixed("diff", "x.json", "x2.json", "-o", "d.html"),
			prefix: []string{"prlimit", "--fsize=100000"}, // the page is a megabyte
			status: 1,
			stderr: []string{"klockstat: writing --output d.html: ", "file too large"},
			check: func(t *testing.T, r *faultRun) {
				if !strings.Contains(r.stdout, "anon_pipe_write") || strings.Contains(r.stdout, "diff: ") {
					t.Errorf("want the summary without a line for the page that was not written:\n%s", r.stdout)
				}
			},
		},
		{
			name: "a kill while writing leaves the previous file or the new one, never part of one",
			args: func(t *testing.T, dir string) []string {
				writeText(t, filepath.Join(dir, "r.html"), "the previous report")
				writeCaptureOf(t, filepath.Join(dir, "big.json"), 1000, 200_000) // a report that takes a while to write
				return []string{"report", "-q", "big.json", "-o", "r.html"}
			},
			during: func(t *testing.T, r *faultRun) {
				// Kill as soon as writing shows: a new file in the directory, named or not, or r.html
				// changed in place.
				waitFor(t, "klockstat to start writing r.html", func() bool {
					b, _ := os.ReadFile(filepath.Join(r.dir, "r.html"))
					return writingIn(r.proc.Pid, r.dir) || string(b) != "the previous report"
				})
				r.proc.Kill()
			},
			anyStatus: true, // killed, or done before the kill landed
			check: func(t *testing.T, r *faultRun) {
				// The new file has a name only from just before the rename: none may be left.
				if temps, _ := filepath.Glob(filepath.Join(r.dir, ".r.html.*")); len(temps) > 0 {
					t.Errorf("the kill left %q", temps)
				}
				b, err := os.ReadFile(filepath.Join(r.dir, "r.html"))
				if err != nil || string(b) == "the previous report" {
					return
				}
				if _, err := report.ReadInput(bytes.NewReader(b)); err != nil {
					t.Errorf("r.html after the kill is neither the previous report nor a whole one (%d bytes): %v", len(b), err)
				}
			},
		},
		{
			name: "the next run of an output removes the temporary files a killed run left",
			args: func(t *testing.T, dir string) []string {
				// As a SIGKILL during the write leaves them: the whole capture, readable by its owner.
				writeTemp := func(pid int) {
					name := filepath.Join(dir, fmt.Sprintf(".r.html.%d.0123456789ab.tmp", pid))
					if err := os.WriteFile(name, []byte("<!DOCTYPE html> half a report"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				writeTemp(deadPID(t))
				writeTemp(os.Getpid()) // a live writer's
				return []string{"report", "-q", "x.json", "-o", "r.html"}
			},
			status: 0,
			check: func(t *testing.T, r *faultRun) {
				readCaptureFile(t, filepath.Join(r.dir, "r.html"))
				temps, _ := filepath.Glob(filepath.Join(r.dir, ".r.html.*"))
				if want := []string{filepath.Join(r.dir, fmt.Sprintf(".r.html.%d.0123456789ab.tmp", os.Getpid()))}; !slices.Equal(temps, want) {
					t.Errorf("temporary files left: %q, want the live writer's only", temps)
				}
			},
		},
		{
			name:   "the capture JSON is readable by its owner only",
			args:   fixed("report", "-q", "x.json", "--json", "c.json", "-o", "r.html"),
			status: 0,
			check: func(t *testing.T, r *faultRun) {
				for name, want := range map[string]os.FileMode{"c.json": 0o600, "r.html": 0o644} {
					if st, err := os.Stat(filepath.Join(r.dir, name)); err != nil || st.Mode().Perm() != want {
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
			check:  func(t *testing.T, r *faultRun) { readCaptureFile(t, filepath.Join(r.dir, "x.json")) },
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
			name: "a block device at -o is refused, not overwritten",
			args: func(t *testing.T, dir string) []string {
				return []string{"report", "x.json", "-o", blockDevice(t, filepath.Join(dir, "disk"))}
			},
			status: 1,
			stderr: []string{"klockstat: --output /dev/", "is a block device: writing would overwrite its data (give a file name)"},
			check: func(t *testing.T, r *faultRun) {
				if b, err := os.ReadFile(filepath.Join(r.dir, "disk")); err != nil || !bytes.Equal(b, make([]byte, len(b))) {
					t.Errorf("the loop device's file holds %.40q (%v), want only zeros", b, err)
				}
			},
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
			check: func(t *testing.T, r *faultRun) {
				if r.stdout != "" {
					t.Errorf("diff -q printed %q", r.stdout)
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
			name:   "report of a FIFO is refused, not waited on",
			args:   withFIFO("report", "fifo", "-o", ""),
			status: 1,
			stderr: []string{"klockstat: fifo: a named pipe (FIFO), not a regular file"},
		},
		{
			name: "report -o FIFO whose reader never reads ends on SIGTERM, the JSON kept",
			args: func(t *testing.T, dir string) []string {
				fifo := filepath.Join(dir, "fifo")
				if err := syscall.Mkfifo(fifo, 0o600); err != nil {
					t.Fatal(err)
				}
				reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0) // and never reads
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { reader.Close() })
				return []string{"report", "x.json", "--json", "out.json", "-o", "fifo"}
			},
			during: func(t *testing.T, r *faultRun) {
				waitFIFOFull(t, filepath.Join(r.dir, "fifo"))
				r.proc.Signal(syscall.SIGTERM)
			},
			status: 1,
			stderr: []string{"klockstat: writing --output fifo: interrupted by SIGTERM: a named pipe (FIFO) blocked, its reader not reading"},
			check: func(t *testing.T, r *faultRun) {
				readCaptureFile(t, filepath.Join(r.dir, "out.json"))
			},
		},
		{
			name:   "report -o FIFO without a reader is refused at once",
			args:   withFIFO("report", "x.json", "-o", "fifo"),
			status: 1,
			stderr: []string{"klockstat: --output fifo: a named pipe (FIFO) that no program reads: start its reader first"},
		},
		{
			name: "diff of a sweep says it is one",
			args: func(t *testing.T, dir string) []string {
				writeText(t, filepath.Join(dir, "sweep.json"), `{"sweep_version":1,"levels":[]}`)
				return []string{"diff", "sweep.json", "x.json", "-o", ""}
			},
			status: 1,
			stderr: []string{"klockstat: sweep.json: this is a sweep of klockstat scale, not a capture: `klockstat report FILE`"},
		},
		{
			// Its kind told from its first bytes, a sweep on stdin renders as one.
			name: "report - of a sweep reads it as one",
			args: fixed("report", "-", "-o", ""),
			stdin: func(t *testing.T, dir string) *os.File {
				writeText(t, filepath.Join(dir, "sweep.json"), `{"sweep_version":1,"levels":[]}`)
				return openFile(t, filepath.Join(dir, "sweep.json"))
			},
			status:    0,
			notStderr: []string{"not a capture"},
			check: func(t *testing.T, r *faultRun) {
				if !strings.Contains(r.stdout, "Scaling culprits") {
					t.Errorf("stdout is no scaling summary:\n%s", r.stdout)
				}
			},
		},
		{
			name:   "report - reads stdin",
			args:   fixed("report", "-", "-o", "r.html"),
			stdin:  fileIn("x.json"),
			status: 0,
			check: func(t *testing.T, r *faultRun) {
				readCaptureFile(t, filepath.Join(r.dir, "r.html"))
				if !strings.Contains(r.stdout, "anon_pipe_write") {
					t.Errorf("no summary of the capture read from stdin:\n%s", r.stdout)
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
			// The element's id is the report package's to name.
			stderr: []string{`c.html: not a klockstat capture JSON or HTML report: HTML without a <script id=`},
		},
	}, signalsDuringStart()...)
}

// signalsDuringStart are stop signals at delays that land, on a loaded machine, while klockstat parses
// its flags or loads its probes (a second or more), before the command would start; and, to see the
// other side, once the command has started.
func signalsDuringStart() []fault {
	var faults []fault
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		for _, delay := range []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond} {
			faults = append(faults, signalDuringStart(sig, fmt.Sprint(delay, " after the start"), func(*testing.T, *faultRun) { time.Sleep(delay) }))
		}
		faults = append(faults, signalDuringStart(sig, "once the command has started", func(t *testing.T, r *faultRun) {
			waitFor(t, "sh to start", func() bool { return exists(r.dir, "started") })
		}))
	}
	return faults
}

// signalDuringStart signals klockstat once wait returns. Either the signal came before the capture
// began, and klockstat ends with 128+signal, having started nothing and written nothing, or it came
// after, and the command, started before the signal, gets it passed on while the capture is written
// whole. Either way no BPF program of klockstat's outlives it.
func signalDuringStart(sig syscall.Signal, when string, wait func(*testing.T, *faultRun)) fault {
	var (
		sent time.Time
		bpf  *bpfWatch
	)
	return fault{
		name:    fmt.Sprintf("%v %s starts no command unless the capture began", sig, when),
		capture: true,
		// exec: the signal passed on ends the command at once, not once sleep is done.
		args: fixed("-q", "--json", "c.json", "-o", "r.html", "--", "sh", "-c", "touch started; exec sleep 30"),
		during: func(t *testing.T, r *faultRun) {
			bpf = watchBPF(r.proc.Pid)
			wait(t, r)
			sent = time.Now()
			r.proc.Signal(sig)
		},
		anyStatus: true, // checked below, by what klockstat did
		check: func(t *testing.T, r *faultRun) {
			held := bpf.programs()
			for _, id := range held {
				waitFor(t, fmt.Sprintf("klockstat's BPF program %d to be freed", id), func() bool { return !programLoaded(t, id) })
			}
			stderr := r.stderr.String()
			if r.status == -1 || strings.Contains(stderr, "before the capture began") {
				// Killed before it caught signals (the status says "killed", the shell's 128+signal),
				// or stopped before the capture began.
				if r.status != -1 && r.status != 128+int(sig) {
					t.Errorf("exit status %d, want %d\nstderr: %s", r.status, 128+int(sig), stderr)
				}
				for _, name := range []string{"started", "c.json", "r.html"} {
					if exists(r.dir, name) {
						t.Errorf("%s exists, though klockstat ended before the capture began\nstderr: %s", name, stderr)
					}
				}
				t.Logf("ended before the capture began, status %d; %d BPF programs held, all freed", r.status, len(held))
				return
			}
			// The command started and had the signal passed on: its status is klockstat's.
			if r.status != 128+int(sig) || !strings.Contains(stderr, "waiting for sh") {
				t.Errorf("exit status %d, want %d of the command killed by the signal passed on\nstderr: %s", r.status, 128+int(sig), stderr)
			}
			c, page := readCaptureFile(t, filepath.Join(r.dir, "c.json")), readCaptureFile(t, filepath.Join(r.dir, "r.html"))
			if page.Meta.DurationNS != c.Meta.DurationNS || !slices.Equal(c.Meta.Workload, []string{"sh", "-c", "touch started; exec sleep 30"}) {
				t.Errorf("report of a %v capture, JSON of a %v one of %q", page.Meta.Duration(), c.Meta.Duration(), c.Meta.Workload)
			}
			// klockstat sees the signal a little after it is sent: it checks just before the start.
			if c.Timeline != nil && c.Timeline.CommandStartNS != nil {
				started := c.Meta.Start.Add(time.Duration(*c.Timeline.CommandStartNS))
				if late := started.Sub(sent); late > 100*time.Millisecond {
					t.Errorf("the command started %v after the signal", late)
				}
			}
			t.Logf("the command started and got the signal; %d BPF programs held, all freed", len(held))
			if len(held) == 0 {
				t.Error("no BPF program seen in klockstat's descriptors while it ran: that none is left proves nothing")
			}
		},
	}
}

// bpfWatch collects the BPF programs a process holds open, from its descriptors, until it exits.
type bpfWatch struct {
	done chan struct{}
	ids  map[ebpf.ProgramID]bool
}

func watchBPF(pid int) *bpfWatch {
	w := &bpfWatch{done: make(chan struct{}), ids: map[ebpf.ProgramID]bool{}}
	go func() {
		defer close(w.done)
		for running(pid) {
			infos, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
			for _, info := range infos {
				b, _ := os.ReadFile(info)
				// A program's descriptor and a link's both name the program.
				for line := range strings.Lines(string(b)) {
					if v, ok := strings.CutPrefix(line, "prog_id:"); ok {
						if id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
							w.ids[ebpf.ProgramID(id)] = true
						}
					}
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return w
}

// programs waits for the process to exit and returns the programs it was seen holding.
func (w *bpfWatch) programs() []ebpf.ProgramID {
	<-w.done
	return slices.Collect(maps.Keys(w.ids))
}

// programLoaded reports whether the kernel still has the BPF program id: attached, or held open.
func programLoaded(t *testing.T, id ebpf.ProgramID) bool {
	p, err := ebpf.NewProgramFromID(id)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatalf("looking up BPF program %d: %v", id, err)
	}
	p.Close()
	return true
}

// blockDevice attaches a loop device to a new file at backing, zeros, and returns the device's path.
// Without root, or loop devices, it skips the test.
func blockDevice(t *testing.T, backing string) string {
	t.Helper()
	testenv.RequireRoot(t)
	if err := os.WriteFile(backing, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", backing).CombinedOutput()
	if err != nil {
		t.Skipf("no loop device: losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

// newCgroup creates a cgroup named after the test process and name in the cgroup2 hierarchy, until
// the test ends, and returns its path. A machine without the hierarchy skips the test.
func newCgroup(t *testing.T, name string) string {
	t.Helper()
	h, err := cgroups.Find()
	if errors.Is(err, cgroups.ErrNoHierarchy) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(h.Mount, fmt.Sprintf("klockstat-test-%d-%s", os.Getpid(), name))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing cgroup %s: %v", dir, err)
		}
	})
	return h.PathOf(dir)
}

// smallDisk mounts a 64 KiB tmpfs at dir, which a report fills, until the test ends. Without root it
// skips the test.
func smallDisk(t *testing.T, dir string) string {
	t.Helper()
	testenv.RequireRoot(t)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatalf("mounting a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// writingIn reports whether process pid has a file of dir open but for a capture JSON: an output
// it writes, or the unnamed file of one.
func writingIn(pid int, dir string) bool {
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && filepath.Dir(target) == dir && !strings.HasSuffix(target, ".json") {
			return true
		}
	}
	return false
}

// deadPID is the id of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.Pid()
}

// childPID is the first child of pid, 0 for none. Each thread lists the children it forked.
func childPID(pid int) int {
	lists, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, list := range lists {
		b, _ := os.ReadFile(list)
		if fields := strings.Fields(string(b)); len(fields) > 0 {
			child, _ := strconv.Atoi(fields[0])
			return child
		}
	}
	return 0
}

// running reports whether pid is a process that has not exited (a zombie has).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z")
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

// TestBlockedStdoutEndsOnSignal: `report -o -` into a pipe whose reader never reads blocks in its
// write, which SIGTERM ends with one line, promptly.
func TestBlockedStdoutEndsOnSignal(t *testing.T) {
	bin := testenv.Build(t, ".")
	dir := t.TempDir()
	writeCapture(t, filepath.Join(dir, "x.json"), 1000)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close() // and never read
	cmd := exec.Command(bin, "report", "x.json", "-o", "-")
	cmd.Dir, cmd.Stdout = dir, w
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(2 * time.Second) // the page fills the pipe in far less
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if status := exitStatus(t, err); status != 1 {
			t.Errorf("exit status %d, want 1", status)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("still blocked 10 s after SIGTERM")
	}
	if want := "klockstat: writing to stdout: interrupted by SIGTERM: stdout blocked, its reader not reading"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
}
