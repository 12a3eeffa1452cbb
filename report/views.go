package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/klockstat/klockstat/capture"
)

// The tables of both pages are views: rows that Go computed, stored column by column, which the page's
// script (page.js) only renders, sorts, filters and pages. A view's text is an index into one table
// of strings, and a stack an index into one table of stacks of such indexes, so that the thousands of
// records sharing a caller, a thread name or a 16-frame stack store it once.

// The kinds of column, each rendered by page.js its own way.
const (
	kindText   = "text"   // a string index; -1 shows "various" (a group's records differ)
	kindStatus = "status" // a string index: matched, new or gone
	kindStack  = "stack"  // a stack index; -1 shows "no stack"
	kindInt    = "int"    // an integer
	kindNS     = "ns"     // nanoseconds, shown as a duration with the exact number as tooltip
	kindMeanNS = "nsf"    // nanoseconds with decimals (an average), tooltip with one decimal
	kindNum    = "num"    // a number shown with Decimals decimals (per-second rates)
	kindDelta  = "delta"  // a signed change of a value of Unit ("ns", "num" or "points"), coloured by sign but in points
	kindRatio  = "ratio"  // after / before; -1 means from nothing ("new"), 0 to nothing ("gone")
	kindLink   = "link"   // a link key (columnLink); -1 shows the link's None text
)

// A number column's missing value (a side a diff row is not in) is NaN, written as null: "–".
var missing = math.NaN()

// column is one column of a view: its heading and its values, one per row.
type column struct {
	Key      string `json:"key"`
	Label    string `json:"label"`
	Kind     string `json:"kind"`
	Class    string `json:"class,omitempty"` // "mono" for kernel symbols and ids
	Group    string `json:"group,omitempty"` // a heading over consecutive columns of the same Group
	Unit     string `json:"unit,omitempty"`  // of a delta: "ns", "num" or "points" (of a share: neither worse nor better)
	Decimals int    `json:"decimals,omitempty"`
	Sum      bool   `json:"sum,omitempty"`    // a sum, which a saturated row shows as a lower bound
	Search   bool   `json:"search,omitempty"` // a number the filter looks for (PID, TID)
	// Ref names the column of the embedded capture's records holding the values, which are not
	// repeated here: the view "By thread" is the records.
	Ref string `json:"ref,omitempty"`
	// Term is the glossary entry (page.html's glossary, id "g-" + Term) that explains the column.
	Term string `json:"term,omitempty"`
	// Link makes each value a control that shows the rows of another view with the same value.
	Link *columnLink `json:"link,omitempty"`

	text   []int32 // text, status and stack kinds
	titles []int32 // a tooltip per row of a text column (string index, -1 for none), or nil
	ints   []uint64
	floats []float64
}

// columnLink is what a link column's values lead to: the rows of view Target whose own link column
// holds the same key. Its texts are string indexes, per key: Labels the control's, Titles the
// sentence naming the rows it shows, which the target view shows above them; None the text and title
// of a row without a key.
type columnLink struct {
	Target string   `json:"target"`
	Labels []int32  `json:"labels"`
	Titles []int32  `json:"titles"`
	None   [2]int32 `json:"none"`
}

// insertAfter inserts c into v after the column of the given key.
func (v *view) insertAfter(key string, c column) {
	i := slices.IndexFunc(v.Columns, func(c column) bool { return c.Key == key })
	v.Columns = slices.Insert(v.Columns, i+1, c)
}

// view is one table: its rows, in the order Go sorted them, and how that order is labelled.
type view struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Caption   string   `json:"caption"`
	Rows      int      `json:"rows"`
	SortKey   string   `json:"sort"`      // the column the rows are sorted by, largest first, or "" for an order of its own
	Saturated []int    `json:"saturated"` // rows whose sums saturated (capture.Group.Saturated)
	Columns   []column `json:"-"`
}

