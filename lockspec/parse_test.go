package lockspec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// validDoc is a small valid catalogue; the error cases below break it in one place.
const validDoc = `{
  "version": 1,
  "types": [
    {
      "name": "spinlock",
      "flags": [["SPIN"]],
      "acquire": ["_raw_spin_lock", "_raw_spin_lock_irqsave"],
      "release": ["_raw_spin_unlock"],
      "internal": ["queued_spin_lock_slowpath"]
    },
    {
      "name": "mutex",
      "description": "sleeping lock",
      "flags": [["MUTEX"], ["MUTEX", "SPIN"]],
      "acquire": ["mutex_lock"]
    }
  ]
}
`

// position returns "line:col" of byte offset off in doc.
func position(doc string, off int) string {
	before := doc[:off]
	return fmt.Sprintf("%d:%d", strings.Count(before, "\n")+1, off-strings.LastIndex(before, "\n"))
}

// nthIndex returns the offset of the nth (0-based) occurrence of sub in s, or -1.
func nthIndex(s, sub string, nth int) int {
	off := 0
	for i := 0; ; i++ {
		j := strings.Index(s[off:], sub)
		if j < 0 {
			return -1
		}
		if i == nth {
			return off + j
		}
		off += j + len(sub)
	}
}

func replaceOnce(t *testing.T, doc, old, new string) string {
	t.Helper()
	if n := strings.Count(doc, old); n != 1 {
		t.Fatalf("fixture: %q occurs %d times in the document, want once", old, n)
	}
	return strings.Replace(doc, old, new, 1)
}

func TestParseValid(t *testing.T) {
	s, err := Parse("t.json", []byte(validDoc))
	if err != nil {
		t.Fatal(err)
	}
	want := []Type{
		{
			Name:     "spinlock",
			Flags:    []Flag{FlagSpin},
			Acquire:  []string{"_raw_spin_lock", "_raw_spin_lock_irqsave"},
			Release:  []string{"_raw_spin_unlock"},
			Internal: []string{"queued_spin_lock_slowpath"},
		},
		{
			Name:        "mutex",
			Description: "sleeping lock",
			Flags:       []Flag{FlagMutex, FlagMutex | FlagSpin},
			Acquire:     []string{"mutex_lock"},
		},
	}
	if s.Source != "t.json" {
		t.Errorf("Source = %q, want t.json", s.Source)
	}
	if got, want := fmt.Sprintf("%#v", s.Types), fmt.Sprintf("%#v", want); got != want {
		t.Errorf("Types =\n%s\nwant\n%s", got, want)
	}
}

// TestParseSkipsByteOrderMark checks that a BOM some editors write is no syntax error, and that
// positions after it are where the editor shows them.
func TestParseSkipsByteOrderMark(t *testing.T) {
	withBOM := "\ufeff" + validDoc
	if _, err := Parse("t.json", []byte(withBOM)); err != nil {
		t.Fatalf("Parse of a document with a BOM: %v", err)
	}
	bad := "\ufeff" + replaceOnce(t, validDoc, `"name": "mutex"`, `"name": ""`)
	_, err := Parse("t.json", []byte(bad))
	if want := "t.json:" + position(bad[len("\ufeff"):], strings.Index(bad, `"name": ""`)-len("\ufeff")+len(`"name": `)); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want it at %s", err, want)
	}
}

func TestParseHold(t *testing.T) {
	for _, tc := range []struct {
		hold string
		want bool
	}{{``, false}, {`, "hold": false`, false}, {`, "hold": true`, true}} {
		doc := replaceOnce(t, validDoc, `"acquire": ["mutex_lock"]`, `"acquire": ["mutex_lock"], "release": ["mutex_unlock"]`+tc.hold)
		s, err := Parse("t.json", []byte(doc))
		if err != nil {
			t.Fatalf("hold %q: %v", tc.hold, err)
		}
		if s.Types[1].Hold != tc.want || s.Types[0].Hold {
			t.Errorf("hold %q: mutex Hold = %v, spinlock Hold = %v, want %v and false", tc.hold, s.Types[1].Hold, s.Types[0].Hold, tc.want)
		}
	}
}

