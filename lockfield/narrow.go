package lockfield

import (
	"cmp"
	"slices"

	"github.com/cilium/ebpf/btf"
)

// narrow ranks the candidates by the structs the callers handle. A caller whose BTF prototype
// takes a pointer to a candidate's struct, or to a struct on its path, says which object the lock
// is in: when some candidates are such structs, the others are dropped. Otherwise candidates of a
// struct one pointer away from a caller's parameters (lock_rename takes dentries, whose d_sb is a
// super_block) rank first, the others follow; ties keep the order of the shallower path, then of
// the names.
func (f *Finder) narrow(fields []Field, callers []string) []Field {
	if len(fields) < 2 {
		return fields
	}
	direct, near := map[string]bool{}, map[string]bool{}
	for _, fn := range callers {
		h := f.handles(fn)
		for _, s := range h.params {
			direct[s] = true
		}
		for _, s := range h.reached {
			near[s] = true
		}
	}
	rank := func(fl Field) int {
		switch {
		case direct[fl.Struct] || slices.ContainsFunc(fl.via, func(s string) bool { return direct[s] }):
			return 0
		case near[fl.Struct]:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(fields, func(a, b Field) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(len(a.via), len(b.via)),
			cmp.Compare(a.Struct, b.Struct), cmp.Compare(a.Path, b.Path))
	})
	if rank(fields[0]) == 0 {
		fields = slices.DeleteFunc(fields, func(fl Field) bool { return rank(fl) != 0 })
	}
	return fields
}

// handled are the structs a function works on.
type handled struct {
	params  []string // the structs its parameters point to
	reached []string // the structs those structs' members point to
}

// handles returns the structs a function works on; none for a function BTF does not know (a
// static one the compiler inlined).
func (f *Finder) handles(fn string) handled {
	if h, ok := f.handled[fn]; ok {
		return h
	}
	var h handled
	var fun *btf.Func
	if err := f.spec.TypeByName(fn, &fun); err == nil {
		if proto, ok := fun.Type.(*btf.FuncProto); ok {
			for _, p := range proto.Params {
				if s := pointee(p.Type); s != nil && !slices.Contains(h.params, s.Name) {
					h.params = append(h.params, s.Name)
				}
			}
		}
	}
	for _, name := range h.params {
		var s *btf.Struct
		if f.spec.TypeByName(name, &s) != nil {
			continue
		}
		for _, m := range s.Members {
			if t := pointee(m.Type); t != nil && !slices.Contains(h.params, t.Name) && !slices.Contains(h.reached, t.Name) {
				h.reached = append(h.reached, t.Name)
			}
		}
	}
	f.handled[fn] = h
	return h
}

// pointee returns the named struct a pointer type points to, through qualifiers and typedefs; nil
// for another type.
func pointee(t btf.Type) *btf.Struct {
	p, ok := btf.UnderlyingType(t).(*btf.Pointer)
	if !ok {
		return nil
	}
	s, ok := btf.UnderlyingType(p.Target).(*btf.Struct)
	if !ok || s.Name == "" {
		return nil
	}
	return s
}
