package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// output is one file klockstat writes.
type output struct {
	flag string // the flag that names it, e.g. "--json"
	path string // "-" for stdout
	// secret: the file holds raw kernel addresses, which defeat KASLR for whoever reads them, so it
	// is created readable by its owner only.
	secret bool
	write  func(io.Writer) error
	level  int // of a sweep's per-level export, the level; 0 otherwise
}

// input is one file klockstat reads, to be kept from being overwritten by an output.
type input struct {
	name string // how messages call it, e.g. "BEFORE"
	path string
}

// destination is where an output goes, decided before the capture.
type destination struct {
	stdout bool
	// inPlace: the path is a character device or a FIFO (/dev/null, a terminal, a pipe), written
	// through as it is.
	inPlace bool
	// path is the file to write: for a regular file, its symlinks resolved, so that the temporary
	// file goes beside the file the link points to and the rename replaces that file.
	path string
	key  string // what two destinations share when they are the same file
	// written: writeAll wrote the output whole, which a summary may then name.
	written bool
}

// resolveOutput decides where path goes, without changing anything.
func resolveOutput(path string) (destination, error) {
	if path == "-" {
		return destination{stdout: true, key: "stdout"}, nil
	}
	st, err := os.Stat(path)
	switch {
	case err == nil && sameFile(st, os.Stdout) && (st.Mode()&fs.ModeCharDevice == 0 || isTerminal(os.Stdout)):
		// /dev/stdout, /proc/self/fd/1 or the file stdout was redirected to. Not /dev/null when
		// stdout goes there: writing to it in place is the same, and needs no clash check.
		return destination{stdout: true, key: "stdout"}, nil
	case err == nil && st.IsDir():
		return destination{}, errors.New("is a directory (give a file name)")
	case err == nil && st.Mode().Type() == fs.ModeDevice: // a block device: /dev/sda for sda.html
		return destination{}, errors.New("is a block device: writing would overwrite its data (give a file name)")
	case err == nil && st.Mode().Type() == fs.ModeSocket:
		return destination{}, errors.New("is a socket, not a file (give a file name, or - for stdout)")
	case err == nil && !st.Mode().IsRegular():
		// A character device is there to be written to (/dev/null, a terminal), and a FIFO, named or
		// a pipe as /dev/fd/N, streams the output to the program that reads it.
		return destination{inPlace: true, path: path}, nil
	case err == nil:
		resolved, err := filepath.EvalSymlinks(path)
		if err != nil {
			return destination{}, err
		}
		return destination{path: resolved, key: fileKey(st)}, nil
	case !errors.Is(err, fs.ErrNotExist):
		return destination{}, err
	}
	if link, err := os.Readlink(path); err == nil {
		return destination{}, fmt.Errorf("a symlink to %s, which does not exist (remove the link, or create the directory it points into)", link)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return destination{}, err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if errors.Is(err, fs.ErrNotExist) {
		return destination{}, fmt.Errorf("cannot create output file: no directory %s (create it, or give another path)", filepath.Dir(abs))
	}
	if err != nil {
		return destination{}, fmt.Errorf("cannot create output file: %w", err)
	}
	resolved := filepath.Join(dir, filepath.Base(abs))
	return destination{path: resolved, key: resolved}, nil
}

// sameFile reports whether st is the file f is open on.
func sameFile(st fs.FileInfo, f *os.File) bool {
	fst, err := f.Stat()
	return err == nil && os.SameFile(st, fst)
}

// fileKey identifies an existing file whatever path leads to it.
func fileKey(st fs.FileInfo) string {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("file %d:%d", sys.Dev, sys.Ino)
	}
	return st.Name()
}

