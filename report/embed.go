package report

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/inputfile"
)

// The page data is everything the page's tables need and, in a report, the whole capture: one JSON
// object, gzip-compressed and base64-encoded into a script element that the browser does not run.
// page.js (loadData, templates/js/util.js) decodes it with DecompressionStream; ReadInput reads the
// capture back from it.
//
//	{"strings": [...], "shown": {"3": "visible form of string 3", ...}, "stacks": [[frame, ...], ...],
//	 "capture": {capture JSON with "records": []}, "records": {"type": [...], ...},
//	 "flame": [{"type": string, "name": [...], "depth": [...], "start": [...], "value": [...], ...}],
//	 "views": [{"id": ..., "columns": [{"key": ..., "kind": ..., "values" or "ref": ...}]}]}

// dataElementID is the id of the script element holding the page data.
const dataElementID = "klockstat-data"

// dataEncoding is the data-encoding attribute of that element, which says how to read it.
const dataEncoding = "gzip+base64"

// recordFields are the columns of the embedded records, each named as the capture JSON names the
// field. Text and stack fields hold indexes into the strings and the stacks.
type recordFields struct {
	Type        []int32  `json:"type"`
	Lock        []int32  `json:"lock"`
	Name        []int32  `json:"name"`
	Comm        []int32  `json:"comm"`
	Caller      []int32  `json:"caller"`
	Stack       []int32  `json:"stack"`
	PID         []uint64 `json:"pid"`
	TID         []uint64 `json:"tid"`
	Count       []uint64 `json:"count"`
	TotalNS     []uint64 `json:"total_ns"`
	SpinNS      []uint64 `json:"spin_ns"` // absent from reports written before the spin/sleep split
	MinNS       []uint64 `json:"min_ns"`
	MaxNS       []uint64 `json:"max_ns"`
	InProgress  []uint64 `json:"in_progress"`
	HoldCount   []uint64 `json:"hold_count"`
	HoldTotalNS []uint64 `json:"hold_total_ns"`
	HoldMinNS   []uint64 `json:"hold_min_ns"`
	HoldMaxNS   []uint64 `json:"hold_max_ns"`
	CgroupID    []uint64 `json:"cgroup_id"` // absent from reports written before cgroups
	Cgroup      []int32  `json:"cgroup"`    // likewise
	Static      []uint64 `json:"static"`    // 1 for a static kernel object; absent when none is, and from reports written before
}

// newRecordFields stores records, in the given order, in columns; tab interns (and hashes) their
// strings, stacks and locks.
func newRecordFields(records []capture.Record, order []int32, tab *strtab) *recordFields {
	n := len(order)
	f := &recordFields{
		Type: make([]int32, n), Lock: make([]int32, n), Name: make([]int32, n), Comm: make([]int32, n),
		Caller: make([]int32, n), Stack: make([]int32, n), PID: make([]uint64, n), TID: make([]uint64, n),
		Count: make([]uint64, n), TotalNS: make([]uint64, n), SpinNS: make([]uint64, n), MinNS: make([]uint64, n), MaxNS: make([]uint64, n),
		InProgress: make([]uint64, n), HoldCount: make([]uint64, n), HoldTotalNS: make([]uint64, n),
		HoldMinNS: make([]uint64, n), HoldMaxNS: make([]uint64, n), CgroupID: make([]uint64, n), Cgroup: make([]int32, n),
		Static: make([]uint64, n),
	}
	for i, ri := range order {
		r := &records[ri]
		f.Type[i], f.Lock[i], f.Name[i] = tab.str(r.Type), tab.lockName(r.Lock), tab.str(r.Name)
		f.Comm[i], f.Caller[i], f.Stack[i] = tab.str(r.Comm), tab.frame(r.Caller), tab.stack(r.Stack)
		f.PID[i], f.TID[i] = uint64(r.PID), uint64(r.TID)
		f.Count[i], f.TotalNS[i], f.SpinNS[i], f.MinNS[i], f.MaxNS[i], f.InProgress[i] = r.Count, r.TotalNS, r.SpinNS, r.MinNS, r.MaxNS, r.InProgress
		f.HoldCount[i], f.HoldTotalNS[i], f.HoldMinNS[i], f.HoldMaxNS[i] = r.HoldCount, r.HoldTotalNS, r.HoldMinNS, r.HoldMaxNS
		f.CgroupID[i], f.Cgroup[i] = r.CgroupID, tab.str(r.Cgroup)
		if r.Static {
			f.Static[i] = 1
		}
	}
	if !slices.Contains(f.Static, 1) {
		f.Static = nil // not written: pages of kernels whose static locks have names stay as they were
	}
	return f
}

