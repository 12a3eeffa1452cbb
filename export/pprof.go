package export

import (
	"fmt"
	"io"
	"slices"

	"github.com/google/pprof/profile"

	"github.com/klockstat/klockstat/capture"
)

// The sample types of Go's own mutex profile (runtime/pprof "mutex"), so that pprof's views and
// options for lock contention apply as they are.
var pprofSampleTypes = []*profile.ValueType{
	{Type: "contentions", Unit: "count"},
	{Type: "delay", Unit: "nanoseconds"},
}

// pprofOwnerSampleTypes follow when the capture has owners' stacks (--owners): the samples of
// owners on their CPU at a stack, and the wait charged to owners at a stack; the waiters' samples
// have 0 in them, and the owners' 0 in the waiters' types. pprof -sample_index=owner_wait shows the
// owners' critical sections.
var pprofOwnerSampleTypes = []*profile.ValueType{
	{Type: "owner_samples", Unit: "count"},
	{Type: "owner_wait", Unit: "nanoseconds"},
}

// kernelMapping is the file of the mapping of vmlinux frames and of frames kallsyms could not name,
// as perf names the kernel image.
const kernelMapping = "[kernel.kallsyms]"

// WritePprof writes c as a gzipped profile.proto: one sample per record with waits, valued
// [contentions, delay in ns] (Go's mutex profile), whose locations are the record's kernel frames,
// innermost first. A frame "function+0xoff" is a location with that function and the offset as its
// line number (pprof -lines shows it in decimal); an unnamed frame is a function named by its
// address, which is also the location's address. A module frame "xfs_ilock+0x4c [xfs]" is function
// xfs_ilock in a mapping of its own, "[xfs]" (see pprofFrames). A frame the capture has source
// lines of (--vmlinux) has them as its location's lines instead, innermost first, the functions
// inlined at it before its own, each function with its source file: pprof -lines, -list and
// flame graphs show where in the source, and the inlined functions as frames. Samples are labelled lock_type, lock_name (when
// known), lock (address or hashed id), comm and cgroup (its path, when known), a slab lock's
// lock_offset, lock_field and lock_field_candidates (one value each, when the field is a guess),
// with numeric labels pid, tid and cgroup_id, for pprof's
// -tagfocus, -tagignore and -tags. A label whose value is empty or 0 (the idle task's pid and tid) is
// left out: profile.proto cannot tell it from no label.
func WritePprof(w io.Writer, a Analysis) error {
	c, addrs := a.Capture(), a.Addresses()
	p := &profile.Profile{
		SampleType:        pprofSampleTypes,
		DefaultSampleType: "delay",
		PeriodType:        &profile.ValueType{Type: "contentions", Unit: "count"},
		Period:            1,
		TimeNanos:         c.Meta.Start.UnixNano(),
		DurationNanos:     c.Meta.DurationNS,
		Comments:          []string{pprofComment(c.Meta)},
	}
	frames := newPprofFrames(p, c.Sources)
	owners := a.OwnerStacks()
	values := func(count, delay uint64) []int64 { return []int64{int64(count), int64(delay)} }
	if len(owners) > 0 {
		p.SampleType = append(slices.Clone(pprofSampleTypes), pprofOwnerSampleTypes...)
		values = func(count, delay uint64) []int64 { return []int64{int64(count), int64(delay), 0, 0} }
	}
	for _, r := range c.Records {
		if r.Count == 0 {
			continue
		}
		s := &profile.Sample{
			Value:    values(r.Count, r.TotalNS),
			Label:    map[string][]string{"lock_type": {printableText(r.Type)}, "lock": {addrs.Lock(r.Lock)}},
			NumLabel: map[string][]int64{},
		}
		for key, value := range map[string]string{"lock_name": r.Name, "lock_offset": r.ObjectOffset, "lock_field": r.Field, "comm": r.Comm, "cgroup": r.Cgroup, "lock_static": staticMark(r)} {
			if value != "" {
				s.Label[key] = []string{printableText(value)}
			}
		}
		for _, f := range r.FieldCandidates {
			s.Label["lock_field_candidates"] = append(s.Label["lock_field_candidates"], printableText(f))
		}
		for key, value := range map[string]uint64{"pid": uint64(r.PID), "tid": uint64(r.TID), "cgroup_id": r.CgroupID} {
			if value != 0 {
				s.NumLabel[key] = []int64{int64(value)}
			}
		}
		for _, f := range stackOf(r.Stack) {
			s.Location = append(s.Location, frames.location(f, addrs))
		}
		p.Sample = append(p.Sample, s)
	}
	for _, o := range owners {
		s := &profile.Sample{
			Value:    []int64{0, 0, int64(o.Samples), int64(o.TotalNS)},
			Label:    map[string][]string{"lock_type": {printableText(o.Type)}, "lock": {addrs.Lock(o.Lock)}, "role": {"owner"}},
			NumLabel: map[string][]int64{"pid": {int64(o.PID)}, "tid": {int64(o.TID)}},
		}
		for key, value := range map[string]string{"lock_name": o.Name, "comm": o.Comm, "owner_where": o.Where, "blocker": o.Blocker, "holder_state": o.HolderState} {
			if value != "" {
				s.Label[key] = []string{printableText(value)}
			}
		}
		for _, f := range o.Stack {
			s.Location = append(s.Location, frames.location(f, addrs))
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

// pprofFrames makes the locations, functions and mappings of a profile's frames, each once.
//
// A module function is named as in vmlinux, without its module ("xfs_ilock"), in a mapping and a
// function file named as perf names a module's object ("[xfs]"), as a profile converted from perf
// has them: -top, -focus and flame graphs see the function's own name, one node at every offset, and
// pprof -raw shows the module where it shows an object file.
type pprofFrames struct {
	p         *profile.Profile
	sources   *capture.Sources
	mappings  map[string]*profile.Mapping // by module, "" for vmlinux
	functions map[[2]string]*profile.Function
	locations map[string]*profile.Location // by frame as captured
}

func newPprofFrames(p *profile.Profile, sources *capture.Sources) *pprofFrames {
	f := &pprofFrames{p: p, sources: sources, mappings: map[string]*profile.Mapping{}, functions: map[[2]string]*profile.Function{}, locations: map[string]*profile.Location{}}
	f.mapping("") // vmlinux first: pprof takes the first mapping for the main binary
	return f
}

// mapping is the mapping of a module's frames, or of vmlinux's for "". Its locations carry their
// function names, so pprof never tries to symbolize them.
func (f *pprofFrames) mapping(module string) *profile.Mapping {
	m := f.mappings[module]
	if m == nil {
		file := kernelMapping
		if module != "" {
			file = "[" + module + "]"
		}
		m = &profile.Mapping{ID: uint64(len(f.p.Mapping) + 1), File: file, HasFunctions: true}
		f.mappings[module] = m
		f.p.Mapping = append(f.p.Mapping, m)
	}
	return m
}

// location is the location of frame s of the capture, added to the profile the first time.
func (f *pprofFrames) location(s string, addrs capture.AddressText) *profile.Location {
	if loc := f.locations[s]; loc != nil {
		return loc
	}
	fr := capture.ParseFrame(printableText(addrs.Frame(s)))
	m := f.mapping(fr.Module)
	name := fr.Function
	var address uint64
	if fr.Kind != capture.FrameSymbol {
		name = fr.String()
	}
	if fr.Kind == capture.FrameAddress {
		address = uint64(fr.Address)
	}
	loc := &profile.Location{
		ID:      uint64(len(f.p.Location) + 1),
		Mapping: m,
		Address: address,
		Line:    []profile.Line{{Function: f.function(name, m.File), Line: int64(fr.Offset)}},
	}
	if lines := f.sources.Lines(s); lines != nil {
		m.HasFilenames, m.HasLineNumbers, m.HasInlineFrames = true, true, true
		loc.Line = loc.Line[:0]
		for _, l := range lines {
			loc.Line = append(loc.Line, profile.Line{Function: f.function(printableText(l.Function), printableText(l.File)), Line: int64(l.Line)})
		}
	}
	f.p.Location = append(f.p.Location, loc)
	f.locations[s] = loc
	return loc
}

// function is the function of that name in that file, added to the profile the first time.
func (f *pprofFrames) function(name, file string) *profile.Function {
	fn := f.functions[[2]string{name, file}]
	if fn == nil {
		fn = &profile.Function{ID: uint64(len(f.p.Function) + 1), Name: name, SystemName: name, Filename: file}
		f.functions[[2]string{name, file}] = fn
		f.p.Function = append(f.p.Function, fn)
	}
	return fn
}

// pprofComment says where the profile comes from; pprof -comments prints it.
func pprofComment(m capture.Meta) string {
	return fmt.Sprintf("klockstat %s: kernel lock contention on %s (kernel %s, %s probe), %d waits",
		m.ToolVersion, printableText(m.Hostname), printableText(m.Kernel), m.Probe, m.Events.Waits)
}
