package capture

import (
	"cmp"
	"math/bits"
	"slices"
	"strings"
)

// A flame graph of a capture's waits: every record's wait time charged to the path root → thread name
// → the frames of its kernel stack, outermost first, with each frame named by its Frame.Func (offsets
// would split one function into as many nodes as it has call sites; a module function keeps its
// module, "xfs_ilock [xfs]"). The level under the root is the
// thread name, not the lock type, because the graph is drawn for all types and for each type: a type
// level would be one node wide in every per-type graph, and threads are what a reader tells apart
// next (which workload waits, and where).
//
// A frame with source lines (Sources) is followed by the functions inlined at it, outermost
// first, each a node of its own named "lock_rename (inlined)", as perf report --inline shows
// them: the wait of do_renameat2 is split by the inlined function it was in, and the code a
// reader looks for is named in the graph.
// InlinedSuffix follows the name of a flame graph's node of an inlined function, as perf writes it.
const InlinedSuffix = " (inlined)"

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
// types first appear in records; sources, when not nil, add the inlined functions of its frames. Records without waits (holds only) are left out. A graph keeps at
// most maxNodes nodes, the widest: a node is never wider than its parent, so what is kept stays one
// tree, and what is dropped is too narrow to draw.
//
// The records' paths are sorted, so that a path shares its nodes with the one before it up to where
// they differ: each trie is built in one pass, in depth-first order, without looking a node up.
func FlameGraphs(records []Record, sources *Sources, maxNodes int) []FlameTree {
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
	var waited []int32
	frames := 0
	for i, r := range records {
		if r.Count == 0 {
			continue
		}
		if _, ok := typeIx[r.Type]; !ok {
			typeIx[r.Type] = len(types)
			types = append(types, r.Type)
		}
		waited = append(waited, int32(i))
		frames += 1 + len(r.Stack)
	}
	if len(waited) == 0 {
		return nil
	}
	// Each record's path of interned names: the thread, then the frames from the outermost. The frames
	// are worked out once per distinct stack, and each distinct stack is ranked by its names, so that
	// sorting the paths compares two numbers, the thread's and the stack's rank.
	paths := make([][]int32, len(records))
	backing := make([]int32, 0, frames)
	var stacks [][]int32                    // the names of each distinct stack's frames, outermost first
	stackOf := make([]int32, len(records))  // the index in stacks of each record's
	sharedStacks := map[SharedStack]int32{} // the index in stacks of a shared stack
	for _, i := range waited {
		r := &records[i]
		start := len(backing)
		backing = append(backing, intern(r.Comm))
		id, shared := SharedStackOf(r.Stack)
		k, ok := sharedStacks[id]
		if shared && ok {
			backing = append(backing, stacks[k]...)
		} else {
			for _, f := range slices.Backward(r.Stack) {
				backing = append(backing, intern(ParseFrame(f).Func()))
				if sources != nil {
					for _, l := range slices.Backward(sources.Frames[f].Inlined()) {
						backing = append(backing, intern(l.Function+InlinedSuffix))
					}
				}
			}
			k = int32(len(stacks))
			stacks = append(stacks, backing[start+1:])
			if shared {
				sharedStacks[id] = k
			}
		}
		stackOf[i] = k
		paths[i] = backing[start:len(backing):len(backing)]
	}
	byNames := make([]int32, len(stacks))
	for k := range byNames {
		byNames[k] = int32(k)
	}
	slices.SortFunc(byNames, func(a, b int32) int { return slices.Compare(stacks[a], stacks[b]) })
	rank := make([]int32, len(stacks))
	for r, k := range byNames {
		rank[k] = int32(r)
	}
	// Equal stacks of different slices rank apart, but nothing ranks between them: their paths stay
	// next to each other.
	slices.SortFunc(waited, func(a, b int32) int {
		return cmp.Or(cmp.Compare(paths[a][0], paths[b][0]), cmp.Compare(rank[stackOf[a]], rank[stackOf[b]]))
	})

	trees := []FlameTree{newFlameTrie(waited, paths, records).tree("", nameOf, maxNodes)}
	// Split by type, each part still in the order of its paths.
	byType := make([][]int32, len(types))
	for _, i := range waited {
		k := typeIx[records[i].Type]
		byType[k] = append(byType[k], i)
	}
	for k, typ := range types {
		trees = append(trees, newFlameTrie(byType[k], paths, records).tree(typ, nameOf, maxNodes))
	}
	return trees
}

