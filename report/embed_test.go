package report

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/capturetest"
)

// pageDataJSON is the page data of a report of c, inflated.
func pageDataJSON(t testing.TB, c *capture.Capture) []byte {
	t.Helper()
	element := dataElement(t, c)
	return []byte(inflate(t, element[strings.Index(element, ">")+1:len(element)-len("</script>")]))
}

// pageOf is a page whose data is the given gzip members, each compressing one part.
func pageOf(t testing.TB, parts ...[]byte) []byte {
	t.Helper()
	w, err := gzip.NewWriterLevel(nil, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	return pageWith(t, w, parts...)
}

// pageWith is pageOf compressing with w, which it resets: a gzip writer takes a megabyte, too much to
// allocate for every input of the fuzzer.
func pageWith(t testing.TB, w *gzip.Writer, parts ...[]byte) []byte {
	t.Helper()
	var gz bytes.Buffer
	for _, p := range parts {
		w.Reset(&gz)
		if _, err := w.Write(p); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return []byte(fmt.Sprintf(`<!DOCTYPE html><script type="text/plain" id="%s" data-encoding="%s">%s</script>`,
		dataElementID, dataEncoding, base64.StdEncoding.EncodeToString(gz.Bytes())))
}

// smallCapture is a capture of one record.
func smallCapture(t testing.TB) *capture.Capture {
	c, _ := capturetest.Build(t, capture.Meta{Probe: "rawtp", StackDepth: 16, MapSizes: map[string]uint32{"stacks": 64}},
		capturetest.Record{Record: capture.Record{Type: "mutex", Comm: "<w>", Caller: "f+0x1", Stack: []string{"f+0x1"}}, Waits: []uint64{5, 900}})
	return c
}

// replaceIn replaces the first old in js, which must hold it.
func replaceIn(t testing.TB, js []byte, old, new string) []byte {
	t.Helper()
	if !bytes.Contains(js, []byte(old)) {
		t.Fatalf("no %s in the page data %s", old, js)
	}
	return bytes.Replace(js, []byte(old), []byte(new), 1)
}

// TestReadInputBoundsPageData checks that page data over the limits of a capture is refused while
// it is inflated, with a line naming the limit, having taken little memory.
func TestReadInputBoundsPageData(t *testing.T) {
	js := pageDataJSON(t, smallCapture(t))
	zeros := func(n int) string { return strings.TrimSuffix(strings.Repeat("0,", n), ",") }
	emptyStrings := strings.TrimSuffix(strings.Repeat(`"",`, capture.MaxRecords+1), ",")
	var names strings.Builder
	for i := range capture.MaxRecords + 1 { // names of the page data's "shown"
		fmt.Fprintf(&names, `"%x":0,`, i)
	}
	manyNames := strings.TrimSuffix(names.String(), ",")
	const limit = 4 << 20 // what the test reads at most
	spaces := bytes.Repeat([]byte(" "), 1<<20)
	for _, tc := range []struct {
		name  string
		page  []byte
		want  string
		limit int64 // 0 for MaxInputSize
	}{
		{"gzip members of blank space", pageOf(t, slicesRepeat(spaces, 2*limit/len(spaces))...),
			"the report's page data inflates to more than 4 MiB, the most klockstat reads", limit},
		{"data after the page data", pageOf(t, js, bytes.Repeat([]byte(" "), limit)),
			"the report's page data inflates to more than 4 MiB, the most klockstat reads", limit},
		{"a long string", pageOf(t, replaceIn(t, js, `],"shown":`, `,"`+strings.Repeat("a", capture.MaxStringLen+1)+`"],"shown":`)),
			"the report's page data holds a string longer than 262144 bytes, a capture's longest", 0},
		{"a long escaped string", pageOf(t, replaceIn(t, js, `],"shown":`, `,"`+strings.Repeat(`\u0061`, capture.MaxStringLen+1)+`"],"shown":`)),
			"the report's page data holds a string longer than 262144 bytes", 0},
		{"too many records", pageOf(t, replaceIn(t, js, `"type":[`, `"type":[`+zeros(capture.MaxRecords)+`,`)),
			"the report's page data holds more than 2097152 elements in one list or object", 0},
		{"too many strings", pageOf(t, replaceIn(t, js, `],"shown":`, `,`+emptyStrings+`],"shown":`)),
			"the report's page data holds more than 2097152 elements in one list or object", 0},
		{"too many names in the page data", pageOf(t, replaceIn(t, js, `"shown":{`, `"shown":{`+manyNames+`,`)),
			"the report's page data holds more than 2097152 elements in one list or object", 0},
		{"too many names in the capture", pageOf(t, replaceIn(t, js, `"map_sizes":{`, `"map_sizes":{`+manyNames[:strings.Index(manyNames, `"400"`)])),
			"the report's page data holds more than 1024 elements in one list or object", 0},
		{"a deep stack", pageOf(t, replaceIn(t, js, `"stacks":[[`, `"stacks":[[`+zeros(capture.MaxStackDepth)+`,`)),
			"a stack of 128 frames, more than the 127 klockstat takes", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			limit := tc.limit
			if limit == 0 {
				limit = MaxInputSize
			}
			c, err := readInput(bytes.NewReader(tc.page), limit)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatalf("read a capture of %d records, want an error", len(c.Records))
			}
			if !strings.Contains(err.Error(), tc.want) || strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("error %q, want one line containing %q", err, tc.want)
			}
			// What the data holds is read in pieces: a string or a list over the limits is refused
			// before it is all in memory. Allocations in all bound the peak from above; the list of
			// 2 Mi strings takes most, 165 MiB as its slice grows.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 200<<20 {
				t.Errorf("allocated %d MiB before refusing the page", alloc>>20)
			}
		})
	}
}

