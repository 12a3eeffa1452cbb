package export

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/klockstat/klockstat/capture"
)

// parseFolded reads folded stacks as flamegraph.pl does: the weight after the last space, frames
// split at ';'. It fails on any line that is not a stack and a weight.
func parseFolded(t *testing.T, out []byte) (lines [][]string, weights []uint64) {
	t.Helper()
	for _, line := range strings.SplitAfter(string(out), "\n") {
		if line == "" {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		w, err := strconv.ParseUint(strings.TrimSuffix(line[i+1:], "\n"), 10, 64)
		if i < 0 || err != nil || !strings.HasSuffix(line, "\n") || !utf8.ValidString(line) {
			t.Fatalf("folded line %q: want valid UTF-8 `frames WEIGHT` ending in a newline", line)
		}
		lines = append(lines, strings.Split(line[:i], ";"))
		weights = append(weights, w)
	}
	return lines, weights
}

// TestFoldedAddsUp: the weights add up to the capture's total wait, and per thread name to its
// threads' waits; every line is the thread name then the stack outermost first, one box per function.
func TestFoldedAddsUp(t *testing.T) {
	for name, c := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteFolded(&b, asCaptured(c)); err != nil {
				t.Fatal(err)
			}
			lines, weights := parseFolded(t, b.Bytes())
			var total uint64
			perComm := map[string]uint64{}
			for i, frames := range lines {
				total += weights[i]
				perComm[frames[0]] += weights[i]
			}
			if _, want := waitTotals(c); total != want {
				t.Errorf("folded weights add up to %d ns, the capture waited %d ns", total, want)
			}
			wantPerComm := map[string]uint64{}
			for _, r := range c.Records {
				wantPerComm[foldedName(r.Comm)] += r.TotalNS
			}
			for comm, want := range wantPerComm {
				if perComm[comm] != want {
					t.Errorf("thread %q: folded weights add up to %d ns, its records to %d ns", comm, perComm[comm], want)
				}
			}
			// Every record's stack is one line's, outermost first, without offsets.
			stacks := map[string]bool{}
			for _, frames := range lines {
				stacks[strings.Join(frames, ";")] = true
			}
			for i, r := range c.Records {
				if r.Count == 0 {
					continue
				}
				want := []string{foldedName(r.Comm)}
				for j := len(r.Stack) - 1; j >= 0; j-- {
					want = append(want, capture.ParseFrame(r.Stack[j]).Func())
				}
				if len(r.Stack) == 0 {
					want = append(want, unknownFrame)
				}
				if !stacks[strings.Join(want, ";")] {
					t.Errorf("record %d: no line %q", i, strings.Join(want, ";"))
				}
			}
		})
	}
}

// TestFoldedModuleFrames: a module function is one frame at any offset, named with its module, and
// apart from a vmlinux function of the same name.
func TestFoldedModuleFrames(t *testing.T) {
	var b bytes.Buffer
	if err := WriteFolded(&b, asCaptured(moduleCapture(t))); err != nil {
		t.Fatal(err)
	}
	want := "ext4;vfs_write;xfs_ilock;mutex_lock 50\n" +
		"kworker/0:1;vfs_write;0xffffffffc0a81234;mutex_lock 7\n" +
		"kworker/0:1;vfs_write;xfs_file_write_iter [xfs];xfs_ilock [xfs];mutex_lock 500\n"
	if b.String() != want {
		t.Errorf("folded\n%s\nwant\n%s", b.String(), want)
	}
}

// TestFoldedHostileNames: a thread name cannot add a frame, a line or a weight.
func TestFoldedHostileNames(t *testing.T) {
	c := hostileCapture(t)
	var b bytes.Buffer
	if err := WriteFolded(&b, asCaptured(c)); err != nil {
		t.Fatal(err)
	}
	lines, _ := parseFolded(t, b.Bytes())
	depth := map[int]bool{} // frames per line: the thread name and the stack
	for _, r := range c.Records {
		if r.Count > 0 {
			depth[1+len(stackOf(r.Stack))] = true
		}
	}
	for _, frames := range lines {
		if !depth[len(frames)] {
			t.Errorf("line %q has %d frames: the thread name split or merged frames", strings.Join(frames, ";"), len(frames))
		}
		for _, f := range frames {
			if f == "" || strings.ContainsFunc(f, func(r rune) bool { return r < ' ' || r == '\u202e' }) {
				t.Errorf("frame %q: empty, or a control character got through", f)
			}
		}
	}
	if len(lines) != len(hostileComms) {
		t.Errorf("%d lines for %d thread names with waits", len(lines), len(hostileComms))
	}
}

// FuzzFolded: any thread name and frame gives one line whose weight is the record's.
func FuzzFolded(f *testing.F) {
	for _, comm := range hostileComms {
		f.Add(comm, "vm_mmap_pgoff+0xe0", uint64(1000))
	}
	f.Fuzz(func(t *testing.T, comm, fr string, ns uint64) {
		c := &capture.Capture{Records: []capture.Record{{Type: "mutex", Comm: comm, Count: 1, TotalNS: ns, Stack: []string{fr}}}}
		var b bytes.Buffer
		if err := WriteFolded(&b, asCaptured(c)); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(b.String(), " "+strconv.FormatUint(ns, 10)+"\n") || strings.Count(b.String(), "\n") != 1 {
			t.Fatalf("comm %q, frame %q: folded %q is not one line weighing %d", comm, fr, b.String(), ns)
		}
	})
}
