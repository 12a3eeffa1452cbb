package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/kallsyms"
	"github.com/klockstat/klockstat/srcline"
)

// sourceFlags choose the vmlinux whose DWARF gives a capture's frames their source lines and
// inlined functions (docs/source-lines.md).
type sourceFlags struct {
	vmlinux string
	force   bool
	image   *srcline.Image // --vmlinux, opened by open
	// capturing is set by the commands that capture: their --vmlinux also names the static locks
	// of the running kernel from its symbol table (dataSymbols), which needs no DWARF, so an
	// image without is taken for that alone.
	capturing bool
}

func (s *sourceFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.vmlinux, "vmlinux", "", "read the frames' source lines and inlined functions from `PATH`, the captured kernel's image with DWARF, and when capturing the names of static locks kallsyms cannot give from its symbol table (default: its debug image under /usr/lib/debug, when installed)")
	fs.BoolVar(&s.force, "vmlinux-force", false, "use --vmlinux even when its build id is not the captured kernel's")
}

// open opens --vmlinux, so that a path that is not an image with DWARF is refused before
// anything is captured or read.
func (s *sourceFlags) open() error {
	if s.vmlinux == "" {
		if s.force {
			return usagef("--vmlinux-force without --vmlinux")
		}
		return nil
	}
	im, err := srcline.Open(s.vmlinux)
	if err != nil {
		if errors.Is(err, srcline.ErrNoDWARF) {
			if s.capturing {
				return nil // its symbol table still names static locks
			}
			return usagef("--vmlinux %s: no DWARF (a kernel built with CONFIG_DEBUG_INFO is needed, as distributions' debug packages have it; docs/source-lines.md)", s.vmlinux)
		}
		return usagef("--vmlinux: %v", err)
	}
	s.image = im
	return nil
}

// checkKernel refuses --vmlinux when it is not the kernel of build id buildID, unless forced, and
// then reads its symbols and DWARF: an image of another kernel is refused before they are read.
func (s *sourceFlags) checkKernel(buildID string) error {
	if s.image == nil {
		return nil
	}
	if !s.force && buildID != "" && s.image.BuildID() != buildID {
		return usagef("--vmlinux %s: build id %s, but the captured kernel's is %s (--vmlinux-force uses it anyway, its lines likely wrong)", s.vmlinux, orNone(s.image.BuildID()), buildID)
	}
	if err := s.image.Load(); err != nil {
		return usagef("--vmlinux: reading %s: %v", s.vmlinux, err)
	}
	return nil
}

// dataSymbols reads the data symbols of the running kernel's image, of build id buildID and
// release release, to name the static locks kallsyms cannot (collector.Config.ImageSymbols):
// --vmlinux's, or else the debug image's where one of that build id is installed; "" and none when
// there is no image. An image that cannot be read, or a --vmlinux of another build unless
// --vmlinux-force, is an error the collector turns into one warning: the capture goes on without
// the names.
func (s *sourceFlags) dataSymbols(buildID, release string) (string, []kallsyms.Symbol, error) {
	path := s.vmlinux
	if path == "" {
		found, err := srcline.Find(buildID, release)
		if err != nil || found == "" {
			return "", nil, err
		}
		path = found
	}
	syms, id, err := srcline.ReadSymbols(path)
	switch {
	case err != nil:
		return path, nil, err
	case s.vmlinux == "" && (buildID == "" || id != buildID):
		return "", nil, nil // found by release alone: another build of the same name would name the wrong objects
	case s.vmlinux != "" && !s.force && buildID != "" && id != buildID:
		return path, nil, fmt.Errorf("build id %s, but the running kernel's is %s (--vmlinux-force uses it anyway)", orNone(id), buildID)
	}
	return path, syms, nil
}

func orNone(id string) string {
	if id == "" {
		return "none"
	}
	return id
}

// resolve gives c the source lines of its frames, from --vmlinux, or else from the kernel's debug
// image where it is installed; a capture that has lines keeps them unless --vmlinux is given.
// Without an image, c is left as it is: the report says how to get one. Unless quiet, a line on
// stderr says how many frames got lines, and why the others did not.
func (s *sourceFlags) resolve(inv invocation, c *capture.Capture, quiet bool) error {
	im := s.image
	if im == nil && s.vmlinux != "" {
		if !quiet {
			fmt.Fprintf(inv.stderr, "klockstat: no source lines: --vmlinux %s has no DWARF; its symbol table names static locks only\n", s.vmlinux)
		}
		return nil
	}
	if im == nil {
		if c.Sources != nil {
			return nil
		}
		path, err := srcline.Find(c.Meta.KernelBuildID, c.Meta.Kernel)
		if err != nil || path == "" {
			return err
		}
		if im, err = srcline.Open(path); err != nil {
			fmt.Fprintf(inv.stderr, "klockstat: warning: no source lines: %v\n", err)
			return nil
		}
		if c.Meta.KernelBuildID == "" || im.BuildID() != c.Meta.KernelBuildID {
			// Found by release alone: another build of the same name would give wrong lines.
			im.Close()
			return nil
		}
	} else {
		err := s.checkKernel(c.Meta.KernelBuildID)
		s.image = nil
		if err != nil {
			im.Close()
			return err
		}
	}
	defer im.Close()
	if c.Meta.KernelBuildID == "" && !s.force {
		fmt.Fprintf(inv.stderr, "klockstat: warning: the capture does not record its kernel's build id; the lines from %s are right only if it is that kernel\n", im.Path())
	}
	start := time.Now()
	frames := captureFrames(c)
	resolved, skipped, err := im.Resolve(frames)
	if err != nil {
		// The outputs are still written, a capture's above all: it cannot be taken again.
		fmt.Fprintf(inv.stderr, "klockstat: warning: no source lines: reading %s: %v\n", im.Path(), err)
		return nil
	}
	c.Sources = &capture.Sources{BuildID: im.BuildID(), Frames: resolved}
	if w := c.SourcesWarning(); w != "" {
		fmt.Fprintf(inv.stderr, "klockstat: warning: %s\n", w)
	}
	if quiet {
		return nil
	}
	fmt.Fprintf(inv.stderr, "klockstat: source lines of %d frames from %s in %v%s\n",
		len(resolved), im.Path(), time.Since(start).Round(time.Millisecond), unresolvedNote(skipped))
	return nil
}

// unresolvedNote says which frames have no lines and why, or "" when all have.
func unresolvedNote(u srcline.Unresolved) string {
	if u.Total() == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d without: %d of modules, %d not in the image, %d of a name several functions have, %d without line information, %d unnamed)",
		u.Total(), u.Module, u.NoSymbol, u.Ambiguous, u.NoLine, u.Other)
}

// captureFrames are the frames of c's stacks, callers and owners' stacks, each once. A stack that
// records share (capture.Parse decodes them so) is looked at once.
func captureFrames(c *capture.Capture) []string {
	seen := map[string]bool{}
	stacks := map[capture.SharedStack]bool{}
	var frames []string
	add := func(list ...string) {
		for _, f := range list {
			if !seen[f] {
				seen[f] = true
				frames = append(frames, f)
			}
		}
	}
	for _, r := range c.Records {
		add(r.Caller)
		if id, shared := capture.SharedStackOf(r.Stack); shared {
			if stacks[id] {
				continue
			}
			stacks[id] = true
		}
		add(r.Stack...)
	}
	for _, o := range c.Owners {
		add(o.Stack...)
	}
	return frames
}
