package export

import (
	"bytes"
	"encoding/csv"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/klockstat/klockstat/capture"
)

// ownedCapture is realCapture with two stacks of an owner with a hostile name, one sampled on its
// CPU and one it left its CPU at, and an owner without a stack, which the exports leave out.
func ownedCapture(t testing.TB) *capture.Capture {
	t.Helper()
	c := realCapture(t)
	comm := hostileComms[0] + hostileComms[6]
	c.Owners = []capture.Owner{
		{Type: "rwsem:W", Lock: 0xffff8881237e5a10, Name: "&ext4_inode_cache", Comm: comm, PID: 40, TID: 41, Count: 3, TotalNS: 6_000,
			Stack: []string{"copy_user_generic+0xa", "generic_perform_write+0x90", "vfs_write+0x26b"}, Where: capture.OwnerStackOnCPU, Samples: 12},
		{Type: "rwsem:W", Lock: 0xffff8881237e5a10, Name: "&ext4_inode_cache", Comm: comm, PID: 40, TID: 41, Count: 1, TotalNS: 2_000,
			Stack: []string{"__schedule+0x618", "__cond_resched+0x2c", "generic_perform_write+0x11d", "vfs_write+0x26b"}, Where: capture.OwnerStackOffCPU},
		{Type: "rwsem:W", Lock: 0xffff8881237e5a10, Comm: "other", PID: 40, TID: 42, Count: 1, TotalNS: 500, StackReason: capture.OwnerStackRan},
	}
	return c
}

// TestPprofBlockers: a blocker of a lock that records no owner is labelled with how it blocked the
// waits and which of its stacks the sample is; an owner the lock recorded has no blocker label.
func TestPprofBlockers(t *testing.T) {
	c := ownedCapture(t)
	c.Owners = append(c.Owners, capture.Owner{Type: "pcpu-sem:R", Lock: 0xffffffff83a0c1e0, Comm: "locks-reader", PID: 50, TID: 51,
		Blocker: capture.BlockerWriter, Where: capture.BlockerStackAcquire, Count: 2, TotalNS: 9_000,
		Stack: []string{"percpu_down_write+0x127", "locks_start+0x25", "seq_read_iter+0x108"}})
	var b bytes.Buffer
	if err := WritePprof(&b, asCaptured(c)); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	var blockers, owners int
	for _, s := range p.Sample {
		switch {
		case s.Label["role"] == nil:
		case s.Label["comm"][0] == "locks-reader":
			blockers++
			if !slices.Equal(s.Label["blocker"], []string{capture.BlockerWriter}) || !slices.Equal(s.Label["owner_where"], []string{capture.BlockerStackAcquire}) ||
				s.Value[3] != 9_000 {
				t.Errorf("the blocker's sample %v labelled %v, want 9000 ns, blocker writer, owner_where acquire", s.Value, s.Label)
			}
		default:
			owners++
			if s.Label["blocker"] != nil {
				t.Errorf("an owner's sample labelled blocker %q", s.Label["blocker"])
			}
		}
	}
	if blockers != 1 || owners != 2 {
		t.Errorf("%d blocker and %d owner samples, want 1 and 2", blockers, owners)
	}
}