// planOutputs resolves every output before anything is captured or written: it fails with one line
// when an output cannot be written, when two outputs are the same file (stdout by any name
// included), or when an output is one of the inputs. It returns the destinations in the order of
// outs.
func planOutputs(outs []output, ins []input) ([]destination, error) {
	inputKeys := map[string]string{}
	stdinReaders := []string{}
	for _, in := range ins {
		if in.path == "-" {
			stdinReaders = append(stdinReaders, in.name)
			continue
		}
		if st, err := os.Stat(in.path); err == nil && st.Mode().IsRegular() {
			inputKeys[fileKey(st)] = in.name
		}
	}
	if len(stdinReaders) > 1 {
		return nil, usagef("%s both read stdin: give one of them a file", strings.Join(stdinReaders, " and "))
	}
	dests := make([]destination, len(outs))
	byKey := map[string][]string{}
	for i, o := range outs {
		if o.path == "" {
			continue
		}
		d, err := resolveOutput(o.path)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.flag, o.path, err)
		}
		if name, ok := inputKeys[d.key]; ok && d.key != "" {
			return nil, usagef("%s %s is %s: writing it would destroy the input (give the output another name)", o.flag, o.path, name)
		}
		if !d.stdout {
			if err := checkWritable(d); err != nil {
				return nil, fmt.Errorf("%s %s: %w", o.flag, o.path, err)
			}
		}
		if d.key != "" {
			byKey[d.key] = append(byKey[d.key], o.flag)
		}
		dests[i] = d
	}
	for key, flags := range byKey {
		if len(flags) < 2 {
			continue
		}
		slices.Sort(flags)
		if key == "stdout" {
			return nil, usagef("%s both write to stdout: give one of them a file", strings.Join(flags, " and "))
		}
		return nil, usagef("%s both write to the same file: give each its own", strings.Join(flags, " and "))
	}
	return dests, nil
}

// checkWritable fails now, before a capture, if d could not be written at the end. It leaves an
// existing file as it was.
func checkWritable(d destination) error {
	if d.inPlace {
		f, err := openInPlace(d.path)
		if err != nil {
			return err
		}
		return f.Close()
	}
	f, err := openTemp(d.path, 0o600)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the temporary file's name would only confuse
		}
		return fmt.Errorf("cannot create output file in %s: %w", filepath.Dir(d.path), err)
	}
	return f.discard()
}

// openInPlace opens a FIFO or a character device for writing without blocking: a FIFO that no
// program reads fails at once instead of waiting for a reader. Its writes wait in the runtime's
// poller, where interruptWrites can end them.
func openInPlace(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, unix.ENXIO) && kindOf(path) == "a named pipe (FIFO)" {
		return nil, errors.New("a named pipe (FIFO) that no program reads: start its reader first (e.g. cat FIFO), or give a regular file")
	}
	if err != nil {
		return nil, fmt.Errorf("output file not writable: %w", err)
	}
	return f, nil
}

// kindOf names what path is, for a message: "a named pipe (FIFO)", "a character device", "a file".
func kindOf(path string) string {
	st, err := os.Stat(path)
	switch {
	case err != nil || st.Mode().IsRegular():
		return "a file"
	case st.Mode()&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case st.Mode()&fs.ModeCharDevice != 0:
		return "a character device"
	}
	return "a special file"
}

// signalName is "SIGTERM" for syscall.SIGTERM.
func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok && unix.SignalName(s) != "" {
		return unix.SignalName(s)
	}
	return sig.String()
}

// interruptWrites makes a stop signal (SIGINT, SIGTERM, SIGHUP) end the writes to f that wait for
// its reader, which then fail. The returned function stops that and returns the signal, if one came.
func interruptWrites(f *os.File) (stop func() os.Signal) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, stopSignals...)
	done := make(chan struct{})
	var got os.Signal
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case got = <-signals:
			f.SetWriteDeadline(time.Now()) // a file outside the poller never blocks a write
		case <-done:
		}
	})
	return func() os.Signal {
		signal.Stop(signals)
		close(done)
		wg.Wait()
		return got
	}
}

