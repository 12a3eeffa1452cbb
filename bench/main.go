// Command bench measures what klockstat's probes cost, side by side in one
// run with no tracing, an empty probe on the same tracepoints, bpftrace,
// perf lock record and perf lock contention -b: the probe time per
// contention event from the kernel's BPF run statistics, and the throughput
// of the contention workloads relative to no tracing (runs interleaved A B A
// B, median ratio, so drift of the machine cancels). It prints Markdown
// tables for BENCHMARKS.md.
//
// As root:
//
//	go run ./bench [-workloads mmap,pipe,inode,spin] [-real all] [-duration 3s] [-rounds 5] [-perf PATH] [-throughput]
//
// -real adds programs nobody here wrote (stress-ng, perf bench, hackbench,
// fio, a parallel build of Go's standard library; apt-get install stress-ng
// rt-tests fio): klockstat, bpftrace, perf lock contention -b and the empty
// program attached together, on the same events, their costs per event and
// klockstat's ratio to each. -throughput measures instead what each tool,
// attached alone, costs those programs' own figures (bogo ops/s, IOPS, a
// build's wall time).
//
// perf lock contention -b needs a perf built with BPF skeletons, which
// Debian's is not: sh bench/perf-skel/build.sh builds one from Debian's
// kernel source and caches it, where -perf finds it by default; without
// one, the perf -b columns are left out.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/collector"
	"github.com/klockstat/klockstat/internal/host"
	"github.com/klockstat/klockstat/internal/workload"
	"github.com/klockstat/klockstat/lockspec"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == childCommand {
		os.Exit(runChild(os.Args[2:]))
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// childCommand makes this binary run one workload in a process of its own:
// klockstat ignores the process it runs in.
const childCommand = "__workload"

func runChild(args []string) int {
	fs := flag.NewFlagSet(childCommand, flag.ContinueOnError)
	var o workload.Options
	fs.StringVar(&o.Lock, "lock", "mmap", "")
	fs.IntVar(&o.Threads, "threads", 4, "")
	fs.DurationVar(&o.Duration, "duration", 3*time.Second, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	res, err := workload.Run(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

type options struct {
	workloads []string
	real      []realWorkload
	realFlag  string // -real as given
	duration  time.Duration
	rounds    int
	threads   int
	locks     string
	// perf is a perf built with BPF skeletons, for perf lock contention
	// -b; "" leaves it out.
	perf       string
	throughput bool // -real measures the workloads' own throughput, not probe time
}

func run() error {
	var (
		o         options
		workloads string
	)
	var real string
	flag.StringVar(&workloads, "workloads", "mmap,pipe,inode,spin", "contend workloads to measure (\"\" for none): "+strings.Join(workload.Names(), ", "))
	flag.StringVar(&real, "real", "all", "real workloads to measure, words of their names, comma-separated (\"\" for none, all): "+strings.Join(realWorkloadNames(), "; "))
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "length of one workload run")
	flag.IntVar(&o.rounds, "rounds", 5, "interleaved baseline/traced pairs per configuration")
	flag.IntVar(&o.threads, "threads", 4, "workload threads")
	flag.StringVar(&o.locks, "locks", "", "lock catalogue `FILE` (default: the embedded locks.json)")
	flag.StringVar(&o.perf, "perf", defaultPerf(), "`perf` built with BPF skeletons, for perf lock contention -a -b (sh bench/perf-skel/build.sh; \"\" for none)")
	flag.BoolVar(&o.throughput, "throughput", false, "for the -real workloads, measure the throughput each tool costs them instead of its probe time (longer)")
	flag.Parse()
	if workloads != "" {
		o.workloads = strings.Split(workloads, ",")
	}
	var err error
	o.realFlag = real
	if o.real, err = selectReal(real); err != nil {
		return err
	}
	if err := missingTools(o.real); err != nil {
		return err
	}
	if o.rounds < 1 || o.duration <= 0 || o.threads < 1 {
		return errors.New("-rounds, -duration and -threads must be positive")
	}
	if os.Geteuid() != 0 {
		return errors.New("needs root to load BPF programs")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return err
	}
	spec, err := lockspec.Default()
	if o.locks != "" {
		var data []byte
		if data, err = os.ReadFile(o.locks); err != nil {
			return fmt.Errorf("reading -locks: %w", err)
		}
		spec, err = lockspec.Parse(o.locks, data)
	}
	if err != nil {
		return err
	}
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return fmt.Errorf("enabling BPF run-time statistics: %w", err)
	}
	statsOff := sync.OnceValue(stats.Close)
	defer statsOff()

	configs := []config{
		{name: "empty BPF program (floor)", probe: func() (probe, error) { return startEmpty() }},
		{name: "klockstat, no stacks", probe: klockstatProbe(spec, 0, 65536, false)},
		{name: "klockstat, default (stack depth 16)", probe: klockstatProbe(spec, 16, 65536, false)},
		{name: "klockstat, default with --owners", probe: klockstatProbe(spec, 16, 65536, true)},
		{name: "klockstat, stack depth 127", probe: klockstatProbe(spec, 127, 65536, false)},
		{name: "bpftrace, same data (stack depth 16)", probe: func() (probe, error) { return startBpftrace(16) }},
		{name: "bpftrace, same data (stack depth 127)", probe: func() (probe, error) { return startBpftrace(127) }},
		{name: "perf lock record -a", probe: func() (probe, error) { return startPerf() }},
	}
	const klockstatDefault = 2 // the configuration compared with perf -b
	perfBaseline := -1         // perf -b at klockstat's default depth
	if o.perf != "" {
		perfBaseline = len(configs)
		configs = append(configs,
			config{name: "perf lock contention -a -b --max-stack 16", probe: func() (probe, error) { return startPerfContention(o.perf, 16) }},
			config{name: "perf lock contention -a -b (default depth 8)", probe: func() (probe, error) { return startPerfContention(o.perf, 8) }})
	}

	printMachine(os.Stdout, o)
	for _, w := range o.workloads {
		fmt.Printf("\n### Workload `%s` (%d threads, %v per run, %d rounds)\n\n", w, o.threads, o.duration, o.rounds)
		results := make([]result, len(configs))
		for i, c := range configs {
			if results[i], err = measure(o, w, c); err != nil {
				return fmt.Errorf("%s, %s: %w", w, c.name, err)
			}
		}
		fmt.Println("| configuration | probe ns/event (median) | throughput vs untraced (median) | events/s | stacks walked, per round | events lost (all rounds) | ns/event / perf -b's |")
		fmt.Println("| --- | ---: | ---: | ---: | --- | --- | ---: |")
		for i, c := range configs {
			var base []float64
			if perfBaseline >= 0 {
				base = results[perfBaseline].costs
			}
			fmt.Println(results[i].row(c.name, base))
		}
		if perfBaseline >= 0 {
			fmt.Printf("\nklockstat (default) / perf -b --max-stack 16, per round (separate runs): %s.\n",
				ratiosCell(results[klockstatDefault].costs, results[perfBaseline].costs))
		}
	}
	if o.perf == "" {
		fmt.Printf("\nNo perf lock contention -b column: no perf with BPF skeletons at %s (sh bench/perf-skel/build.sh builds one; -perf names another).\n", perfCacheGlob)
	}
	if o.throughput {
		// Each tool as its users run it: held on here, the statistics
		// would add the kernel's timing of every program run to every
		// tool's cost (klockstat turns them on 10% of the time itself).
		if err := statsOff(); err != nil {
			return fmt.Errorf("turning BPF run-time statistics off: %w", err)
		}
		if err := throughputTable(o, spec, o.real); err != nil {
			return err
		}
	} else if err := realTable(o, spec, o.real); err != nil {
		return err
	}
	return capacity(o, spec)
}

// ratiosCell renders a/b per round, with their median, e.g. "0.91 1.02
// (median 0.97x)".
func ratiosCell(a, b []float64) string {
	var ratios []float64
	var parts []string
	for i := range min(len(a), len(b)) {
		ratios = append(ratios, a[i]/b[i])
		parts = append(parts, fmt.Sprintf("%.2f", a[i]/b[i]))
	}
	return fmt.Sprintf("%s (median %.2fx)", strings.Join(parts, " "), median(ratios))
}

// config is one way of tracing the workload.
type config struct {
	name  string
	probe func() (probe, error)
}

// probe is tracing in progress.
type probe interface {
	// stop ends tracing and returns what it cost and captured.
	stop() (probeResult, error)
}

type probeResult struct {
	nsPerEvent float64           // NaN: not measured (perf records through perf events)
	events     uint64            // contention events the probe saw; 0 with NaN cost
	lost       map[string]uint64 // by reason; nil when the tool cannot tell
	walked     string            // share of stacks walked rather than recognised
	rescued    uint64            // nested events the kernel skipped, taken by rescue copies
}

type result struct {
	walked        []string
	ratios, costs []float64
	events        uint64
	seconds       float64
	lost          map[string]uint64 // nil when the tool cannot tell
	rescued       uint64
}

// lostCell renders lost events as "0" or "3 (2 reason, 1 reason)", and
// how many the rescue copies saved from being lost.
func lostCell(lost map[string]uint64, rescued uint64) string {
	if lost == nil {
		return "n/a"
	}
	if rescued > 0 {
		return fmt.Sprintf("%s; %d rescued", lostCell(lost, 0), rescued)
	}
	var total uint64
	var parts []string
	for _, reason := range slices.Sorted(maps.Keys(lost)) {
		total += lost[reason]
		parts = append(parts, fmt.Sprintf("%d %s", lost[reason], reason))
	}
	if total == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}

func lostByReason(m capture.Meta) map[string]uint64 {
	lost := map[string]uint64{}
	for _, l := range m.Lost {
		lost[l.Reason] += l.Count
	}
	return lost
}

// row renders the result; perfCosts, perf -b's costs per round, give the
// last column, the ratio of medians (nil: no perf).
func (r result) row(name string, perfCosts []float64) string {
	cost := "n/a"
	if c := median(r.costs); !math.IsNaN(c) {
		cost = fmt.Sprintf("%.0f", c)
	}
	rate := "n/a"
	if r.events > 0 {
		rate = fmt.Sprintf("%.0f", float64(r.events)/r.seconds)
	}
	walked := "n/a"
	if len(r.walked) > 0 && r.walked[0] != "" {
		walked = strings.Join(r.walked, " ")
	}
	toPerf := "n/a"
	if q := median(r.costs) / median(perfCosts); !math.IsNaN(q) && !math.IsInf(q, 0) {
		toPerf = fmt.Sprintf("%.2fx", q)
	}
	return fmt.Sprintf("| %s | %s | %.1f%% | %s | %s | %s | %s |", name, cost, 100*median(r.ratios), rate, walked, lostCell(r.lost, r.rescued), toPerf)
}

// measure runs untraced and traced workloads in turn and keeps the ratio of
// each pair.
func measure(o options, w string, c config) (result, error) {
	var r result
	for range o.rounds {
		base, err := runWorkload(o, w)
		if err != nil {
			return r, err
		}
		p, err := c.probe()
		if err != nil {
			return r, err
		}
		traced, werr := runWorkload(o, w)
		pr, err := p.stop()
		if werr != nil {
			return r, werr
		}
		if err != nil {
			return r, err
		}
		r.ratios = append(r.ratios, traced/base)
		r.costs = append(r.costs, pr.nsPerEvent)
		r.events += pr.events
		r.seconds += o.duration.Seconds()
		r.walked = append(r.walked, pr.walked)
		r.rescued += pr.rescued
		if pr.lost != nil {
			if r.lost == nil {
				r.lost = map[string]uint64{}
			}
			for reason, n := range pr.lost {
				r.lost[reason] += n
			}
		}
	}
	return r, nil
}

// runWorkload runs one workload in a child process and returns its
// operations per second.
func runWorkload(o options, w string) (float64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, childCommand, "-lock", w, "-threads", fmt.Sprint(o.threads), "-duration", o.duration.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("workload %s: %w: %s", w, err, stderr.String())
	}
	var res workload.Result
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, fmt.Errorf("workload %s output: %w", w, err)
	}
	return res.OpsPerSec, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// klockstatProbe captures system-wide, as klockstat does by default, with
// lock owners or without.
func klockstatProbe(spec *lockspec.Spec, depth int, mapSize uint32, owners bool) func() (probe, error) {
	return func() (probe, error) {
		cfg := collector.Config{Spec: spec, Probe: "auto", StackDepth: depth, MapSize: mapSize, Owners: owners}
		if owners {
			cfg.OwnerSampleHz = collector.DefaultOwnerSampleHz // as --owners samples them
		}
		c, err := collector.Start(cfg)
		if err != nil {
			return nil, err
		}
		return klockstatRun{c}, nil
	}
}

type klockstatRun struct{ c *collector.Collector }

func (k klockstatRun) stop() (probeResult, error) {
	defer k.c.Close()
	cp, err := k.c.Stop()
	if err != nil {
		return probeResult{}, err
	}
	walked := "-"
	if st := cp.Meta.Stacks; st.Walked+st.Known > 0 {
		walked = fmt.Sprintf("%.0f%%", 100*float64(st.Walked)/float64(st.Walked+st.Known))
	}
	// Thread exits and context switches count too: bpftrace has no such programs.
	return probeResult{nsPerEvent: cp.Meta.ProbeNSPerEventWithHooks(), events: cp.Meta.Events.Begin, lost: lostByReason(cp.Meta), walked: walked, rescued: cp.Meta.Events.Rescued}, nil
}

type emptyRun struct {
	objs  emptyObjects
	links []link.Link
}

func startEmpty() (*emptyRun, error) {
	e := &emptyRun{}
	if err := loadEmptyObjects(&e.objs, nil); err != nil {
		return nil, fmt.Errorf("loading the empty probe: %w", err)
	}
	for name, prog := range map[string]*ebpf.Program{"contention_begin": e.objs.EmptyBegin, "contention_end": e.objs.EmptyEnd} {
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: name, Program: prog})
		if err != nil {
			e.close()
			return nil, fmt.Errorf("attaching the empty probe: %w", err)
		}
		e.links = append(e.links, l)
	}
	return e, nil
}

