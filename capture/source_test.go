package capture

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// renameSources are the lines of a rename's frame: lock_rename inlined into do_renameat2.
func renameSources() *Sources {
	return &Sources{BuildID: "48dc540c8b76393804ca8088dbfa7d42911a9444", Frames: map[string]SourceFrame{
		"lock_rename+0x2c": {Lines: []SourceLine{
			{Function: "lock_rename", File: "fs/namei.c", Line: 3012},
			{Function: "do_renameat2", File: "fs/namei.c", Line: 5004},
		}},
		"do_syscall_64+0x5d": {Lines: []SourceLine{{Function: "do_syscall_64", File: "arch/x86/entry/common.c", Line: 0}}},
	}}
}

func TestRoundTripSources(t *testing.T) {
	c := testCapture(t)
	c.Meta.KernelBuildID = renameSources().BuildID
	c.Sources = renameSources()
	data := encode(t, c)
	got, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("round trip changed the sources:\n got %+v\nwant %+v", got.Sources, c.Sources)
	}
	if without := encode(t, testCapture(t)); bytes.Contains(without, []byte(`"sources"`)) || bytes.Contains(without, []byte(`"kernel_build_id"`)) {
		t.Error("a capture without sources writes them")
	}
}

func TestValidateRefusesBadSources(t *testing.T) {
	long := strings.Repeat("x", MaxStringLen+1)
	deep := make([]SourceLine, MaxInlineDepth+1)
	for i := range deep {
		deep[i] = SourceLine{Function: "f"}
	}
	for name, tc := range map[string]struct {
		frame string
		lines []SourceLine
		want  string
	}{
		"address frame":   {"0xffffffff81234567", []SourceLine{{Function: "f"}}, "not a function+offset frame"},
		"no lines":        {"f+0x1", nil, "0 lines"},
		"too deep":        {"f+0x1", deep, "65 lines"},
		"no function":     {"f+0x1", []SourceLine{{File: "a.c", Line: 1}}, "without a function"},
		"negative line":   {"f+0x1", []SourceLine{{Function: "f", Line: -1}}, "line -1"},
		"long file":       {"f+0x1", []SourceLine{{Function: "f", File: long}}, "more than"},
		"long frame text": {long + "+0x1", []SourceLine{{Function: "f"}}, "more than"},
	} {
		t.Run(name, func(t *testing.T) {
			c := testCapture(t)
			c.Sources = &Sources{Frames: map[string]SourceFrame{tc.frame: {Lines: tc.lines}}}
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "sources: ") {
				t.Errorf("Validate: %v, want an error about the sources saying %q", err, tc.want)
			}
		})
	}
}

func TestSourceText(t *testing.T) {
	s := renameSources()
	for frame, want := range map[string]string{
		"lock_rename+0x2c":   " → lock_rename, fs/namei.c:3012",
		"do_syscall_64+0x5d": ", arch/x86/entry/common.c",
		"other+0x1":          "",
	} {
		if got := SourceText(s.Lines(frame)); got != want {
			t.Errorf("SourceText(%s) = %q, want %q", frame, got, want)
		}
	}
	if got, want := SourceDetail(s.Lines("lock_rename+0x2c")), "lock_rename at fs/namei.c:3012 (inlined)\ndo_renameat2 at fs/namei.c:5004"; got != want {
		t.Errorf("SourceDetail = %q, want %q", got, want)
	}
	if inl := s.Frames["lock_rename+0x2c"].Inlined(); len(inl) != 1 || inl[0].Function != "lock_rename" {
		t.Errorf("Inlined = %v, want lock_rename", inl)
	}
	if got := (*Sources)(nil).Lines("lock_rename+0x2c"); got != nil {
		t.Errorf("a capture without sources has lines %v", got)
	}
}

// FuzzReadSources reads captures whose sources are mutated: whatever Read accepts holds only
// frames of functions with 1 to MaxInlineDepth lines, each of a function, and writes back as read.
func FuzzReadSources(f *testing.F) {
	c := testCapture(f)
	c.Sources = renameSources()
	f.Add(encode(f, c))
	f.Add([]byte(`{"version":1,"records":[],"sources":{"build_id":"","frames":{"f+0x1":{"lines":[{"function":"f","file":"a.c","line":1}]}}}}`))
	f.Add([]byte(`{"version":1,"records":[],"sources":{"frames":{"f+0x1":{"lines":null}}}}`))
	f.Add([]byte(`{"version":1,"records":[],"sources":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Read(bytes.NewReader(data))
		if err != nil || c.Sources == nil {
			return
		}
		for frame, sf := range c.Sources.Frames {
			if ParseFrame(frame).Kind != FrameSymbol || len(sf.Lines) == 0 || len(sf.Lines) > MaxInlineDepth {
				t.Fatalf("Read accepted frame %q with %d lines", frame, len(sf.Lines))
			}
			for _, l := range sf.Lines {
				if l.Function == "" || l.Line < 0 {
					t.Fatalf("Read accepted line %+v of %q", l, frame)
				}
			}
			SourceText(sf.Lines)
		}
		again, err := Read(bytes.NewReader(encode(t, c)))
		if err != nil {
			t.Fatalf("reading back what Write wrote: %v", err)
		}
		if !reflect.DeepEqual(again.Sources, c.Sources) {
			t.Errorf("write and read changed the sources")
		}
	})
}