// write writes the columns as one JSON object.
func (f *recordFields) write(j *jsonWriter) {
	j.raw("{")
	for i, c := range []struct {
		name string
		ix   []int32
		n    []uint64
	}{
		{"type", f.Type, nil}, {"lock", f.Lock, nil}, {"name", f.Name, nil}, {"comm", f.Comm, nil},
		{"caller", f.Caller, nil}, {"stack", f.Stack, nil}, {"pid", nil, f.PID}, {"tid", nil, f.TID},
		{"count", nil, f.Count}, {"total_ns", nil, f.TotalNS}, {"spin_ns", nil, f.SpinNS}, {"min_ns", nil, f.MinNS}, {"max_ns", nil, f.MaxNS},
		{"in_progress", nil, f.InProgress}, {"hold_count", nil, f.HoldCount}, {"hold_total_ns", nil, f.HoldTotalNS},
		{"hold_min_ns", nil, f.HoldMinNS}, {"hold_max_ns", nil, f.HoldMaxNS},
		{"cgroup_id", nil, f.CgroupID}, {"cgroup", f.Cgroup, nil}, {"static", nil, f.Static},
	} {
		if c.ix == nil && c.n == nil {
			continue // an optional column left out
		}
		if i > 0 {
			j.raw(",")
		}
		j.raw(`"` + c.name + `":`)
		if c.ix != nil {
			j.int32s(c.ix)
		} else {
			j.uint64s(c.n)
		}
	}
	j.raw("}")
}

// pageData is what one page embeds for its script.
type pageData struct {
	tab     *strtab
	capture *capture.Capture // the report's capture without its records, or nil
	records *recordFields    // the report's records
	flame   []flameGraph     // the report's flame graphs
	sources *pageSources     // the report's source lines of frames, or nil
	views   []view
}

// encode returns the script element holding d, compressed.
func (d *pageData) encode() (template.HTML, error) {
	var out bytes.Buffer
	fmt.Fprintf(&out, `<script type="text/plain" id="%s" data-encoding="%s">`, dataElementID, dataEncoding)
	// The JSON is compressed as it is written, on another goroutine: writing it and compressing it
	// take about as long, and nothing else is left to run beside them.
	pr, pw := io.Pipe()
	compressed := make(chan error, 1)
	go func() {
		err := compress(&out, pr)
		pr.CloseWithError(err) // a failed compression stops the writer
		compressed <- err
	}()
	j := &jsonWriter{w: bufio.NewWriterSize(pw, 1<<16)}
	j.raw(`{"strings":`)
	j.value(d.tab.strings)
	j.raw(`,"shown":`)
	j.value(shownStrings(d.tab.strings))
	j.raw(`,"stacks":`)
	j.stacks(d.tab.stacks)
	if d.sources != nil {
		j.raw(`,"sources":`)
		j.value(d.sources)
	}
	if d.capture != nil {
		j.raw(`,"capture":`)
		j.value(d.capture)
		j.raw(`,"records":`)
		d.records.write(j)
		j.raw(`,"flame":`)
		writeFlameGraphs(j, d.flame)
	}
	j.raw(`,"views":`)
	j.views(d.views)
	j.raw("}")
	if j.e == nil {
		j.e = j.w.Flush()
	}
	pw.CloseWithError(j.e)
	if err := <-compressed; j.e == nil {
		j.e = err
	}
	if j.e != nil {
		return "", fmt.Errorf("encoding the page data: %w", j.e)
	}
	out.WriteString("</script>")
	// Base64 has no character that HTML treats specially.
	return template.HTML(out.String()), nil
}

// compress writes what it reads from r to w, gzip-compressed and base64-encoded.
func compress(w io.Writer, r io.Reader) error {
	b64 := base64.NewEncoder(base64.StdEncoding, w)
	// The fastest level: the page data is mostly small numbers, which every level packs about as well.
	gz, err := gzip.NewWriterLevel(b64, gzip.BestSpeed)
	if err != nil {
		return fmt.Errorf("compressing the page data: %w", err)
	}
	if _, err := io.Copy(gz, r); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("compressing the page data: %w", err)
	}
	return b64.Close()
}

// shownStrings are the strings that page.js must show in another form than theirs (visible), by index.
func shownStrings(strings []string) map[int]string {
	shown := map[int]string{}
	for i, s := range strings {
		if v := visible(s); v != s {
			shown[i] = v
		}
	}
	return shown
}

// embeddedData is the part of the page data that holds the capture.
type embeddedData struct {
	Strings []string        `json:"strings"`
	Stacks  [][]int32       `json:"stacks"`
	Capture *jsontext.Value `json:"capture"`
	Records recordFields    `json:"records"`
}