// guardStdout returns inv with a stdout that a stop signal ends klockstat in, with one line, when
// stdout is a pipe, a FIFO or a terminal: a write to it blocks while its reader does not read, and
// cannot be interrupted otherwise. The files written before are whole. The function returned
// stops the guard.
func (inv invocation) guardStdout() (invocation, func()) {
	f, ok := inv.stdout.(*os.File)
	if !ok {
		return inv, func() {}
	}
	if st, err := f.Stat(); err != nil || st.Mode().IsRegular() {
		return inv, func() {}
	}
	g := &stdoutGuard{w: f, stderr: inv.stderr, signals: make(chan os.Signal, 1)}
	signal.Notify(g.signals, stopSignals...)
	inv.stdout = g
	return inv, func() { signal.Stop(g.signals) }
}

// stdoutGuard is a stdout that exits klockstat on a stop signal that comes before or during a write.
type stdoutGuard struct {
	w, stderr io.Writer
	signals   chan os.Signal
}

func (g *stdoutGuard) Write(p []byte) (int, error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case sig := <-g.signals:
			fmt.Fprintf(g.stderr, "klockstat: writing to stdout: interrupted by %s: stdout blocked, its reader not reading (the files before it are written)\n", signalName(sig))
			os.Exit(1)
		case <-done:
		}
	})
	n, err := g.w.Write(p)
	close(done)
	wg.Wait()
	return n, err
}

// A file is written beside the file it replaces, then renamed over it. It has no name while it is
// written where the file system allows it (O_TMPFILE), so that a kill mid-write leaves nothing
// behind; it gets one for the rename, and has one from the start elsewhere. That name,
// .NAME.PID.RANDOM.tmp, tells the next run of the same output which files a killed run left.

// tempFile is the new content of an output being written.
type tempFile struct {
	*os.File
	name string // beside the output, "" while the file has none
}

// openTemp opens a new file for path's new content: unnamed where the file system allows it, else
// named by createTemp.
func openTemp(path string, perm os.FileMode) (*tempFile, error) {
	if fd, err := unix.Open(filepath.Dir(path), unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, uint32(perm)); err == nil {
		// Named after path, the file it will be, in errors.
		return &tempFile{File: os.NewFile(uintptr(fd), path)}, nil
	}
	// Whatever O_TMPFILE's failure (unsupported, or what would fail a named file too), a named
	// file says best what goes wrong.
	f, err := createTemp(path, perm)
	if err != nil {
		return nil, err
	}
	return &tempFile{File: f, name: f.Name()}, nil
}

