// Package lockspec parses and validates locks.json, the catalogue of kernel lock types.
package lockspec

import (
	"fmt"
	"slices"
	"strings"
)

// Flag is a bit of the flags argument of the lock:contention_begin tracepoint
// (LCB_F_* in include/trace/events/lock.h).
type Flag uint32

// The contention_begin flag bits.
const (
	FlagSpin Flag = 1 << iota
	FlagRead
	FlagWrite
	FlagRT
	FlagPercpu
	FlagMutex
)

// MaxFlags bounds flags values: every combination of the six bits is below it,
// so user space can hand BPF a MaxFlags-entry flags->type table.
const MaxFlags = 64

// flagNames lists the flag names of locks.json in bit order.
var flagNames = []struct {
	name string
	flag Flag
}{
	{"SPIN", FlagSpin},
	{"READ", FlagRead},
	{"WRITE", FlagWrite},
	{"RT", FlagRT},
	{"PERCPU", FlagPercpu},
	{"MUTEX", FlagMutex},
}

// String returns the flag names joined by "|", as in "SPIN|READ", or "0" for no flags.
func (f Flag) String() string {
	if f == 0 {
		return "0"
	}
	var names []string
	for _, fn := range flagNames {
		if f&fn.flag != 0 {
			names = append(names, fn.name)
			f &^= fn.flag
		}
	}
	if f != 0 {
		names = append(names, fmt.Sprintf("%#x", uint32(f)))
	}
	return strings.Join(names, "|")
}

// Type is one kind of kernel lock.
type Type struct {
	Name        string
	Description string
	Flags       []Flag // each element is one OR-ed combination
	Acquire     []string
	Release     []string
	Internal    []string
	// Hold asks the function-probe backends to time holds, from an
	// acquire function's return to a release function on the same thread.
	Hold bool
}

// Spinning reports whether the type is a spinning lock: every flag
// combination has SPIN and none MUTEX (a mutex spins only optimistically).
// Its waits happen with preemption off, on one CPU.
func (t Type) Spinning() bool {
	for _, f := range t.Flags {
		if f&FlagSpin == 0 || f&FlagMutex != 0 {
			return false
		}
	}
	return len(t.Flags) > 0
}

// Spec is a validated lock catalogue. Build it with Parse or Select: they also
// index the lock functions that IsLockFunction and Caller look up.
type Spec struct {
	Source string // file name used in messages ("locks.json" for the embedded one)
	Types  []Type

	// catalogue is every type of the file, selected or not: a wait of
	// flags that a selected type shares with one not selected is still
	// told apart, and left out.
	catalogue []Type
	lockFuncs map[string]struct{} // acquire, release and internal names without compiler suffixes
}

func newSpec(source string, catalogue, types []Type) *Spec {
	s := &Spec{Source: source, Types: types, catalogue: catalogue, lockFuncs: make(map[string]struct{})}
	for _, t := range types {
		for _, list := range [][]string{t.Acquire, t.Release, t.Internal} {
			for _, fn := range list {
				s.lockFuncs[stripCompilerSuffix(fn)] = struct{}{}
			}
		}
	}
	return s
}

// Lookup is the catalogue's type of that name, selected or not.
func (s *Spec) Lookup(name string) (Type, bool) {
	i := slices.IndexFunc(s.catalogue, func(t Type) bool { return t.Name == name })
	if i < 0 {
		return Type{}, false
	}
	return s.catalogue[i], true
}

// Names returns the type names in catalogue order.
func (s *Spec) Names() []string {
	names := make([]string, len(s.Types))
	for i, t := range s.Types {
		names[i] = t.Name
	}
	return names
}

// Select keeps only the named types, in the order of the spec; a nil names
// keeps all types. Names are trimmed of blanks (as typed after a comma); an
// empty list or an empty name is an error, not a way to say "all".
func (s *Spec) Select(names []string) (*Spec, error) {
	if names == nil {
		return newSpec(s.Source, s.catalogue, s.Types), nil
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("empty --types list (name lock types, e.g. -t mutex,rwsem:W, or leave out -t for all: %s)", strings.Join(s.Names(), ", "))
	}
	trimmed := make([]string, len(names))
	wanted := make(map[string]bool, len(names))
	for i, name := range names {
		trimmed[i] = strings.TrimSpace(name)
		if trimmed[i] == "" {
			return nil, fmt.Errorf("empty lock type name in --types %q (known: %s)", strings.Join(names, ","), strings.Join(s.Names(), ", "))
		}
		wanted[trimmed[i]] = true
	}
	names = trimmed
	var types []Type
	for _, t := range s.Types {
		if wanted[t.Name] {
			types = append(types, t)
			delete(wanted, t.Name)
		}
	}
	for _, name := range names {
		if wanted[name] {
			return nil, fmt.Errorf("unknown lock type %q in --types (known: %s)", name, strings.Join(s.Names(), ", "))
		}
	}
	return newSpec(s.Source, s.catalogue, types), nil
}

// FlagTable returns, for each flags value 0..MaxFlags-1, the index into s.Types
// of the type that claims it, or -1 (no type, or one not selected). Of types
// that share a flags value the first in the catalogue has it, unless
// Discriminators find another's acquire function on the stack. BPF uses it
// to classify events in the kernel.
func (s *Spec) FlagTable() [MaxFlags]int32 {
	var table [MaxFlags]int32
	for i := range table {
		table[i] = -1
	}
	for i := len(s.catalogue) - 1; i >= 0; i-- {
		for _, f := range s.catalogue[i].Flags {
			if f < MaxFlags { // always true for a parsed spec
				table[f] = s.index(s.catalogue[i].Name)
			}
		}
	}
	return table
}

// index returns the index into s.Types of the named type, or -1.
func (s *Spec) index(name string) int32 {
	for i, t := range s.Types {
		if t.Name == name {
			return int32(i)
		}
	}
	return -1
}

// Discriminator tells apart the types that share a flags value: a wait
// announced with Flags whose stack has Function among its first frames is
// of type Type. Acquire functions decide first, the innermost found; where
// none is on the stack (an acquire function that tail-calls its slow path
// leaves no frame), internal functions do, the outermost found.
type Discriminator struct {
	Flags    Flag
	Function string
	Type     int32  // index into s.Types, -1 for a type not selected
	TypeName string // the type's name, selected or not
	Internal bool   // one of the type's internal functions
}

// Discriminators returns the acquire, then the internal functions of every
// type that shares a flags value with another, in catalogue order.
func (s *Spec) Discriminators() []Discriminator {
	claims := map[Flag]int{}
	for _, t := range s.catalogue {
		for _, f := range t.Flags {
			claims[f]++
		}
	}
	var out []Discriminator
	for _, t := range s.catalogue {
		for _, f := range t.Flags {
			if claims[f] < 2 {
				continue
			}
			for _, fn := range t.Acquire {
				out = append(out, Discriminator{Flags: f, Function: fn, Type: s.index(t.Name), TypeName: t.Name})
			}
			for _, fn := range t.Internal {
				out = append(out, Discriminator{Flags: f, Function: fn, Type: s.index(t.Name), TypeName: t.Name, Internal: true})
			}
		}
	}
	return out
}
