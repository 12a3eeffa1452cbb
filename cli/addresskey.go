package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// The key kernel addresses are hashed under is one per boot of the machine, so that the id of a
// lock is the same in every capture, report, sweep and export made on that boot: an id copied
// from one run's output filters the next (-L). It is kept where root alone reads it, in a
// directory of tmpfs /run (gone at reboot), with the boot's id beside it in case /run outlives
// the boot (a container's). Whoever cannot read it (klockstat report as a user) hashes under a
// key of the run's own: the ids then hold within that run only.

// addressKeyPath is where the boot's key is kept.
const addressKeyPath = "/run/klockstat/address-key"

// bootIDPath is the kernel's random id of the running boot.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// bootKey is the boot's key, or why it cannot be had.
var bootKey = sync.OnceValues(func() ([]byte, error) {
	return loadBootKey(addressKeyPath, bootIDPath)
})

// runKey is this run's own key, for when the boot's cannot be had.
var runKey = sync.OnceValue(randomKey)

// keyWarned makes the warning that ids are the run's own a single line however often a key is
// asked for.
var keyWarned sync.Once

// addressKey is the key under which a run's outputs hash kernel addresses: the boot's, or when it
// cannot be had the run's own, said once on stderr, since an id copied from another run's output
// then matches nothing. Not said to a user who may not read root's key: that is by design.
func (inv invocation) addressKey() []byte {
	key, err := bootKey()
	if err == nil {
		return key
	}
	if ownKeySaid(err, os.Geteuid()) {
		keyWarned.Do(func() {
			fmt.Fprintf(inv.stderr, "klockstat: warning: lock ids hashed under this run's own key, so ids from other runs (-L) will not match: the boot's key in %s: %v\n", addressKeyPath, err)
		})
	}
	return runKey()
}

// ownKeySaid reports whether a user of id euid is told that ids are the run's own when the boot's
// key could not be had for err: always, but to a user who may not read root's key.
func ownKeySaid(err error, euid int) bool {
	return euid == 0 || !errors.Is(err, fs.ErrPermission)
}

// randomKey is a key of this run alone.
func randomKey() []byte {
	key := make([]byte, 32)
	rand.Read(key) // never fails: crypto/rand.Read crashes the program rather than return an error
	return key
}

// loadBootKey reads the key at path made on the boot whose id is at bootPath, or makes it: a file
// "BOOT-ID KEY-HEX" of mode 0600 in a directory of mode 0700, both root's. A file of another boot
// is replaced. Two runs making it at once agree: the file is linked into place, which fails for
// the second, who reads the first's.
func loadBootKey(path, bootPath string) ([]byte, error) {
	boot, err := os.ReadFile(bootPath)
	if err != nil {
		return nil, fmt.Errorf("reading the boot id: %w", err)
	}
	id := strings.TrimSpace(string(boot))
	dir := filepath.Dir(path)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	if err := checkPrivate(dir, true); err != nil {
		return nil, err
	}
	if key, err := readBootKey(path, id); err == nil || !errors.Is(err, errOtherBoot) && !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	tmp, err := os.CreateTemp(dir, ".address-key-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, werr := fmt.Fprintf(tmp, "%s %s\n", id, hex.EncodeToString(randomKey()))
	if err := errors.Join(werr, tmp.Close()); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		// Another run's, or a stale one of another boot, which is replaced.
		if key, err := readBootKey(path, id); !errors.Is(err, errOtherBoot) {
			return key, err
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	return readBootKey(path, id)
}

// errOtherBoot is the key file of another boot.
var errOtherBoot = errors.New("the address key is another boot's")

// readBootKey reads the key file at path, which must be private and of boot id.
func readBootKey(path, id string) ([]byte, error) {
	if err := checkPrivate(path, false); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fileID, keyHex, ok := strings.Cut(strings.TrimSpace(string(data)), " ")
	if !ok {
		return nil, fmt.Errorf("%s: not a klockstat address key", path)
	}
	if fileID != id {
		return nil, errOtherBoot
	}
	key, err := hex.DecodeString(keyHex)
	if err != nil || len(key) != 32 || bytes.Equal(key, make([]byte, 32)) {
		return nil, fmt.Errorf("%s: not a klockstat address key", path)
	}
	return key, nil
}

// checkPrivate refuses a path that is a symbolic link, not root's, or open to others: a key another
// user could read or plant would turn the ids back into addresses.
func checkPrivate(path string, dir bool) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case dir && !st.IsDir() || !dir && !st.Mode().IsRegular():
		return fmt.Errorf("%s: not a plain %s", path, map[bool]string{true: "directory", false: "file"}[dir])
	case !ok || sys.Uid != 0:
		return fmt.Errorf("%s: not root's", path)
	case st.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s: mode %v, open to others", path, st.Mode().Perm())
	}
	return nil
}
