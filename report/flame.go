package report

import "github.com/klockstat/klockstat/capture"

// The flame graphs of a report are laid out by capture.FlameGraphs; the page data carries their nodes
// column by column, names as string indexes, for page.js to draw on a canvas.

// flameNodes is the most nodes one flame graph keeps: far more than a canvas shows side by side at full
// width, and few enough that the page data stays small and the page draws a graph in milliseconds. A
// zoom into a small part of a large capture shows only what was kept of it; the page says how much
// was left out.
const flameNodes = 20_000

// flameGraph is one flame graph of the page data.
type flameGraph struct {
	Type    int32    `json:"type"` // string index of the lock type, -1 for all types
	Dropped int      `json:"dropped"`
	Name    []int32  `json:"name"` // string index; -1 for the root
	Depth   []int32  `json:"depth"`
	Start   []uint64 `json:"start"`
	Value   []uint64 `json:"value"`
	Count   []uint64 `json:"count"`
	// Owners marks the graph of the lock owners' critical sections (capture.OwnerFlameGraph),
	// drawn beside the waiters'.
	Owners bool `json:"owners,omitempty"`
	// Holders are, in the owners' graph, the string indices of its frames that say what a holder
	// did (capture.HolderFrame), by holder state (capture.HolderStates): the page gives them their
	// own kind, and the runnable one, lock-holder preemption, its own colour.
	Holders map[string]int32 `json:"holders,omitempty"`
}

// ownerFlameGraph is the graph of the owners' critical sections, tree, its names in tab.
func ownerFlameGraph(tree capture.FlameTree, tab *strtab) flameGraph {
	g := newFlameGraphs([]capture.FlameTree{tree}, tab)[0]
	g.Owners = true
	g.Holders = map[string]int32{}
	for _, state := range capture.HolderStates {
		g.Holders[state] = tab.frame(capture.HolderFrame(state))
	}
	return g
}

// newFlameGraphs interns the names of trees in tab, hashing unsymbolized frames as the stacks are.
func newFlameGraphs(trees []capture.FlameTree, tab *strtab) []flameGraph {
	graphs := make([]flameGraph, len(trees))
	for i, tree := range trees {
		n := len(tree.Nodes)
		g := flameGraph{Type: -1, Dropped: tree.Dropped, Name: make([]int32, n), Depth: make([]int32, n),
			Start: make([]uint64, n), Value: make([]uint64, n), Count: make([]uint64, n)}
		if tree.Type != "" {
			g.Type = tab.str(tree.Type)
		}
		for k, node := range tree.Nodes {
			switch node.Depth {
			case 0:
				g.Name[k] = -1
			case 1:
				g.Name[k] = tab.str(node.Name) // the thread name
			default:
				g.Name[k] = tab.frame(node.Name)
			}
			g.Depth[k], g.Start[k], g.Value[k], g.Count[k] = int32(node.Depth), node.StartNS, node.TotalNS, node.Count
		}
		graphs[i] = g
	}
	return graphs
}

// write writes the graphs as a JSON array.
func writeFlameGraphs(j *jsonWriter, graphs []flameGraph) {
	j.raw("[")
	for i, g := range graphs {
		if i > 0 {
			j.raw(",")
		}
		j.raw(`{"type":`)
		j.value(g.Type)
		j.raw(`,"dropped":`)
		j.value(g.Dropped)
		j.raw(`,"name":`)
		j.int32s(g.Name)
		j.raw(`,"depth":`)
		j.int32s(g.Depth)
		j.raw(`,"start":`)
		j.uint64s(g.Start)
		j.raw(`,"value":`)
		j.uint64s(g.Value)
		j.raw(`,"count":`)
		j.uint64s(g.Count)
		if g.Owners {
			j.raw(`,"owners":true,"holders":`)
			j.value(g.Holders)
		}
		j.raw("}")
	}
	j.raw("]")
}
