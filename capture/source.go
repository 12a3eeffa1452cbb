package capture

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Sources are the source lines of a capture's kernel frames, read from a vmlinux's DWARF
// (package srcline, docs/source-lines.md). A frame's own text stays as captured: its lines are
// looked up here by that text, so a capture without sources reads as before.
type Sources struct {
	// BuildID is the GNU build id of the vmlinux the lines were read from, in hex.
	BuildID string `json:"build_id"`
	// Frames are the resolved frames by their text ("do_renameat2+0x221"). A frame of a module, or
	// one the vmlinux did not know, has none.
	Frames map[string]SourceFrame `json:"frames"`
}

// SourceFrame is where one frame is in the source: its lines innermost first, as pprof orders a
// location's lines. The last is the function of the frame's symbol, at the line of the frame's
// address or of the call into the first inlined function; each line before it is a function
// inlined into the next, at the line of the address or of its call into the one before.
type SourceFrame struct {
	Lines []SourceLine `json:"lines"`
}

// SourceLine is one function of a frame and a line in it.
type SourceLine struct {
	Function string `json:"function"`
	File     string `json:"file"` // relative to the kernel's source tree where the build let it be ("fs/namei.c")
	Line     int    `json:"line"` // 0 when unknown
}

// The limits of a capture's sources (see validate.go).
const (
	// MaxSourceFrames is the most frames a capture's sources hold: a frame of every stack of
	// MaxRecords records of the deepest stacks would be more, but distinct frames are far fewer.
	MaxSourceFrames = 1 << 20
	// MaxInlineDepth is the most lines a frame holds: functions inlined into one another deeper
	// than this are not written by any compiler of the kernel.
	MaxInlineDepth = 64
)

// SourcesWarning says that c's source lines may not match its frames, because they were read from a
// vmlinux whose build id is not the captured kernel's (--vmlinux-force); "" when c has no lines, or
// they are the captured kernel's as far as the capture says.
func (c *Capture) SourcesWarning() string {
	if c.Sources == nil || c.Meta.KernelBuildID == "" || c.Sources.BuildID == c.Meta.KernelBuildID {
		return ""
	}
	image := c.Sources.BuildID
	if image == "" {
		image = "none"
	}
	return fmt.Sprintf("the source lines are from a vmlinux of build id %s, not the captured kernel's %s (--vmlinux-force): they may not match the frames", image, c.Meta.KernelBuildID)
}

// Warnings are the capture's warnings (Meta.Warnings), and SourcesWarning when there is one.
func (c *Capture) Warnings() []string {
	if w := c.SourcesWarning(); w != "" {
		return append(slices.Clip(c.Meta.Warnings), w)
	}
	return c.Meta.Warnings
}

// Lines returns the lines of frame, or nil when it has none or s is nil (a capture without sources).
func (s *Sources) Lines(frame string) []SourceLine {
	if s == nil {
		return nil
	}
	return s.Frames[frame].Lines
}

// Inlined are the functions inlined at the frame, innermost first: all its lines but the last.
func (s SourceFrame) Inlined() []SourceLine {
	if len(s.Lines) == 0 {
		return nil
	}
	return s.Lines[:len(s.Lines)-1]
}

// String is "file:line", or the file alone when the line is unknown.
func (l SourceLine) String() string {
	if l.Line == 0 {
		return l.File
	}
	return l.File + ":" + strconv.Itoa(l.Line)
}

// SourceText is how a frame's source is written after the frame: " → lock_rename, fs/namei.c:3012"
// for a frame inside lock_rename inlined into the frame's function ("→ a → b" when one was inlined
// into another), ", fs/namei.c:5012" for a frame of its function's own code; "" without lines.
func SourceText(lines []SourceLine) string {
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	for i := len(lines) - 2; i >= 0; i-- {
		b.WriteString(" → ")
		b.WriteString(lines[i].Function)
	}
	if where := lines[0].String(); where != "" {
		b.WriteString(", ")
		b.WriteString(where)
	}
	return b.String()
}

// SourceDetail writes a frame's lines one under the other, innermost first, each function with
// its line and how it came there: the whole of what SourceText cuts short.
func SourceDetail(lines []SourceLine) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l.Function)
		if where := l.String(); where != "" {
			b.WriteString(" at ")
			b.WriteString(where)
		}
		if i < len(lines)-1 {
			b.WriteString(InlinedSuffix)
		}
	}
	return b.String()
}

func (s *Sources) validate() error {
	if err := checkStrings(nil, s.BuildID); err != nil {
		return err
	}
	if len(s.Frames) > MaxSourceFrames {
		return fmt.Errorf("%d frames, more than the %d klockstat takes", len(s.Frames), MaxSourceFrames)
	}
	for frame, sf := range s.Frames {
		if err := checkStrings(nil, frame); err != nil {
			return err
		}
		if f := ParseFrame(frame); f.Kind != FrameSymbol {
			return fmt.Errorf("frame %q: not a function+offset frame", frame)
		}
		if len(sf.Lines) == 0 || len(sf.Lines) > MaxInlineDepth {
			return fmt.Errorf("frame %q: %d lines, want 1 to %d", frame, len(sf.Lines), MaxInlineDepth)
		}
		for _, l := range sf.Lines {
			if err := checkStrings(nil, l.Function, l.File); err != nil {
				return fmt.Errorf("frame %q: %w", frame, err)
			}
			if l.Function == "" {
				return fmt.Errorf("frame %q: a line without a function", frame)
			}
			if l.Line < 0 {
				return fmt.Errorf("frame %q: line %d < 0", frame, l.Line)
			}
		}
	}
	return nil
}