// TestPprofOwners: the owners' stacks are samples of their own types, owner_samples and owner_wait,
// labelled role=owner with where they were seen; the waiters' samples keep their values, 0 in the
// owners' types.
func TestPprofOwners(t *testing.T) {
	c := ownedCapture(t)
	c.Owners[1].HolderState = capture.HolderRunnable
	var b bytes.Buffer
	if err := WritePprof(&b, asCaptured(c)); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type)
	}
	if !slices.Equal(types, []string{"contentions", "delay", "owner_samples", "owner_wait"}) {
		t.Fatalf("sample types %q", types)
	}
	var waited, charged, samples int64
	var onCPU []string
	for _, s := range p.Sample {
		if s.Label["role"] == nil {
			waited += s.Value[1]
			if s.Value[2] != 0 || s.Value[3] != 0 {
				t.Errorf("a waiter's sample with owner values %v", s.Value)
			}
			continue
		}
		if s.Value[0] != 0 || s.Value[1] != 0 || s.Label["comm"][0] != printableText(c.Owners[0].Comm) {
			t.Errorf("an owner's sample %v labelled %v", s.Value, s.Label)
		}
		charged += s.Value[3]
		samples += s.Value[2]
		if where, holder := s.Label["owner_where"][0], s.Label["holder_state"]; where == capture.OwnerStackOffCPU && !slices.Equal(holder, []string{capture.HolderRunnable}) ||
			where == capture.OwnerStackOnCPU && holder != nil {
			t.Errorf("the %s sample labelled holder_state %q: want runnable off CPU, none on it", where, holder)
		}
		if s.Label["owner_where"][0] == capture.OwnerStackOnCPU {
			for _, l := range s.Location {
				onCPU = append(onCPU, l.Line[0].Function.Name)
			}
		}
	}
	var want uint64
	for _, r := range c.Records {
		want += r.TotalNS
	}
	if uint64(waited) != want || charged != 8_000 || samples != 12 {
		t.Errorf("waiters %d ns (want %d), owners %d ns over %d samples (want 8000 over 12)", waited, want, charged, samples)
	}
	if !slices.Equal(onCPU, []string{"copy_user_generic", "generic_perform_write", "vfs_write"}) {
		t.Errorf("the on-CPU stack's functions %q", onCPU)
	}
}

// TestFoldedOwners: the owners' stacks follow the waiters' under a root frame of their own, the
// owner's name made one frame, then what it did over the share when it was split: its preempted
// time one frame apart.
func TestFoldedOwners(t *testing.T) {
	c := ownedCapture(t)
	c.Owners[1].HolderState = capture.HolderRunnable
	var b bytes.Buffer
	if err := WriteFolded(&b, asCaptured(c)); err != nil {
		t.Fatal(err)
	}
	comm := foldedName(c.Owners[0].Comm)
	want := []string{
		ownersFrame + ";" + comm + ";[holder preempted];vfs_write;generic_perform_write;__cond_resched;__schedule 2000",
		ownersFrame + ";" + comm + ";vfs_write;generic_perform_write;copy_user_generic 6000",
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if strings.HasPrefix(line, ownersFrame) {
			got = append(got, line)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("owners' lines\n got %q\nwant %q", got, want)
	}
}

// TestCSVOwners: rows of kind owner follow the waits, with where the stack was seen and its
// samples; a hostile owner name is not a formula.
func TestCSVOwners(t *testing.T) {
	c := ownedCapture(t)
	c.Owners[1].HolderState = capture.HolderRunnable
	var b bytes.Buffer
	if err := WriteCSV(&b, asCaptured(c)); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(name string) int { return slices.Index(csvHeader, name) }
	var waits, owners [][]string
	for _, row := range rows[1:] {
		if row[col("kind")] == "owner" {
			owners = append(owners, row)
		} else {
			waits = append(waits, row)
		}
	}
	if len(owners) != 2 || len(waits) == 0 {
		t.Fatalf("%d owner rows and %d waits, want 2 owners (the one without a stack left out)", len(owners), len(waits))
	}
	first := owners[0]
	if first[col("owner_where")] != capture.OwnerStackOnCPU || first[col("owner_samples")] != "12" || first[col("total_wait_ns")] != "6000" ||
		first[col("stack")] != "copy_user_generic+0xa <- generic_perform_write+0x90 <- vfs_write+0x26b" || first[col("tid")] != "41" {
		t.Errorf("first owner row %q", first)
	}
	if holder := owners[1][col("holder_state")]; holder != capture.HolderRunnable || first[col("holder_state")] != "" || waits[0][col("holder_state")] != "" {
		t.Errorf("holder_state %q of the preempted share, %q of the unsplit one, %q of a wait: want %q, empty, empty",
			holder, first[col("holder_state")], waits[0][col("holder_state")], capture.HolderRunnable)
	}
	if comm := first[col("comm")]; !strings.HasPrefix(comm, "'") {
		t.Errorf("the owner's name %q can run as a formula", comm)
	}
}
