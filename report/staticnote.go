package report

import (
	"fmt"
	"strings"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/srcline"
)

// staticNote says how many of the records' locks are static kernel objects without a name, and
// their share of the time, why (a kernel whose kallsyms lists no data), and how to name them: the
// kernel's debug image, which klockstat reads by --vmlinux or finds by build id. "" when there are
// none. The summary and the report's header say it once.
func staticNote(c *capture.Capture, records []capture.Record) string {
	locks, share := capture.StaticUnnamed(records)
	if locks == 0 {
		return ""
	}
	what := fmt.Sprintf("%d %s (%.1f%% of the %s time) %s static kernel %s", locks, plural(locks, "lock", "locks"), 100*share,
		measureOf(c.Meta).Time, plural(locks, "is a", "are"), plural(locks, "object", "objects"))
	switch {
	case c.Meta.StaticNamesFrom != "":
		return what + " that no symbol of " + c.Meta.StaticNamesFrom + " names"
	case !c.Meta.KallsymsNoData:
		return what + " that no kernel symbol names"
	}
	where := "its build id, under /usr/lib/debug/.build-id/"
	if paths := srcline.Candidates(c.Meta.KernelBuildID, c.Meta.Kernel); len(paths) > 0 {
		where = strings.Join(paths, ", then ")
	}
	return what + " that this kernel's kallsyms cannot name (CONFIG_KALLSYMS_ALL off): to name them, capture with --vmlinux and the kernel's debug image " +
		"(a vmlinux with its symbol table; without --vmlinux klockstat looks for it at " + where + ")"
}
