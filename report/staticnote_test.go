package report

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
)

// Locks of staticCapture: two static kernel objects kallsyms could not name (file_rwsem and
// tasklist_lock on the kernel of issue 30), and a process's mmap_lock.
const (
	staticRwsem = capture.Addr(0xffffffff83012340)
	staticRW    = capture.Addr(0xffffffff83000040)
	heapMmap    = capture.Addr(0xffff888104d2a0c8)
	staticID    = "3c0a5e7ef2b1d4a99c6e1f2a3b4c5d6e7f809a1b"
)

// staticCapture is a capture of a kernel whose kallsyms lists no data symbols: most of its wait
// time, 65 of 100 ms, is on two static locks without a name.
func staticCapture(t testing.TB) *capture.Capture {
	c, _ := capturetest.Build(t, capture.Meta{
		Tool: "klockstat", Kernel: "6.18.44-fc-v782", KernelBuildID: staticID, KallsymsNoData: true,
		Probe: "rawtp", StackDepth: 16, CPUs: 2, DurationNS: 2_000_000_000,
		Start: time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC),
	},
		capturetest.Record{Record: capture.Record{Type: "rwsem:W", Lock: staticRwsem, Static: true, Comm: "stress-ng-flock", PID: 10, TID: 11,
			Caller: "locks_lock_inode_wait+0x5a", Stack: []string{"percpu_down_write+0x2f", "locks_lock_inode_wait+0x5a"}}, Waits: []uint64{35_000_000, 20_000_000}},
		capturetest.Record{Record: capture.Record{Type: "rwlock:W", Lock: staticRW, Static: true, Comm: "sh", PID: 20, TID: 20,
			Caller: "copy_process+0x80", Stack: []string{"copy_process+0x80"}}, Waits: []uint64{10_000_000}},
		capturetest.Record{Record: capture.Record{Type: "rwsem:R", Lock: heapMmap, Name: "mmap_lock", Comm: "ps", PID: 30, TID: 30,
			Caller: "do_user_addr_fault+0x1a0", Stack: []string{"do_user_addr_fault+0x1a0"}}, Waits: []uint64{35_000_000}},
	)
	return c
}

const staticNoteText = "2 locks (65.0% of the wait time) are static kernel objects that this kernel's kallsyms cannot name (CONFIG_KALLSYMS_ALL off): " +
	"to name them, capture with --vmlinux and the kernel's debug image (a vmlinux with its symbol table; without --vmlinux klockstat looks for it at " +
	"/usr/lib/debug/.build-id/3c/0a5e7ef2b1d4a99c6e1f2a3b4c5d6e7f809a1b.debug, then /usr/lib/debug/boot/vmlinux-6.18.44-fc-v782, then /usr/lib/debug/lib/modules/6.18.44-fc-v782/vmlinux)"

// TestSummaryStaticLocks checks that the summary says once why two locks have no name and how to
// name them, names them "static (unnamed)" in its rows, and gives the top lock's address with it.
func TestSummaryStaticLocks(t *testing.T) {
	c := staticCapture(t)
	out := written(t, func(w io.Writer) error {
		return WriteSummary(w, c, SummaryOptions{By: "lock", RawAddresses: true})
	})
	if n := strings.Count(out, staticNoteText); n != 1 {
		t.Errorf("the summary says %d times, want once:\n%s\n%s", n, staticNoteText, out)
	}
	for _, lock := range []capture.Addr{staticRwsem, staticRW} {
		if !strings.Contains(out, lock.String()+"   static (unnamed)   ") {
			t.Errorf("no row of lock %s named static (unnamed):\n%s", lock, out)
		}
	}
	if !strings.Contains(out, "; top lock "+staticRwsem.String()+" (a static kernel object without a name) at locks_lock_inode_wait+0x5a") {
		t.Errorf("the headline does not give the top lock's address and say it is a static object without a name:\n%s", out)
	}
	// Separated values: the note is a comment; rows only: none.
	sep := written(t, func(w io.Writer) error { return WriteSummary(w, c, SummaryOptions{Separator: ",", RawAddresses: true}) })
	if !strings.Contains(sep, "# "+staticNoteText) {
		t.Errorf("separated values lack the note as a comment:\n%s", sep)
	}
	if q := written(t, func(w io.Writer) error { return WriteSummary(w, c, SummaryOptions{RowsOnly: true}) }); strings.Contains(q, "static kernel") {
		t.Errorf("rows only (-q) has the note:\n%s", q)
	}
	// A filter that leaves one of the two counts one.
	one := written(t, func(w io.Writer) error {
		return WriteSummary(w, c, SummaryOptions{Types: []string{"rwsem:W"}, RawAddresses: true})
	})
	if !strings.Contains(one, "1 lock (100.0% of the wait time) is a static kernel object that this kernel's kallsyms cannot name") {
		t.Errorf("filtered to the rwsem, the note does not count it alone:\n%s", one)
	}
}

// TestStaticNoteCases: no note without unnamed static locks; the image or the kernel that left
// some unnamed is named instead of the advice to pass one.
func TestStaticNoteCases(t *testing.T) {
	known, _ := knownCapture(t)
	if note := staticNote(known, known.Records); note != "" {
		t.Errorf("a capture without static locks: note %q", note)
	}
	named := staticCapture(t)
	named.Records[0].Name = "file_rwsem"
	named.Meta.StaticNamesFrom = "/usr/lib/debug/boot/vmlinux-6.18.44-fc-v782"
	if got, want := staticNote(named, named.Records), "1 lock (10.0% of the wait time) is a static kernel object that no symbol of /usr/lib/debug/boot/vmlinux-6.18.44-fc-v782 names"; got != want {
		t.Errorf("with an image: note %q, want %q", got, want)
	}
	all := staticCapture(t)
	all.Meta.KallsymsNoData = false
	if got, want := staticNote(all, all.Records), "2 locks (65.0% of the wait time) are static kernel objects that no kernel symbol names"; got != want {
		t.Errorf("kallsyms with data: note %q, want %q", got, want)
	}
}

// TestStaticLocksSaved checks that a capture saved as JSON, and one read back from its HTML
// report, keep their marks: klockstat report of either says the same.
func TestStaticLocksSaved(t *testing.T) {
	c := staticCapture(t)
	var saved bytes.Buffer
	if err := c.Write(&saved); err != nil {
		t.Fatal(err)
	}
	fromJSON, err := capture.Parse(saved.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	page := renderHTML(t, c, HTMLOptions{}, testKey)
	if n := bytes.Count(page, []byte(htmlEscaped(staticNoteText))); n != 1 {
		t.Errorf("the report says %d times, want once: %s", n, staticNoteText)
	}
	if !bytes.Contains(page, []byte("which lists no data symbols (CONFIG_KALLSYMS_ALL off)")) {
		t.Errorf("the report's settings do not say kallsyms lists no data symbols")
	}
	fromHTML, err := ReadInput(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]*capture.Capture{"json": fromJSON, "html": fromHTML} {
		out := written(t, func(w io.Writer) error { return WriteSummary(w, got, SummaryOptions{}) })
		if !strings.Contains(out, staticNoteText) {
			t.Errorf("%s: the summary of the saved capture lacks the note:\n%s", name, out)
		}
	}
}

// htmlEscaped is s as html/template writes it in text.
func htmlEscaped(s string) string {
	return strings.NewReplacer("'", "&#39;", "(", "(", "&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;").Replace(s)
}
