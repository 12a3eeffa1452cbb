package report

import "hash/fnv"

// Every chart of every page colours a lock type by its name alone, so that a type has the same
// colour in the report of one capture, of the next, and in their diff, whatever types they hold and
// in whatever order: the built-in types of lockspec/locks.json have a colour each, and any other type
// the colour its name hashes to.

// typeColors is the palette, Tableau 10 then six more of its family.
var typeColors = []string{
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
	"#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f5f8b", "#8cd17d",
	"#d37295", "#499894", "#86bcb6", "#f1ce63",
}

// builtinTypeColors are the colours of the built-in lock types: a writer's close to its reader's,
// each family's apart from the others'.
var builtinTypeColors = map[string]string{
	"spinlock":    typeColors[0],
	"mutex":       typeColors[1],
	"rwsem:W":     typeColors[2],
	"rwsem:R":     typeColors[7],
	"rwlock:W":    typeColors[3],
	"rwlock:R":    typeColors[14],
	"semaphore":   typeColors[4],
	"rtmutex":     typeColors[5],
	"pcpu-sem:W":  typeColors[6],
	"pcpu-sem:R":  typeColors[12],
	"rwlock-rt:W": typeColors[13],
	"rwlock-rt:R": typeColors[11],
}

// typeColor is the colour of lock type name in every chart.
func typeColor(name string) string {
	if c, ok := builtinTypeColors[name]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return typeColors[h.Sum32()%uint32(len(typeColors))]
}