// replace names the file if it has no name yet, closes it and renames it over path.
func (f *tempFile) replace(path string) error {
	var err error
	if f.name == "" {
		// The kernel links an unnamed file through its /proc descriptor without any capability.
		procPath := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
		f.name, err = withTempName(path, func(name string) error {
			return unix.Linkat(unix.AT_FDCWD, procPath, unix.AT_FDCWD, name, unix.AT_SYMLINK_FOLLOW)
		})
		if err != nil {
			return fmt.Errorf("naming the new file beside %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.name, path)
}

// discard closes the file, if replace has not, and removes its name, if it has one.
func (f *tempFile) discard() error {
	f.Close() // nothing to lose
	if f.name == "" {
		return nil
	}
	return os.Remove(f.name)
}

// createTemp creates a new file beside path. O_EXCL and O_NOFOLLOW: a file or symlink someone
// planted at that name makes it fail rather than be written through.
func createTemp(path string, perm os.FileMode) (*os.File, error) {
	var f *os.File
	_, err := withTempName(path, func(name string) error {
		var err error
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
		return err
	})
	return f, err
}

// withTempName calls create with a new temporary name beside path until one is free, and returns it.
func withTempName(path string, create func(name string) error) (string, error) {
	dir, base := filepath.Split(path)
	for range 10 {
		suffix := make([]byte, 6)
		rand.Read(suffix) // never fails
		name := filepath.Join(dir, fmt.Sprintf(".%s.%d.%s.tmp", base, os.Getpid(), hex.EncodeToString(suffix)))
		switch err := create(name); {
		case err == nil:
			return name, nil
		case !errors.Is(err, fs.ErrExist):
			return "", err
		}
	}
	return "", fmt.Errorf("no free temporary name beside %s", path)
}

// removeStaleTemps removes the temporary files of path whose writer is dead: those of a killed run.
// It is best effort: a file left is only clutter. A writer in another PID namespace, or on another
// host sharing the directory, looks dead; it writes the same output at the same time, and one of
// the two would be lost anyway.
func removeStaleTemps(path string) {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "."+base+".")
		fields := strings.Split(rest, ".") // PID, RANDOM, "tmp"
		if !ok || len(fields) != 3 || fields[2] != "tmp" || len(fields[1]) != 12 {
			continue
		}
		if _, err := hex.DecodeString(fields[1]); err != nil {
			continue
		}
		if pid, err := strconv.Atoi(fields[0]); err == nil && pid > 0 && errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// writeOutput writes o to d: stdout; a device in place; a regular file through a new file in its
// directory, synced and renamed over it, so that a full disk or a kill mid-write leaves the
// previous file whole. Files are created with mode 0666 (0600 if secret), less the umask.
func writeOutput(o output, d destination, stdout io.Writer) error {
	switch {
	case d.stdout:
		return o.write(stdout)
	case d.inPlace:
		f, err := openInPlace(d.path)
		if err != nil {
			return err
		}
		stop := interruptWrites(f)
		err = o.write(f)
		if sig := stop(); sig != nil && err != nil {
			err = &interruptedWrite{sig: sig, what: kindOf(d.path)}
		}
		if err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	removeStaleTemps(d.path)
	perm := os.FileMode(0o666)
	if o.secret {
		perm = 0o600
	}
	f, err := openTemp(d.path, perm)
	if err != nil {
		return err
	}
	err = o.write(f)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.replace(d.path)
	}
	if err != nil {
		f.discard()
	}
	return err
}

// interruptedWrite is a write to a device or pipe that a stop signal ended: klockstat stops there,
// writing nothing more (the summary to stdout neither), so that its last line names what blocked.
type interruptedWrite struct {
	sig  os.Signal
	what string // kindOf the destination
}

func (e *interruptedWrite) Error() string {
	return fmt.Sprintf("interrupted by %s: %s blocked, its reader not reading (the outputs before it are written)", signalName(e.sig), e.what)
}

// writeAll writes every output it can, in order, marks those written in dests, and returns the
// failures joined, one line each.
func writeAll(outs []output, dests []destination, stdout io.Writer) error {
	var errs []error
	for i, o := range outs {
		if o.path == "" {
			continue
		}
		if err := writeOutput(o, dests[i], stdout); err != nil {
			errs = append(errs, fmt.Errorf("writing %s %s: %w", o.flag, o.path, err))
			continue
		}
		dests[i].written = true
	}
	return errors.Join(errs...)
}

// reportInput is the name of the capture klockstat report reads among its inputs.
const reportInput = "INPUT"

// savedCapture is the file the capture of a run is in, to be read again by the next steps its
// summary suggests (report.SummaryOptions.Saved), its path as the user wrote it: the JSON the
// outputs wrote, else the capture klockstat report read (ins' reportInput), else the HTML report
// the outputs wrote, which carries its capture; "" when it is in no file. Stdout, devices and pipes
// are read once: no next step can read them again.
func savedCapture(outs []output, dests []destination, ins []input) string {
	written := func(flag string) string {
		for i, o := range outs {
			if d := dests[i]; o.flag == flag && d.written && !d.stdout && !d.inPlace {
				return o.path
			}
		}
		return ""
	}
	if path := written("--json"); path != "" {
		return path
	}
	for _, in := range ins {
		if in.name == reportInput && in.path != "-" && isRegularFile(in.path) {
			return in.path
		}
	}
	return written("--output")
}
