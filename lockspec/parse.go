package lockspec

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// Version is the only locks.json schema version this package reads.
const Version = 1

// Error is a problem in a lock catalogue. Its message is one line: file,
// line and column, the JSON path of the value, the problem and the fix.
type Error struct {
	Source string
	Line   int // 1-based
	Col    int // 1-based, in bytes
	Path   string
	Msg    string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s:%d:%d: %s", e.Source, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.Source, e.Line, e.Col, e.Path, e.Msg)
}

var (
	topKeys      = []string{"version", "types"}
	topRequired  = []string{"version", "types"}
	typeKeys     = []string{"name", "description", "flags", "acquire", "release", "internal", "hold"}
	typeRequired = []string{"name", "flags", "acquire"}

	// A C identifier, optionally with the suffixes compilers append to
	// specialised copies (foo.constprop.0, foo.isra.0, foo.cold).
	funcNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$`)
)

// Parse parses and validates a locks.json document. source names the file in
// error messages; every error is an *Error.
//
// A UTF-8 byte-order mark, which some editors write, is skipped; columns on the first line count
// from after it, as the editor shows them.
func Parse(source string, data []byte) (*Spec, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	c := &checker{source: source, data: data}
	root, jsonErr := readJSON(data)
	if jsonErr != nil {
		return nil, c.errorAt(jsonErr.off, "", "%s", jsonErr.msg)
	}
	types, err := c.spec(root)
	if err != nil {
		return nil, err
	}
	return newSpec(source, types, types), nil
}

type checker struct {
	source string
	data   []byte
}

func (c *checker) errorAt(off int, path, format string, args ...any) *Error {
	line, col := c.lineCol(off)
	return &Error{Source: c.source, Line: line, Col: col, Path: path, Msg: fmt.Sprintf(format, args...)}
}

func (c *checker) lineCol(off int) (line, col int) {
	before := c.data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}

func (c *checker) at(off int) string {
	line, col := c.lineCol(off)
	return fmt.Sprintf("%s:%d:%d", c.source, line, col)
}

func (c *checker) spec(root *jsonNode) ([]Type, error) {
	fields, err := c.object(root, "", topKeys, topRequired)
	if err != nil {
		return nil, err
	}
	if v := fields["version"]; v.kind != jsonNumber {
		return nil, c.wrongKind(v, "version", jsonNumber)
	} else if v.text != fmt.Sprint(Version) {
		return nil, c.errorAt(v.off, "version", "unsupported version %s (want %d)", v.text, Version)
	}
	list, err := c.list(fields["types"], "types", "define at least one lock type")
	if err != nil {
		return nil, err
	}
	types := make([]Type, len(list))
	nameOff := make(map[string]int)      // type name -> offset of its first definition
	claimed := make(map[Flag][]claimant) // flags value -> the types claiming it
	for i, n := range list {
		path := fmt.Sprintf("types[%d]", i)
		var offs []int
		if types[i], offs, err = c.lockType(n, path, nameOff); err != nil {
			return nil, err
		}
		for j, f := range types[i].Flags {
			for _, other := range claimed[f] {
				if fn, shared := sharedFunction(types[other.index].Acquire, types[i].Acquire); shared {
					return nil, c.errorAt(offs[j], fmt.Sprintf("%s.flags[%d]", path, j),
						"flags %s also claimed by type %q at %s, and both list acquire function %q (types that share flags are told apart by their acquire functions on the stack: list each under one type)",
						f, types[other.index].Name, c.at(other.off), fn)
				}
			}
			claimed[f] = append(claimed[f], claimant{i, offs[j]})
		}
	}
	return types, nil
}

// claimant is a type claiming a flags value, and where.
type claimant struct {
	index int
	off   int
}

// sharedFunction returns a function both lists name, compiler suffixes aside.
func sharedFunction(a, b []string) (string, bool) {
	for _, fa := range a {
		for _, fb := range b {
			if stripCompilerSuffix(fa) == stripCompilerSuffix(fb) {
				return fb, true
			}
		}
	}
	return "", false
}

// lockType parses one type, and returns the offsets of its flag combinations.
func (c *checker) lockType(n *jsonNode, path string, nameOff map[string]int) (Type, []int, error) {
	var t Type
	fields, err := c.object(n, path, typeKeys, typeRequired)
	if err != nil {
		return t, nil, err
	}

	name := fields["name"]
	if t.Name, err = c.str(name, path+".name"); err != nil {
		return t, nil, err
	}
	if err := capture.CheckTypeName(t.Name); err != nil {
		return t, nil, c.errorAt(name.off, path+".name", "%v", err)
	}
	if first, dup := nameOff[t.Name]; dup {
		return t, nil, c.errorAt(name.off, path+".name", "duplicate type %q (first defined at %s)", t.Name, c.at(first))
	}
	nameOff[t.Name] = name.off

	if d, ok := fields["description"]; ok {
		if t.Description, err = c.str(d, path+".description"); err != nil {
			return t, nil, err
		}
	}

	var offs []int
	if t.Flags, offs, err = c.flags(fields["flags"], path+".flags"); err != nil {
		return t, nil, err
	}

	if t.Acquire, err = c.functions(fields["acquire"], path+".acquire", "name at least one kernel function"); err != nil {
		return t, nil, err
	}
	for _, key := range []string{"release", "internal"} {
		v, ok := fields[key]
		if !ok {
			continue
		}
		funcs, err := c.functions(v, path+"."+key, "name at least one kernel function, or remove the key")
		if err != nil {
			return t, nil, err
		}
		if key == "release" {
			t.Release = funcs
		} else {
			t.Internal = funcs
		}
	}

	if h, ok := fields["hold"]; ok {
		if h.kind != jsonBool {
			return t, nil, c.wrongKind(h, path+".hold", jsonBool)
		}
		t.Hold = h.text == "true"
		switch {
		case t.Hold && len(t.Release) == 0:
			return t, nil, c.errorAt(h.off, path+".hold", "hold time needs the release functions: list them in \"release\", or remove the key")
		case t.Hold && t.Spinning():
			return t, nil, c.errorAt(h.off, path+".hold", "hold time is measured for sleeping locks only: probing every release of a spinning lock would cost more than the holds it measures")
		}
	}
	return t, offs, nil
}

// flags parses a type's flag combinations, and returns where each is.
func (c *checker) flags(n *jsonNode, path string) ([]Flag, []int, error) {
	combos, err := c.list(n, path, `list at least one flag combination, e.g. [["SPIN"]]; [] means flags 0`)
	if err != nil {
		return nil, nil, err
	}
	flags := make([]Flag, len(combos))
	offs := make([]int, len(combos))
	for i, combo := range combos {
		comboPath := fmt.Sprintf("%s[%d]", path, i)
		if combo.kind != jsonList {
			return nil, nil, c.wrongKind(combo, comboPath, jsonList)
		}
		for j, e := range combo.elems {
			elemPath := fmt.Sprintf("%s[%d]", comboPath, j)
			name, err := c.str(e, elemPath)
			if err != nil {
				return nil, nil, err
			}
			f, ok := flagByName(name)
			if !ok {
				return nil, nil, c.errorAt(e.off, elemPath, "unknown flag %q (want one of %s)", name, flagNameList())
			}
			if flags[i]&f != 0 {
				return nil, nil, c.errorAt(e.off, elemPath, "flag %q repeated in one combination (list it once)", name)
			}
			flags[i] |= f
		}
		if j := slices.Index(flags[:i], flags[i]); j >= 0 {
			return nil, nil, c.errorAt(combo.off, comboPath, "flags %s already listed at %s (list each combination once)",
				flags[i], c.at(offs[j]))
		}
		offs[i] = combo.off
	}
	return flags, offs, nil
}

func (c *checker) functions(n *jsonNode, path, emptyHint string) ([]string, error) {
	list, err := c.list(n, path, emptyHint)
	if err != nil {
		return nil, err
	}
	funcs := make([]string, len(list))
	seen := make(map[string]int)
	for i, e := range list {
		elemPath := fmt.Sprintf("%s[%d]", path, i)
		if funcs[i], err = c.str(e, elemPath); err != nil {
			return nil, err
		}
		if !funcNameRE.MatchString(funcs[i]) {
			return nil, c.errorAt(e.off, elemPath,
				`bad function name %q (want a C identifier such as "mutex_lock", optionally with a compiler suffix such as ".constprop.0")`, funcs[i])
		}
		if first, dup := seen[funcs[i]]; dup {
			return nil, c.errorAt(e.off, elemPath, "duplicate function %q (first listed at %s)", funcs[i], c.at(first))
		}
		seen[funcs[i]] = e.off
	}
	return funcs, nil
}

// object checks that n is an object with only known keys, each at most once,
// and all required keys, and returns its members by key.
func (c *checker) object(n *jsonNode, path string, known, required []string) (map[string]*jsonNode, error) {
	if n.kind != jsonObject {
		return nil, c.wrongKind(n, path, jsonObject)
	}
	fields := make(map[string]*jsonNode, len(n.members))
	keyOff := make(map[string]int, len(n.members))
	for _, m := range n.members {
		if !slices.Contains(known, m.key) {
			return nil, c.errorAt(m.off, path, "unknown key %q (known keys: %s)", m.key, strings.Join(known, ", "))
		}
		if first, dup := keyOff[m.key]; dup {
			return nil, c.errorAt(m.off, path, "duplicate key %q (first given at %s; keep one)", m.key, c.at(first))
		}
		fields[m.key], keyOff[m.key] = m.value, m.off
	}
	for _, key := range required {
		if _, ok := fields[key]; !ok {
			return nil, c.errorAt(n.off, path, "missing required key %q (required: %s)", key, strings.Join(required, ", "))
		}
	}
	return fields, nil
}

func (c *checker) list(n *jsonNode, path, emptyHint string) ([]*jsonNode, error) {
	if n.kind != jsonList {
		return nil, c.wrongKind(n, path, jsonList)
	}
	if len(n.elems) == 0 {
		return nil, c.errorAt(n.off, path, "empty list (%s)", emptyHint)
	}
	return n.elems, nil
}

func (c *checker) str(n *jsonNode, path string) (string, error) {
	if n.kind != jsonString {
		return "", c.wrongKind(n, path, jsonString)
	}
	return n.text, nil
}

func (c *checker) wrongKind(n *jsonNode, path string, want jsonKind) *Error {
	if path == "" {
		path = "top level"
	}
	return c.errorAt(n.off, path, "got %s, want %s", n.kind, want)
}

func flagByName(name string) (Flag, bool) {
	for _, fn := range flagNames {
		if fn.name == name {
			return fn.flag, true
		}
	}
	return 0, false
}

func flagNameList() string {
	names := make([]string, len(flagNames))
	for i, fn := range flagNames {
		names[i] = fn.name
	}
	return strings.Join(names, ", ")
}