// strtab interns strings and stacks for the views and the embedded capture, hashing kernel
// addresses on the way when hasher is set.
type strtab struct {
	strings []string
	index   map[string]int32
	stacks  [][]int32
	stackIx map[string]int32
	// The stacks by the slice that held them: records of the same stack share a slice (capture.Parse
	// decodes them so), and the slice is looked up once, not each of its frames.
	slices map[capture.SharedStack]int32
	locks  map[capture.Addr]int32
	hasher *capture.AddressHasher
	frames []int32         // scratch for stack
	shared map[string]bool // the lock labels several locks share, once sharedLabels found them
	// sources are the source lines of the capture's frames, nil without them.
	sources *capture.Sources
}

func newStrtab(hasher *capture.AddressHasher) *strtab {
	return &strtab{index: map[string]int32{}, stackIx: map[string]int32{}, slices: map[capture.SharedStack]int32{}, locks: map[capture.Addr]int32{}, hasher: hasher}
}

// str returns the index of s.
func (t *strtab) str(s string) int32 {
	if i, ok := t.index[s]; ok {
		return i
	}
	i := int32(len(t.strings))
	t.strings = append(t.strings, s)
	t.index[s] = i
	return i
}

// frame returns the index of a stack frame or caller, hashed if it is a raw address.
func (t *strtab) frame(f string) int32 {
	if t.hasher != nil {
		f = t.hasher.Frame(f)
	}
	return t.str(f)
}

// pageSources is what the page shows of the frames' source lines: after each frame of a stack
// that has lines, its SourceText (Text) and, in its title, the whole chain (Detail); under every
// stack, Note, which names the vmlinux the lines come from or says how to get them, and in its
// title Help.
type pageSources struct {
	Frames map[int32][2]string `json:"frames"` // by the frame's index in the strings: {Text, Detail}
	Note   string              `json:"note"`
	Help   string              `json:"help"`
}

// noSourcesHelp says where a distribution keeps its kernel's image with DWARF.
const noSourcesHelp = "klockstat report CAPTURE --vmlinux PATH adds the source lines and inlined functions of the frames " +
	"from the captured kernel's image with DWARF, which klockstat finds by itself where its debug package is installed: " +
	"Debian linux-image-$(uname -r)-dbg, Ubuntu linux-image-$(uname -r)-dbgsym, Fedora kernel-debuginfo. See docs/source-lines.md."

// pageSources are the lines of the frames interned so far.
func (t *strtab) pageSources() pageSources {
	p := pageSources{Frames: map[int32][2]string{}}
	if t.sources == nil {
		p.Note, p.Help = "no source lines: see --vmlinux", noSourcesHelp
		return p
	}
	p.Note = "source lines from the vmlinux of build id " + t.sources.BuildID
	for i, s := range t.strings {
		if lines := t.sources.Lines(s); lines != nil {
			p.Frames[int32(i)] = [2]string{capture.SourceText(lines), capture.SourceDetail(lines)}
		}
	}
	return p
}

// lock returns a lock's address, hashed when hashing.
func (t *strtab) lock(a capture.Addr) capture.Addr {
	if t.hasher != nil {
		return t.hasher.ID(a)
	}
	return a
}

// lockName returns the index of a lock's address as the page shows it, hashed when hashing.
func (t *strtab) lockName(a capture.Addr) int32 {
	if i, ok := t.locks[a]; ok {
		return i
	}
	i := t.str(t.lock(a).String())
	t.locks[a] = i
	return i
}

// stack returns the index of a stack of frames.
func (t *strtab) stack(frames []string) int32 {
	id, shared := capture.SharedStackOf(frames)
	if !shared {
		return t.stackOf(frames)
	}
	if i, ok := t.slices[id]; ok {
		return i
	}
	i := t.stackOf(frames)
	t.slices[id] = i
	return i
}

// stackOf returns the index of a stack of frames, looking up each of them.
func (t *strtab) stackOf(frames []string) int32 {
	t.frames = t.frames[:0]
	key := make([]byte, 0, 4*len(frames))
	for _, f := range frames {
		i := t.frame(f)
		t.frames = append(t.frames, i)
		key = append(key, byte(i), byte(i>>8), byte(i>>16), byte(i>>24))
	}
	if i, ok := t.stackIx[string(key)]; ok {
		return i
	}
	i := int32(len(t.stacks))
	t.stacks = append(t.stacks, append([]int32{}, t.frames...))
	t.stackIx[string(key)] = i
	return i
}

