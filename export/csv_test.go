package export

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/report"
)

// readCSV parses the output as a spreadsheet would, with the header as the first row.
func readCSV(t *testing.T, out []byte) (header []string, rows []map[string]string) {
	t.Helper()
	all, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not parse: %v", err)
	}
	header = all[0]
	for _, row := range all[1:] {
		m := map[string]string{}
		for i, v := range row {
			m[header[i]] = v
		}
		rows = append(rows, m)
	}
	return header, rows
}

// TestCSVAddsUp: perf's columns come first, there is one row per record with waits, and the rows'
// counts and waits add up to the capture's.
func TestCSVAddsUp(t *testing.T) {
	for name, c := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteCSV(&b, asCaptured(c)); err != nil {
				t.Fatal(err)
			}
			if !bytes.HasSuffix(b.Bytes(), []byte("\r\n")) || bytes.Count(b.Bytes(), []byte("\n")) != bytes.Count(b.Bytes(), []byte("\r\n")) {
				t.Error("lines do not all end in CRLF (RFC 4180)")
			}
			header, rows := readCSV(t, b.Bytes())
			if perf := []string{"contended", "total_wait_ns", "max_wait_ns", "avg_wait_ns", "type", "caller"}; !slices.Equal(header[:len(perf)], perf) {
				t.Errorf("header starts %q, want perf lock contention's columns %q", header[:len(perf)], perf)
			}
			var withWaits []capture.Record
			for _, r := range c.Records {
				if r.Count > 0 {
					withWaits = append(withWaits, r)
				}
			}
			if len(rows) != len(withWaits) {
				t.Fatalf("%d rows for %d records with waits", len(rows), len(withWaits))
			}
			var count, total uint64
			for i, row := range rows {
				n := func(col string) uint64 {
					v, err := strconv.ParseUint(row[col], 10, 64)
					if err != nil {
						t.Fatalf("row %d, %s: %v", i, col, err)
					}
					return v
				}
				count += n("contended")
				total += n("total_wait_ns")
				r := withWaits[i]
				if n("max_wait_ns") != r.MaxNS || n("min_wait_ns") != r.MinNS || n("avg_wait_ns") != uint64(r.MeanNS()) ||
					n("pid") != uint64(r.PID) || n("tid") != uint64(r.TID) || row["lock"] != (capture.AddressText{Hashed: c.Meta.AddressesHashed}).Lock(r.Lock) {
					t.Errorf("row %d = %v, does not hold record %d %+v", i, row, i, r)
				}
			}
			if wantCount, wantTotal := waitTotals(c); count != wantCount || total != wantTotal {
				t.Errorf("rows add up to %d waits, %d ns; the capture has %d, %d ns", count, total, wantCount, wantTotal)
			}
		})
	}
}

// TestCSVHostileNames: a thread name reads back as it was, but a spreadsheet never takes it for a
// formula.
func TestCSVHostileNames(t *testing.T) {
	c := hostileCapture(t)
	var b bytes.Buffer
	if err := WriteCSV(&b, asCaptured(c)); err != nil {
		t.Fatal(err)
	}
	_, rows := readCSV(t, b.Bytes())
	for i, row := range rows {
		for _, col := range []string{"type", "caller", "lock_name", "comm", "stack", "cgroup"} {
			if v := row[col]; v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
				t.Errorf("row %d, %s %q: a spreadsheet runs it as a formula", i, col, v)
			}
		}
		// A thread name printed from the CSV (cat, column) must not drive the terminal.
		checkPrintable(t, fmt.Sprintf("row %d: comm (behind a ' when it starts a formula)", i), hostileComms[i], strings.TrimPrefix(row["comm"], "'"))
		checkPrintable(t, fmt.Sprintf("row %d: cgroup", i), "/ctr/"+hostileComms[i], row["cgroup"])
		if row["cgroup_id"] != strconv.Itoa(4000+i) {
			t.Errorf("row %d: cgroup_id %s, want %d", i, row["cgroup_id"], 4000+i)
		}
	}
}

// FuzzCSV: any thread name reads back as one row holding it, never as a formula.
func FuzzCSV(f *testing.F) {
	for _, comm := range hostileComms {
		f.Add(comm)
	}
	f.Fuzz(func(t *testing.T, comm string) {
		c := &capture.Capture{Records: []capture.Record{{Type: "mutex", Comm: comm, Count: 1, TotalNS: 5, MinNS: 5, MaxNS: 5}}}
		var b bytes.Buffer
		if err := WriteCSV(&b, asCaptured(c)); err != nil {
			t.Fatal(err)
		}
		_, rows := readCSV(t, b.Bytes())
		if len(rows) != 1 {
			t.Fatalf("comm %q: %d rows", comm, len(rows))
		}
		got := rows[0]["comm"]
		if got != "" && strings.ContainsRune("=+-@\t\r", rune(got[0])) {
			t.Fatalf("comm %q: cell %q starts a formula", comm, got)
		}
		if utf8.RuneCountInString(got) == utf8.RuneCountInString(strings.ToValidUTF8(comm, "\uFFFD"))+1 {
			got = strings.TrimPrefix(got, "'") // the guard against a formula
		}
		checkPrintable(t, "comm", comm, got)
	})
}

// TestCSVModuleFrames: the caller and stack columns keep a module frame as captured, offset and
// module, as perf's caller column does; an analysis that hashes replaces the unnamed module address
// only.
func TestCSVModuleFrames(t *testing.T) {
	c := moduleCapture(t)
	id := capture.NewAddressHasher([]byte("k")).Frame("0xffffffffc0a81234")
	var b bytes.Buffer
	if err := WriteCSV(&b, report.Analyze(c, false, []byte("k"))); err != nil {
		t.Fatal(err)
	}
	_, rows := readCSV(t, b.Bytes())
	want := []struct{ caller, stack string }{
		{"xfs_ilock+0x4c [xfs]", "mutex_lock+0x3c <- xfs_ilock+0x4c [xfs] <- xfs_file_write_iter+0x2e [xfs] <- vfs_write+0x26b"},
		{"xfs_ilock+0x80 [xfs]", "mutex_lock+0x3c <- xfs_ilock+0x80 [xfs] <- xfs_file_write_iter+0x2e [xfs] <- vfs_write+0x26b"},
		{"xfs_ilock+0x10", "mutex_lock+0x3c <- xfs_ilock+0x10 <- vfs_write+0x26b"},
		{id, "mutex_lock+0x3c <- " + id + " <- vfs_write+0x26b"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		if rows[i]["caller"] != w.caller || rows[i]["stack"] != w.stack {
			t.Errorf("row %d: caller %q, stack %q; want %q, %q", i, rows[i]["caller"], rows[i]["stack"], w.caller, w.stack)
		}
	}
}
