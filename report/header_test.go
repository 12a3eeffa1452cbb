package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
)

func TestHighlightsNamedShare(t *testing.T) {
	c := &capture.Capture{Records: []capture.Record{
		{Type: "rwsem:W", Lock: 1, Name: "&ext4_inode_cache", TID: 1, Count: 1, TotalNS: 25, MinNS: 25, MaxNS: 25},
		{Type: "spinlock", Lock: 2, TID: 2, Count: 3, TotalNS: 75, MinNS: 25, MaxNS: 25},
		{Type: "mutex", Lock: 3, Name: "jiffies_lock", TID: 2, Count: 1, TotalNS: 50, MinNS: 50, MaxNS: 50},
	}}
	for _, h := range highlights(newModel(c, true, nil)) {
		if h.Label == "Contended locks" {
			// A slab cache's name says what kind of object holds the lock, not which lock: it does not
			// count as the lock's name.
			if !strings.Contains(h.Detail, "of the wait time, 33.3% on locks named by symbol or field, 16.7% on locks named by slab cache only") {
				t.Errorf("contended locks: %q does not give the named share of the wait time", h.Detail)
			}
			return
		}
	}
	t.Error("no Contended locks highlight")
}

// The programs' runs in the probe cost's title are said to be sampled, with the time and the
// events they cover, when they were; not otherwise.
func TestHeaderProgramsSampled(t *testing.T) {
	m := capture.Meta{DurationNS: 3_010_000_000, ProgramsMeasuredNS: 301_000_000, Programs: []capture.ProgramStats{{Name: "contention_begin", RunCount: 120, RunTimeNS: 60_000}}}
	title := func(m capture.Meta) string {
		_, _, health := headerFields(m)
		for _, f := range health {
			if f.Label == "Probe cost" {
				return f.Title
			}
		}
		t.Fatal("no Probe cost field")
		return ""
	}
	want := "run statistics sampled: on for 301.00 ms of the 3.01 s (10%), the runs below are those counted then\ncontention_begin: 120 runs, 60.00 us, 0 recursion misses"
	if got := title(m); got != want {
		t.Errorf("sampled: title %q, want %q", got, want)
	}
	m.ProgramsEvents, m.ProgramsMeasuredEvents = 2000, 300
	want = "run statistics sampled: on for 301.00 ms of the 3.01 s (10%) and 300 of the 2000 lock events (15%), the runs below are those counted then\ncontention_begin: 120 runs, 60.00 us, 0 recursion misses"
	if got := title(m); got != want {
		t.Errorf("sampled, events counted: title %q, want %q", got, want)
	}
	m.ProgramsMeasuredNS = 0
	if got := title(m); strings.Contains(got, "sampled") {
		t.Errorf("measured throughout: title %q says sampled", got)
	}
}

// The page's health card and its highlight say which lock types the kernel could not show, and
// why; a capture that saw them all says nothing of it.
func TestHealthUnseen(t *testing.T) {
	c := summaryCapture()
	c.Meta.Unseen = unseenSpin
	const want = "spinlock waits cannot be seen on this kernel: this guest spins in virt_spin_lock() without paravirtual spinlocks, before the contention tracepoint"
	_, _, health := headerFields(c.Meta)
	if len(health) == 0 || health[0].Label != "Unseen lock types" || health[0].Value != want || !health[0].Bad {
		t.Errorf("health card opens with %+v, want the unseen spinlocks, marked bad", health[0])
	}
	hs := highlights(newModel(c, true, nil))
	h := hs[len(hs)-1]
	if h.Label != "Capture health" || h.Value != "spinlock waits unseen" || !h.Bad || !strings.HasPrefix(h.Detail, want+"; probe cost ") {
		t.Errorf("health highlight %+v, want it to say the spinlock waits unseen", h)
	}

	c.Meta.Unseen = nil
	_, _, health = headerFields(c.Meta)
	for _, f := range health {
		if f.Label == "Unseen lock types" {
			t.Errorf("a capture that saw every type has %+v", f)
		}
	}
	if hs := highlights(newModel(c, true, nil)); hs[len(hs)-1].Value != "complete" {
		t.Errorf("health highlight %+v, want complete", hs[len(hs)-1])
	}
}

// TestHealthUnmatched: the ends of waits begun before the capture are not among its ends, and the
// card says so where there are any, so "2594 begin, 2594 end" beside "3 end" unmatched reads right.
func TestHealthUnmatched(t *testing.T) {
	for _, tc := range []struct {
		e    capture.Events
		want string
	}{
		{capture.Events{Begin: 2594, End: 2594}, "0 begin, 0 end"},
		{capture.Events{Begin: 2594, End: 2594, UnmatchedEnd: 3}, "0 begin, 3 end: 3 ends of waits begun before the capture, not among its 2594 ends"},
		{capture.Events{Begin: 10, End: 9, UnmatchedBegin: 1}, "1 begin, 0 end: 1 begin whose end never came"},
	} {
		c := summaryCapture()
		c.Meta.Events = tc.e
		_, _, health := headerFields(c.Meta)
		i := slices.IndexFunc(health, func(f field) bool { return f.Label == "Unmatched" })
		if i < 0 || health[i].Value != tc.want {
			t.Errorf("events %+v: unmatched %+v, want %q", tc.e, health, tc.want)
		}
	}
}