func (e *emptyRun) close() {
	for _, l := range e.links {
		l.Close()
	}
	e.objs.Close()
}

func (e *emptyRun) stop() (probeResult, error) {
	defer e.close()
	return costOf([]*ebpf.Program{e.objs.EmptyBegin, e.objs.EmptyEnd})
}

// costOf sums the programs' run time per run of the first (begin) one.
func costOf(progs []*ebpf.Program) (probeResult, error) {
	var runtime time.Duration
	var begins uint64
	for i, p := range progs {
		s, err := p.Stats()
		if err != nil {
			return probeResult{}, err
		}
		runtime += s.Runtime
		if i == 0 {
			begins = s.RunCount
		}
	}
	if begins == 0 {
		return probeResult{nsPerEvent: math.NaN()}, nil
	}
	return probeResult{nsPerEvent: float64(runtime.Nanoseconds()) / float64(begins), events: begins}, nil
}

// bpftraceScript keeps what klockstat keeps: wait-time statistics per lock
// address and kernel stack. It takes the stack where klockstat does, at
// contention_begin: walked at contention_end, after the waiter slept, the
// same stack costs 1.4 to 1.8 us more per event.
const bpftraceScript = `
tracepoint:lock:contention_begin { @start[tid] = nsecs; @stk[tid] = kstack(%d); }
tracepoint:lock:contention_end /@start[tid]/ {
	@wait[args->lock_addr, @stk[tid]] = stats(nsecs - @start[tid]);
	delete(@start[tid]);
	delete(@stk[tid]);
}`

