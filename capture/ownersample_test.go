package capture

import (
	"slices"
	"strings"
	"testing"
)

// TestSpreadOwnerSamples spreads an owner's stack-less wait over its samples, 3 to 1, keeps its
// switch-out stack off CPU, and leaves an owner without samples, and an unknown owner, as they were.
func TestSpreadOwnerSamples(t *testing.T) {
	const lock, other = Addr(0x1000), Addr(0x2000)
	copyStack := []string{"copy_page+0x10", "generic_perform_write+0x90", "vfs_write+0x1"}
	zeroStack := []string{"clear_page+0x8", "generic_perform_write+0x90", "vfs_write+0x1"}
	offStack := []string{"__schedule+0x2a1", "__cond_resched+0x20", "generic_perform_write+0x90"}
	ran := Owner{Type: "rwsem", Lock: lock, Comm: "hog", PID: 5, TID: 7, StackReason: OwnerStackRan, Count: 4, TotalNS: 1_000_001,
		States: []OwnerState{{State: OwnerOnCPU, Count: 3, TotalNS: 800_000}, {State: OwnerRunnable, Count: 1, TotalNS: 200_001}}}
	off := Owner{Type: "rwsem", Lock: lock, Comm: "hog", PID: 5, TID: 7, Stack: offStack, Count: 2, TotalNS: 500_000,
		States: []OwnerState{{State: OwnerRunnable, Count: 2, TotalNS: 500_000}}}
	unsampled := Owner{Type: "rwsem", Lock: other, Comm: "idle", PID: 5, TID: 8, StackReason: OwnerStackRan, Count: 1, TotalNS: 300}
	unknown := Owner{Type: "rwsem", Lock: other, Reason: OwnerReaders, Count: 1, TotalNS: 200}
	samples := []OwnerSample{
		{Type: "rwsem", Lock: lock, TID: 7, Stack: copyStack, Count: 30},
		{Type: "rwsem", Lock: lock, TID: 7, Stack: zeroStack, Count: 10},
		{Type: "rwsem", Lock: lock, TID: 7, Stack: []string{}, Count: 5}, // a failed walk: no stack to charge
		{Type: "rwsem", Lock: other, TID: 7, Stack: copyStack, Count: 9}, // another lock of the same thread
	}
	got := SpreadOwnerSamples([]Owner{ran, off, unsampled, unknown}, samples)

	find := func(stack []string, tid uint32) Owner {
		t.Helper()
		i := slices.IndexFunc(got, func(o Owner) bool { return o.TID == tid && o.Lock == lock && slices.Equal(o.Stack, stack) })
		if i < 0 {
			t.Fatalf("no owner %d at %v in %+v", tid, stack, got)
		}
		return got[i]
	}
	hot, cold, gone := find(copyStack, 7), find(zeroStack, 7), find(offStack, 7)
	if hot.Where != OwnerStackOnCPU || cold.Where != OwnerStackOnCPU || gone.Where != OwnerStackOffCPU {
		t.Errorf("where: copy %q, clear %q, switch-out %q; want on, on, off CPU", hot.Where, cold.Where, gone.Where)
	}
	if hot.Samples != 30 || cold.Samples != 10 || gone.Samples != 0 {
		t.Errorf("samples: %d, %d, %d; want 30, 10, 0", hot.Samples, cold.Samples, gone.Samples)
	}
	if hot.TotalNS+cold.TotalNS != ran.TotalNS {
		t.Errorf("spread %d + %d ns, want the %d ns charged with no stack", hot.TotalNS, cold.TotalNS, ran.TotalNS)
	}
	if d := int64(hot.TotalNS) - 3*int64(cold.TotalNS); d < 0 || d > 4 {
		t.Errorf("copy_page has %d ns, clear_page %d: want 3 to 1 (remainder to the first)", hot.TotalNS, cold.TotalNS)
	}
	if hot.Count != ran.Count || cold.Count != ran.Count || hot.StackReason != "" {
		t.Errorf("counts %d and %d, stack reason %q: want the %d waits spread in each, and no reason", hot.Count, cold.Count, hot.StackReason, ran.Count)
	}
	if gone.TotalNS != off.TotalNS {
		t.Errorf("switch-out stack has %d ns, want its own %d", gone.TotalNS, off.TotalNS)
	}
	for _, o := range []Owner{hot, cold} {
		if err := o.validate(); err != nil {
			t.Errorf("spread owner %v: %v", o.Stack, err)
		}
	}
	if !slices.ContainsFunc(got, func(o Owner) bool { return o.TID == 8 && o.StackReason == OwnerStackRan && o.TotalNS == 300 }) ||
		!slices.ContainsFunc(got, func(o Owner) bool { return o.Reason == OwnerReaders && o.TotalNS == 200 }) {
		t.Errorf("the owner without samples or the unknown owner changed: %+v", got)
	}
	if len(got) != 5 {
		t.Errorf("%d owners, want 5: two sampled stacks, the switch-out one, the unsampled and the unknown owner", len(got))
	}
}

