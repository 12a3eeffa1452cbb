package workload

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// inodeLoad contends the i_rwsem of one file: every worker overwrites the
// same page with pwrite, and buffered writes on ext4, tmpfs, xfs and btrfs
// all take inode_lock (down_write) around the copy. pwrite rather than
// write on a shared descriptor, whose f_pos mutex would be contended first.
type inodeLoad struct {
	file *os.File
	size int // bytes per write
}

// inodeWriteSize is one page: a whole-page overwrite needs no read-modify-write.
const inodeWriteSize = 4096

func newInode(o Options) (generator, error) {
	f, err := sharedFile(o.Dir, "inode")
	if err != nil {
		return nil, err
	}
	size := o.WriteSize
	if size == 0 {
		size = inodeWriteSize
	}
	return &inodeLoad{file: f, size: size}, nil
}

// sharedFile creates the file a workload's workers share, in dir, and unlinks it at once so that
// not even a killed run leaves it behind; the inode and its locks live on while it is open.
func sharedFile(dir, workload string) (*os.File, error) {
	f, err := os.CreateTemp(dir, "contend-"+workload+"-*")
	if err != nil {
		return nil, fmt.Errorf("creating the shared file: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("unlinking the shared file: %w", err)
	}
	return f, nil
}

func (l *inodeLoad) op(int) func() error {
	fd := int(l.file.Fd())
	buf := make([]byte, l.size)
	return func() error {
		if _, err := unix.Pwrite(fd, buf, 0); err != nil {
			return fmt.Errorf("pwrite: %w", err)
		}
		return nil
	}
}

func (l *inodeLoad) Close() error {
	return l.file.Close()
}