type bpftraceRun struct {
	cmd   *exec.Cmd
	progs []*ebpf.Program
}

func startBpftrace(depth int) (*bpftraceRun, error) {
	before, err := maxProgramID()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("bpftrace", "-B", "line", "-e", fmt.Sprintf(bpftraceScript, depth))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting bpftrace (apt-get install bpftrace): %w", err)
	}
	attached := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Attaching") {
				close(attached)
				break
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case <-attached:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		return nil, errors.New("bpftrace did not attach within 60s")
	}
	b := &bpftraceRun{cmd: cmd}
	// bpftrace says it is attaching before it loads anything.
	if b.progs, err = awaitPrograms(before, ebpf.TracePoint, nil); err != nil {
		b.stop()
		return nil, fmt.Errorf("bpftrace: %w", err)
	}
	return b, nil
}

// awaitPrograms waits for a tool to load its two contention programs of
// type typ, after the program with id before, and for it to attach them;
// the begin program comes first, as costOf expects. Both bpftrace's and
// perf's are named after the tracepoints; the type tells them apart, and
// the id from klockstat's.
// It gives up when exited is closed: the tool is gone.
func awaitPrograms(before ebpf.ProgramID, typ ebpf.ProgramType, exited <-chan struct{}) ([]*ebpf.Program, error) {
	var progs []*ebpf.Program
	deadline := time.After(30 * time.Second)
	for _, name := range []string{"contention_begin", "contention_end"} {
		p := newProgram(name, typ, before)
		for p == nil {
			select {
			case <-time.After(50 * time.Millisecond):
				p = newProgram(name, typ, before)
				continue
			case <-deadline:
			case <-exited:
			}
			for _, p := range progs {
				p.Close()
			}
			return nil, fmt.Errorf("no %v program named %s loaded", typ, name)
		}
		progs = append(progs, p)
	}
	time.Sleep(200 * time.Millisecond) // attached once both are loaded
	return progs, nil
}

