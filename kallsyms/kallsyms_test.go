package kallsyms

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// kallsymsFixture is a small /proc/kallsyms in the kernel's own order, with
// the shapes that matter: aliases, __pfx_ padding, the text/init text/data
// boundaries, absolute per-CPU symbols, and module and BPF symbols.
const kallsymsFixture = `0000000000000000 A fixed_percpu_data
0000000000001000 A cpu_number
ffffffff81000000 T srso_alias_untrain_ret
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000100 t __pfx_local_fn
ffffffff81000110 t local_fn
ffffffff81000110 T global_alias
ffffffff81000200 T __pfx_vm_mmap_pgoff
ffffffff81000210 T vm_mmap_pgoff
ffffffff81000360 T __pfx_weak_fn
ffffffff81000370 W weak_fn
ffffffff81000400 T _etext
ffffffff81200000 D __start_rodata
ffffffff81200040 R linux_banner
ffffffff81300000 D _sdata
ffffffff81300000 D init_mm
ffffffff81300400 d jiffies_lock
ffffffff81300500 D __stop___tracepoints
ffffffff81400000 T _sinittext
ffffffff81400000 B __init_begin
ffffffff81400010 T start_kernel
ffffffff81400400 T _einittext
ffffffff81500000 B __bss_start
ffffffff81500000 b runqueues_lock
ffffffff81500800 B __bss_stop
ffffffff81600000 B _end
ffffffffc0001000 t __pfx_mod_fn	[mymod]
ffffffffc0001010 t mod_fn	[mymod]
ffffffffc0001100 T mod_exported	[mymod]
ffffffffc0001200 d mod_data	[mymod]
ffffffffc0100000 t bpf_prog_6deef7357e7b4530_sd_fw_ingress	[bpf]
ffffffffc0101000 t bpf_trampoline_6442491553	[bpf]
`

func mustParse(t testing.TB, input string) *Table {
	t.Helper()
	k, err := Parse(strings.NewReader(input))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return k
}

// shuffledLines returns input with its lines in a random (seeded) order.
func shuffledLines(input string, seed uint64) string {
	lines := strings.Split(strings.TrimSuffix(input, "\n"), "\n")
	rng := rand.New(rand.NewPCG(seed, seed))
	rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	return strings.Join(lines, "\n") + "\n"
}

