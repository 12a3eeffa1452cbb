package capture

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func TestFlameGraphs(t *testing.T) {
	records := []Record{
		{Type: "mutex", Comm: "a", Count: 2, TotalNS: 30, Stack: []string{"lock+0x1", "f+0x2", "main+0x3"}},
		{Type: "spinlock", Comm: "b", Count: 1, TotalNS: 10, Stack: []string{"spin+0x1", "main+0x3"}},
		{Type: "mutex", Comm: "a", Count: 1, TotalNS: 50, Stack: []string{"lock+0x9", "g+0x1", "main+0x5"}},
		{Type: "rwsem:W", Comm: "c", HoldCount: 5, HoldTotalNS: 500, Stack: []string{"down_write+0x1"}}, // holds only
		{Type: "spinlock", Comm: "b", Count: 1, TotalNS: 5},                                             // no stack
	}
	trees := FlameGraphs(records, nil, 100)
	want := []FlameTree{
		{Type: "", Nodes: []FlameNode{
			{"", 0, 0, 95, 5},
			{"a", 1, 0, 80, 3},
			{"main", 2, 0, 80, 3},
			{"g", 3, 0, 50, 1}, {"lock", 4, 0, 50, 1},
			{"f", 3, 50, 30, 2}, {"lock", 4, 50, 30, 2},
			{"b", 1, 80, 15, 2},
			{"main", 2, 80, 10, 1}, {"spin", 3, 80, 10, 1},
		}},
		{Type: "mutex", Nodes: []FlameNode{
			{"", 0, 0, 80, 3}, {"a", 1, 0, 80, 3}, {"main", 2, 0, 80, 3},
			{"g", 3, 0, 50, 1}, {"lock", 4, 0, 50, 1}, {"f", 3, 50, 30, 2}, {"lock", 4, 50, 30, 2},
		}},
		{Type: "spinlock", Nodes: []FlameNode{
			{"", 0, 0, 15, 2}, {"b", 1, 0, 15, 2}, {"main", 2, 0, 10, 1}, {"spin", 3, 0, 10, 1},
		}},
	}
	if len(trees) != len(want) {
		t.Fatalf("%d trees, want %d: %+v", len(trees), len(want), trees)
	}
	for i := range want {
		if trees[i].Type != want[i].Type || !slices.Equal(trees[i].Nodes, want[i].Nodes) || trees[i].Dropped != 0 {
			t.Errorf("tree %d:\n got %+v\nwant %+v", i, trees[i], want[i])
		}
	}
	// Records of one stack lay out the same whether they share its slice, as Parse decodes them, or
	// hold equal copies of it.
	copies := append(slices.Clone(records), Record{Type: "mutex", Comm: "b", Count: 1, TotalNS: 7, Stack: slices.Clone(records[0].Stack)})
	sharing := append(slices.Clone(records), Record{Type: "mutex", Comm: "b", Count: 1, TotalNS: 7, Stack: records[0].Stack})
	if a, b := FlameGraphs(copies, nil, 100), FlameGraphs(sharing, nil, 100); !reflect.DeepEqual(a, b) || len(a[0].Nodes) != len(trees[0].Nodes)+2 {
		t.Errorf("records of one stack:\n copies %+v\nsharing %+v", a, b)
	}
	if got := FlameGraphs(records[3:4], nil, 100); got != nil {
		t.Errorf("a capture of holds only has flame graphs %+v", got)
	}
}

// TestFlameGraphsLimit checks the layout of random records under a node limit: every graph is one
// tree whose nodes fit in their parents, and the root weighs every wait of its type.
func TestFlameGraphsLimit(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var records []Record
	totals := map[string]uint64{}
	for i := range 3000 {
		r := Record{Type: []string{"mutex", "spinlock", "rwsem:W"}[rng.IntN(3)], Comm: fmt.Sprintf("t%d", i%17), Count: 1 + uint64(rng.IntN(9)), TotalNS: 1 + uint64(rng.IntN(1e6))}
		for range rng.IntN(8) {
			r.Stack = append(r.Stack, fmt.Sprintf("f%d+0x%x", rng.IntN(6), rng.IntN(99)))
		}
		totals[r.Type] += r.TotalNS
		totals[""] += r.TotalNS
		records = append(records, r)
	}
	for _, limit := range []int{1, 50, 1000, 1 << 20} {
		full := FlameGraphs(records, nil, 1<<30)
		for i, tree := range FlameGraphs(records, nil, limit) {
			n := len(tree.Nodes)
			if n > max(limit, 1) || n+tree.Dropped != len(full[i].Nodes) {
				t.Errorf("limit %d, type %q: %d nodes and %d dropped of %d", limit, tree.Type, n, tree.Dropped, len(full[i].Nodes))
			}
			if root := tree.Nodes[0]; root.TotalNS != totals[tree.Type] || root.Depth != 0 {
				t.Errorf("limit %d, type %q: root %+v, want %d ns", limit, tree.Type, root, totals[tree.Type])
			}
			// Each node lies within the span of the last node one level up, which is its parent.
			open := []FlameNode{tree.Nodes[0]}
			for k, node := range tree.Nodes[1:] {
				if node.Depth < 1 || node.Depth > len(open) {
					t.Fatalf("limit %d, type %q: node %d at depth %d under %d open levels", limit, tree.Type, k+1, node.Depth, len(open))
				}
				open = open[:node.Depth]
				p := open[node.Depth-1]
				if node.StartNS < p.StartNS || node.StartNS+node.TotalNS > p.StartNS+p.TotalNS || node.TotalNS == 0 {
					t.Errorf("limit %d, type %q: node %+v outside its parent %+v", limit, tree.Type, node, p)
				}
				open = append(open, node)
			}
		}
	}
}

