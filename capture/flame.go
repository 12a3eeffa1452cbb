package capture

import (
	"cmp"
	"slices"
	"strings"
)

// A flame graph of a capture's waits: every record's wait time charged to the path root → thread name
// → the frames of its kernel stack, outermost first, with each frame named by its function (offsets
// would split one function into as many nodes as it has call sites). The level under the root is the
// thread name, not the lock type, because the graph is drawn for all types and for each type: a type
// level would be one node wide in every per-type graph, and threads are what a reader tells apart
// next (which workload waits, and where).

// FlameTree is one flame graph: its nodes in depth-first order, the children of a node after it and
// largest first, each placed by StartNS within its parent's span, so a renderer only draws them.
type FlameTree struct {
	Type    string      // the lock type whose waits it weighs, or "" for all types
	Nodes   []FlameNode // Nodes[0] is the root, all the waits of Type
	Dropped int         // nodes left out by the node limit (FlameGraphs), whose waits count in their parents
}

// FlameNode is one frame (or the root, or a thread name) of a flame graph.
type FlameNode struct {
	Name    string // "" for the root, the thread name at depth 1, a function or unsymbolized frame below
	Depth   int
	StartNS uint64 // where the node starts, in nanoseconds of wait from the root's start
	TotalNS uint64 // wait time of the records whose path passes here
	Count   uint64 // waits of those records
}

// FlameGraphs builds the flame graph of all the waits of records, then one per lock type in the order
// types first appear in records. Records without waits (holds only) are left out. A graph keeps at
// most maxNodes nodes, the widest: a node is never wider than its parent, so what is kept stays one
// tree, and what is dropped is too narrow to draw.
func FlameGraphs(records []Record, maxNodes int) []FlameTree {
	names := map[string]int32{}
	var nameOf []string
	intern := func(s string) int32 {
		if i, ok := names[s]; ok {
			return i
		}
		i := int32(len(nameOf))
		nameOf = append(nameOf, s)
		names[s] = i
		return i
	}
	var types []string
	typeIx := map[string]int{}
	for _, r := range records {
		if _, ok := typeIx[r.Type]; !ok && r.Count > 0 {
			typeIx[r.Type] = len(types)
			types = append(types, r.Type)
		}
	}

	// The graph of all types, then one trie holding the per-type graphs under a root each.
	// Room for a few nodes per record: the map would otherwise grow many times over at 100,000.
	all := newFlameTrie(1, 4*len(records))
	perType := newFlameTrie(len(types), 4*len(records))
	path := make([]int32, 0, 32)
	for _, r := range records {
		if r.Count == 0 {
			continue
		}
		path = append(path[:0], intern(r.Comm))
		for _, f := range slices.Backward(r.Stack) {
			path = append(path, intern(FrameFunction(f)))
		}
		all.add(0, path, r.TotalNS, r.Count)
		perType.add(int32(typeIx[r.Type]), path, r.TotalNS, r.Count)
	}
	if len(types) == 0 {
		return nil
	}
	trees := []FlameTree{all.tree(0, "", nameOf, maxNodes)}
	all = nil // its nodes are the larger half of what is held here
	for i, typ := range types {
		trees = append(trees, perType.tree(int32(i), typ, nameOf, maxNodes))
	}
	return trees
}

// flameTrie holds one or more trees of interned names, their roots first.
type flameTrie struct {
	name   []int32
	parent []int32
	total  []uint64
	count  []uint64
	child  map[uint64]int32 // parent<<32 | name -> node
	first  []int32          // the children of node i are kids[first[i]:first[i+1]] (children)
	kids   []int32
}

func newFlameTrie(roots, sizeHint int) *flameTrie {
	t := &flameTrie{child: make(map[uint64]int32, sizeHint)}
	for range roots {
		t.node(-1, -1)
	}
	return t
}

func (t *flameTrie) node(parent, name int32) int32 {
	i := int32(len(t.name))
	t.name = append(t.name, name)
	t.parent = append(t.parent, parent)
	t.total = append(t.total, 0)
	t.count = append(t.count, 0)
	return i
}

// add charges ns and n waits to the path of names under root.
func (t *flameTrie) add(root int32, path []int32, ns, n uint64) {
	at := root
	t.charge(at, ns, n)
	for _, name := range path {
		key := uint64(at)<<32 | uint64(uint32(name))
		next, ok := t.child[key]
		if !ok {
			next = t.node(at, name)
			t.child[key] = next
		}
		at = next
		t.charge(at, ns, n)
	}
}

// charge adds ns and n waits to node, saturating as group sums do.
func (t *flameTrie) charge(node int32, ns, n uint64) {
	t.total[node], _ = addSaturating(t.total[node], ns)
	t.count[node], _ = addSaturating(t.count[node], n)
}

// children indexes the children of every node, from the parent links, once for all the trees of t.
func (t *flameTrie) children() {
	if t.first != nil {
		return
	}
	t.first = make([]int32, len(t.name)+1)
	for _, p := range t.parent {
		if p >= 0 {
			t.first[p+1]++
		}
	}
	for i := range len(t.name) {
		t.first[i+1] += t.first[i]
	}
	t.kids = make([]int32, len(t.name))
	fill := slices.Clone(t.first[:len(t.name)])
	for i, p := range t.parent {
		if p >= 0 {
			t.kids[fill[p]] = int32(i)
			fill[p]++
		}
	}
}

// tree lays out the tree under root, keeping its maxNodes widest nodes.
func (t *flameTrie) tree(root int32, typ string, nameOf []string, maxNodes int) FlameTree {
	t.children()
	first, kids := t.first, t.kids

	// Only nodes wider than the limit's cut stay; a tie at the cut drops all its nodes, so the limit
	// holds.
	var sizes []uint64
	var walk func(int32)
	walk = func(n int32) {
		sizes = append(sizes, t.total[n])
		for _, k := range kids[first[n]:first[n+1]] {
			walk(k)
		}
	}
	walk(root)
	var cut uint64
	keepAll := len(sizes) <= maxNodes
	if !keepAll {
		slices.SortFunc(sizes, func(a, b uint64) int { return cmp.Compare(b, a) })
		cut = sizes[maxNodes]
	}
	out := FlameTree{Type: typ}
	var place func(n int32, depth int, start uint64)
	place = func(n int32, depth int, start uint64) {
		name := ""
		if depth > 0 {
			name = nameOf[t.name[n]]
		}
		out.Nodes = append(out.Nodes, FlameNode{Name: name, Depth: depth, StartNS: start, TotalNS: t.total[n], Count: t.count[n]})
		children := slices.Clone(kids[first[n]:first[n+1]])
		slices.SortFunc(children, func(a, b int32) int {
			return cmp.Or(cmp.Compare(t.total[b], t.total[a]), strings.Compare(nameOf[t.name[a]], nameOf[t.name[b]]))
		})
		for _, k := range children {
			if keepAll || t.total[k] > cut {
				place(k, depth+1, start)
				start += t.total[k]
			}
		}
	}
	place(root, 0, 0)
	out.Dropped = len(sizes) - len(out.Nodes)
	return out
}

// FrameFunction is the function of a stack frame or caller: "vm_mmap_pgoff+0xe0" -> "vm_mmap_pgoff".
// An unsymbolized frame (a raw address or a hashed id) is returned as it is.
func FrameFunction(frame string) string {
	if i := strings.LastIndex(frame, "+0x"); i > 0 && isHex(frame[i+3:]) {
		return frame[:i]
	}
	return frame
}
