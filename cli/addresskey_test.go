package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/klockstat/klockstat/internal/testenv"
)

// The boot's key: the same on every load of one boot, private, a new one on another boot, and none
// taken from a file others could have read or planted.
func TestBootKey(t *testing.T) {
	testenv.RequireRoot(t) // the key's files must be root's
	dir := t.TempDir()
	path := filepath.Join(dir, "klockstat", "address-key")
	boot := filepath.Join(dir, "boot_id")
	writeFile := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(boot, "1111-boot\n")
	first, err := loadBootKey(path, boot)
	if err != nil || len(first) != 32 {
		t.Fatalf("first load: %x, %v", first, err)
	}
	again, err := loadBootKey(path, boot)
	if err != nil || !bytes.Equal(first, again) {
		t.Errorf("second load of the same boot: %x (%v), want %x", again, err, first)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, st.Mode().Perm(), err, want)
		}
	}
	writeFile(boot, "2222-boot\n")
	next, err := loadBootKey(path, boot)
	if err != nil || bytes.Equal(next, first) {
		t.Errorf("another boot's load: %x (%v), want a new key", next, err)
	}
	if data, _ := os.ReadFile(path); !strings.HasPrefix(string(data), "2222-boot ") {
		t.Errorf("the key file %q is not the new boot's", data)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if key, err := loadBootKey(path, boot); err == nil {
		t.Errorf("a key readable by others was used: %x", key)
	}
}

// Two runs on one boot name a lock by one id, in the summary and the exports alike, and an id from
// the first run's output filters the second's.
func TestIDsStayTheSameAcrossRuns(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "capture.json")
	writeCapture(t, in, 5000)
	run := func(name string, args ...string) (summary, csv string) {
		t.Helper()
		out := filepath.Join(dir, name+".csv")
		cmd, stdout, stderr := klockstat(t, append([]string{"report", in, "-o", "", "--csv", out, "--by", "lock", "-q"}, args...)...)
		if status := exitStatus(t, cmd.Run()); status != 0 {
			t.Fatalf("klockstat report: status %d\n%s", status, stderr)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), string(data)
	}
	summary, csv := run("first")
	id := ""
	for f := range strings.FieldsSeq(summary) {
		if isHexID(f) {
			id = f
		}
	}
	if id == "" || strings.Contains(summary, "ffff888100a3c2d8") {
		t.Fatalf("no id, or the raw address, in the summary:\n%s", summary)
	}
	if !strings.Contains(csv, ","+id+",") {
		t.Errorf("the CSV of the same run lacks the summary's id %s:\n%s", id, csv)
	}
	again, csv2 := run("second", "-L", id)
	if !strings.Contains(again, id) || !strings.Contains(csv2, ","+id+",") {
		t.Errorf("a second run filtered by the first's id %s kept nothing:\n%s\n%s", id, again, csv2)
	}
	if none, _ := run("third", "-L", "00000000deadbeef"); strings.Contains(none, id) {
		t.Errorf("another id kept the lock:\n%s", none)
	}
}

// isHexID reports whether s is written as a hashed id, 16 hex digits.
func isHexID(s string) bool {
	return len(s) == 16 && strings.Trim(s, "0123456789abcdef") == ""
}

// Root is told when the boot's key cannot be had (a read-only /run), a user only when the reason
// is not that root's key is root's.
func TestOwnKeySaid(t *testing.T) {
	readOnly := &fs.PathError{Op: "mkdir", Path: "/run/klockstat", Err: syscall.EROFS}
	denied := &fs.PathError{Op: "open", Path: addressKeyPath, Err: syscall.EACCES}
	for _, tt := range []struct {
		err  error
		euid int
		want bool
	}{{readOnly, 0, true}, {readOnly, 1000, true}, {denied, 0, true}, {denied, 1000, false}} {
		if got := ownKeySaid(tt.err, tt.euid); got != tt.want {
			t.Errorf("%v as %d: said %v, want %v", tt.err, tt.euid, got, tt.want)
		}
	}
}
