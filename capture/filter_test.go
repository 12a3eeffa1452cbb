package capture

import (
	"slices"
	"strings"
	"testing"
)

// TestFilter checks each filter on the real capture against a plain reading of the records: the
// records kept are exactly those of the lock, name or frame asked for, and filters of two kinds must
// both hold.
func TestFilter(t *testing.T) {
	c := realCapture(t)
	heaviest := c.Records[0] // the lock of the record that waited most
	for _, r := range c.Records {
		if r.TotalNS > heaviest.TotalNS {
			heaviest = r
		}
	}
	hasFrame := func(r Record, sub string) bool {
		return slices.ContainsFunc(r.Stack, func(f string) bool { return strings.Contains(f, sub) })
	}
	for _, tc := range []struct {
		name          string
		locks, frames []string
		keeps         func(Record) bool
	}{
		{"lock name", []string{"mmap_lock"}, nil, func(r Record) bool { return r.Name == "mmap_lock" }},
		{"lock address", []string{heaviest.Lock.String()}, nil, func(r Record) bool { return r.Lock == heaviest.Lock }},
		{"address in capitals", []string{strings.ToUpper(heaviest.Lock.String())}, nil, func(r Record) bool { return r.Lock == heaviest.Lock }},
		{"two locks", []string{"mmap_lock", "siglock"}, nil, func(r Record) bool { return r.Name == "mmap_lock" || r.Name == "siglock" }},
		{"frame substring", nil, []string{"ext4"}, func(r Record) bool { return hasFrame(r, "ext4") }},
		{"two substrings", nil, []string{"ext4", "pipe"}, func(r Record) bool { return hasFrame(r, "ext4") || hasFrame(r, "pipe") }},
		{"lock and frame", []string{"mmap_lock"}, []string{"munmap"}, func(r Record) bool { return r.Name == "mmap_lock" && hasFrame(r, "munmap") }},
		{"nothing", []string{"no_such_lock"}, nil, func(Record) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewFilter(tc.locks, tc.frames)
			if err != nil {
				t.Fatal(err)
			}
			var want []Record
			for _, r := range c.Records {
				if tc.keeps(r) {
					want = append(want, r)
				}
			}
			if tc.name != "nothing" && (len(want) == 0 || len(want) == len(c.Records)) {
				t.Fatalf("the fixture has %d of %d records to keep: the test would prove nothing", len(want), len(c.Records))
			}
			got := c.Select(f)
			if !slices.EqualFunc(got.Records, want, func(a, b Record) bool { return a.Lock == b.Lock && slices.Equal(a.Stack, b.Stack) && a.TID == b.TID }) {
				t.Errorf("kept %d records, want %d", len(got.Records), len(want))
			}
			if len(c.Records) != len(realCapture(t).Records) {
				t.Error("Select changed the capture it selects from")
			}
		})
	}
}

// TestFilterHashedAndSymbols: in a capture with hashed addresses a lock is given by its id, and a
// symbol name without offset matches the symbol at any offset.
func TestFilterHashedAndSymbols(t *testing.T) {
	c := &Capture{Records: []Record{
		{Lock: 0xffff888100000000, Name: "runqueues+0x1c0"},
		{Lock: 0xffff888100000040, Name: "runqueues+0x2c0"},
		{Lock: 0xffff888100000080, Name: "runqueues_x"},
		{Lock: 0xffff8881000000c0},
	}}
	f, _ := NewFilter([]string{"runqueues"}, nil)
	if got := len(c.Select(f).Records); got != 2 {
		t.Errorf("runqueues kept %d records, want the 2 at offsets of runqueues", got)
	}
	f, _ = NewFilter([]string{"runqueues+0x2c0"}, nil)
	if got := c.Select(f).Records; len(got) != 1 || got[0].Name != "runqueues+0x2c0" {
		t.Errorf("runqueues+0x2c0 kept %v", got)
	}
	c.HashAddresses([]byte("key"))
	id := c.Records[3].Lock.HashedString()
	f, _ = NewFilter([]string{id}, nil)
	if got := c.Select(f).Records; len(got) != 1 || got[0].Lock != c.Records[3].Lock {
		t.Errorf("id %s kept %v", id, got)
	}
}

// A name without its instance keeps every instance, and a slab lock's struct field keeps it.
func TestFilterInstancesAndFields(t *testing.T) {
	c := &Capture{Records: []Record{
		{Lock: 0xffff888100000000, Name: "rq_lock (CPU 0)"},
		{Lock: 0xffff888100000040, Name: "rq_lock (CPU 1)"},
		{Lock: 0xffff888100000080, Name: "&kmalloc-2k", ObjectOffset: "0x408", Field: "super_block.s_vfs_rename_mutex"},
		{Lock: 0xffff8881000000c0, Name: "&kmalloc-2k", ObjectOffset: "0x70", Field: "super_block.s_umount"},
	}}
	for _, tc := range []struct {
		lock string
		want []Addr
	}{
		{"rq_lock", []Addr{0xffff888100000000, 0xffff888100000040}},
		{"rq_lock (CPU 1)", []Addr{0xffff888100000040}},
		{"super_block.s_vfs_rename_mutex", []Addr{0xffff888100000080}},
		{"&kmalloc-2k", []Addr{0xffff888100000080, 0xffff8881000000c0}},
	} {
		f, err := NewFilter([]string{tc.lock}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []Addr
		for _, r := range c.Select(f).Records {
			got = append(got, r.Lock)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s kept %v, want %v", tc.lock, got, tc.want)
		}
	}
}

func TestNewFilterErrors(t *testing.T) {
	for _, tc := range []struct {
		locks, frames []string
		want          string
	}{
		{[]string{""}, nil, "empty lock"},
		{[]string{"0xzz"}, nil, `address "0xzz"`},
		{[]string{"0x"}, nil, `address "0x"`},
		{nil, []string{"ext4", ""}, "empty stack substring"},
	} {
		if _, err := NewFilter(tc.locks, tc.frames); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewFilter(%q, %q) = %v, want an error containing %q", tc.locks, tc.frames, err, tc.want)
		}
	}
	if f, err := NewFilter(nil, nil); err != nil || !f.Empty() {
		t.Errorf("NewFilter(nil, nil) = %v, %v: want the empty filter", f, err)
	}
}

// An id under a key matches the raw address it is the id of once the filter knows the key, and
// only then; a capture of ids is matched as before.
func TestFilterIDsUnderKeyMatchRawAddresses(t *testing.T) {
	key := []byte("the boot's key")
	const lock = Addr(0xffff888100a3c2d8)
	id := NewAddressHasher(key).ID(lock).HashedString()
	f, err := NewFilter([]string{id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := Record{Type: "mutex", Lock: lock}
	if f.Keeps(r, false) {
		t.Errorf("an id matched a raw address without the key")
	}
	if !f.UnderKey(key).Keeps(r, false) {
		t.Errorf("the id %s of %s under its key does not match it", id, lock)
	}
	if f.UnderKey([]byte("another boot's key")).Keeps(r, false) {
		t.Errorf("the id matched under another key")
	}
	hashed := Record{Type: "mutex", Lock: NewAddressHasher(key).ID(lock)}
	if !f.UnderKey(key).Keeps(hashed, true) {
		t.Errorf("the id does not match its lock in a capture of ids")
	}
}