func TestKallsymsFunc(t *testing.T) {
	tests := []struct {
		name     string
		addr     uint64
		wantSym  string
		wantOff  uint64
		wantMod  string
		wantType byte
	}{
		{name: "below first symbol", addr: 0xffffffff80ffffff},
		{name: "heap", addr: 0xffff888100000000},
		{name: "zero", addr: 0},
		{name: "alias prefers non-marker, input order", addr: 0xffffffff81000000, wantSym: "srso_alias_untrain_ret", wantType: 'T'},
		{name: "offset", addr: 0xffffffff81000023, wantSym: "srso_alias_untrain_ret", wantOff: 0x23, wantType: 'T'},
		{name: "inside __pfx_ padding", addr: 0xffffffff81000104, wantSym: "__pfx_local_fn", wantOff: 4, wantType: 't'},
		{name: "alias prefers global", addr: 0xffffffff81000110, wantSym: "global_alias", wantType: 'T'},
		{name: "function start, not its __pfx_", addr: 0xffffffff81000210, wantSym: "vm_mmap_pgoff", wantType: 'T'},
		{name: "return address", addr: 0xffffffff81000215, wantSym: "vm_mmap_pgoff", wantOff: 5, wantType: 'T'},
		{name: "weak", addr: 0xffffffff810003ff, wantSym: "weak_fn", wantOff: 0x8f, wantType: 'W'},
		{name: "at _etext", addr: 0xffffffff81000400},
		{name: "after _etext", addr: 0xffffffff81000401},
		{name: "rodata", addr: 0xffffffff81200040},
		{name: "data", addr: 0xffffffff81300400},
		{name: "init text", addr: 0xffffffff81400020, wantSym: "start_kernel", wantOff: 0x10, wantType: 'T'},
		{name: "at _einittext", addr: 0xffffffff81400400},
		{name: "bss", addr: 0xffffffff81500000},
		{name: "module", addr: 0xffffffffc0001020, wantSym: "mod_fn", wantOff: 0x10, wantMod: "mymod", wantType: 't'},
		{name: "module last function", addr: 0xffffffffc0001180, wantSym: "mod_exported", wantOff: 0x80, wantMod: "mymod", wantType: 'T'},
		{name: "module data is not code", addr: 0xffffffffc0001200, wantSym: "mod_exported", wantOff: 0x100, wantMod: "mymod", wantType: 'T'},
		{name: "just past the end of a module", addr: 0xffffffffc0001100 + MaxSymbolSize - 1, wantSym: "mod_exported", wantOff: MaxSymbolSize - 1, wantMod: "mymod", wantType: 'T'},
		{name: "far past the end of a module", addr: 0xffffffffc0001100 + MaxSymbolSize},
		{name: "bpf program", addr: 0xffffffffc010004c, wantSym: "bpf_prog_6deef7357e7b4530_sd_fw_ingress", wantOff: 0x4c, wantMod: "bpf", wantType: 't'},
		{name: "bpf trampoline", addr: 0xffffffffc0101008, wantSym: "bpf_trampoline_6442491553", wantOff: 8, wantMod: "bpf", wantType: 't'},
		{name: "far past the last symbol", addr: 0xffffffffc0101000 + MaxSymbolSize},
		{name: "top of address space", addr: ^uint64(0)},
	}

	inputs := map[string]string{"sorted": kallsymsFixture}
	for seed := range uint64(5) {
		inputs["shuffled "+strconv.FormatUint(seed, 10)] = shuffledLines(kallsymsFixture, seed)
	}
	for inputName, input := range inputs {
		k := mustParse(t, input)
		if want := strings.Count(kallsymsFixture, "\n"); k.Len() != want {
			t.Errorf("%s: Len() = %d, want %d", inputName, k.Len(), want)
		}
		if k.Restricted() {
			t.Errorf("%s: Restricted() = true", inputName)
		}
		for _, tt := range tests {
			sym, off, ok := k.Func(tt.addr)
			if tt.wantSym == "" {
				if ok {
					t.Errorf("%s: %s: Func(%#x) = %+v+%#x, want unknown", inputName, tt.name, tt.addr, sym, off)
				}
				continue
			}
			if !ok || sym.Name != tt.wantSym || off != tt.wantOff || sym.Module != tt.wantMod || sym.Type != tt.wantType {
				t.Errorf("%s: %s: Func(%#x) = %+v, %#x, %v; want %s (type %c, module %q) +%#x",
					inputName, tt.name, tt.addr, sym, off, ok, tt.wantSym, tt.wantType, tt.wantMod, tt.wantOff)
			}
			if ok && sym.Addr+off != tt.addr {
				t.Errorf("%s: %s: Func(%#x): symbol at %#x + offset %#x does not add up", inputName, tt.name, tt.addr, sym.Addr, off)
			}
		}
	}
}

