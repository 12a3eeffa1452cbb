package report

import (
	"slices"
	"testing"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/lockspec"
)

// Every built-in lock type has a colour of its own, so that no two of them look alike in a chart.
func TestBuiltinTypeColors(t *testing.T) {
	spec, err := lockspec.Default()
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	for _, name := range spec.Names() {
		c, ok := builtinTypeColors[name]
		if !ok {
			t.Errorf("built-in type %s has no fixed colour", name)
			continue
		}
		if other, taken := owner[c]; taken {
			t.Errorf("%s and %s share the colour %s", other, name, c)
		}
		owner[c] = name
		if !slices.Contains(typeColors, c) {
			t.Errorf("%s's colour %s is not of the palette", name, c)
		}
	}
	if len(builtinTypeColors) != len(spec.Names()) {
		t.Errorf("%d fixed colours for %d built-in types: a colour names a type that is not built in", len(builtinTypeColors), len(spec.Names()))
	}
}

// A type's colour depends on its name alone: not on the other types of a capture, nor on its rank.
func TestTypeColorIgnoresOrder(t *testing.T) {
	hist := func(typ string, totalNS uint64) capture.Histogram {
		return capture.Histogram{Type: typ, Count: 1, TotalNS: totalNS, SubBucketBits: capture.SubBucketBits}
	}
	colors := func(hists ...capture.Histogram) map[string]string {
		m := map[string]string{}
		for _, s := range summarizeTypes(hists) {
			m[s.Name] = s.Color
		}
		return m
	}
	first := colors(hist("spinlock", 10), hist("mutex", 5), hist("my_lock", 1))
	second := colors(hist("mutex", 50), hist("my_lock", 20), hist("spinlock", 1), hist("rwsem:W", 7))
	for _, name := range []string{"spinlock", "mutex", "my_lock"} {
		if first[name] != second[name] {
			t.Errorf("%s is %s in one capture and %s in the other", name, first[name], second[name])
		}
	}
	if c := typeColor("my_lock"); !slices.Contains(typeColors, c) || c != typeColor("my_lock") {
		t.Errorf("typeColor(my_lock) = %s, not a stable colour of the palette", c)
	}
}