func TestParseAcceptsCompilerSuffixesAndEmptyCombination(t *testing.T) {
	doc := replaceOnce(t, validDoc, `["mutex_lock"]`, `["mutex_lock", "__mutex_lock.constprop.0", "rwsem_wake.isra.0"]`)
	doc = replaceOnce(t, doc, `[["SPIN"]]`, `[["SPIN"], []]`)
	s, err := Parse("t.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Types[0].Flags; len(got) != 2 || got[1] != 0 {
		t.Errorf("spinlock flags = %v, want [SPIN 0]", got)
	}
	if !s.IsLockFunction("__mutex_lock") || !s.IsLockFunction("rwsem_wake.isra.0") {
		t.Error("functions listed with compiler suffixes are not lock functions")
	}
}

func TestParseErrors(t *testing.T) {
	truncated := validDoc[:strings.Index(validDoc, `"mutex"`)]
	tests := []struct {
		name string
		doc  string
		at   string // the error points at the nth occurrence of at in doc (or its start)...
		nth  int
		skip int    // ...plus skip bytes
		want string // message after "t.json:line:col: "
	}{
		{
			name: "unknown top-level key",
			doc:  replaceOnce(t, validDoc, `"version": 1,`, `"version": 1, "typos": [],`),
			at:   `"typos"`,
			want: `unknown key "typos" (known keys: version, types)`,
		},
		{
			name: "unknown key in a type",
			doc:  replaceOnce(t, validDoc, `"acquire": ["mutex_lock"]`, `"aquire": ["mutex_lock"]`),
			at:   `"aquire"`,
			want: `types[1]: unknown key "aquire" (known keys: name, description, flags, acquire, release, internal, hold)`,
		},
		{
			name: "duplicate key",
			doc:  replaceOnce(t, validDoc, `"description": "sleeping lock",`, `"description": "a", "description": "b",`),
			at:   `"description"`,
			nth:  1,
			want: fmt.Sprintf(`types[1]: duplicate key "description" (first given at t.json:%s; keep one)`,
				position(validDoc, strings.Index(validDoc, `"description"`))),
		},
		{
			name: "duplicate type name",
			doc:  replaceOnce(t, validDoc, `"name": "mutex"`, `"name": "spinlock"`),
			at:   `"spinlock"`,
			nth:  1,
			want: fmt.Sprintf(`types[1].name: duplicate type "spinlock" (first defined at t.json:%s)`,
				position(validDoc, strings.Index(validDoc, `"spinlock"`))),
		},
		{
			name: "empty name",
			doc:  replaceOnce(t, validDoc, `"name": "mutex"`, `"name": ""`),
			at:   `""`,
			want: `types[1].name: empty lock type name (want 1 to 64 printable ASCII characters, U+0021 to U+007E but ','`,
		},
		{
			name: "name a capture cannot hold",
			doc:  replaceOnce(t, validDoc, `"name": "mutex"`, `"name": "spin lock"`),
			at:   `"spin lock"`,
			want: `types[1].name: bad lock type name "spin lock": U+0020 at byte 4 (want 1 to 64 printable ASCII characters, U+0021 to U+007E but ','`,
		},
		{
			name: "name drawn like a built-in one",
			doc:  replaceOnce(t, validDoc, `"name": "mutex"`, `"name": "sp\u0131nlock"`),
			at:   `"sp\u0131nlock"`,
			want: `types[1].name: bad lock type name "sp\u0131nlock": U+0131 at byte 2 (want 1 to 64 printable ASCII characters, U+0021 to U+007E but ','`,
		},
		{
			name: "name with a zero-width joiner",
			doc:  replaceOnce(t, validDoc, `"name": "mutex"`, "\"name\": \"mu\u200dtex\""),
			at:   "\"mu\u200dtex\"",
			want: `types[1].name: bad lock type name "mu\u200dtex": U+200D at byte 2 (want 1 to 64 printable ASCII characters, U+0021 to U+007E but ','`,
		},
		{
			name: "name --types cannot select",
			doc:  replaceOnce(t, validDoc, `"name": "mutex"`, `"name": "mutex,v2"`),
			at:   `"mutex,v2"`,
			want: `types[1].name: bad lock type name "mutex,v2"`,
		},
		{
			name: "empty flags",
			doc:  replaceOnce(t, validDoc, `[["MUTEX"], ["MUTEX", "SPIN"]]`, `[]`),
			at:   `[]`,
			want: `types[1].flags: empty list (list at least one flag combination`,
		},
		{
			name: "empty acquire",
			doc:  replaceOnce(t, validDoc, `["mutex_lock"]`, `[]`),
			at:   `[]`,
			want: `types[1].acquire: empty list (name at least one kernel function)`,
		},
		{
			name: "empty release",
			doc:  replaceOnce(t, validDoc, `["_raw_spin_unlock"]`, `[]`),
			at:   `[]`,
			want: `types[0].release: empty list (name at least one kernel function, or remove the key)`,
		},
		{
			name: "empty internal",
			doc:  replaceOnce(t, validDoc, `["queued_spin_lock_slowpath"]`, `[]`),
			at:   `[]`,
			want: `types[0].internal: empty list (name at least one kernel function, or remove the key)`,
		},
		{
			name: "empty types",
			doc:  `{"version": 1, "types": []}`,
			at:   `[]`,
			want: `types: empty list (define at least one lock type)`,
		},
		{
			name: "unknown flag",
			doc:  replaceOnce(t, validDoc, `["MUTEX", "SPIN"]`, `["MUTEX", "SPINN"]`),
			at:   `"SPINN"`,
			want: `types[1].flags[1][1]: unknown flag "SPINN" (want one of SPIN, READ, WRITE, RT, PERCPU, MUTEX)`,
		},
		{
			name: "flag repeated in a combination",
			doc:  replaceOnce(t, validDoc, `["MUTEX", "SPIN"]`, `["MUTEX", "MUTEX"]`),
			at:   `"MUTEX"`,
			nth:  2,
			want: `types[1].flags[1][1]: flag "MUTEX" repeated in one combination (list it once)`,
		},
		{
			name: "combination shared by two types with an acquire function in common",
			doc: replaceOnce(t, replaceOnce(t, validDoc, `["MUTEX", "SPIN"]`, `["SPIN"]`),
				`"acquire": ["mutex_lock"]`, `"acquire": ["mutex_lock", "_raw_spin_lock.cold"]`),
			at:  `["SPIN"]`,
			nth: 1,
			want: fmt.Sprintf(`types[1].flags[1]: flags SPIN also claimed by type "spinlock" at t.json:%s, and both list acquire function "_raw_spin_lock.cold" (types that share flags are told apart by their acquire functions on the stack: list each under one type)`,
				position(validDoc, strings.Index(validDoc, `["SPIN"]`))),
		},
		{
			name: "same combination in another order",
			doc:  replaceOnce(t, validDoc, `[["MUTEX"], ["MUTEX", "SPIN"]]`, `[["SPIN", "MUTEX"], ["MUTEX", "SPIN"]]`),
			at:   `["MUTEX", "SPIN"]`,
			want: fmt.Sprintf(`types[1].flags[1]: flags SPIN|MUTEX already listed at t.json:%s (list each combination once)`,
				position(validDoc, strings.Index(validDoc, `[["MUTEX"]`)+1)),
		},
		{
			name: "combination repeated in one type",
			doc:  replaceOnce(t, validDoc, `["MUTEX", "SPIN"]`, `["MUTEX"]`),
			at:   `["MUTEX"]`,
			nth:  1,
			want: `types[1].flags[1]: flags MUTEX already listed at t.json:`,
		},
		{
			name: "function name with an offset",
			doc:  replaceOnce(t, validDoc, `"mutex_lock"`, `"mutex_lock+0x10"`),
			at:   `"mutex_lock+0x10"`,
			want: `types[1].acquire[0]: bad function name "mutex_lock+0x10" (want a C identifier`,
		},
		{
			name: "empty function name",
			doc:  replaceOnce(t, validDoc, `["queued_spin_lock_slowpath"]`, `["queued_spin_lock_slowpath", ""]`),
			at:   `""`,
			want: `types[0].internal[1]: bad function name ""`,
		},
		{
			name: "function name with a newline",
			doc:  replaceOnce(t, validDoc, `"mutex_lock"`, `"mutex\nlock"`),
			at:   `"mutex\nlock"`,
			want: `types[1].acquire[0]: bad function name "mutex\nlock"`,
		},
		{
			name: "duplicate function",
			doc:  replaceOnce(t, validDoc, `"_raw_spin_lock_irqsave"`, `"_raw_spin_lock"`),
			at:   `"_raw_spin_lock"`,
			nth:  1,
			want: fmt.Sprintf(`types[0].acquire[1]: duplicate function "_raw_spin_lock" (first listed at t.json:%s)`,
				position(validDoc, strings.Index(validDoc, `"_raw_spin_lock"`))),
		},
		{
			name: "hold that is not a boolean",
			doc:  replaceOnce(t, validDoc, `"acquire": ["mutex_lock"]`, `"acquire": ["mutex_lock"], "release": ["mutex_unlock"], "hold": "yes"`),
			at:   `"yes"`,
			want: `types[1].hold: got string, want boolean`,
		},
		{
			name: "hold without release functions",
			doc:  replaceOnce(t, validDoc, `"acquire": ["mutex_lock"]`, `"acquire": ["mutex_lock"], "hold": true`),
			at:   `true`,
			want: `types[1].hold: hold time needs the release functions: list them in "release", or remove the key`,
		},
		{
			name: "hold of a spinning lock",
			doc:  replaceOnce(t, validDoc, `"release": ["_raw_spin_unlock"],`, `"release": ["_raw_spin_unlock"], "hold": true,`),
			at:   `true`,
			want: `types[0].hold: hold time is measured for sleeping locks only`,
		},
		{
			name: "wrong version",
			doc:  replaceOnce(t, validDoc, `"version": 1`, `"version": 2`),
			at:   `2,`,
			want: `version: unsupported version 2 (want 1)`,
		},
		{
			name: "fractional version",
			doc:  replaceOnce(t, validDoc, `"version": 1`, `"version": 1.5`),
			at:   `1.5`,
			want: `version: unsupported version 1.5 (want 1)`,
		},
		{
			name: "missing version",
			doc:  replaceOnce(t, validDoc, `"version": 1,`, ``),
			at:   `{`,
			want: `missing required key "version" (required: version, types)`,
		},
		{
			name: "missing key in a type",
			doc:  replaceOnce(t, validDoc, `"name": "mutex",`, ``),
			at:   `{`,
			nth:  2,
			want: `types[1]: missing required key "name" (required: name, flags, acquire)`,
		},
		{
			name: "number where a string is expected",
			doc:  replaceOnce(t, validDoc, `"name": "mutex"`, `"name": 42`),
			at:   `42`,
			want: `types[1].name: got number, want string`,
		},
		{
			name: "string where a list is expected",
			doc:  replaceOnce(t, validDoc, `"release": ["_raw_spin_unlock"]`, `"release": "_raw_spin_unlock"`),
			at:   `"_raw_spin_unlock"`,
			want: `types[0].release: got string, want list`,
		},
		{
			name: "flag combination that is not a list",
			doc:  replaceOnce(t, validDoc, `["MUTEX", "SPIN"]`, `"SPIN"`),
			at:   `"SPIN"`,
			nth:  1,
			want: `types[1].flags[1]: got string, want list`,
		},
		{
			name: "null where an object is expected",
			doc:  replaceOnce(t, validDoc, `"types": [`, `"types": [null, `),
			at:   `null`,
			want: `types[0]: got null, want object`,
		},
		{
			name: "top level is not an object",
			doc:  "\n  [1]",
			at:   `[`,
			want: `top level: got list, want object`,
		},
		{
			name: "syntax error",
			doc:  replaceOnce(t, validDoc, `"version": 1,`, `"version": 1,,`),
			at:   `,,`,
			skip: 1,
			want: `syntax error: invalid character ',' looking for beginning of object key string`,
		},
		{
			name: "missing comma",
			doc:  replaceOnce(t, validDoc, `"_raw_spin_lock", "_raw_spin_lock_irqsave"`, `"_raw_spin_lock" "_raw_spin_lock_irqsave"`),
			at:   `"_raw_spin_lock_irqsave"`,
			want: `syntax error: invalid character '"' after array element`,
		},
		{
			name: "bad escape",
			doc:  replaceOnce(t, validDoc, `"sleeping lock"`, `"sleeping\q lock"`),
			at:   `q lock`,
			want: `syntax error: invalid character 'q' in string escape code`,
		},
		{
			name: "unexpected end of input",
			doc:  truncated,
			skip: len(truncated),
			want: `syntax error: unexpected end of input`,
		},
		{
			name: "unexpected end inside a literal",
			doc:  "\n\n  tru",
			at:   "tru",
			skip: len("tru"),
			want: `syntax error: unexpected end of input`,
		},
		{
			name: "trailing data",
			doc:  validDoc + "{}\n",
			at:   "{}",
			want: `trailing data after the top-level object (remove it: a catalogue is one JSON object)`,
		},
		{
			name: "empty input",
			doc:  "",
			want: `syntax error: unexpected end of input`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			off := 0
			if tt.at != "" {
				if off = nthIndex(tt.doc, tt.at, tt.nth); off < 0 {
					t.Fatalf("fixture: occurrence %d of %q not in the document", tt.nth, tt.at)
				}
			}
			off += tt.skip
			prefix := "t.json:" + position(tt.doc, off) + ": "

			_, err := Parse("t.json", []byte(tt.doc))
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, prefix+tt.want) {
				t.Errorf("error\n  %s\nwant prefix\n  %s", msg, prefix+tt.want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans several lines: %q", msg)
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("error is %T, want *Error", err)
			}
			if got := fmt.Sprintf("%d:%d", perr.Line, perr.Col); got != position(tt.doc, off) {
				t.Errorf("Error position = %s, want %s", got, position(tt.doc, off))
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(validDoc))
	f.Add([]byte(`{"version": 1, "types": [{"name": "x", "flags": [[]], "acquire": ["f.isra.0"]}]}`))
	f.Add([]byte(`{"version": 1, "types": [{"name": "x", "flags": [["SPIN", "SPIN"]], "acquire": ["f"]}]}`))
	f.Add([]byte(`{"version": 1,, }`))
	f.Add([]byte("\n\n  nul"))
	f.Add([]byte(`{} {}`))
	f.Add([]byte(`[[[[[[[[]]]]]]]]`))
	f.Add([]byte("{\"version\": 1, \"types\": [\"\xff\"]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f.json", data)
		if err != nil {
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Fatalf("error spans several lines: %q", msg)
			}
			if !strings.HasPrefix(msg, "f.json:") {
				t.Fatalf("error does not start with the source name: %q", msg)
			}
			return
		}
		if len(s.Types) == 0 {
			t.Fatal("Parse succeeded with no types")
		}
		claims := 0
		for _, typ := range s.Types {
			claims += len(typ.Flags)
		}
		used := 0
		for _, i := range s.FlagTable() {
			if i >= 0 {
				used++
			}
		}
		if used != claims {
			t.Fatalf("FlagTable has %d entries for %d flag combinations", used, claims)
		}
	})
}
