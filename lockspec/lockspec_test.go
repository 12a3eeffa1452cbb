package lockspec

import (
	"bufio"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// perfLockTypes is perf's lock_type_table: contention_begin flags -> type name.
var perfLockTypes = map[Flag]string{
	0:                      "semaphore",
	FlagSpin:               "spinlock",
	FlagSpin | FlagRead:    "rwlock:R",
	FlagSpin | FlagWrite:   "rwlock:W",
	FlagRead:               "rwsem:R",
	FlagWrite:              "rwsem:W",
	FlagRT:                 "rtmutex",
	FlagRT | FlagRead:      "rwlock-rt:R",
	FlagRT | FlagWrite:     "rwlock-rt:W",
	FlagPercpu | FlagRead:  "pcpu-sem:R",
	FlagPercpu | FlagWrite: "pcpu-sem:W",
	FlagMutex:              "mutex",
	FlagMutex | FlagSpin:   "mutex",
}

func catalogue(t *testing.T) *Spec {
	t.Helper()
	s, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCatalogue(t *testing.T) {
	s := catalogue(t)

	wantNames := []string{"semaphore", "spinlock", "rwlock:R", "rwlock:W", "rtmutex", "rwsem:R", "rwsem:W",
		"rwlock-rt:R", "rwlock-rt:W", "pcpu-sem:R", "pcpu-sem:W", "mutex"}
	if got := s.Names(); !slices.Equal(got, wantNames) {
		t.Errorf("Names() = %v, want %v", got, wantNames)
	}

	// perf names a wait by its flags alone; klockstat agrees except where
	// PREEMPT_RT's rw_semaphore announces the flags of its rwlock_t, or the
	// waits for the inner rtmutex of either those of an rtmutex, and the
	// acquire function on the stack decides.
	shared := map[Flag][]string{
		FlagRT:             {"rtmutex", "rwsem:R", "rwsem:W", "rwlock-rt:R", "rwlock-rt:W"},
		FlagRT | FlagRead:  {"rwsem:R", "rwlock-rt:R"},
		FlagRT | FlagWrite: {"rwsem:W", "rwlock-rt:W"},
	}
	table := s.FlagTable()
	for flags := range Flag(MaxFlags) {
		want, claimed := perfLockTypes[flags]
		if types, ok := shared[flags]; ok {
			want = types[0] // the first in the catalogue, when no acquire function is found
		}
		switch i := table[flags]; {
		case !claimed && i != -1:
			t.Errorf("flags %s: type %q, want none", flags, s.Types[i].Name)
		case claimed && i == -1:
			t.Errorf("flags %s: no type, want %q", flags, want)
		case claimed && s.Types[i].Name != want:
			t.Errorf("flags %s: type %q, want %q", flags, s.Types[i].Name, want)
		}
	}
	perFlags := map[Flag][]string{}
	for _, d := range s.Discriminators() {
		typ := s.Types[d.Type].Name
		if list := s.Types[d.Type].Acquire; d.Internal && !slices.Contains(s.Types[d.Type].Internal, d.Function) || !d.Internal && !slices.Contains(list, d.Function) {
			t.Errorf("discriminator %+v: %s is not an acquire or internal function of %s as it says", d, d.Function, typ)
		}
		if !slices.Contains(perFlags[d.Flags], typ) {
			perFlags[d.Flags] = append(perFlags[d.Flags], typ)
		}
	}
	if !maps.EqualFunc(perFlags, shared, slices.Equal) {
		t.Errorf("types told apart by their acquire functions: %v, want %v", perFlags, shared)
	}

	for _, typ := range s.Types {
		if typ.Description == "" {
			t.Errorf("type %q has no description", typ.Name)
		}
	}

	t.Run("acquire functions exist in kallsyms", func(t *testing.T) {
		f, err := os.Open("/proc/kallsyms")
		if err != nil {
			t.Skipf("cannot check against the running kernel: %v", err)
		}
		defer f.Close()
		symbols := make(map[string]bool)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fields := strings.Fields(sc.Text()); len(fields) >= 3 {
				symbols[fields[2]] = true
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("reading /proc/kallsyms: %v", err)
		}
		if len(symbols) == 0 {
			t.Skip("cannot check against the running kernel: /proc/kallsyms is empty")
		}
		checked := []string{"semaphore", "spinlock", "rwsem:R", "rwsem:W", "mutex", "pcpu-sem:R", "pcpu-sem:W"}
		if !symbols["rt_spin_lock"] { // PREEMPT_RT kernels replace rwlock_t
			checked = append(checked, "rwlock:R", "rwlock:W")
		}
		for _, typ := range s.Types {
			if !slices.Contains(checked, typ.Name) {
				continue
			}
			for _, fn := range typ.Acquire {
				// CONFIG_DEBUG_LOCK_ALLOC kernels have mutex_lock_nested instead of mutex_lock.
				if !symbols[fn] && !symbols[fn+"_nested"] {
					t.Errorf("%s: acquire function %s is not in /proc/kallsyms", typ.Name, fn)
				}
			}
		}
	})
}

func TestSelect(t *testing.T) {
	s := catalogue(t)

	all, err := s.Select(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(all.Names(), s.Names()) {
		t.Errorf("Select(nil) = %v, want all types %v", all.Names(), s.Names())
	}

	sel, err := s.Select([]string{"mutex", "spinlock", "mutex"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"spinlock", "mutex"}; !slices.Equal(sel.Names(), want) {
		t.Errorf("Select = %v, want %v (catalogue order)", sel.Names(), want)
	}
	if sel.Source != s.Source {
		t.Errorf("Select changed Source to %q", sel.Source)
	}
	table := sel.FlagTable()
	for flags := range Flag(MaxFlags) {
		want := int32(-1)
		switch perfLockTypes[flags] {
		case "spinlock":
			want = 0
		case "mutex":
			want = 1
		}
		if table[flags] != want {
			t.Errorf("selected FlagTable[%s] = %d, want %d", flags, table[flags], want)
		}
	}
	// A type that shares flags with one not selected: the waits the stack
	// gives to the other are left out, and so are those of unknown kind,
	// which the first type in the catalogue would have.
	rt, err := s.Select([]string{"rwlock-rt:R"})
	if err != nil {
		t.Fatal(err)
	}
	if i := rt.FlagTable()[FlagRT|FlagRead]; i != -1 {
		t.Errorf("rwlock-rt:R alone: FlagTable[RT|READ] = %d, want -1 (rwsem:R comes first)", i)
	}
	byFunction := map[string]int32{}
	for _, d := range rt.Discriminators() {
		if d.Flags == FlagRT|FlagRead && !d.Internal {
			byFunction[d.Function] = d.Type
		}
	}
	if byFunction["rt_read_lock"] != 0 || byFunction["down_read"] != -1 {
		t.Errorf("rwlock-rt:R alone: discriminators %v, want rt_read_lock -> 0, down_read -> -1", byFunction)
	}
	if !sel.IsLockFunction("mutex_lock") || sel.IsLockFunction("down_read") {
		t.Error("selected spec does not index exactly the functions of its types")
	}
	if len(s.Types) != 12 || !s.IsLockFunction("down_read") {
		t.Error("Select changed the original spec")
	}

	_, err = s.Select([]string{"spinlock", "mutx"})
	want := `unknown lock type "mutx" in --types (known: ` + strings.Join(s.Names(), ", ") + ")"
	if err == nil || err.Error() != want {
		t.Errorf("Select(mutx) error = %v, want %s", err, want)
	}

	// Names are trimmed as typed after a comma; an empty list or name is a mistake, not "all".
	typed := []string{" mutex", "spinlock "}
	if sel, err := s.Select(typed); err != nil || !slices.Equal(sel.Names(), []string{"spinlock", "mutex"}) {
		t.Errorf("Select(%q) = %v, %v; want spinlock and mutex", typed, sel, err)
	}
	if typed[0] != " mutex" {
		t.Errorf("Select changed its argument to %q", typed)
	}
	for _, names := range [][]string{{}, {"mutex", " "}} {
		if _, err := s.Select(names); err == nil || !strings.Contains(err.Error(), "empty") {
			t.Errorf("Select(%q) error = %v, want one about an empty list or name", names, err)
		}
	}
}

func TestIsLockFunction(t *testing.T) {
	s := catalogue(t)
	tests := []struct {
		name string
		want bool
	}{
		{"mutex_lock", true},
		{"_raw_spin_lock_irqsave", true},
		{"queued_spin_lock_slowpath", true},
		{"mutex_unlock", true},
		{"rwsem_down_write_slowpath.constprop.0", true},
		{"__mutex_lock.constprop.0", true},
		{"rwsem_wake.isra.0", true},
		{"mutex_lock_nested", true},
		{"_raw_spin_lock_irqsave_nested", true},
		{"down_read_killable_nested", true},
		{"mutex_lock_io_nested", true},
		{"vm_mmap_pgoff", false},
		{"schedule_preempt_disabled", false},
		{"mutex_lock_foo", false},
		{"mutex", false},
		{"_nested", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := s.IsLockFunction(tt.name); got != tt.want {
			t.Errorf("IsLockFunction(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestFlagString(t *testing.T) {
	tests := []struct {
		flags Flag
		want  string
	}{
		{0, "0"},
		{FlagSpin, "SPIN"},
		{FlagMutex | FlagSpin, "SPIN|MUTEX"},
		{FlagPercpu | FlagWrite, "WRITE|PERCPU"},
		{FlagRT | 1<<7, "RT|0x80"},
	}
	for _, tt := range tests {
		if got := tt.flags.String(); got != tt.want {
			t.Errorf("Flag(%#x).String() = %q, want %q", uint32(tt.flags), got, tt.want)
		}
	}
}

func TestSpinning(t *testing.T) {
	s := catalogue(t)
	spinning := map[string]bool{"spinlock": true, "rwlock:R": true, "rwlock:W": true}
	for _, typ := range s.Types {
		if got := typ.Spinning(); got != spinning[typ.Name] {
			t.Errorf("%s: Spinning() = %v, want %v (flags %v)", typ.Name, got, spinning[typ.Name], typ.Flags)
		}
	}
	if (Type{}).Spinning() {
		t.Error("a type without flags spins")
	}
}

func TestKernelFunctions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kernel []string // functions of the kernel
		want   []string
	}{
		{"mutex_lock", []string{"mutex_lock"}, []string{"mutex_lock"}},
		// CONFIG_DEBUG_LOCK_ALLOC: mutex_lock is a macro for mutex_lock_nested.
		{"mutex_lock", []string{"mutex_lock_nested", "mutex_unlock"}, []string{"mutex_lock_nested"}},
		// ...while down_read stays and down_read_nested joins it.
		{"down_read", []string{"down_read", "down_read_nested"}, []string{"down_read", "down_read_nested"}},
		{"down_read", []string{"down_read_trylock"}, nil},
		{"mutex_lock_nested", []string{"mutex_lock_nested", "mutex_lock_nested_nested"}, []string{"mutex_lock_nested"}},
		{"__mutex_lock.constprop.0", []string{"__mutex_lock.constprop.0", "__mutex_lock.constprop.0_nested"}, []string{"__mutex_lock.constprop.0"}},
		{"klockstat_missing", nil, nil},
	} {
		exists := func(fn string) bool { return slices.Contains(tc.kernel, fn) }
		if got := KernelFunctions(tc.name, exists); !slices.Equal(got, tc.want) {
			t.Errorf("KernelFunctions(%q) on a kernel with %v = %v, want %v", tc.name, tc.kernel, got, tc.want)
		}
	}
}