// TestSpreadOwnerSamplesMerges merges one owner's waits with no stack and those whose owner exited,
// spread over the same samples, into one entry per stack.
func TestSpreadOwnerSamplesMerges(t *testing.T) {
	stack := []string{"memset_orig+0x1", "do_work+0x2"}
	base := Owner{Type: "mutex", Lock: 0x10, Comm: "a", PID: 1, TID: 2, Count: 1, TotalNS: 100,
		States: []OwnerState{{State: OwnerOnCPU, Count: 1, TotalNS: 100}}}
	ran, exited := base, base
	ran.StackReason, exited.StackReason = OwnerStackRan, OwnerStackExited
	got := SpreadOwnerSamples([]Owner{ran, exited}, []OwnerSample{{Type: "mutex", Lock: 0x10, TID: 2, Stack: stack, Count: 4}})
	if len(got) != 1 || got[0].TotalNS != 200 || got[0].Count != 2 || got[0].Samples != 4 || got[0].States[0].TotalNS != 200 {
		t.Fatalf("got %+v, want one entry of 200 ns, 2 waits, 4 samples", got)
	}
}

// TestOwnerTotals merges an owner's stacks, largest first, apart from another owner of the same
// lock and from the waits whose owner was unknown.
func TestOwnerTotals(t *testing.T) {
	owners := []Owner{
		{Type: "mutex", Lock: 1, TID: 7, Stack: []string{"a+0x1"}, Where: OwnerStackOnCPU, Samples: 2, Count: 1, TotalNS: 600},
		{Type: "mutex", Lock: 1, TID: 7, StackReason: OwnerStackRan, Count: 1, TotalNS: 100},
		{Type: "mutex", Lock: 1, TID: 8, Stack: []string{"b+0x1"}, Where: OwnerStackOffCPU, Count: 1, TotalNS: 650},
		{Type: "mutex", Lock: 1, TID: 7, Stack: []string{"c+0x1"}, Where: OwnerStackOffCPU, Count: 1, TotalNS: 300},
		{Type: "mutex", Lock: 1, Reason: OwnerNone, Count: 1, TotalNS: 50},
	}
	SortOwners(owners)
	totals := OwnerTotals(owners)
	if len(totals) != 3 {
		t.Fatalf("%d owners, want 3: %+v", len(totals), totals)
	}
	first := totals[0]
	var sum uint64
	for _, i := range first.Entries {
		sum += owners[i].TotalNS
		if owners[i].Key() != first.Key() {
			t.Errorf("entry %+v merged into owner %d", owners[i], first.TID)
		}
	}
	if first.TID != 7 || first.TotalNS != sum || first.StackNS != first.TotalNS-100 || len(first.Entries) != 3 {
		t.Errorf("first owner %+v, want thread 7 with its 3 entries, all but 100 ns with a stack", first)
	}
	if top := owners[first.Entries[0]]; top.Stack[0] != "a+0x1" {
		t.Errorf("thread 7's top entry is %v, want its largest, a", top.Stack)
	}
	if totals[1].TID != 8 || totals[2].Reason != OwnerNone {
		t.Errorf("then %+v and %+v, want thread 8, then the unknown owner", totals[1], totals[2])
	}
}