// errNoCapture says that a page's data holds no capture: the page is a diff.
var errNoCapture = errors.New("a page whose data holds no capture (a klockstat diff)")

// decodePageData reads the capture back from the content of a report's page data element, inflating
// at most limit bytes (ReadInput's limit: a report holds its capture in less than the capture's JSON).
// What it inflates is held to the limits of a capture as it is inflated (pageDataReader): a page of a
// megabyte can inflate to gigabytes.
func decodePageData(content []byte, limit int64) (*capture.Capture, error) {
	raw, err := base64.StdEncoding.AppendDecode(nil, bytes.TrimSpace(content))
	if err != nil {
		return nil, fmt.Errorf("the report's page data is not base64: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the report's page data is not gzip: %w", err)
	}
	data := &pageDataReader{r: zr, limit: limit, what: "the report's page data", instead: readJSONInstead}
	var d embeddedData
	// Names twice in an object are refused by capture.Parse, in the capture; elsewhere, keeping the
	// names of the page data's objects would cost more memory than their values ("shown").
	if err := jsonv2.UnmarshalRead(data, &d, jsontext.AllowDuplicateNames(true)); err != nil {
		switch {
		case data.err != nil: // the decoder wraps it in a message of its own
			return nil, data.err
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, truncated("its compressed data ends early")
		}
		return nil, fmt.Errorf("decoding the report's page data: %w", err)
	}
	if d.Capture == nil {
		return nil, errNoCapture
	}
	c, err := capture.Parse(*d.Capture)
	if err != nil {
		return nil, fmt.Errorf("the report's embedded capture: %w", err)
	}
	if c.Records, err = d.records(); err != nil {
		return nil, fmt.Errorf("the report's embedded records: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("the report's embedded capture is invalid: %w", err)
	}
	return c, nil
}

// pageDataReader passes on the inflated page data, refusing it as soon as it breaks a limit of a
// capture, before the decoder holds what is over it: more than limit bytes in all, a string longer
// than capture.MaxStringLen, a list of more than capture.MaxRecords elements (none of the page data
// holds more than a capture has records: its columns hold one value a record, its tables one entry
// a record at most, or fewer), and an object of more than maxObjectMembers, but for the page data and
// its members ("shown" has an entry a string). It follows the JSON text only as far as strings and
// nesting.
type pageDataReader struct {
	r       io.Reader
	limit   int64
	what    string // what the data is, for messages: "the report's page data"
	instead string // what to read instead of data over a limit
	read    int64
	err     error // the limit broken, kept: later reads fail with it too

	inString  bool
	escape    int         // bytes left of an escape sequence in a string
	stringLen int         // bytes of the current string so far, an escape sequence counting for one
	open      []container // the lists and objects open, outermost first
}

func (p *pageDataReader) Read(b []byte) (int, error) {
	if p.err != nil || len(b) == 0 { // an empty b would read nothing, forever, in the loop below
		return 0, p.err
	}
	for {
		n, err := p.r.Read(b)
		if p.read += int64(n); p.read > p.limit {
			p.err = fmt.Errorf("%s inflates to more than %s, the most klockstat reads; %s", p.what, inputfile.Bytes(p.limit), p.instead)
			return 0, p.err
		}
		if n, p.err = p.scan(b[:n]); p.err != nil {
			return 0, p.err
		}
		if n > 0 || err != nil { // not blank space alone
			return n, err
		}
	}
}

// container is a list or an object of the page data.
type container struct {
	commas int // between its elements so far
	limit  int // of its elements
}

// maxObjectMembers is the most members of an object of a capture: a struct has a few dozen fields
// at most, the one map (meta's map_sizes) an entry a BPF map. The decoder of a capture keeps the
// names of an object's members to refuse one named twice, a hundred bytes a name.
const maxObjectMembers = 1024

// readJSONInstead is the advice for page data over a limit, which klockstat does not write.
const readJSONInstead = "read the capture JSON the report was made from (klockstat --json)"

// scan follows the JSON text in b, and drops the blank space between its tokens, which klockstat does
// not write: the decoder holds a run of blank space whole (gigabytes of it, in a page of megabytes).
// It returns how much of b is left.
func (p *pageDataReader) scan(b []byte) (int, error) {
	kept := 0
	for _, c := range b {
		if !p.inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			continue
		}
		b[kept] = c
		kept++
		if p.inString {
			switch {
			case p.escape > 0:
				p.escape--
				if c == 'u' && p.escape == 0 { // \uXXXX: four hex digits follow
					p.escape = 4
				}
				continue
			case c == '\\':
				p.escape = 1
			case c == '"':
				p.inString = false
				continue
			}
			if p.stringLen++; p.stringLen > capture.MaxStringLen {
				return 0, fmt.Errorf("%s holds a string longer than %d bytes, a capture's longest; %s", p.what, capture.MaxStringLen, p.instead)
			}
			continue
		}
		switch c {
		case '"':
			p.inString, p.stringLen = true, 0
		case '[', '{':
			limit := capture.MaxRecords
			if c == '{' && len(p.open) > 1 {
				limit = maxObjectMembers
			}
			p.open = append(p.open, container{limit: limit})
		case ']', '}':
			if len(p.open) > 0 {
				p.open = p.open[:len(p.open)-1]
			}
		case ',':
			if top := len(p.open) - 1; top >= 0 {
				if p.open[top].commas++; p.open[top].commas >= p.open[top].limit {
					return 0, fmt.Errorf("%s holds more than %d elements in one list or object; %s", p.what, p.open[top].limit, p.instead)
				}
			}
		}
	}
	return kept, nil
}

