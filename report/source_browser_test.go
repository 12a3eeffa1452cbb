package report

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/klockstat/klockstat/capture"
)

// TestBrowserSourceLines opens the heaviest record's stack on a page with source lines: each
// frame with lines shows its SourceText after it, with SourceDetail as its title, and the note
// under the stack names the vmlinux's build id.
func TestBrowserSourceLines(t *testing.T) {
	c, _ := knownCapture(t)
	stack := sortedRecords(c)[0].Stack
	frame := stack[len(stack)/2]
	c.Sources = &capture.Sources{BuildID: "48dc540c", Frames: map[string]capture.SourceFrame{frame: {Lines: []capture.SourceLine{
		{Function: "inode_lock", File: "include/linux/fs.h", Line: 800},
		{Function: capture.ParseFrame(frame).Function, File: "fs/ext4/file.c", Line: 285},
	}}}}
	ctx := browser(t, c, HTMLOptions{Top: 5})
	do(t, ctx, "opening a stack", chromedp.Click(chromedp.CSS(`#table-locks tbody tr:first-child td.stack summary`)))
	type shown struct {
		Frame, Source, Title, Note string
	}
	got, err := chromedp.Run(ctx, chromedp.Poll[[]shown](`(() => {
		const details = document.querySelector("#table-locks tbody tr:first-child td.stack details");
		const items = [...details.querySelectorAll("li")];
		const note = details.querySelector(".source-note");
		return items.length > 0 && items.map((li) => {
			const s = li.querySelector(".source");
			return {Frame: li.firstChild.textContent, Source: s ? s.textContent : "", Title: s ? s.title : "", Note: note ? note.textContent : ""};
		});
	})()`, chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		t.Fatalf("waiting for the frames: %v", err)
	}
	lines := c.Sources.Lines(frame)
	with := 0
	for _, s := range got {
		if s.Note != "source lines from the vmlinux of build id 48dc540c" {
			t.Errorf("note %q, want the build id's", s.Note)
		}
		switch {
		case s.Frame == frame:
			with++
			if s.Source != capture.SourceText(lines) || s.Title != capture.SourceDetail(lines) {
				t.Errorf("frame %s shows %q titled %q, want %q titled %q", frame, s.Source, s.Title, capture.SourceText(lines), capture.SourceDetail(lines))
			}
		case s.Source != "":
			t.Errorf("frame %s, without lines, shows %q", s.Frame, s.Source)
		}
	}
	if with != 1 {
		t.Errorf("stack %+v shows %s %d times, want once", got, frame, with)
	}
}
