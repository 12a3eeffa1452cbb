package export

import (
	"strings"
	"unicode"

	"github.com/klockstat/klockstat/capture"
)

// printableText is s, which a process named (thread names end up in locks' names and cgroup paths
// too), made safe to print: valid UTF-8, with every control character (ESC starts terminal escape
// sequences, line breaks end a line of folded stacks) and bidirectional-text control (it reorders
// what is shown) replaced by '_', one for one. go tool pprof -tags prints labels to the terminal, and
// CSV and folded files are read with cat as often as with a program.
func printableText(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return '_'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// staticMark is "static" for a lock of the kernel image's static data without a name, which an
// export's lock name leaves empty, and "" otherwise.
func staticMark(r capture.Record) string {
	if r.Static && r.Name == "" {
		return "static"
	}
	return ""
}
