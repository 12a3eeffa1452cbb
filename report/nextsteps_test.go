package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
)

// stepCase is a rule's case: a change to renameCapture of every process and the options, and the
// step the rule gives, or none when want is "".
type stepCase struct {
	name    string
	change  func(c *capture.Capture)
	o       SummaryOptions
	want    string // the command
	wantWhy string // a part of why
}

// checkRule runs rule on each case.
func checkRule(t *testing.T, rule func(*model, SummaryOptions) (nextStep, bool), cases []stepCase) {
	t.Helper()
	for _, tc := range cases {
		c := renameCapture(t, capture.ScopeSystem)
		if tc.change != nil {
			tc.change(c)
		}
		step, ok := rule(newModel(c, true, nil), tc.o)
		switch {
		case ok != (tc.want != ""):
			t.Errorf("%s: step %v (%q), want one: %v", tc.name, ok, step, tc.want != "")
		case ok && (step.command != tc.want || !strings.Contains(step.why, tc.wantWhy)):
			t.Errorf("%s:\n got %q  # %s\nwant %q  # ...%s...", tc.name, step.command, step.why, tc.want, tc.wantWhy)
		}
	}
}

// The capture's command line, and the command's, with what the rules change in them.
const (
	klockstatArgs = "klockstat -d 5s --json before.json"
	stressNG      = "-- stress-ng --rename 2 -t 4s"
)

func TestMapSizeStep(t *testing.T) {
	mapFull := "aggregation map full (an entry per thread, lock and stack: raise --map-nr-entries, or narrow the capture with -p, --comm or -Y)"
	checkRule(t, mapSizeStep, []stepCase{
		{name: "nothing lost"},
		{name: "a full map", change: func(c *capture.Capture) {
			c.Meta.Lost = []capture.Lost{{Reason: mapFull, Count: 17}, {Reason: "kernel skipped the probe", Count: 4}}
		}, want: klockstatArgs + " -M 262144 " + stressNG, wantWhy: "17 events lost to full maps of 65536 entries"},
		{name: "a named map, -M given, a larger map not sized by -M", change: func(c *capture.Capture) {
			c.Meta.Lost = []capture.Lost{{Reason: mapFull, Count: 222, Map: "aggregate"}}
			c.Meta.MapSizes = map[string]uint32{"aggregate": 64, "command_tree": 32768}
			c.Meta.CommandLine = slices.Insert(slices.Clone(c.Meta.CommandLine), 1, "-M", "64")
		}, want: klockstatArgs + " -M 256 " + stressNG, wantWhy: "222 events lost to full maps: aggregate (64 entries), which -M (--map-nr-entries) sizes"},
		{name: "-M64 and --map-nr-entries=64 replaced", change: func(c *capture.Capture) {
			c.Meta.Lost = []capture.Lost{{Reason: mapFull, Count: 2, Map: "aggregate"}, {Reason: "per-thread wait map full", Count: 1, Map: "thread_waits"}}
			c.Meta.MapSizes = map[string]uint32{"aggregate": 64, "thread_waits": 128}
			c.Meta.CommandLine = slices.Insert(slices.Clone(c.Meta.CommandLine), 1, "-M64", "--map-nr-entries=64")
		}, want: klockstatArgs + " -M 512 " + stressNG, wantWhy: "3 events lost to full maps: aggregate (64 entries), thread_waits (128 entries), which -M"},
		{name: "an older capture's map", change: func(c *capture.Capture) {
			c.Meta.Lost = []capture.Lost{{Reason: "per-thread wait map full (more live threads waited than --map-size: raise it)", Count: 1}}
			c.Meta.MapSizes["thread_waits"] = 100_000
		}, want: klockstatArgs + " -M 400000 " + stressNG, wantWhy: "1 event lost"},
		{name: "lost for no map", change: func(c *capture.Capture) {
			c.Meta.Lost = []capture.Lost{{Reason: "more than 4 nested waits on one CPU", Count: 9}}
		}},
	})
}

func TestStacksStep(t *testing.T) {
	noStacks := func(args ...string) func(c *capture.Capture) {
		return func(c *capture.Capture) {
			c.Meta.StackDepth = 0
			c.Meta.CommandLine = slices.Insert(slices.Clone(c.Meta.CommandLine), 1, args...)
		}
	}
	checkRule(t, stacksStep, []stepCase{
		{name: "stacks taken"},
		{name: "--max-stack 0", change: noStacks("--max-stack", "0"), want: klockstatArgs + " " + stressNG, wantWhy: "stacks were off"},
		{name: "--max-stack=0", change: noStacks("--max-stack=0"), want: klockstatArgs + " " + stressNG, wantWhy: "callers and stacks"},
		{name: "old --stack-depth", change: noStacks("--stack-depth", "0"), want: klockstatArgs + " " + stressNG},
		{name: "no command line", change: func(c *capture.Capture) { c.Meta.StackDepth, c.Meta.CommandLine = 0, nil }, want: "klockstat ..."},
		{name: "nothing waited", change: func(c *capture.Capture) { c.Meta.StackDepth, c.Records = 0, nil }},
	})
}

