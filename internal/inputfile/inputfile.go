// Package inputfile opens the files klockstat reads (captures, reports, lock catalogues) so that a
// wrong path fails at once: a FIFO, a device or a directory is refused instead of blocking or
// streaming forever, and what is read is bounded.
package inputfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Stdin is the path that means standard input.
const Stdin = "-"

// Name is how messages call path: "stdin" for "-".
func Name(path string) string {
	if path == Stdin {
		return "stdin"
	}
	return path
}

// Open opens path for reading, or returns stdin for "-". Anything but a regular file (after
// following symlinks) is refused with an error naming what it is, so that a FIFO nobody writes to
// or /dev/zero cannot hang or exhaust klockstat; stdin is taken as it is, since the user chose to
// pipe it. A regular file larger than limit is refused before any of it is read.
func Open(path string, stdin io.Reader, limit int64) (io.ReadCloser, error) {
	if path == Stdin {
		return io.NopCloser(stdin), nil
	}
	f, err := OpenRegular(path)
	if err != nil {
		var notRegular *NotRegularError
		if errors.As(err, &notRegular) {
			return nil, fmt.Errorf("%w (give a file, or pipe the data to %q)", err, Stdin)
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.Size() > limit {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, &TooLargeError{Limit: limit, Size: st.Size()})
	}
	return f, nil
}

// OpenRegular opens path for reading without ever blocking: anything but a regular file (after
// following symlinks) is refused with a *NotRegularError.
func OpenRegular(path string) (*os.File, error) {
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer before the
	// type check below could refuse it. It changes nothing for a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return f, nil
}

// NotRegularError is a path that is not a regular file where one is read.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: %s, not a regular file", e.Path, kind(e.Mode))
}

// kind names a non-regular file type for a message.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}

// TooLargeError is an input over the size klockstat reads.
type TooLargeError struct {
	Limit int64
	Size  int64 // -1 when the input is a stream that went on past Limit
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("more than %s, the most klockstat reads", Bytes(e.Limit))
	}
	return fmt.Sprintf("%s, more than the %s klockstat reads", Bytes(e.Size), Bytes(e.Limit))
}

// ReadAll reads r to its end, or fails with a *TooLargeError past limit bytes. sizeHint is how many
// bytes r probably holds (a file's size, 0 if unknown): reading into a buffer of that size at once
// spares the copies and the zeroing of a buffer that doubles as it fills.
func ReadAll(r io.Reader, limit, sizeHint int64) ([]byte, error) {
	var buf bytes.Buffer
	if sizeHint > 0 {
		buf.Grow(int(min(sizeHint, limit)) + bytes.MinRead) // ReadFrom grows a buffer with less than MinRead free
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, &TooLargeError{Limit: limit, Size: -1}
	}
	return buf.Bytes(), nil
}

// Bytes formats a size in binary units, as "2 GiB" or "512 KiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	v, i := float64(n)/unit, 0
	for v >= unit && i < len(units)-1 {
		v /= unit
		i++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}