func (b *bpftraceRun) stop() (probeResult, error) {
	done := make(chan struct{})
	go func() { b.cmd.Wait(); close(done) }()
	// bpftrace sometimes misses a SIGINT that comes while it is still
	// setting up its event loop, and waits forever: ask again, then kill.
	return stopTool(b.cmd.Process, done, b.progs, os.Interrupt, os.Interrupt, os.Kill)
}

// stopTool reads the cost of another tool's two programs, closes them, and
// sends the tool's process the signals one by one, each after the last
// went unanswered for 10 s, until it has exited.
func stopTool(process *os.Process, exited <-chan struct{}, progs []*ebpf.Program, signals ...os.Signal) (probeResult, error) {
	res, err := probeResult{nsPerEvent: math.NaN()}, error(nil)
	if len(progs) == 2 {
		res, err = costOf(progs)
		res.walked = "all"
	}
	for _, p := range progs {
		p.Close()
	}
	for _, sig := range signals {
		process.Signal(sig)
		select {
		case <-exited:
			return res, err
		case <-time.After(10 * time.Second):
		}
	}
	<-exited
	return res, err
}

func maxProgramID() (ebpf.ProgramID, error) {
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			return id, nil
		}
		if err != nil {
			return 0, fmt.Errorf("listing BPF programs: %w", err)
		}
		id = next
	}
}