func TestOwnersStep(t *testing.T) {
	spinning := func(c *capture.Capture) {
		for i := range c.Records {
			c.Records[i].SpinNS = c.Records[i].TotalNS // the mutexes spun all their wait
		}
		c.Records = slices.DeleteFunc(c.Records, func(r capture.Record) bool { return r.Type == "rwsem:W" })
	}
	checkRule(t, ownersStep, []stepCase{
		{name: "slept on mutexes and rwsems", want: klockstatArgs + " --owners " + stressNG, wantWhy: "100.0% of the wait slept on sleeping locks"},
		{name: "slept on a percpu rwsem", change: func(c *capture.Capture) {
			for i := range c.Records {
				c.Records[i].Type = "pcpu-sem:R"
			}
		}, want: klockstatArgs + " --owners " + stressNG, wantWhy: "who held or blocked"},
		{name: "owners captured", change: func(c *capture.Capture) {
			c.Owners = []capture.Owner{{Type: "spinlock", Reason: capture.OwnerNoField, Count: 1, TotalNS: 5_000}}
		}},
		{name: "spun", change: spinning},
		{name: "spinlocks", change: func(c *capture.Capture) {
			for i := range c.Records {
				c.Records[i].Type = "spinlock"
			}
		}},
	})
}

func TestByOwnerStep(t *testing.T) {
	owners := func(c *capture.Capture) {
		c.Owners = []capture.Owner{{Type: "mutex", Lock: 0xffff888104c2a408, Comm: "stress-ng-renam", PID: 101, TID: 101, Count: 3, TotalNS: 250_000_000}}
	}
	saved := SummaryOptions{Saved: "my captures/before.json"}
	checkRule(t, byOwnerStep, []stepCase{
		{name: "no owners", o: saved},
		{name: "owners", change: owners, o: saved, want: "klockstat report 'my captures/before.json' --by owner", wantWhy: "states and critical sections"},
		{name: "summary by owner", change: owners, o: SummaryOptions{Saved: "before.json", By: OwnerView}},
		{name: "not saved", change: owners},
		{name: "unknown owners only", change: func(c *capture.Capture) {
			c.Owners = []capture.Owner{{Type: "spinlock", Reason: capture.OwnerNoField, Count: 1, TotalNS: 5_000}}
		}, o: saved},
	})
}

func TestSourcesStep(t *testing.T) {
	saved := SummaryOptions{Saved: "before.json"}
	checkRule(t, sourcesStep, []stepCase{
		{name: "saved, no lines", o: saved, change: func(c *capture.Capture) { c.Meta.Kernel = "6.1.0-56-cloud-amd64" },
			want:    "klockstat report before.json --vmlinux /usr/lib/debug/boot/vmlinux-6.1.0-56-cloud-amd64",
			wantWhy: "apt install linux-image-6.1.0-56-cloud-amd64-dbg"},
		{name: "not saved"},
		{name: "lines already", o: saved, change: func(c *capture.Capture) { c.Sources = &capture.Sources{} }},
		{name: "no stacks", o: saved, change: func(c *capture.Capture) { c.Meta.StackDepth = 0 }},
		{name: "a kernel release that is a path", o: saved, change: func(c *capture.Capture) { c.Meta.Kernel = "../../etc" }},
	})
}

func TestScopeStep(t *testing.T) {
	checkRule(t, scopeStep, []stepCase{
		{name: "others outweigh the command", want: klockstatArgs + " --scope command " + stressNG, wantWhy: "68.2% of these were other processes'"},
		{name: "the command outweighs the others", change: func(c *capture.Capture) {
			c.Records = slices.DeleteFunc(c.Records, func(r capture.Record) bool { return r.Name == "mmap_lock" })
		}},
		{name: "the command's only", change: func(c *capture.Capture) { c.Meta.Scope = capture.ScopeCommand }},
		{name: "before scopes", change: func(c *capture.Capture) { c.Meta.Scope = "" }},
	})
}