func TestKallsymsFormatFrame(t *testing.T) {
	k := mustParse(t, kallsymsFixture)
	tests := []struct {
		addr uint64
		want string
	}{
		{0xffffffff81000210, "vm_mmap_pgoff+0x0"},
		{0xffffffff810002b5, "vm_mmap_pgoff+0xa5"},
		{0xffffffffc0001010 + 0x1f, "mod_fn+0x1f [mymod]"},
		{0xffffffffc0100000 + 0x4c, "bpf_prog_6deef7357e7b4530_sd_fw_ingress+0x4c [bpf]"},
		{0xffffffff81000400, "0xffffffff81000400"},
		{0xffffffff81234567, "0xffffffff81234567"},
	}
	for _, tt := range tests {
		if got := k.FormatFrame(tt.addr); got != tt.want {
			t.Errorf("FormatFrame(%#x) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

func TestKallsymsData(t *testing.T) {
	k := mustParse(t, kallsymsFixture)
	tests := []struct {
		name string
		addr uint64
		want string // "" for ok=false
	}{
		{name: "per-CPU offset", addr: 0x1008},
		{name: "heap", addr: 0xffff888100000040},
		{name: "vmalloc", addr: 0xffffc90000001000},
		{name: "kernel text", addr: 0xffffffff81000210},
		{name: "first data symbol is a section marker", addr: 0xffffffff81200008},
		{name: "rodata object", addr: 0xffffffff81200040, want: "linux_banner"},
		{name: "rodata object offset", addr: 0xffffffff81200050, want: "linux_banner+0x10"},
		{name: "object aliasing _sdata", addr: 0xffffffff81300000, want: "init_mm"},
		{name: "object offset", addr: 0xffffffff81300078, want: "init_mm+0x78"},
		{name: "local object", addr: 0xffffffff81300400, want: "jiffies_lock"},
		{name: "after a __stop_ marker", addr: 0xffffffff81300508},
		{name: "init text", addr: 0xffffffff81400010},
		{name: "bss object", addr: 0xffffffff81500004, want: "runqueues_lock+0x4"},
		{name: "at __bss_stop", addr: 0xffffffff81500800},
		{name: "at _end", addr: 0xffffffff81600000},
		{name: "module data", addr: 0xffffffffc0001200},
	}
	for _, tt := range tests {
		name, ok := k.Data(tt.addr)
		if ok != (tt.want != "") || name != tt.want {
			t.Errorf("%s: Data(%#x) = %q, %v; want %q", tt.name, tt.addr, name, ok, tt.want)
		}
	}
}

func TestKallsymsDataEnd(t *testing.T) {
	const objects = `ffffffff81300000 D init_mm
ffffffff81500000 b runqueues_lock
`
	tests := []struct {
		name     string
		input    string
		addr     uint64
		wantName string
	}{
		{"__bss_stop bounds the data", objects + "ffffffff81500010 B __bss_stop\n", 0xffffffff81500010, ""},
		{"inside the data", objects + "ffffffff81500010 B __bss_stop\n", 0xffffffff8150000f, "runqueues_lock+0xf"},
		{"_end bounds the data", objects + "ffffffff81500020 B _end\n", 0xffffffff81500020, ""},
		{"symbol past __bss_stop", objects + "ffffffff81500010 B __bss_stop\nffffffff81500020 b past_bss\n", 0xffffffff81500020, ""},
		{"symbol past _end", objects + "ffffffff81500020 B _end\nffffffff81500030 d past_end\n", 0xffffffff81500030, ""},
		{"no end marker: near the last object", objects, 0xffffffff81500000 + MaxSymbolSize - 1, "runqueues_lock+0xffff"},
		{"no end marker: far past the last object", objects, 0xffffffff81500000 + MaxSymbolSize, ""},
	}
	for _, tt := range tests {
		k := mustParse(t, tt.input)
		name, ok := k.Data(tt.addr)
		if ok != (tt.wantName != "") || name != tt.wantName {
			t.Errorf("%s: Data(%#x) = %q, %v; want %q", tt.name, tt.addr, name, ok, tt.wantName)
		}
	}
}

func TestKallsymsPfxAlias(t *testing.T) {
	// A zero-size function can leave the next function's padding at its own
	// address; the real name must win whichever comes first.
	for _, input := range []string{
		"ffffffff81000100 T __pfx_next\nffffffff81000100 t empty_fn\nffffffff81000110 T next\n",
		"ffffffff81000100 t empty_fn\nffffffff81000100 T __pfx_next\nffffffff81000110 T next\n",
	} {
		k := mustParse(t, input)
		if sym, off, ok := k.Func(0xffffffff81000104); !ok || sym.Name != "empty_fn" || off != 4 {
			t.Errorf("Func in padding aliasing empty_fn = %+v, %#x, %v; want empty_fn+0x4", sym, off, ok)
		}
		if got := k.FormatFrame(0xffffffff81000118); got != "next+0x8" {
			t.Errorf("FormatFrame = %q, want next+0x8", got)
		}
	}
}

func TestKallsymsRestricted(t *testing.T) {
	// What a non-root reader sees with kernel.kptr_restrict=1.
	var input strings.Builder
	for line := range strings.Lines(kallsymsFixture) {
		_, rest, _ := strings.Cut(line, " ")
		input.WriteString("0000000000000000 " + rest)
	}
	k := mustParse(t, input.String())
	if !k.Restricted() {
		t.Fatal("Restricted() = false for a table of zero addresses")
	}
	if want := strings.Count(kallsymsFixture, "\n"); k.Len() != want {
		t.Errorf("Len() = %d, want %d", k.Len(), want)
	}
	for _, addr := range []uint64{0, 0x10, 0xffffffff81000215, 0xffffffff81300078} {
		if sym, off, ok := k.Func(addr); ok {
			t.Errorf("Func(%#x) = %+v+%#x on a restricted table", addr, sym, off)
		}
		if name, ok := k.Data(addr); ok {
			t.Errorf("Data(%#x) = %q on a restricted table", addr, name)
		}
		if got, want := k.FormatFrame(addr), "0x"+strconv.FormatUint(addr, 16); got != want {
			t.Errorf("FormatFrame(%#x) = %q, want %q", addr, got, want)
		}
	}

	if k := mustParse(t, ""); k.Restricted() {
		t.Error("Restricted() = true for an empty table")
	}

	// Only the restriction zeroes code and data addresses, but lookups must
	// not trust a zero address in any table.
	const partlyZero = "0000000000000000 t zero_fn\n0000000000000000 d zero_obj\nffffffff81000000 T _stext\n"
	k = mustParse(t, partlyZero)
	if k.Restricted() {
		t.Errorf("Restricted() = true for %q", partlyZero)
	}
	if sym, off, ok := k.Func(0x10); ok {
		t.Errorf("Func(0x10) = %+v+%#x, want unknown", sym, off)
	}
	if name, ok := k.Data(0x10); ok {
		t.Errorf("Data(0x10) = %q, want unknown", name)
	}
}

func TestParseKallsymsMalformed(t *testing.T) {
	const good = "ffffffff81000000 T _stext\n"
	tests := []struct {
		name string
		bad  string
	}{
		{"empty line", ""},
		{"address only", "ffffffff81000000"},
		{"no name", "ffffffff81000000 T"},
		{"empty name", "ffffffff81000000 T "},
		{"not hex", "ffffffff8100000g T _stext"},
		{"0x prefix", "0xffffffff810000 T _stext"},
		{"negative", "-1 T _stext"},
		{"address overflows", "1ffffffff81000000 T _stext"},
		{"empty address", " T _stext"},
		{"type not a letter", "ffffffff81000000 ? _stext"},
		{"two-letter type", "ffffffff81000000 TT _stext"},
		{"extra field", "ffffffff81000000 T _stext extra"},
		{"two spaces", "ffffffff81000000  T _stext"},
		{"module without brackets", "ffffffffc0001000 t mod_fn\tmymod"},
		{"empty module", "ffffffffc0001000 t mod_fn\t[]"},
		{"module with trailing text", "ffffffffc0001000 t mod_fn\t[mymod] x"},
		{"carriage return", "ffffffffc0001000 t mod_fn\t[mymod]\r"},
	}
	for _, tt := range tests {
		// The bad line is line 3.
		input := good + good + tt.bad + "\n" + good
		_, err := Parse(strings.NewReader(input))
		if err == nil {
			t.Errorf("%s: Parse(%q) succeeded, want an error", tt.name, tt.bad)
			continue
		}
		if !strings.Contains(err.Error(), "line 3:") {
			t.Errorf("%s: error %q does not name line 3", tt.name, err)
		}
	}
}

func TestParseKallsymsNoTrailingNewline(t *testing.T) {
	k := mustParse(t, strings.TrimSuffix(kallsymsFixture, "\n"))
	if want := strings.Count(kallsymsFixture, "\n"); k.Len() != want {
		t.Errorf("Len() = %d, want %d", k.Len(), want)
	}
	if sym, _, ok := k.Func(0xffffffffc0101000); !ok || sym.Name != "bpf_trampoline_6442491553" {
		t.Errorf("last line without newline: Func = %+v, %v", sym, ok)
	}
}

// procSymbol is a /proc/kallsyms line split independently of Parse.
type procSymbol struct {
	addr   uint64
	typ    string
	name   string
	module string
}

// readProcKallsyms reads /proc/kallsyms once: the file and the symbols
// read from it line by line, without this package.
func readProcKallsyms(t testing.TB) ([]byte, []procSymbol) {
	t.Helper()
	raw, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		t.Skipf("reading /proc/kallsyms: %v", err)
	}
	var syms []procSymbol
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			t.Fatalf("unexpected /proc/kallsyms line %q", sc.Text())
		}
		addr, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			t.Fatalf("unexpected /proc/kallsyms line %q: %v", sc.Text(), err)
		}
		s := procSymbol{addr: addr, typ: f[1], name: f[2]}
		if len(f) == 4 {
			s.module = strings.Trim(f[3], "[]")
		}
		syms = append(syms, s)
	}
	return raw, syms
}