// newProgram finds a program of a name and type loaded after the program
// with id after, or returns nil. The kernel keeps 15 characters of a name;
// the full name comes from the program's BTF, which bpftrace's lack.
func newProgram(name string, typ ebpf.ProgramType, after ebpf.ProgramID) *ebpf.Program {
	for id := after; ; {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			return nil
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		if info, err := p.Info(); err == nil && info.Type == typ && (info.Name == name || info.Name == name[:min(len(name), unix.BPF_OBJ_NAME_LEN-1)]) {
			return p
		}
		p.Close()
	}
}

type perfRun struct {
	cmd *exec.Cmd
	dir string
}

func startPerf() (*perfRun, error) {
	dir, err := os.MkdirTemp("", "klockstat-bench-perf-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("perf", "lock", "record", "-a", "-o", filepath.Join(dir, "perf.data"))
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting perf (apt-get install linux-perf): %w", err)
	}
	time.Sleep(time.Second) // perf attaches to every CPU before it records
	return &perfRun{cmd: cmd, dir: dir}, nil
}

func (p *perfRun) stop() (probeResult, error) {
	p.cmd.Process.Signal(os.Interrupt)
	p.cmd.Wait()
	os.RemoveAll(p.dir)
	return probeResult{nsPerEvent: math.NaN()}, nil
}

func printMachine(w io.Writer, o options) {
	machine := host.Read()
	model := machine.CPUModel
	if model == "" {
		model = "unknown CPU"
	}
	throughput := ""
	if o.throughput {
		throughput = " -throughput"
	}
	fmt.Fprintf(w, "Machine: %s, %d CPUs, kernel %s. Command: `go run ./bench -workloads '%s' -real '%s' -duration %v -rounds %d -threads %d -perf '%s'%s`.\n",
		model, machine.CPUs, machine.Kernel, strings.Join(o.workloads, ","), o.realFlag, o.duration, o.rounds, o.threads, o.perf, throughput)
}

// capacity shows the busiest workload's event rate with default maps, and
// what a map too small for the capture does: losses counted, not hidden.
func capacity(o options, spec *lockspec.Spec) error {
	if len(o.workloads) == 0 {
		return nil
	}
	fmt.Printf("\n### Capacity\n\n")
	fmt.Println("| maps | workload | events/s | waits | records | events lost |")
	fmt.Println("| --- | --- | ---: | ---: | ---: | --- |")
	for _, mapSize := range []uint32{65536, 64} {
		for _, w := range o.workloads {
			c, err := collector.Start(collector.Config{Spec: spec, Probe: "auto", StackDepth: 16, MapSize: mapSize})
			if err != nil {
				return err
			}
			_, werr := runWorkload(o, w)
			cp, err := c.Stop()
			c.Close()
			if werr != nil {
				return werr
			}
			if err != nil {
				return err
			}
			fmt.Printf("| --map-size %d | %s | %.0f | %d | %d | %s |\n", mapSize, w, float64(cp.Meta.Events.Begin)/cp.Meta.Duration().Seconds(),
				cp.Meta.Events.Waits, len(cp.Records), lostCell(lostByReason(cp.Meta), cp.Meta.Events.Rescued))
		}
	}
	return nil
}
