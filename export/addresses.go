package export

import (
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// addresses writes the kernel addresses of a capture (lock addresses, unnamed frames and callers):
// as ids of hasher, or as the capture has them when hasher is nil or its addresses are already ids.
type addresses struct {
	hashed bool // the capture's addresses are ids (capture.Meta.AddressesHashed)
	hasher *capture.AddressHasher
}

func newAddresses(c *capture.Capture, hasher *capture.AddressHasher) addresses {
	if c.Meta.AddressesHashed {
		hasher = nil
	}
	return addresses{hashed: c.Meta.AddressesHashed || hasher != nil, hasher: hasher}
}

// lock is how the exports name a lock instance: its address, or its id written as the HTML report
// writes ids.
func (a addresses) lock(lock capture.Addr) string {
	if a.hasher != nil {
		lock = a.hasher.ID(lock)
	}
	if a.hashed {
		return lock.HashedString()
	}
	return lock.String()
}

// frame is a stack frame or caller with its address replaced by an id if it is an unnamed one.
func (a addresses) frame(f string) string {
	if a.hasher != nil {
		return a.hasher.Frame(f)
	}
	return f
}

// stack is a record's frames, innermost first, joined by " <- ", addresses replaced as frame does.
func (a addresses) stack(stack []string) string {
	frames := make([]string, len(stack))
	for i, f := range stack {
		frames[i] = a.frame(f)
	}
	return strings.Join(frames, " <- ")
}