// TestKallsymsProc reads the running kernel's table. One read serves both
// sides: BPF programs loaded meanwhile (by tests running beside this one)
// change the file from one read to the next.
func TestKallsymsProc(t *testing.T) {
	if _, err := Load(); err != nil {
		t.Fatalf("Load: %v", err)
	}
	raw, procSyms := readProcKallsyms(t)
	k := mustParse(t, string(raw))
	if k.Len() != len(procSyms) {
		t.Errorf("Len() = %d, /proc/kallsyms has %d lines", k.Len(), len(procSyms))
	}
	if k.Restricted() {
		t.Skip("/proc/kallsyms addresses are hidden (kernel.kptr_restrict); run as root")
	}

	// Every vmlinux function that is alone at its address must resolve to
	// itself, and a return address inside it to itself plus the offset.
	namesAt := map[uint64][]procSymbol{}
	for _, s := range procSyms {
		if s.module == "" && strings.ContainsAny(s.typ, "tTwW") {
			namesAt[s.addr] = append(namesAt[s.addr], s)
		}
	}
	checked := 0
	for addr, syms := range namesAt {
		s := syms[0]
		if len(syms) > 1 || s.name == "_etext" || s.name == "_einittext" {
			continue
		}
		sym, off, ok := k.Func(addr)
		if !ok || sym.Name != s.name || off != 0 || sym.Module != "" {
			t.Errorf("Func(%#x) = %+v, %#x, %v; want %s+0x0", addr, sym, off, ok, s.name)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no unaliased vmlinux functions in /proc/kallsyms")
	}

	for _, fn := range []string{"vm_mmap_pgoff", "schedule", "do_sys_open", "__x64_sys_openat", "_raw_spin_lock"} {
		t.Run(fn, func(t *testing.T) {
			var found *procSymbol
			for i := range procSyms {
				if procSyms[i].name == fn && procSyms[i].module == "" {
					found = &procSyms[i]
					break
				}
			}
			if found == nil {
				if fn == "vm_mmap_pgoff" || fn == "schedule" {
					t.Fatalf("%s missing from /proc/kallsyms", fn)
				}
				t.Skipf("%s not in this kernel", fn)
			}
			sym, off, ok := k.Func(found.addr + 5)
			if !ok || sym.Name != fn || off != 5 {
				t.Errorf("Func(%s+5) = %+v, %#x, %v", fn, sym, off, ok)
			}
			if got, want := k.FormatFrame(found.addr+5), fn+"+0x5"; got != want {
				t.Errorf("FormatFrame(%s+5) = %q, want %q", fn, got, want)
			}
			if pfx := namesAt[found.addr-16]; len(pfx) == 1 && pfx[0].name == "__pfx_"+fn {
				if got, want := k.FormatFrame(found.addr-16+1), "__pfx_"+fn+"+0x1"; got != want {
					t.Errorf("FormatFrame in the padding of %s = %q, want %q", fn, got, want)
				}
			}
		})
	}

	// The direct map and vmalloc area never hold static objects.
	for _, addr := range []uint64{0xffff888000001000, 0xffffc90000001000} {
		if name, ok := k.Data(addr); ok {
			t.Errorf("Data(%#x) = %q, want unknown", addr, name)
		}
	}
	// Objects are listed only with CONFIG_KALLSYMS_ALL.
	for _, s := range procSyms {
		if s.name == "init_mm" && s.module == "" {
			if name, ok := k.Data(s.addr + 0x78); !ok || name != "init_mm+0x78" {
				t.Errorf("Data(&init_mm+0x78) = %q, %v; want init_mm+0x78", name, ok)
			}
		}
	}
}

func BenchmarkParseKallsyms(b *testing.B) {
	raw, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		b.Skipf("reading /proc/kallsyms: %v", err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(raw)); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzParseKallsyms(f *testing.F) {
	f.Add([]byte(kallsymsFixture), uint64(0xffffffff81000215))
	f.Add([]byte(shuffledLines(kallsymsFixture, 1)), uint64(0xffffffff81300078))
	f.Add([]byte("0000000000000000 T _stext\n"), uint64(0))
	f.Add([]byte("ffffffffffffffff T top\nffffffffffffff00 D obj\n"), ^uint64(0))
	f.Add([]byte("1 T a\t[m]\n1 t __pfx_b\t[m]\n"), uint64(1))
	f.Fuzz(func(t *testing.T, input []byte, addr uint64) {
		k, err := Parse(bytes.NewReader(input))
		if err != nil {
			if !strings.Contains(err.Error(), "line ") {
				t.Fatalf("error %q does not name a line", err)
			}
			return
		}
		probes := []uint64{addr, addr - 1, addr + 1}
		for _, s := range k.syms {
			probes = append(probes, s.Addr, s.Addr+1, s.Addr-1)
		}
		for _, a := range probes {
			sym, off, ok := k.Func(a)
			if ok {
				if k.Restricted() || !isTextType(sym.Type) || sym.Addr+off != a {
					t.Fatalf("Func(%#x) = %+v, %#x on restricted=%v", a, sym, off, k.Restricted())
				}
			}
			if frame := k.FormatFrame(a); frame == "" {
				t.Fatalf("FormatFrame(%#x) is empty", a)
			}
			if name, ok := k.Data(a); ok && (k.Restricted() || name == "") {
				t.Fatalf("Data(%#x) = %q on restricted=%v", a, name, k.Restricted())
			}
		}
		if k.Len() != len(k.syms) {
			t.Fatalf("Len() = %d, have %d symbols", k.Len(), len(k.syms))
		}
	})
}

func TestKallsymsTextNames(t *testing.T) {
	want := []string{"srso_alias_untrain_ret", "_stext", "_text", "__pfx_local_fn", "local_fn", "global_alias",
		"__pfx_vm_mmap_pgoff", "vm_mmap_pgoff", "__pfx_weak_fn", "weak_fn", "_etext", "_sinittext", "start_kernel",
		"_einittext", "__pfx_mod_fn", "mod_fn", "mod_exported"}
	restricted := regexp.MustCompile(`(?m)^[0-9a-f]+ `).ReplaceAllString(kallsymsFixture, "0000000000000000 ")
	for name, input := range map[string]string{"readable": kallsymsFixture, "restricted": restricted} {
		got := mustParse(t, input).TextNames()
		if len(got) != len(want) {
			t.Errorf("%s: %d names, want %d: %v", name, len(got), len(want), got)
		}
		for _, fn := range want {
			if !got[fn] {
				t.Errorf("%s: %s missing", name, fn)
			}
		}
	}
}

func TestKallsymsFuncBounds(t *testing.T) {
	k := mustParse(t, shuffledLines(kallsymsFixture, 3))
	for _, tc := range []struct {
		name   string
		lo, hi uint64
		ok     bool
	}{
		{"local_fn", 0xffffffff81000110, 0xffffffff81000200, true},     // ends at the next function's __pfx_
		{"global_alias", 0xffffffff81000110, 0xffffffff81000200, true}, // an alias has the same code
		{"weak_fn", 0xffffffff81000370, 0xffffffff81000400, true},      // ends at _etext
		{"start_kernel", 0xffffffff81400010, 0xffffffff81400400, true},
		{"mod_fn", 0, 0, false},     // modules are not asked for
		{"init_mm", 0, 0, false},    // data
		{"no_such_fn", 0, 0, false}, // absent
	} {
		lo, hi, ok := k.FuncBounds(tc.name)
		if lo != tc.lo || hi != tc.hi || ok != tc.ok {
			t.Errorf("FuncBounds(%q) = %#x, %#x, %v; want %#x, %#x, %v", tc.name, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
	restricted := regexp.MustCompile(`(?m)^[0-9a-f]+ `).ReplaceAllString(kallsymsFixture, "0000000000000000 ")
	if lo, hi, ok := mustParse(t, restricted).FuncBounds("local_fn"); ok {
		t.Errorf("restricted table: FuncBounds(local_fn) = %#x, %#x, true; want not found", lo, hi)
	}
}

// TestKallsymsFuncBoundsNear picks, of two static functions of one name
// (a file that two others include), the copy beside the function given.
func TestKallsymsFuncBoundsNear(t *testing.T) {
	k := mustParse(t, `ffffffff81000100 T down_write
ffffffff81000200 t rwbase_write_lock
ffffffff81000300 T up_write
ffffffff81900100 T rt_write_lock
ffffffff81900200 t rwbase_write_lock
ffffffff81900300 T rt_write_unlock
ffffffff81a00000 T _etext
`)
	for _, tc := range []struct {
		near, lo, hi uint64
	}{
		{0xffffffff81000100, 0xffffffff81000200, 0xffffffff81000300},
		{0xffffffff81900100, 0xffffffff81900200, 0xffffffff81900300},
	} {
		if lo, hi, ok := k.FuncBoundsNear("rwbase_write_lock", tc.near); !ok || lo != tc.lo || hi != tc.hi {
			t.Errorf("FuncBoundsNear(rwbase_write_lock, %#x) = %#x, %#x, %v; want %#x, %#x", tc.near, lo, hi, ok, tc.lo, tc.hi)
		}
	}
	if _, _, ok := k.FuncBoundsNear("no_such_fn", 0xffffffff81000100); ok {
		t.Error("FuncBoundsNear found a function that is not there")
	}
}