// TestOwnerFlameGraph weighs the owners' stacks by the wait charged to them, under the owner's
// thread name, and leaves out the owners without a stack and the unknown ones.
func TestOwnerFlameGraph(t *testing.T) {
	owners := []Owner{
		{Type: "rwsem:W", Lock: 1, Comm: "<b>hog</b>", TID: 7, Stack: []string{"copy_page+0x1", "vfs_write+0x2"}, Where: OwnerStackOnCPU, Samples: 3, Count: 2, TotalNS: 300},
		{Type: "rwsem:W", Lock: 1, Comm: "<b>hog</b>", TID: 7, Stack: []string{"__schedule+0x1", "vfs_write+0x2"}, Where: OwnerStackOffCPU, Count: 1, TotalNS: 100},
		{Type: "rwsem:W", Lock: 1, Comm: "<b>hog</b>", TID: 7, StackReason: OwnerStackRan, Count: 1, TotalNS: 50},
		{Type: "mutex", Lock: 2, Reason: OwnerNone, Count: 1, TotalNS: 1000},
	}
	tree, ok := OwnerFlameGraph(owners, nil, 100)
	if !ok {
		t.Fatal("no flame graph of the owners' stacks")
	}
	root, thread := tree.Nodes[0], tree.Nodes[1]
	if root.TotalNS != 400 || thread.Name != "<b>hog</b>" || thread.TotalNS != 400 {
		t.Errorf("root %+v, thread %+v: want the 400 ns charged to the hog's stacks, under its name", root, thread)
	}
	if tree.Nodes[2].Name != "vfs_write" || tree.Nodes[3].Name != "copy_page" || tree.Nodes[3].TotalNS != 300 {
		t.Errorf("nodes %+v: want vfs_write, then copy_page with 300 ns", tree.Nodes)
	}
	if _, ok := OwnerFlameGraph(owners[2:], nil, 100); ok {
		t.Error("a flame graph of owners without a stack")
	}
}

// TestOwnerFlameGraphByHolderState puts what a holder did over each share of the waits between its
// thread and its frames, so that its preempted time is one node, apart from its time on its CPU at
// the same stack; a share not split has no such node.
func TestOwnerFlameGraphByHolderState(t *testing.T) {
	write := []string{"down_write+0x1", "vfs_write+0x2"}
	owners := []Owner{
		{Type: "rwsem:W", Lock: 1, Comm: "hog", TID: 7, Stack: write, HolderState: HolderOnCPU, Where: OwnerStackOnCPU, Samples: 2, Count: 2, TotalNS: 300},
		{Type: "rwsem:W", Lock: 1, Comm: "hog", TID: 7, Stack: write, HolderState: HolderRunnable, Where: OwnerStackOffCPU, Count: 2, TotalNS: 600},
		{Type: "rwsem:W", Lock: 1, Comm: "hog", TID: 7, Stack: write, Where: OwnerStackOffCPU, Count: 1, TotalNS: 50},
	}
	tree, ok := OwnerFlameGraph(owners, nil, 100)
	if !ok {
		t.Fatal("no flame graph of the owners' stacks")
	}
	byPath := map[string]uint64{}
	var path []string
	for _, n := range tree.Nodes {
		path = append(path[:n.Depth], n.Name)
		byPath[strings.Join(path[1:], " ")] = n.TotalNS
	}
	want := map[string]uint64{
		"": 950, "hog": 950,
		"hog [holder preempted]": 600, "hog [holder preempted] vfs_write": 600, "hog [holder preempted] vfs_write down_write": 600,
		"hog [holder on-CPU]": 300, "hog [holder on-CPU] vfs_write": 300, "hog [holder on-CPU] vfs_write down_write": 300,
		"hog vfs_write": 50, "hog vfs_write down_write": 50,
	}
	for p, ns := range want {
		if byPath[p] != ns {
			t.Errorf("%q: %d ns, want %d; the graph: %v", p, byPath[p], ns, byPath)
		}
	}
	if len(byPath) != len(want) {
		t.Errorf("%d paths, want %d: %v", len(byPath), len(want), byPath)
	}
	if owners[0].Stack[len(owners[0].Stack)-1] != "vfs_write+0x2" {
		t.Errorf("the owner's stack was changed: %v", owners[0].Stack)
	}
}
