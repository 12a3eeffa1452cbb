package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/collector"
)

// progress draws one self-overwriting status line on a terminal.
type progress struct {
	w     io.Writer
	o     *captureOptions
	coll  *collector.Collector
	start time.Time
	shown bool
}

func newProgress(w io.Writer, o *captureOptions, coll *collector.Collector) *progress {
	f, ok := w.(*os.File)
	if o.quiet || !ok || !isTerminal(f) {
		return nil
	}
	return &progress{w: w, o: o, coll: coll, start: time.Now()}
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func (p *progress) update() {
	if p == nil {
		return
	}
	elapsed := time.Since(p.start).Round(100 * time.Millisecond)
	window := fmt.Sprintf("%v left", max(p.o.duration-elapsed, 0).Round(time.Second))
	if len(p.o.command) > 0 && !p.o.durationSet {
		window = "while " + p.o.command[0] + " runs"
	}
	fmt.Fprintf(p.w, "\r\x1b[Kklockstat: %v elapsed, %s, %d contention events (%s probe); Ctrl-C stops and reports",
		elapsed, window, p.coll.Events(), p.coll.Backend())
	p.shown = true
}

func (p *progress) clear() {
	if p != nil && p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
