package capture

import (
	"fmt"
	"strconv"
	"strings"
)

// Addr is a kernel address. In JSON it is a string such as "0xffff888100a3c2d8" (lowercase hex with a
// 0x prefix) because JavaScript numbers cannot hold 64-bit addresses; only that string form is accepted
// when decoding.
type Addr uint64

// String renders a as lowercase hex with a 0x prefix, without leading zeros.
func (a Addr) String() string {
	return "0x" + strconv.FormatUint(uint64(a), 16)
}

// MarshalText implements encoding.TextMarshaler; encoding/json uses it to write a JSON string.
func (a Addr) MarshalText() ([]byte, error) {
	return []byte(a.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler. It accepts "0x" followed by 1 to 16 lowercase hex
// digits; a JSON number is rejected by encoding/json before this is called.
func (a *Addr) UnmarshalText(text []byte) error {
	v, ok := parseAddr(string(text))
	if !ok {
		return fmt.Errorf("address %q: want 0x and 1 to 16 lowercase hex digits", text)
	}
	*a = v
	return nil
}

// parseAddr reads the text UnmarshalText accepts, from a string: ParseFrame reads every raw address
// of a stack with it, without a copy to bytes.
func parseAddr(s string) (Addr, bool) {
	digits, ok := strings.CutPrefix(s, "0x")
	if !ok || len(digits) == 0 || len(digits) > 16 || !isLowerHex(digits) {
		return 0, false
	}
	v, err := strconv.ParseUint(digits, 16, 64)
	return Addr(v), err == nil
}

func isLowerHex(s string) bool {
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
