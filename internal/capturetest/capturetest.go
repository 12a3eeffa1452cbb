// Package capturetest builds captures for tests: records given by their waits, in captures whose
// histograms hold exactly those waits.
package capturetest

import (
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
)

// Record is a record given by its waits.
type Record struct {
	capture.Record
	Waits []uint64
}

// Rec is a record of the given waits, in nanoseconds.
func Rec(typ, name, caller, comm string, pid, tid uint32, lock capture.Addr, waits ...uint64) Record {
	return Record{capture.Record{Type: typ, Name: name, Caller: caller, Comm: comm, PID: pid, TID: tid, Lock: lock}, waits}
}

// AddWait counts a wait of ns nanoseconds in r and in h, the histogram of its type.
func AddWait(r *capture.Record, h *capture.Histogram, ns uint64) {
	if r.Count == 0 || ns < r.MinNS {
		r.MinNS = ns
	}
	r.Count++
	r.TotalNS += ns
	r.MaxNS = max(r.MaxNS, ns)
	h.Add(ns)
}

// Build is a valid capture of meta and the records, whose histograms hold exactly their waits, in the
// order the types first appear. It also returns the waits of each type, for deriving expected values
// without the histograms.
func Build(t testing.TB, meta capture.Meta, records ...Record) (*capture.Capture, map[string][]uint64) {
	t.Helper()
	c := &capture.Capture{Version: capture.FormatVersion, Meta: meta, Records: []capture.Record{}}
	hists := map[string]*capture.Histogram{}
	var order []string
	waits := map[string][]uint64{}
	for _, tr := range records {
		r := tr.Record
		for _, w := range tr.Waits {
			if hists[r.Type] == nil {
				hists[r.Type] = &capture.Histogram{Type: r.Type}
				order = append(order, r.Type)
			}
			AddWait(&r, hists[r.Type], w)
			waits[r.Type] = append(waits[r.Type], w)
		}
		c.Records = append(c.Records, r)
	}
	for _, typ := range order {
		c.Histograms = append(c.Histograms, *hists[typ])
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("test capture: %v", err)
	}
	return c, waits
}

// Of is a valid capture of the given length of the records, taken of the same machine and settings
// as every other capture Of makes, as comparisons want them.
func Of(t testing.TB, durationNS int64, records ...Record) *capture.Capture {
	t.Helper()
	c, _ := Build(t, capture.Meta{
		Tool: "klockstat", ToolVersion: "0.1.0-test", Kernel: "6.1.0-18-amd64", Arch: "x86_64", Hostname: "bench1", CPUs: 2,
		Start: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), DurationNS: durationNS,
		CommandLine: []string{"klockstat", "-q", "--json", "a.json"},
		Probe:       "rawtp", StackDepth: 16, Types: []string{"rwsem:W", "rwsem:R", "mutex", "spinlock"},
	}, records...)
	return c
}
