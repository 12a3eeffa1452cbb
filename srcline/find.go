package srcline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// RunningBuildID is the running kernel's GNU build id in hex, from /sys/kernel/notes; "" when
// the kernel does not say.
func RunningBuildID() string {
	notes, err := os.ReadFile("/sys/kernel/notes")
	if err != nil {
		return ""
	}
	return ParseBuildID(notes, binary.NativeEndian)
}

// debugRoot is where distributions install debug images (Debian's linux-image-*-dbg, Ubuntu's
// -dbgsym, Fedora's kernel-debuginfo).
const debugRoot = "/usr/lib/debug"

// Candidates are the paths a kernel's debug image is installed at, for its build id and its
// release (uname -r): by build id first, which names exactly that build, then by release.
func Candidates(buildID, release string) []string {
	var paths []string
	if len(buildID) > 2 {
		paths = append(paths, filepath.Join(debugRoot, ".build-id", buildID[:2], buildID[2:]+".debug"))
	}
	if release != "" && filepath.Base(release) == release {
		paths = append(paths,
			filepath.Join(debugRoot, "boot", "vmlinux-"+release),
			filepath.Join(debugRoot, "lib", "modules", release, "vmlinux"))
	}
	return paths
}

// Find returns the first of Candidates that exists, or "" when none does.
func Find(buildID, release string) (string, error) {
	for _, p := range Candidates(buildID, release) {
		_, err := os.Stat(p)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("looking for the kernel's debug image: %w", err)
		}
	}
	return "", nil
}
