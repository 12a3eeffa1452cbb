package capture

import (
	"fmt"
	"strings"
)

// Filter selects records as perf lock contention's --lock-filter and --callstack-filter do: a record
// is kept when its lock is one of the locks given (if any are) and one of its frames contains one of
// the substrings given (if any are). The zero Filter keeps everything.
type Filter struct {
	addrs  map[Addr]bool   // "0xffff888104d2a0c8": a lock address
	ids    map[string]bool // "000000001a2b3c4d": a lock's id in a capture with hashed addresses
	names  map[string]bool // "mmap_lock", "jiffies_lock", "runqueues+0x1c0"
	frames []string
	// hasher turns a raw lock address into its id, for the ids to match in a capture of raw
	// addresses; nil: they match in a capture of ids only.
	hasher *AddressHasher
}

// NewFilter returns the filter of the locks, each an address ("0x" and hex digits), an id as a report
// shows it for a hashed address (16 hex digits) or a lock name, and of the frame substrings. A name
// without an offset matches the symbol at any offset ("runqueues" matches "runqueues+0x1c0"), one
// without its instance every instance ("rq_lock" matches "rq_lock (CPU 1)", "siglock" matches
// "siglock (bash)"), and a slab lock's struct field matches it ("super_block.s_vfs_rename_mutex"). It
// fails on an empty lock or substring, or an address that does not parse.
func NewFilter(locks, frames []string) (Filter, error) {
	f := Filter{addrs: map[Addr]bool{}, ids: map[string]bool{}, names: map[string]bool{}}
	for _, l := range locks {
		switch {
		case l == "":
			return Filter{}, fmt.Errorf("empty lock: want an address, an id or a name")
		case strings.HasPrefix(l, "0x") || strings.HasPrefix(l, "0X"):
			var a Addr
			if err := a.UnmarshalText([]byte(strings.ToLower(l))); err != nil {
				return Filter{}, err
			}
			f.addrs[a] = true
		case isHashedID(l):
			f.ids[strings.ToLower(l)] = true
		default:
			f.names[l] = true
		}
	}
	for _, s := range frames {
		if s == "" {
			return Filter{}, fmt.Errorf("empty stack substring")
		}
	}
	f.frames = frames
	return f, nil
}

// isHashedID reports whether s is written as Addr.HashedString writes ids.
func isHashedID(s string) bool {
	if len(s) != 16 {
		return false
	}
	for _, c := range strings.ToLower(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// UnderKey returns f whose ids also match the raw addresses of a capture that are those ids under
// key, as HashAddresses(key) would make them.
func (f Filter) UnderKey(key []byte) Filter {
	if len(f.ids) > 0 {
		f.hasher = NewAddressHasher(key)
	}
	return f
}

// Empty reports whether f keeps every record.
func (f Filter) Empty() bool {
	return len(f.addrs)+len(f.ids)+len(f.names) == 0 && len(f.frames) == 0
}

// Keeps reports whether f keeps r, a record of a capture whose addresses are ids if hashed.
func (f Filter) Keeps(r Record, hashed bool) bool {
	return f.keepsLock(r, hashed) && f.keepsStack(r.Stack)
}

func (f Filter) keepsLock(r Record, hashed bool) bool {
	if len(f.addrs)+len(f.ids)+len(f.names) == 0 {
		return true
	}
	if hashed && f.ids[r.Lock.HashedString()] || !hashed && f.addrs[r.Lock] {
		return true
	}
	if !hashed && f.hasher != nil && f.ids[f.hasher.ID(r.Lock).HashedString()] {
		return true
	}
	symbol, _, _ := strings.Cut(r.Name, "+0x")
	kind, _, _ := strings.Cut(r.Name, " (")
	return r.Name != "" && (f.names[r.Name] || f.names[symbol] || f.names[kind]) || r.Field != "" && f.names[r.Field]
}

func (f Filter) keepsStack(stack []string) bool {
	if len(f.frames) == 0 {
		return true
	}
	for _, frame := range stack {
		for _, s := range f.frames {
			if strings.Contains(frame, s) {
				return true
			}
		}
	}
	return false
}

// Select returns c with only the records f keeps; c itself when f is empty. The records are shared
// with c, not copied; Meta and the histograms still describe the whole capture.
func (c *Capture) Select(f Filter) *Capture {
	if f.Empty() {
		return c
	}
	s := *c
	s.Records = make([]Record, 0, len(c.Records))
	for _, r := range c.Records {
		if f.Keeps(r, c.Meta.AddressesHashed) {
			s.Records = append(s.Records, r)
		}
	}
	return &s
}
