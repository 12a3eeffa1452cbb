package export

import (
	"slices"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/klockstat/klockstat/capture"
)

// TestPprofSourceLines gives a real capture's frames source lines: each location of a frame with
// lines has them, innermost first, each function in its source file, and the kernel's mapping
// says it has file names, lines and inlined frames; frames without lines keep their offset.
func TestPprofSourceLines(t *testing.T) {
	c := realCapture(t)
	var inlined, plain string
	for _, r := range c.Records {
		for _, f := range r.Stack {
			if capture.ParseFrame(f).Kind == capture.FrameSymbol && inlined == "" {
				inlined = f
			} else if capture.ParseFrame(f).Kind == capture.FrameSymbol && f != inlined && plain == "" {
				plain = f
			}
		}
	}
	if plain == "" {
		t.Fatal("the capture has fewer than two symbol frames")
	}
	fn := capture.ParseFrame(inlined).Function
	c.Sources = &capture.Sources{BuildID: "ab", Frames: map[string]capture.SourceFrame{inlined: {Lines: []capture.SourceLine{
		{Function: "inode_lock_nested", File: "include/linux/fs.h", Line: 850},
		{Function: "lock_rename", File: "fs/namei.c", Line: 3012},
		{Function: fn, File: "fs/namei.c", Line: 5004},
	}}}}
	p := readPprof(t, c)
	if m := p.Mapping[0]; !m.HasFilenames || !m.HasLineNumbers || !m.HasInlineFrames {
		t.Errorf("the kernel's mapping %+v does not say it has lines", m)
	}
	var found, others int
	for _, loc := range p.Location {
		var got []capture.SourceLine
		for _, l := range loc.Line {
			got = append(got, capture.SourceLine{Function: l.Function.Name, File: l.Function.Filename, Line: int(l.Line)})
		}
		switch {
		case len(got) == 3:
			found++
			if !slices.Equal(got, c.Sources.Lines(inlined)) {
				t.Errorf("location of %s: lines %+v, want %+v", inlined, got, c.Sources.Lines(inlined))
			}
		case got[0].Function == capture.ParseFrame(plain).Function && got[0].Line == int(capture.ParseFrame(plain).Offset):
			others++
			if got[0].File != kernelMapping {
				t.Errorf("location of %s, without lines, in file %q", plain, got[0].File)
			}
		}
	}
	if found != 1 || others != 1 {
		t.Errorf("%d locations of %s with its lines, %d of %s with its offset; want 1 each", found, inlined, others, plain)
	}
	if !slices.ContainsFunc(p.Sample, func(s *profile.Sample) bool {
		return slices.ContainsFunc(s.Location, func(l *profile.Location) bool { return len(l.Line) == 3 })
	}) {
		t.Error("no sample passes through the frame with lines")
	}
}