// slicesRepeat is n copies of b.
func slicesRepeat(b []byte, n int) [][]byte {
	parts := make([][]byte, n)
	for i := range parts {
		parts[i] = b
	}
	return parts
}

// TestReadInputPageDataAtTheLimits checks that page data within the limits still reads.
func TestReadInputPageDataAtTheLimits(t *testing.T) {
	c := smallCapture(t)
	c.Records[0].Comm = strings.Repeat("\x01", capture.MaxStringLen) // escaped as \u0001: six bytes each
	c.Records[0].Stack = slices.Repeat([]string{"f+0x1"}, capture.MaxStackDepth)
	c.Meta.StackDepth = capture.MaxStackDepth
	got, err := ReadInput(strings.NewReader(`<!DOCTYPE html>` + dataElement(t, c)))
	if err != nil {
		t.Fatal(err)
	}
	if normalized(t, got) != normalized(t, c) {
		t.Error("the capture at the limits reads back differently")
	}
}

// FuzzDecodePageData fuzzes the reader of a page's data with inflated data (the fuzzer cannot reach
// far into it through gzip): every input is refused with one line or gives a valid capture.
func FuzzDecodePageData(f *testing.F) {
	f.Add(pageDataJSON(f, smallCapture(f)))
	f.Add([]byte(`{"strings":["mutex",""],"stacks":[[]],"capture":{"version":1},"records":{"type":[0]}}`))
	f.Add([]byte(`{"strings":["\u00","a\\"],"stacks":[[0,1]],"records":{"type":[0],"lock":[9]}}`))
	w, err := gzip.NewWriterLevel(nil, gzip.NoCompression)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		c, err := readInput(bytes.NewReader(pageWith(t, w, js)), 1<<20)
		readOrRefused(t, c, err)
	})
}

// TestPageDataReaderEmptyBuffer checks that a read into an empty buffer returns, though the
// inflating reader under it returns nothing and no error for one.
func TestPageDataReaderEmptyBuffer(t *testing.T) {
	zr, err := gzip.NewReader(bytes.NewReader(pageDataGzip(t)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := (&pageDataReader{r: zr, limit: MaxInputSize}).Read(nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Read(nil) = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read(nil) did not return")
	}
}

// pageDataGzip is gzip data of one space.
func pageDataGzip(t *testing.T) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(" ")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