// TestFlameGraphsModuleFrames: the offsets of one module function are one node, named with its
// module, apart from a vmlinux function of the same name; unsymbolized frames stay as they are.
func TestFlameGraphsModuleFrames(t *testing.T) {
	records := []Record{
		{Type: "rwsem:W", Comm: "a", Count: 1, TotalNS: 30, Stack: []string{"down_write+0x1", "xfs_ilock+0x4c [xfs]", "main+0x3"}},
		{Type: "rwsem:W", Comm: "a", Count: 1, TotalNS: 20, Stack: []string{"down_write+0x1", "xfs_ilock+0x80 [xfs]", "main+0x3"}},
		{Type: "rwsem:W", Comm: "a", Count: 1, TotalNS: 5, Stack: []string{"down_write+0x1", "xfs_ilock+0x4c", "main+0x3"}},
		{Type: "rwsem:W", Comm: "a", Count: 1, TotalNS: 2, Stack: []string{"0xffffffffc0a81234", "main+0x7"}},
	}
	want := []FlameNode{
		{"", 0, 0, 57, 4}, {"a", 1, 0, 57, 4}, {"main", 2, 0, 57, 4},
		{"xfs_ilock [xfs]", 3, 0, 50, 2}, {"down_write", 4, 0, 50, 2},
		{"xfs_ilock", 3, 50, 5, 1}, {"down_write", 4, 50, 5, 1},
		{"0xffffffffc0a81234", 3, 55, 2, 1},
	}
	if got := FlameGraphs(records, nil, 100)[0].Nodes; !slices.Equal(got, want) {
		t.Errorf("nodes\n got %+v\nwant %+v", got, want)
	}
}

// TestFlameGraphsInlined checks the functions inlined at a frame follow it, outermost first, each
// a node of its own, and frames without lines stay as they were.
func TestFlameGraphsInlined(t *testing.T) {
	records := []Record{
		{Type: "mutex", Comm: "mv", Count: 1, TotalNS: 40, Stack: []string{"mutex_lock+0x1", "do_renameat2+0x221", "main+0x3"}},
		{Type: "mutex", Comm: "mv", Count: 1, TotalNS: 10, Stack: []string{"mutex_lock+0x1", "do_renameat2+0x300", "main+0x3"}},
	}
	sources := &Sources{Frames: map[string]SourceFrame{
		"do_renameat2+0x221": {Lines: []SourceLine{
			{Function: "inode_lock_nested", File: "include/linux/fs.h", Line: 850},
			{Function: "lock_rename", File: "fs/namei.c", Line: 3012},
			{Function: "do_renameat2", File: "fs/namei.c", Line: 5004},
		}},
		"do_renameat2+0x300": {Lines: []SourceLine{{Function: "do_renameat2", File: "fs/namei.c", Line: 5050}}},
	}}
	got := FlameGraphs(records, sources, 100)[0].Nodes
	want := []FlameNode{
		{"", 0, 0, 50, 2}, {"mv", 1, 0, 50, 2}, {"main", 2, 0, 50, 2}, {"do_renameat2", 3, 0, 50, 2},
		{"lock_rename" + InlinedSuffix, 4, 0, 40, 1}, {"inode_lock_nested" + InlinedSuffix, 5, 0, 40, 1}, {"mutex_lock", 6, 0, 40, 1},
		{"mutex_lock", 4, 40, 10, 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("nodes:\n got %+v\nwant %+v", got, want)
	}
	if plain := FlameGraphs(records, nil, 100)[0].Nodes; len(plain) != 5 {
		t.Errorf("without sources, %d nodes, want 5: %+v", len(plain), plain)
	}
}
