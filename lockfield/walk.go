package lockfield

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// lockTypes are the BTF names of each capture lock type's kernel type, a typedef's or a struct's
// ("rwlock_t" is a typedef of an anonymous struct). The capture's type is the catalogue's name
// without its ":R" or ":W" mode. On PREEMPT_RT a spinlock_t and an rwlock_t are rtmutex-based,
// so their names are in the rtmutex family too.
var lockTypes = map[string][]string{
	"spinlock":  {"spinlock_t", "spinlock", "raw_spinlock_t", "raw_spinlock"},
	"rwlock":    {"rwlock_t"},
	"rwlock-rt": {"rwlock_t", "rwlock"},
	"mutex":     {"mutex"},
	"rwsem":     {"rw_semaphore"},
	"semaphore": {"semaphore"},
	"rtmutex":   {"rt_mutex", "rt_mutex_base", "spinlock_t", "spinlock", "mutex"},
	"pcpu-sem":  {"percpu_rw_semaphore"},
}

// lockTypeNames returns the BTF names a lock of the capture's type may have; every lock type's for
// "" or a type the table does not know (a catalogue's own).
func lockTypeNames(captureType string) map[string]bool {
	base, _, _ := strings.Cut(captureType, ":")
	names := map[string]bool{}
	if l, ok := lockTypes[base]; ok {
		for _, n := range l {
			names[n] = true
		}
		return names
	}
	for _, l := range lockTypes {
		for _, n := range l {
			names[n] = true
		}
	}
	return names
}

// isLock reports whether a member's type is one of the lock types, looking through qualifiers and
// typedefs: each name on the way counts.
func isLock(t btf.Type, names map[string]bool) bool {
	for {
		switch v := t.(type) {
		case *btf.Typedef:
			if names[v.Name] {
				return true
			}
			t = v.Type
		case *btf.Volatile:
			t = v.Type
		case *btf.Const:
			t = v.Type
		case *btf.Struct:
			return v.Name != "" && names[v.Name]
		default:
			return false
		}
	}
}

// walk calls found with the path of each member of composite type t, at offset bits from its
// start, that is a lock of one of the named types. via are the named structs passed on the way.
func walk(t btf.Type, bits uint32, path string, via []string, names map[string]bool, found func(path string, via []string)) {
	switch v := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		walkMembers(v.Members, bits, path, via, names, found)
	case *btf.Union:
		walkMembers(v.Members, bits, path, via, names, found)
	case *btf.Array:
		size, err := btf.Sizeof(v.Type)
		if err != nil || size == 0 || (v.Nelems != 0 && bits/8 >= uint32(size)*v.Nelems) {
			return
		}
		i := bits / 8 / uint32(size)
		walkMember(v.Type, bits-i*uint32(size)*8, fmt.Sprintf("%s[%d]", path, i), via, names, found)
	}
}

func walkMembers(members []btf.Member, bits uint32, path string, via []string, names map[string]bool, found func(string, []string)) {
	for _, m := range members {
		start := uint32(m.Offset)
		if bits < start || m.BitfieldSize != 0 {
			continue
		}
		size, err := btf.Sizeof(m.Type)
		if err != nil {
			continue
		}
		if bits >= start+uint32(size)*8 && !zeroLengthArray(m.Type) {
			continue
		}
		p := path
		if m.Name != "" { // an anonymous struct or union adds nothing to the path
			p = joinPath(path, m.Name)
		}
		walkMember(m.Type, bits-start, p, via, names, found)
	}
}

// walkMember looks at a member (or an array element) at offset bits from its start. A lock of
// another type is walked into: the wait_lock of a mutex or an rw_semaphore is a spinlock whose
// waits are reported at its own address (mm_struct.mmap_lock.wait_lock).
func walkMember(t btf.Type, bits uint32, path string, via []string, names map[string]bool, found func(string, []string)) {
	if bits == 0 && isLock(t, names) {
		found(path, via)
		return
	}
	if s, ok := btf.UnderlyingType(t).(*btf.Struct); ok && s.Name != "" {
		via = append(via[:len(via):len(via)], s.Name)
	}
	walk(t, bits, path, via, names, found)
}

// zeroLengthArray reports whether t is a flexible array member, which reaches past its size of 0.
func zeroLengthArray(t btf.Type) bool {
	a, ok := btf.UnderlyingType(t).(*btf.Array)
	return ok && a.Nelems == 0
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
