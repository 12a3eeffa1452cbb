package export

import (
	"strconv"
	"strings"
)

// unknownFrame stands for the stack of a record that has none (stack depth 0, or a failed walk), as
// perf prints a frame it cannot name.
const unknownFrame = "[unknown]"

// frame is one kernel stack frame of a record, split into what profilers key on.
type frame struct {
	function string // "vm_mmap_pgoff"; an unsymbolized frame keeps its address or hashed id here
	offset   uint64 // 0xe0 of "vm_mmap_pgoff+0xe0"
	address  uint64 // the raw address of an unsymbolized frame "0xffffffffc0a81234", else 0
}

// parseFrame splits a frame as the collector writes it: "function+0xoff" when kallsyms named it,
// "0x..." when it did not, or a hashed id (capture.Addr.HashedString) once addresses are hashed.
func parseFrame(s string) frame {
	if i := strings.LastIndex(s, "+0x"); i > 0 {
		if off, err := strconv.ParseUint(s[i+3:], 16, 64); err == nil {
			return frame{function: s[:i], offset: off}
		}
	}
	if digits, ok := strings.CutPrefix(s, "0x"); ok {
		if addr, err := strconv.ParseUint(digits, 16, 64); err == nil {
			return frame{function: s, address: addr}
		}
	}
	return frame{function: s}
}

// stackOf is the record's stack, innermost frame first, or the one unknownFrame when it has none.
func stackOf(stack []string) []string {
	if len(stack) == 0 {
		return []string{unknownFrame}
	}
	return stack
}
