package export

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/klockstat/klockstat/capture"
)

// TestPprofReadsBack reads the profile back with pprof's own parser and finds every record with waits
// in it: its numbers, labels and frames, and the capture's totals in the sums.
func TestPprofReadsBack(t *testing.T) {
	for name, c := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			p := readPprof(t, c)
			var types []string
			for _, st := range p.SampleType {
				types = append(types, st.Type+"/"+st.Unit)
			}
			if got := strings.Join(types, " "); got != "contentions/count delay/nanoseconds" {
				t.Errorf("sample types %s, want Go's mutex profile's", got)
			}
			wantCount, wantTotal := waitTotals(c)
			var count, total int64
			samples := map[string]int{} // a sample's description -> how many
			for _, s := range p.Sample {
				count += s.Value[0]
				total += s.Value[1]
				samples[describeSample(s)]++
			}
			if uint64(count) != wantCount || uint64(total) != wantTotal {
				t.Errorf("samples add up to %d contentions, %d ns; the capture has %d waits, %d ns", count, total, wantCount, wantTotal)
			}
			for i, r := range c.Records {
				if r.Count == 0 {
					continue
				}
				want := describeRecord(c, r)
				if samples[want] == 0 {
					t.Fatalf("record %d has no sample %s; samples:\n%v", i, want, samples)
				}
				samples[want]--
			}
		})
	}
}

// readPprof writes c's profile with addresses as they are and reads it back with pprof's own parser.
func readPprof(t *testing.T, c *capture.Capture) *profile.Profile {
	t.Helper()
	var b bytes.Buffer
	if err := WritePprof(&b, asCaptured(c)); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatalf("pprof cannot parse the profile: %v", err)
	}
	return p
}

// describeSample tells what a sample says of its record, in describeRecord's words.
func describeSample(s *profile.Sample) string {
	var frames []string
	for _, loc := range s.Location {
		fn := loc.Line[0].Function
		frames = append(frames, fmt.Sprintf("%s+%d@%#x in %s/%s", fn.Name, loc.Line[0].Line, loc.Address, loc.Mapping.File, fn.Filename))
	}
	return fmt.Sprintf("type=%q name=%q lock=%q comm=%q cgroup=%q pid=%d tid=%d cgroup_id=%d value=%v stack=%+v",
		s.Label["lock_type"], s.Label["lock_name"], s.Label["lock"], s.Label["comm"], s.Label["cgroup"], s.NumLabel["pid"], s.NumLabel["tid"], s.NumLabel["cgroup_id"], s.Value, frames)
}

// describeRecord is what the sample of r must say. Labels that profile.proto cannot tell from no
// label, empty strings and zeros, are absent.
func describeRecord(c *capture.Capture, r capture.Record) string {
	text := func(s string) []string {
		if s == "" {
			return nil
		}
		return []string{printableText(s)}
	}
	num := func(n uint64) []int64 {
		if n == 0 {
			return nil
		}
		return []int64{int64(n)}
	}
	var frames []string
	for _, s := range stackOf(r.Stack) {
		f := capture.ParseFrame(printableText(s))
		name, file := f.String(), "[kernel.kallsyms]"
		if f.Kind == capture.FrameSymbol {
			name = f.Function // the offset is the line, the module the mapping
			if f.Module != "" {
				file = "[" + f.Module + "]"
			}
		}
		var address uint64
		if f.Kind == capture.FrameAddress {
			address = uint64(f.Address)
		}
		frames = append(frames, fmt.Sprintf("%s+%d@%#x in %s/%s", name, f.Offset, address, file, file))
	}
	return fmt.Sprintf("type=%q name=%q lock=%q comm=%q cgroup=%q pid=%d tid=%d cgroup_id=%d value=%v stack=%+v",
		text(r.Type), text(r.Name), text((capture.AddressText{Hashed: c.Meta.AddressesHashed}).Lock(r.Lock)), text(r.Comm), text(r.Cgroup), num(uint64(r.PID)), num(uint64(r.TID)), num(r.CgroupID),
		[]int64{int64(r.Count), int64(r.TotalNS)}, frames)
}