func TestScaleStep(t *testing.T) {
	workload := func(argv ...string) func(c *capture.Capture) {
		return func(c *capture.Capture) { c.Meta.Workload = argv }
	}
	checkRule(t, scaleStep, []stepCase{
		{name: "a level", want: "klockstat scale -- stress-ng --rename '{N}' -t 4s", wantWhy: "2 here"},
		{name: "make's jobs", change: workload("make", "-j8"), want: "klockstat scale -- make '-j{N}'", wantWhy: "8 here"},
		{name: "make's long jobs", change: workload("make", "--jobs=16", "all"), want: "klockstat scale -- make '--jobs={N}' all"},
		{name: "two numbers", change: workload("stress-ng", "--rename", "2", "-t", "4")},
		{name: "no number", change: workload("stress-ng", "--rename", "0", "-t", "4s")},
		{name: "no workload", change: workload()},
		{name: "a level of a sweep", change: func(c *capture.Capture) {
			c.Meta.CommandLine = []string{"klockstat", "scale", "--", "stress-ng", "--rename", "{N}"}
		}},
		{name: "little waiting", change: func(c *capture.Capture) {
			// The command's one thread waits 1 ms of its 4 s: locks do not limit how it scales.
			c.Records = slices.DeleteFunc(c.Records, func(r capture.Record) bool { return r.PID == 101 || r.Caller == "do_renameat2+0x3a0" })
			c.Records[0].TotalNS, c.Records[0].Count = 1_000_000, 1
		}},
	})
}

func TestDiffStep(t *testing.T) {
	checkRule(t, diffStep, []stepCase{
		{name: "saved as json", o: SummaryOptions{Saved: "before.json"}, want: "klockstat diff before.json AFTER.json", wantWhy: "capture again to AFTER.json"},
		{name: "saved as a report", o: SummaryOptions{Saved: "out/r.html"}, want: "klockstat diff out/r.html AFTER.html"},
		{name: "not saved"},
		{name: "nothing waited", change: func(c *capture.Capture) { c.Records = nil }, o: SummaryOptions{Saved: "before.json"}},
	})
}

// TestWriteSummaryNextSteps: the summary closes with the steps that fit, in the rules' order, each
// under a comment that says why, so that the block pastes into a shell; text from the capture cannot
// drive the terminal.
func TestWriteSummaryNextSteps(t *testing.T) {
	c := renameCapture(t, capture.ScopeSystem)
	c.Meta.Lost = []capture.Lost{{Reason: "aggregation map full\x1b[2J", Count: 2}}
	c.Meta.Workload[0] = "stress-ng\x1b]0;x\x07"
	o := SummaryOptions{Saved: "before.json"}
	var b bytes.Buffer
	if err := WriteSummary(&b, c, o); err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(b.String(), "\n\nnext steps:\n")
	if !ok {
		t.Fatalf("no next steps:\n%s", b.String())
	}
	var want []string
	for _, s := range nextSteps(newModel(c, true, nil), o) {
		want = append(want, "  # "+sanitize(s.why), "  "+sanitize(s.command))
	}
	if len(want) != 2*5 { // -M, --owners, --scope, scale, diff
		t.Fatalf("%d steps, want 5: %q", len(want)/2, want)
	}
	if got := strings.Split(strings.TrimSuffix(block, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("next steps\n got %q\nwant %q", got, want)
	}
	if strings.ContainsAny(block, "\x1b\x07") {
		t.Errorf("an escape reached the terminal:\n%q", block)
	}
	for i, prefix := range []string{"klockstat -d 5s --json before.json -M ", "klockstat -d 5s --json before.json --owners ", "klockstat -d 5s --json before.json --scope command ", "klockstat scale ", "klockstat diff "} {
		if !strings.HasPrefix(want[2*i+1], "  "+prefix) {
			t.Errorf("step %d is %q, want %q first", i, want[2*i+1], prefix)
		}
	}
	if !strings.HasSuffix(b.String(), want[len(want)-1]+"\n") {
		t.Errorf("the next steps do not close the summary:\n%s", b.String())
	}
}

// TestLevelArg finds the one level of parallelism of a command line.
func TestLevelArg(t *testing.T) {
	for _, tc := range []struct {
		argv  []string
		level string
		want  []string
	}{
		{[]string{"stress-ng", "--rename", "4", "-t", "10s"}, "4", []string{"stress-ng", "--rename", "{N}", "-t", "10s"}},
		{[]string{"make", "-j", "8"}, "8", []string{"make", "-j", "{N}"}},
		{[]string{"fio", "--numjobs=4", "--size=4"}, "", nil}, // neither is a level klockstat knows
		{[]string{"8"}, "", nil}, // the program, not an argument
		{[]string{"sh", "-c", "x 4"}, "", nil},
		{nil, "", nil},
	} {
		level, got, ok := levelArg(tc.argv)
		if ok != (tc.want != nil) || level != tc.level || !slices.Equal(got, tc.want) {
			t.Errorf("levelArg(%q) = %q, %q, %v; want %q, %q", tc.argv, level, got, ok, tc.level, tc.want)
		}
	}
}