// flameTrie is one tree of interned names, its nodes in depth-first order, the root first.
type flameTrie struct {
	name   []int32
	parent []int32
	total  []uint64
	count  []uint64
}

// newFlameTrie builds the trie of the records order lists, in the order of their paths.
func newFlameTrie(order []int32, paths [][]int32, records []Record) *flameTrie {
	// A path adds a node per name after the part it shares with the path before: counted first, so
	// that the trie is allocated once at its size, a fraction of its paths' names.
	size := 1
	var prev []int32
	for _, i := range order {
		p := paths[i]
		size += len(p) - sharedPrefix(p, prev)
		prev = p
	}
	t := &flameTrie{name: make([]int32, 0, size), parent: make([]int32, 0, size), total: make([]uint64, 0, size), count: make([]uint64, 0, size)}
	t.node(-1, -1)
	at := []int32{0} // the nodes of the path before, the root first
	prev = nil
	for _, i := range order {
		p := paths[i]
		shared := sharedPrefix(p, prev)
		at = at[:1+shared]
		for _, name := range p[shared:] {
			at = append(at, t.node(at[len(at)-1], name))
		}
		for _, n := range at {
			t.total[n], _ = AddSaturating(t.total[n], records[i].TotalNS)
			t.count[n], _ = AddSaturating(t.count[n], records[i].Count)
		}
		prev = p
	}
	return t
}

// sharedPrefix is how many names paths a and b share from their start.
func sharedPrefix(a, b []int32) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}

func (t *flameTrie) node(parent, name int32) int32 {
	i := int32(len(t.name))
	t.name = append(t.name, name)
	t.parent = append(t.parent, parent)
	t.total = append(t.total, 0)
	t.count = append(t.count, 0)
	return i
}

// tree lays the trie out, keeping its maxNodes widest nodes.
func (t *flameTrie) tree(typ string, nameOf []string, maxNodes int) FlameTree {
	n := len(t.name)
	// The children of each node, from the parent links.
	first := make([]int32, n+1)
	for _, p := range t.parent {
		if p >= 0 {
			first[p+1]++
		}
	}
	for i := range n {
		first[i+1] += first[i]
	}
	kids := make([]int32, n)
	fill := slices.Clone(first[:n])
	for i, p := range t.parent {
		if p >= 0 {
			kids[fill[p]] = int32(i)
			fill[p]++
		}
	}

	keepAll := n <= maxNodes
	var cut uint64
	if !keepAll {
		cut = nthWidest(t.total, maxNodes)
	}
	out := FlameTree{Type: typ, Nodes: make([]FlameNode, 0, min(n, maxNodes+1))}
	var place func(node int32, depth int, start uint64)
	place = func(node int32, depth int, start uint64) {
		name := ""
		if depth > 0 {
			name = nameOf[t.name[node]]
		}
		out.Nodes = append(out.Nodes, FlameNode{Name: name, Depth: depth, StartNS: start, TotalNS: t.total[node], Count: t.count[node]})
		children := slices.Clone(kids[first[node]:first[node+1]])
		slices.SortFunc(children, func(a, b int32) int {
			return cmp.Or(cmp.Compare(t.total[b], t.total[a]), strings.Compare(nameOf[t.name[a]], nameOf[t.name[b]]))
		})
		for _, k := range children {
			// Only nodes wider than the cut stay; a tie at the cut drops all its nodes, so the
			// limit holds.
			if keepAll || t.total[k] > cut {
				place(k, depth+1, start)
				start += t.total[k]
			}
		}
	}
	place(0, 0, 0)
	out.Dropped = n - len(out.Nodes)
	return out
}

// nthWidest is the (k+1)-th largest of sizes (k < len(sizes)): the nodes wider than it are the k
// widest at most. Only the sizes of its power of two are sorted.
func nthWidest(sizes []uint64, k int) uint64 {
	var perPower [65]int
	for _, s := range sizes {
		perPower[bits.Len64(s)]++
	}
	power, above := 64, 0
	for above+perPower[power] <= k {
		above += perPower[power]
		power--
	}
	var band []uint64
	for _, s := range sizes {
		if bits.Len64(s) == power {
			band = append(band, s)
		}
	}
	slices.SortFunc(band, func(a, b uint64) int { return cmp.Compare(b, a) })
	return band[k-above]
}
