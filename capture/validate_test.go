package capture

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// frames returns a stack of n frames.
func frames(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("f%d+0x1", i)
	}
	return s
}

func TestValidateLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Capture)
		want   string // "" for valid
	}{
		{"record stack at the limit", func(c *Capture) { c.Records[0].Stack = frames(MaxStackDepth) }, ""},
		{"record stack over the limit", func(c *Capture) { c.Records[0].Stack = frames(MaxStackDepth + 1) },
			"record 0: a stack of 128 frames, more than the 127 klockstat takes"},
		{"owner stack over the limit", func(c *Capture) { c.Owners[0].Stack = frames(MaxStackDepth + 1) },
			"owner 0: a stack of 128 frames, more than the 127 klockstat takes"},
		{"stack depth over the limit", func(c *Capture) { c.Meta.StackDepth = MaxStackDepth + 1 },
			"meta: stack_depth 128, more than the 127 klockstat takes"},
		{"field candidates over the limit", func(c *Capture) { c.Records[0].FieldCandidates = frames(MaxFieldCandidates + 1) },
			"record 0: 9 field candidates, more than the 8 klockstat takes"},
		{"string at the limit", func(c *Capture) { c.Records[0].Comm = strings.Repeat("c", MaxStringLen) }, ""},
		{"string over the limit", func(c *Capture) { c.Records[0].Name = strings.Repeat("n", MaxStringLen+1) },
			"record 0: a string of 262145 bytes, more than the 262144 of a capture's longest"},
		{"frame over the limit", func(c *Capture) { c.Records[1].Stack = []string{strings.Repeat("f", MaxStringLen+1)} },
			"record 1: a string of 262145 bytes"},
		{"records over the limit", func(c *Capture) {
			r := c.Records[1]
			c.Records = slices.Repeat([]Record{r}, MaxRecords+1)
		}, "2097153 records, more than the 2097152 klockstat reads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testCapture(t)
			tc.change(c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestParseRefusesADeepStackAsItReads checks that a stack of a million frames is refused while it is
// decoded, before its frames take memory.
func TestParseRefusesADeepStackAsItReads(t *testing.T) {
	js := string(encode(t, testCapture(t)))
	var deep strings.Builder
	deep.WriteString(`"stack": [`)
	for i := range 1_000_000 {
		if i > 0 {
			deep.WriteString(",")
		}
		deep.WriteString(`"f+0x1"`)
	}
	deep.WriteString("]")
	first := strings.Index(js, `"stack": [`)
	end := first + strings.Index(js[first:], "]") + 1
	input := []byte(js[:first] + deep.String() + js[end:])

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c, err := Parse(input)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatalf("Parse accepted a stack of a million frames (%d records)", len(c.Records))
	}
	if !strings.Contains(err.Error(), "more than the 127 frames klockstat takes") {
		t.Errorf("Parse() = %v, want it to name the limit", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(input))/4 {
		t.Errorf("Parse allocated %d bytes for a %d-byte input before refusing it", alloc, len(input))
	}
	if !bytes.Contains(input, []byte(`"f+0x1","f+0x1"`)) {
		t.Fatal("the test did not build the stack it meant to")
	}
}