// TestPprofHostileNames: the text labels, which go tool pprof -tags and -traces print to the
// terminal, carry no control character of a thread name.
func TestPprofHostileNames(t *testing.T) {
	c := hostileCapture(t)
	p := readPprof(t, c)
	byTID := map[int64]*profile.Sample{}
	for _, s := range p.Sample {
		byTID[s.NumLabel["tid"][0]] = s
	}
	for _, r := range c.Records {
		s := byTID[int64(r.TID)]
		if r.Count == 0 || r.Comm == "" {
			continue
		}
		if s == nil {
			t.Errorf("no sample of thread %d (%q)", r.TID, r.Comm)
			continue
		}
		for key, value := range map[string]string{"comm": r.Comm, "lock_name": r.Name, "cgroup": r.Cgroup} {
			checkPrintable(t, key+" label", value, s.Label[key][0])
		}
	}
}

// TestPprofTop runs go tool pprof on the profile of a real capture: its total delay is the
// capture's total wait, to the nanosecond, and its top function is where the capture waited most.
func TestPprofTop(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command runs pprof: %v", err)
	}
	c := realCapture(t)
	path := filepath.Join(t.TempDir(), "klockstat.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePprof(f, asCaptured(c)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(goTool, "tool", "pprof", "-top", "-sample_index=delay", "-unit=ns", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`of (\d+)ns total`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("go tool pprof -top printed no total:\n%s", out)
	}
	_, want := waitTotals(c)
	if got, _ := strconv.ParseUint(string(m[1]), 10, 64); got != want {
		t.Errorf("go tool pprof -top: total %d ns, the capture's total wait is %d ns\n%s", got, want, out)
	}
	// The first row of -top is the function with the most flat delay: the innermost frame that
	// the capture's records wait in most.
	flat := map[string]uint64{}
	for _, r := range c.Records {
		flat[capture.ParseFrame(stackOf(r.Stack)[0]).Function] += r.TotalNS
	}
	heaviest := slices.MaxFunc(slices.Collect(maps.Keys(flat)), func(a, b string) int { return cmp.Compare(flat[a], flat[b]) })
	first := regexp.MustCompile(`(?m)^ *(\d+)ns .* (\S+)$`).FindSubmatch(out)
	if first == nil || string(first[2]) != heaviest || string(first[1]) != strconv.FormatUint(flat[heaviest], 10) {
		t.Errorf("go tool pprof -top: first row %q, want %s with %d ns flat\n%s", first, heaviest, flat[heaviest], out)
	}
}

// TestPprofModuleFrames: a module function is one function without offset or module in its name, in
// the module's mapping, whatever offsets it was seen at, and apart from a vmlinux function of the
// same name.
func TestPprofModuleFrames(t *testing.T) {
	var b bytes.Buffer
	if err := WritePprof(&b, asCaptured(moduleCapture(t))); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	var mappings []string
	for _, m := range p.Mapping {
		mappings = append(mappings, m.File)
	}
	if want := []string{"[kernel.kallsyms]", "[xfs]"}; !slices.Equal(mappings, want) {
		t.Errorf("mappings %q, want %q", mappings, want)
	}
	functions := map[string]int{} // "name in file" -> how many functions
	for _, fn := range p.Function {
		functions[fn.Name+" in "+fn.Filename]++
	}
	want := map[string]int{
		"mutex_lock in [kernel.kallsyms]": 1, "vfs_write in [kernel.kallsyms]": 1, "xfs_ilock in [kernel.kallsyms]": 1,
		"0xffffffffc0a81234 in [kernel.kallsyms]": 1, "xfs_ilock in [xfs]": 1, "xfs_file_write_iter in [xfs]": 1,
	}
	if !maps.Equal(functions, want) {
		t.Errorf("functions %v, want %v", functions, want)
	}
	// Both offsets of xfs_ilock [xfs] are its lines, in the module's mapping; its delay is both waits'.
	var lines []int64
	var delay int64
	for _, s := range p.Sample {
		for _, loc := range s.Location {
			if fn := loc.Line[0].Function; fn.Name == "xfs_ilock" && fn.Filename == "[xfs]" {
				if loc.Mapping.File != "[xfs]" {
					t.Errorf("xfs_ilock [xfs] at line %d is in mapping %s", loc.Line[0].Line, loc.Mapping.File)
				}
				lines = append(lines, loc.Line[0].Line)
				delay += s.Value[1]
			}
		}
	}
	slices.Sort(lines)
	if !slices.Equal(lines, []int64{0x4c, 0x80}) || delay != 300+200 {
		t.Errorf("xfs_ilock [xfs]: lines %v, delay %d ns; want lines 76 and 128, 500 ns", lines, delay)
	}
}
