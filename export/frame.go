package export

import (
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// unknownFrame stands for the stack of a record that has none (stack depth 0, or a failed walk), as
// perf prints a frame it cannot name.
const unknownFrame = "[unknown]"

// stackOf is the record's stack, innermost frame first, or the one unknownFrame when it has none.
func stackOf(stack []string) []string {
	if len(stack) == 0 {
		return []string{unknownFrame}
	}
	return stack
}

// stackText is a stack's frames as addrs shows them, innermost first, joined by " <- ".
func stackText(addrs capture.AddressText, stack []string) string {
	return strings.Join(addrs.Frames(stack), " <- ")
}