// emptyString is the index of "" among the strings, added when missing.
func (d *embeddedData) emptyString() int32 {
	for i, s := range d.Strings {
		if s == "" {
			return int32(i)
		}
	}
	d.Strings = append(d.Strings, "")
	return int32(len(d.Strings) - 1)
}

// records turns the columns back into records, checking every index.
func (d *embeddedData) records() ([]capture.Record, error) {
	f := &d.Records
	n := len(f.Type)
	if f.SpinNS == nil {
		f.SpinNS = make([]uint64, n)
	}
	if f.CgroupID == nil && f.Cgroup == nil {
		f.CgroupID, f.Cgroup = make([]uint64, n), make([]int32, n)
		for i := range f.Cgroup {
			f.Cgroup[i] = d.emptyString()
		}
	}
	if f.Static == nil {
		f.Static = make([]uint64, n)
	}
	for _, l := range []int{len(f.Static), len(f.CgroupID), len(f.Cgroup), len(f.Lock), len(f.Name), len(f.Comm), len(f.Caller), len(f.Stack), len(f.PID), len(f.TID),
		len(f.Count), len(f.TotalNS), len(f.SpinNS), len(f.MinNS), len(f.MaxNS), len(f.InProgress),
		len(f.HoldCount), len(f.HoldTotalNS), len(f.HoldMinNS), len(f.HoldMaxNS)} {
		if l != n {
			return nil, fmt.Errorf("columns of %d and %d records", n, l)
		}
	}
	var bad error
	str := func(i int32) string {
		if i < 0 || int(i) >= len(d.Strings) {
			bad = fmt.Errorf("string %d of %d", i, len(d.Strings))
			return ""
		}
		return d.Strings[i]
	}
	stacks := make([][]string, len(d.Stacks))
	for i, s := range d.Stacks {
		stacks[i] = make([]string, len(s))
		for k, f := range s {
			stacks[i][k] = str(f)
		}
	}
	records := make([]capture.Record, n)
	for i := range records {
		var lock capture.Addr
		if err := lock.UnmarshalText([]byte(str(f.Lock[i]))); err != nil && bad == nil {
			bad = fmt.Errorf("record %d: %w", i, err)
		}
		if s := f.Stack[i]; s < 0 || int(s) >= len(stacks) {
			return nil, fmt.Errorf("record %d: stack %d of %d", i, s, len(stacks))
		}
		if f.Static[i] > 1 {
			return nil, fmt.Errorf("record %d: static %d, not 0 or 1", i, f.Static[i])
		}
		if f.PID[i] > 1<<32-1 || f.TID[i] > 1<<32-1 {
			return nil, fmt.Errorf("record %d: pid %d or tid %d out of range", i, f.PID[i], f.TID[i])
		}
		records[i] = capture.Record{
			Type: str(f.Type[i]), Lock: lock, Name: str(f.Name[i]), Comm: str(f.Comm[i]),
			PID: uint32(f.PID[i]), TID: uint32(f.TID[i]),
			Count: f.Count[i], TotalNS: f.TotalNS[i], SpinNS: f.SpinNS[i], MinNS: f.MinNS[i], MaxNS: f.MaxNS[i], InProgress: f.InProgress[i],
			Caller: str(f.Caller[i]), Stack: stacks[f.Stack[i]], // shared by the records of the same stack: nothing changes a stack in place
			HoldCount: f.HoldCount[i], HoldTotalNS: f.HoldTotalNS[i], HoldMinNS: f.HoldMinNS[i], HoldMaxNS: f.HoldMaxNS[i],
			CgroupID: f.CgroupID[i], Cgroup: str(f.Cgroup[i]), Static: f.Static[i] == 1,
		}
		if bad != nil {
			return nil, bad
		}
	}
	return records, nil
}
