package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// output is one file klockstat writes.
type output struct {
	flag string // the flag that names it, e.g. "--json"
	path string // "-" for stdout
	// secret: the file holds raw kernel addresses, which defeat KASLR for whoever reads them, so it
	// is created readable by its owner only.
	secret bool
	write  func(io.Writer) error
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
		f, err := os.OpenFile(d.path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("output file not writable: %w", err)
		}
		return f.Close()
	}
	f, err := createTemp(d.path, 0o600)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the temporary file's name would only confuse
		}
		return fmt.Errorf("cannot create output file in %s: %w", filepath.Dir(d.path), err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// createTemp creates a new file beside path, under a random name. O_EXCL and O_NOFOLLOW: a file or
// symlink someone planted at that name makes it fail rather than be written through.
func createTemp(path string, perm os.FileMode) (*os.File, error) {
	dir, base := filepath.Split(path)
	for range 10 {
		suffix := make([]byte, 6)
		rand.Read(suffix) // never fails
		name := filepath.Join(dir, "."+base+"."+hex.EncodeToString(suffix)+".tmp")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no free temporary name beside %s", path)
}

// writeOutput writes o to d: stdout; a device in place; a regular file through a temporary file in
// its directory, synced and renamed over it, so that a full disk or a kill mid-write leaves the
// previous file whole. Files are created with mode 0666 (0600 if secret), less the umask.
func writeOutput(o output, d destination, stdout io.Writer) error {
	switch {
	case d.stdout:
		return o.write(stdout)
	case d.inPlace:
		f, err := os.OpenFile(d.path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		if err := o.write(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	perm := os.FileMode(0o666)
	if o.secret {
		perm = 0o600
	}
	f, err := createTemp(d.path, perm)
	if err != nil {
		return err
	}
	err = o.write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), d.path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// writeAll writes every output it can, in order, and returns the failures joined, one line each.
func writeAll(outs []output, dests []destination, stdout io.Writer) error {
	var errs []error
	for i, o := range outs {
		if o.path == "" {
			continue
		}
		if err := writeOutput(o, dests[i], stdout); err != nil {
			errs = append(errs, fmt.Errorf("writing %s %s: %w", o.flag, o.path, err))
		}
	}
	return errors.Join(errs...)
}
