package report

import (
	"hash/fnv"
	"strings"
)

// Every chart of every page colours a lock type by its name alone, so that a type has the same
// colour in the report of one capture, of the next, and in their diff, whatever types they hold and
// in whatever order: the built-in types of lockspec/locks.json have a colour each, and any other type
// the colour its name hashes to, among colours kept for such types.
//
// Every two colours of the palette differ by a CIEDE2000 distance of 18 or more (minTypeColorDistance,
// which palette_test.go checks): as far apart as the two closest colours of Tableau 10, the palette
// the charts used before. A writer's and a reader's variant of one lock (rwsem:W and rwsem:R) share a
// hue, the reader's a light shade of it, and a reader's bars and slices are striped (readerDecal; the
// report's and the diff's charts take it in templates/js/charts.js), so that the two are told apart
// where a shade alone is hard to see: a thin bar, a legend's swatch.

// builtinTypeColors are the colours of the built-in lock types.
var builtinTypeColors = map[string]string{
	"spinlock":    "#4e79a7",
	"mutex":       "#f28e2b",
	"semaphore":   "#59a14f",
	"rtmutex":     "#edc948",
	"rwsem:W":     "#a32052",
	"rwsem:R":     "#ebaab9",
	"rwlock:W":    "#06817f",
	"rwlock:R":    "#75ccc9",
	"pcpu-sem:W":  "#644f9d",
	"pcpu-sem:R":  "#deceff",
	"rwlock-rt:W": "#7f4c21",
	"rwlock-rt:R": "#e8c3a9",
}

// otherTypeColors are the colours of the types lockspec does not know, which their names hash to:
// none is a built-in type's, so such a type never looks like a built-in one.
var otherTypeColors = []string{"#345921", "#8a7e7c", "#cd5f3b", "#534e48", "#ad86c3", "#b6de8a"}

// minTypeColorDistance is the least CIEDE2000 distance between two colours of the palette.
const minTypeColorDistance = 18

// readerDecal is the pattern over a reader type's colour: thin dark diagonal stripes, in ECharts'
// itemStyle.decal form.
var readerDecal = map[string]any{
	"symbol": "rect", "symbolSize": 1, "color": "rgba(0, 0, 0, 0.28)",
	"dashArrayX": []int{1, 0}, "dashArrayY": []int{2, 4}, "rotation": -0.7853981633974483, // -π/4
}

// typeColor is the colour of lock type name in every chart.
func typeColor(name string) string {
	if c, ok := builtinTypeColors[name]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return otherTypeColors[h.Sum32()%uint32(len(otherTypeColors))]
}

// typeItemStyle is the ECharts itemStyle of lock type name: its colour, and a reader's stripes.
func typeItemStyle(name string) map[string]any {
	style := map[string]any{"color": typeColor(name)}
	if isReaderType(name) {
		style["decal"] = readerDecal
	}
	return style
}

// isReaderType tells a reader's variant of a lock type, which lockspec names TYPE:R.
func isReaderType(name string) bool {
	return strings.HasSuffix(name, ":R")
}
