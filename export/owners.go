package export

import "github.com/klockstat/klockstat/capture"

// ownerStacks are the entries of c's owners with a stack: the wait charged to an owner while it
// ran its critical section (sampled on its CPU) or after it left its CPU holding the lock. The
// exports write them beside the waiters' records, apart: a sample type of their own in pprof, a
// root frame of their own in folded stacks, rows of their own kind in CSV.
func ownerStacks(c *capture.Capture) []capture.Owner {
	var out []capture.Owner
	for _, o := range c.Owners {
		if len(o.Stack) > 0 && o.Reason == "" && o.TotalNS > 0 {
			out = append(out, o)
		}
	}
	return out
}

// ownersFrame is the root frame of the owners' stacks in folded stacks.
const ownersFrame = "[lock owners]"
