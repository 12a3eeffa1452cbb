package capture

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// wantID derives the id of an address from the definition in HashAddresses' documentation.
func wantID(key []byte, a uint64) Addr {
	mac := hmac.New(sha256.New, key)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], a)
	mac.Write(b[:])
	return Addr(binary.BigEndian.Uint32(mac.Sum(nil)))
}

func TestHashAddresses(t *testing.T) {
	key := []byte("report key")
	c := testCapture(t)
	orig := testCapture(t)
	c.Records[0].Caller = "0xffffffff81234567" // a caller kallsyms could not name
	c.HashAddresses(key)

	if !c.Meta.AddressesHashed {
		t.Error("Meta.AddressesHashed not set")
	}
	for i, r := range c.Records {
		o := orig.Records[i]
		if want := wantID(key, uint64(o.Lock)); r.Lock != want {
			t.Errorf("record %d: lock %s hashed to %s, want %s", i, o.Lock, r.Lock, want)
		}
		if r.Name != o.Name {
			t.Errorf("record %d: name %q changed to %q", i, o.Name, r.Name)
		}
		for j, f := range o.Stack {
			want := f
			if a, err := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 64); strings.HasPrefix(f, "0x") && err == nil {
				want = fmt.Sprintf("%016x", uint64(wantID(key, a)))
			}
			if r.Stack[j] != want {
				t.Errorf("record %d frame %d: %q hashed to %q, want %q", i, j, f, r.Stack[j], want)
			}
		}
	}
	if want := fmt.Sprintf("%016x", uint64(wantID(key, 0xffffffff81234567))); c.Records[0].Caller != want {
		t.Errorf("raw caller hashed to %q, want %q", c.Records[0].Caller, want)
	}
	// The same address gets the same id wherever it appears.
	if c.Records[0].Stack[2] != c.Records[0].Caller {
		t.Errorf("frame %q and caller %q of the same address differ", c.Records[0].Stack[2], c.Records[0].Caller)
	}

	// A hashed capture is still a valid capture, and nothing of the addresses is left in it.
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&buf)
	if err != nil {
		t.Fatalf("reading a hashed capture: %v", err)
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("hashed capture changed in a JSON round trip:\n got %+v\nwant %+v", back, c)
	}
	for _, a := range []string{"ffff888100a3c2d8", "ffffffff82a0c1e0", "ffffffff81234567", "ffffffff81000000"} {
		if bytes.Contains(buf.Bytes(), []byte(a)) {
			t.Errorf("hashed capture still holds address %s", a)
		}
	}
}

func TestHashAddressesTwiceIsNoOp(t *testing.T) {
	c := testCapture(t)
	c.HashAddresses([]byte("first"))
	once := testCapture(t)
	once.HashAddresses([]byte("first"))
	c.HashAddresses([]byte("second"))
	if !reflect.DeepEqual(c, once) {
		t.Errorf("second HashAddresses changed the capture:\n got %+v\nwant %+v", c, once)
	}
}

func TestHashAddressesKeys(t *testing.T) {
	a, b := testCapture(t), testCapture(t)
	a.HashAddresses([]byte("key a"))
	b.HashAddresses([]byte("key b"))
	for i := range a.Records {
		if a.Records[i].Lock == b.Records[i].Lock {
			t.Errorf("record %d: lock id %s is the same under two keys", i, a.Records[i].Lock)
		}
	}
}

func TestHashAddressesLeavesOtherFrames(t *testing.T) {
	// Only what FormatFrame writes for an unknown address is an address; everything else is a name.
	frames := []string{"", "0x", "0xZZ", "0XFFFF", "0xFFFF", "0x1ffffffffffffffff", "0x12 [mod]", "x0x12", "vm_mmap_pgoff+0xa5"}
	c := &Capture{Version: FormatVersion, Records: []Record{{Type: "mutex", Count: 1, Stack: append([]string{}, frames...)}}}
	c.HashAddresses([]byte("k"))
	if got := c.Records[0].Stack; !reflect.DeepEqual(got, frames) {
		t.Errorf("frames that are not raw addresses changed: got %q, want %q", got, frames)
	}
}

func TestHashedString(t *testing.T) {
	for _, tc := range []struct {
		a    Addr
		want string
	}{{0, "0000000000000000"}, {0x1a2b3c4d, "000000001a2b3c4d"}, {0xffffffff, "00000000ffffffff"}} {
		if got := tc.a.HashedString(); got != tc.want {
			t.Errorf("Addr(%#x).HashedString() = %q, want %q", uint64(tc.a), got, tc.want)
		}
	}
}
