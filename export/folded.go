package export

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// WriteFolded writes c as folded stacks, the input of flamegraph.pl, inferno and speedscope: one
// line per distinct (thread name, stack), "comm;outermost;...;innermost WEIGHT", weighted by the
// nanoseconds waited. Frames are function names without their offsets (capture.Frame.Func, as the
// report's flame graph has them: "xfs_ilock [xfs]" in a module), so that one function is one box of
// the flame graph wherever in it the call was; records of the same thread name and functions merge
// into one line. Lines are sorted by stack, so equal captures give equal files. With --owners, the
// owners' critical sections follow under a root frame of their own, "[lock owners];comm;[holder
// preempted];..." (what the owner did over that share, capture.HolderFrame, when it was split),
// weighted by the wait charged to the owner at that stack: a tower beside the waiters'. A wait on a
// lock whose struct field is known ends in a frame of it, "[super_block.s_vfs_rename_mutex]" ("?"
// after a guess): the flame graph's leaves then tell which lock of a slab object was waited for.
//
// A thread name is chosen by the process, so the ';' between frames and what printableText replaces
// (line breaks, other control characters) are replaced by '_' in it.
func WriteFolded(w io.Writer, a Analysis) error {
	c, addrs := a.Capture(), a.Addresses()
	weights := map[string]uint64{}
	var b strings.Builder
	for _, r := range c.Records {
		if r.Count == 0 {
			continue
		}
		b.Reset()
		b.WriteString(foldedName(r.Comm))
		stack := stackOf(r.Stack)
		for i := len(stack) - 1; i >= 0; i-- {
			b.WriteByte(';')
			b.WriteString(foldedName(capture.ParseFrame(addrs.Frame(stack[i])).Func()))
		}
		if f := r.FieldLabel(); f != "" {
			b.WriteString(";[" + foldedName(f) + "]")
		}
		weights[b.String()] += r.TotalNS
	}
	for _, o := range a.OwnerStacks() {
		b.Reset()
		b.WriteString(ownersFrame + ";")
		b.WriteString(foldedName(o.Comm))
		if o.HolderState != "" {
			b.WriteString(";" + capture.HolderFrame(o.HolderState))
		}
		for i := len(o.Stack) - 1; i >= 0; i-- {
			b.WriteByte(';')
			b.WriteString(foldedName(capture.ParseFrame(addrs.Frame(o.Stack[i])).Func()))
		}
		weights[b.String()] += o.TotalNS
	}
	lines := make([]string, 0, len(weights))
	for stack := range weights {
		lines = append(lines, stack)
	}
	slices.Sort(lines)
	bw := bufio.NewWriter(w)
	for _, stack := range lines {
		fmt.Fprintf(bw, "%s %d\n", stack, weights[stack])
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing folded stacks: %w", err)
	}
	return nil
}

// foldedName makes s one frame of a folded line; an empty thread name becomes a frame of its own
// rather than vanish between two ';'.
func foldedName(s string) string {
	if s == "" {
		return "[unnamed]"
	}
	return strings.ReplaceAll(printableText(s), ";", "_")
}
