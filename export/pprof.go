package export

import (
	"fmt"
	"io"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/klockstat/klockstat/capture"
)

// The sample types of Go's own mutex profile (runtime/pprof "mutex"), so that pprof's views and
// options for lock contention apply as they are.
var pprofSampleTypes = []*profile.ValueType{
	{Type: "contentions", Unit: "count"},
	{Type: "delay", Unit: "nanoseconds"},
}

// kernelMapping is the one mapping every location belongs to, named as perf names the kernel image.
// Its locations carry their function names, so pprof never tries to symbolize them.
var kernelMapping = &profile.Mapping{ID: 1, File: "[kernel.kallsyms]", HasFunctions: true}

// WritePprof writes c as a gzipped profile.proto: one sample per record with waits, valued
// [contentions, delay in ns] (Go's mutex profile), whose locations are the record's kernel frames,
// innermost first. A frame "function+0xoff" is a location with that function and the offset as its
// line number (pprof -lines shows it in decimal); an unnamed frame is a function named by its
// address, which is also the location's address. Samples are labelled lock_type, lock_name (when
// known), lock (address or hashed id), comm and cgroup (its path, when known), with numeric labels pid, tid and cgroup_id, for pprof's
// -tagfocus, -tagignore and -tags. A label whose value is empty or 0 (the idle task's pid and tid) is
// left out: profile.proto cannot tell it from no label.
func WritePprof(w io.Writer, c *capture.Capture, hasher *capture.AddressHasher) error {
	addrs := newAddresses(c, hasher)
	p := &profile.Profile{
		SampleType:        pprofSampleTypes,
		DefaultSampleType: "delay",
		PeriodType:        &profile.ValueType{Type: "contentions", Unit: "count"},
		Period:            1,
		Mapping:           []*profile.Mapping{kernelMapping},
		TimeNanos:         c.Meta.Start.UnixNano(),
		DurationNanos:     c.Meta.DurationNS,
		Comments:          []string{pprofComment(c.Meta)},
	}
	locations := map[string]*profile.Location{}
	functions := map[string]*profile.Function{}
	for _, r := range c.Records {
		if r.Count == 0 {
			continue
		}
		s := &profile.Sample{
			Value:    []int64{int64(r.Count), int64(r.TotalNS)},
			Label:    map[string][]string{"lock_type": {validText(r.Type)}, "lock": {addrs.lock(r.Lock)}},
			NumLabel: map[string][]int64{},
		}
		for key, value := range map[string]string{"lock_name": r.Name, "comm": r.Comm, "cgroup": r.Cgroup} {
			if value != "" {
				s.Label[key] = []string{validText(value)}
			}
		}
		for key, value := range map[string]uint64{"pid": uint64(r.PID), "tid": uint64(r.TID), "cgroup_id": r.CgroupID} {
			if value != 0 {
				s.NumLabel[key] = []int64{int64(value)}
			}
		}
		for _, f := range stackOf(r.Stack) {
			loc := locations[f]
			if loc == nil {
				loc = newLocation(p, functions, parseFrame(validText(addrs.frame(f))))
				locations[f] = loc
			}
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	if err := p.CheckValid(); err != nil {
		return fmt.Errorf("building the pprof profile: %w", err)
	}
	if err := p.Write(w); err != nil {
		return fmt.Errorf("writing the pprof profile: %w", err)
	}
	return nil
}

// newLocation adds the location of one frame to p, and its function unless p has it already.
func newLocation(p *profile.Profile, functions map[string]*profile.Function, f frame) *profile.Location {
	fn := functions[f.function]
	if fn == nil {
		fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: f.function, SystemName: f.function, Filename: kernelMapping.File}
		functions[f.function] = fn
		p.Function = append(p.Function, fn)
	}
	loc := &profile.Location{
		ID:      uint64(len(p.Location) + 1),
		Mapping: kernelMapping,
		Address: f.address,
		Line:    []profile.Line{{Function: fn, Line: int64(f.offset)}},
	}
	p.Location = append(p.Location, loc)
	return loc
}

// pprofComment says where the profile comes from; pprof -comments prints it.
func pprofComment(m capture.Meta) string {
	return fmt.Sprintf("klockstat %s: kernel lock contention on %s (kernel %s, %s probe), %d waits",
		m.ToolVersion, validText(m.Hostname), validText(m.Kernel), m.Probe, m.Events.Waits)
}

// validText keeps strings from the capture, which a process names, valid UTF-8 as protobuf strings
// and spreadsheets expect.
func validText(s string) string {
	return strings.ToValidUTF8(s, "\uFFFD")
}
