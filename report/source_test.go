package report

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
)

// TestHTMLSourceLines renders a capture with source lines: the caller column shows a caller's
// SourceText after it, the page data has the text and detail of every frame with lines, its note
// names the vmlinux, and the embedded capture keeps the lines for a re-render.
func TestHTMLSourceLines(t *testing.T) {
	c, _ := knownCapture(t)
	caller := "vm_mmap_pgoff+0xe0" // the caller and a frame of the mmap records
	frame := "do_syscall_64+0x82"  // a frame of most stacks
	c.Sources = &capture.Sources{BuildID: "48dc540c8b76393804ca8088dbfa7d42911a9444", Frames: map[string]capture.SourceFrame{
		caller: {Lines: []capture.SourceLine{
			{Function: "mmap_write_lock_killable", File: "include/linux/mmap_lock.h", Line: 122},
			{Function: "vm_mmap_pgoff", File: "mm/util.c", Line: 571},
		}},
		frame: {Lines: []capture.SourceLine{{Function: "do_syscall_64", File: "arch/x86/entry/common.c", Line: 83}}},
	}}
	page := renderHTML(t, c, HTMLOptions{Top: 5}, testKey)
	d := dataOf(t, page)

	v := d.view(t, "threads")
	records := sortedRecords(hashed(t, c, testKey))
	withLines := 0
	for i, r := range records {
		want := callerText(r.Caller) + capture.SourceText(c.Sources.Lines(r.Caller))
		if got := d.cell(t, v, "caller", i); got != want {
			t.Errorf("row %d caller %q, want %q", i, got, want)
		}
		if r.Caller == caller {
			withLines++
		}
	}
	if withLines == 0 {
		t.Fatalf("no record of caller %s", caller)
	}
	callers := d.view(t, "callers")
	if !slices.ContainsFunc(callers.Columns[0].Values, func(raw json.RawMessage) bool {
		i, _ := strconv.Atoi(string(raw))
		return d.Strings[i] == caller+" → mmap_write_lock_killable, include/linux/mmap_lock.h:122"
	}) {
		t.Errorf("the callers view has no row of %s with its source line", caller)
	}

	for _, f := range []string{caller, frame} {
		i := slices.Index(d.Strings, f)
		lines := c.Sources.Lines(f)
		if got := d.Sources.Frames[strconv.Itoa(i)]; got != [2]string{capture.SourceText(lines), capture.SourceDetail(lines)} {
			t.Errorf("frame %s (string %d): %q, want its SourceText and SourceDetail", f, i, got)
		}
	}
	if len(d.Sources.Frames) != 2 || !strings.Contains(d.Sources.Note, c.Sources.BuildID) {
		t.Errorf("page sources %+v, want the 2 frames and a note naming the build id", d.Sources)
	}

	again, err := ReadInput(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Sources, c.Sources) {
		t.Errorf("the embedded capture's sources %+v, want %+v", again.Sources, c.Sources)
	}
}

// TestHTMLNoSourceLines checks a page without lines says how to get them, and shows callers as
// before.
func TestHTMLNoSourceLines(t *testing.T) {
	c, _ := knownCapture(t)
	d := dataOf(t, renderHTML(t, c, HTMLOptions{Top: 5}, testKey))
	if len(d.Sources.Frames) != 0 || !strings.Contains(d.Sources.Note, "--vmlinux") || !strings.Contains(d.Sources.Help, "dbg") {
		t.Errorf("page sources %+v, want none and a note on --vmlinux", d.Sources)
	}
	v := d.view(t, "threads")
	for i, r := range sortedRecords(hashed(t, c, testKey)) {
		if got := d.cell(t, v, "caller", i); got != callerText(r.Caller) {
			t.Errorf("row %d caller %q, want %q", i, got, callerText(r.Caller))
		}
	}
}