// jsonWriter writes the JSON of the page data. Its first error sticks, and err returns it.
type jsonWriter struct {
	w   *bufio.Writer
	buf []byte
	e   error
}

func (j *jsonWriter) raw(s string) {
	if j.e == nil {
		_, j.e = j.w.WriteString(s)
	}
}

// value writes v as encoding/json does, escaping <, > and &.
func (j *jsonWriter) value(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		j.e = fmt.Errorf("encoding the page data: %w", err)
		return
	}
	if j.e == nil {
		_, j.e = j.w.Write(b)
	}
}

func (j *jsonWriter) flushBuf() {
	if j.e == nil {
		_, j.e = j.w.Write(j.buf)
	}
	j.buf = j.buf[:0]
}

func (j *jsonWriter) int32s(v []int32) {
	writeArray(j, v, func(b []byte, x int32) []byte { return strconv.AppendInt(b, int64(x), 10) })
}

func (j *jsonWriter) uint64s(v []uint64) {
	writeArray(j, v, func(b []byte, x uint64) []byte { return strconv.AppendUint(b, x, 10) })
}

// float64s writes numbers with at most 3 decimals, enough for nanoseconds and rates; NaN as null.
func (j *jsonWriter) float64s(v []float64) {
	writeArray(j, v, func(b []byte, x float64) []byte {
		switch {
		case math.IsNaN(x):
			return append(b, "null"...)
		case math.IsInf(x, 0):
			return strconv.AppendFloat(b, math.Copysign(math.MaxFloat64, x), 'g', -1, 64)
		}
		return strconv.AppendFloat(b, math.Round(x*1000)/1000, 'f', -1, 64)
	})
}

// writeArray writes v as a JSON array, each element as appendOne appends it.
func writeArray[T any](j *jsonWriter, v []T, appendOne func([]byte, T) []byte) {
	j.buf = append(j.buf[:0], '[')
	for i, x := range v {
		if i > 0 {
			j.buf = append(j.buf, ',')
		}
		j.buf = appendOne(j.buf, x)
		if len(j.buf) > 1<<16 {
			j.flushBuf()
		}
	}
	j.buf = append(j.buf, ']')
	j.flushBuf()
}

// stacks writes the stack table.
func (j *jsonWriter) stacks(stacks [][]int32) {
	j.raw("[")
	for i, s := range stacks {
		if i > 0 {
			j.raw(",")
		}
		j.int32s(s)
	}
	j.raw("]")
}

// views writes views with their columns' values.
func (j *jsonWriter) views(views []view) {
	j.raw("[")
	for i, v := range views {
		if i > 0 {
			j.raw(",")
		}
		if v.Saturated == nil {
			v.Saturated = []int{}
		}
		head, err := json.Marshal(v)
		if err != nil {
			j.e = fmt.Errorf("encoding view %s: %w", v.ID, err)
			return
		}
		j.raw(string(head[:len(head)-1]))
		j.raw(`,"columns":[`)
		for k, c := range v.Columns {
			if k > 0 {
				j.raw(",")
			}
			j.column(c)
		}
		j.raw("]}")
	}
	j.raw("]")
}

func (j *jsonWriter) column(c column) {
	head, err := json.Marshal(c)
	if err != nil {
		j.e = fmt.Errorf("encoding column %s: %w", c.Key, err)
		return
	}
	j.raw(string(head[:len(head)-1]))
	if c.titles != nil {
		j.raw(`,"titles":`)
		j.int32s(c.titles)
	}
	if c.Ref == "" {
		j.raw(`,"values":`)
		switch {
		case c.text != nil:
			j.int32s(c.text)
		case c.ints != nil:
			j.uint64s(c.ints)
		case c.floats != nil:
			j.float64s(c.floats)
		default:
			j.raw("[]")
		}
	}
	j.raw("}")
}
