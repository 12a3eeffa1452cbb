package main

import (
	"slices"
	"strings"
	"testing"
)

func TestAttachOrdersRotateToolsEachRound(t *testing.T) {
	orders, first := attachOrders(5, true)
	if want := []string{"K", "B", "P", "E", "K"}; !slices.Equal(first, want) {
		t.Errorf("first attached = %v, want %v", first, want)
	}
	for round, order := range orders {
		// Every probe attaches once each round, whatever the order.
		if got := slices.Sorted(slices.Values(order)); !slices.Equal(got, []realProbe{bpftraceProbe, emptyProbe, noStacksProbe, stacksProbe, ownersProbe, perfProbe, perfDefaultProbe}) {
			t.Errorf("round %d attaches %v", round, order)
		}
	}
	if want := []realProbe{perfProbe, perfDefaultProbe, emptyProbe, stacksProbe, noStacksProbe, ownersProbe, bpftraceProbe}; !slices.Equal(orders[2], want) {
		t.Errorf("third round = %v, want %v (perf's group first, the rest in turn)", orders[2], want)
	}
}

func TestAttachOrdersWithoutPerfLeaveItOut(t *testing.T) {
	orders, first := attachOrders(3, false)
	if want := []string{"K", "B", "E"}; !slices.Equal(first, want) {
		t.Errorf("first attached = %v, want %v", first, want)
	}
	for round, order := range orders {
		if slices.Contains(order, perfProbe) || slices.Contains(order, perfDefaultProbe) {
			t.Errorf("round %d attaches perf without one: %v", round, order)
		}
	}
}

func TestSelectRealFindsFaultHeavyStressors(t *testing.T) {
	got, err := selectReal("madvise,fiemap")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range got {
		names = append(names, w.name)
	}
	if want := []string{"stress-ng madvise", "stress-ng fiemap"}; !slices.Equal(names, want) {
		t.Errorf("selectReal(madvise,fiemap) = %v, want %v", names, want)
	}
}

// The bench says before it starts which tools the chosen workloads lack, and the packages that
// have them, each once.
func TestMissingTools(t *testing.T) {
	present := realWorkload{name: "shell", tool: "sh", pkg: "dash"}
	absent := realWorkload{name: "nothing", tool: "klockstat-no-such-tool", pkg: "no-such-package"}
	if err := missingTools([]realWorkload{present}); err != nil {
		t.Errorf("sh is on PATH, but: %v", err)
	}
	err := missingTools([]realWorkload{present, absent, absent})
	if err == nil {
		t.Fatal("a workload's missing tool not said")
	}
	if msg := err.Error(); !strings.Contains(msg, "need klockstat-no-such-tool, not installed: apt-get install no-such-package,") {
		t.Errorf("error %q does not name the tool and its package once", msg)
	}
}
