package capture

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"slices"
)

// HashAddresses replaces every kernel address in c by an id, as the kernel's %p does for the pointers it
// prints: lock addresses (Record.Lock) and the stack frames and callers that kallsyms could not name
// ("0xffffffff81234567"). An id is the first 32 bits of HMAC-SHA256(key, address as 8 little-endian
// bytes), so with a random key it tells nothing about the address but stays the same for the same
// address everywhere in c. A hashed Lock keeps its Addr type; hashed frames and callers are written as
// Addr.HashedString writes ids. Symbolized frames ("vm_mmap_pgoff+0xa5") and lock names stay.
//
// It sets Meta.AddressesHashed, and does nothing to a capture that has it set, so ids survive a second
// call with another key. Ids are 32 bits wide: with tens of thousands of distinct locks two of them may
// share an id, which the kernel's hashed pointers accept too.
func (c *Capture) HashAddresses(key []byte) {
	if c.Meta.AddressesHashed {
		return
	}
	h := NewAddressHasher(key)
	for i := range c.Records {
		r := &c.Records[i]
		r.Lock = h.ID(r.Lock)
		r.Caller = h.Frame(r.Caller)
		for j, f := range r.Stack {
			r.Stack[j] = h.Frame(f)
		}
	}
	for i := range c.Owners {
		o := &c.Owners[i]
		o.Lock = h.ID(o.Lock)
		for j, f := range o.Stack {
			o.Stack[j] = h.Frame(f)
		}
	}
	for i := range c.OwnerChains {
		ch := &c.OwnerChains[i]
		ch.Lock, ch.EndLock = h.ID(ch.Lock), h.ID(ch.EndLock)
	}
	c.Meta.AddressesHashed = true
}

// Hashed is c with its addresses as HashAddresses makes them under key, in a copy of what holds
// addresses (records, their stacks, owners, owner chains), the rest shared with c, which is left as
// it is; c itself when it holds ids already.
func (c *Capture) Hashed(key []byte) *Capture {
	if c.Meta.AddressesHashed {
		return c
	}
	h := *c
	h.Records = slices.Clone(c.Records)
	for i := range h.Records {
		h.Records[i].Stack = slices.Clone(h.Records[i].Stack)
	}
	h.Owners = slices.Clone(c.Owners)
	for i := range h.Owners {
		h.Owners[i].Stack = slices.Clone(h.Owners[i].Stack)
	}
	h.OwnerChains = slices.Clone(c.OwnerChains)
	h.HashAddresses(key)
	return &h
}

// HashedString renders an id made by HashAddresses the way the kernel prints hashed pointers: 16 hex
// digits without 0x, e.g. "000000001a2b3c4d", so it cannot be taken for an address.
func (a Addr) HashedString() string {
	return fmt.Sprintf("%016x", uint64(a))
}

// AddressHasher makes the ids of HashAddresses, for a writer that hashes what it writes of a
// capture instead of a hashed copy of all of it.
type AddressHasher struct {
	mac hash.Hash
	ids map[Addr]Addr // the same lock or frame turns up in many records
	sum []byte
}

// NewAddressHasher returns the hasher of HashAddresses under key.
func NewAddressHasher(key []byte) *AddressHasher {
	return &AddressHasher{mac: hmac.New(sha256.New, key), ids: make(map[Addr]Addr)}
}

// ID returns the id of a kernel address.
func (h *AddressHasher) ID(a Addr) Addr {
	if id, ok := h.ids[a]; ok {
		return id
	}
	var addr [8]byte
	binary.LittleEndian.PutUint64(addr[:], uint64(a))
	h.mac.Reset()
	h.mac.Write(addr[:])
	h.sum = h.mac.Sum(h.sum[:0])
	id := Addr(binary.BigEndian.Uint32(h.sum))
	h.ids[a] = id
	return id
}

// Frame hashes a frame or caller that is a raw address (a FrameAddress) and returns any other
// unchanged.
func (h *AddressHasher) Frame(f string) string {
	fr := ParseFrame(f)
	if fr.Kind != FrameAddress {
		return f
	}
	return h.ID(fr.Address).HashedString()
}

// AddressText writes a capture's kernel addresses as every view of one analysis shows them (the
// summary, the page and the exports): lock addresses, and the frames and callers kallsyms could not
// name, as ids of Hasher, or as the capture has them.
type AddressText struct {
	Hasher *AddressHasher // makes the ids; nil when the addresses are shown as they are, or are ids already
	Hashed bool           // the addresses shown are ids: made by Hasher, or the capture's (Meta.AddressesHashed)
}

// Lock is a lock's address as shown: an id, or the address.
func (t AddressText) Lock(a Addr) string {
	switch {
	case t.Hasher != nil:
		return t.Hasher.ID(a).HashedString()
	case t.Hashed:
		return a.HashedString()
	}
	return a.String()
}

// Frame is a frame or caller as shown: a raw address as its id.
func (t AddressText) Frame(f string) string {
	if t.Hasher != nil {
		return t.Hasher.Frame(f)
	}
	return f
}

// Frames are the frames of a stack as shown: stack itself, or a copy with its raw addresses as ids.
func (t AddressText) Frames(stack []string) []string {
	if t.Hasher == nil {
		return stack
	}
	shown := make([]string, len(stack))
	for i, f := range stack {
		shown[i] = t.Hasher.Frame(f)
	}
	return shown
}
