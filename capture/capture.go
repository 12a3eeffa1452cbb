// Package capture is klockstat's data model for one lock-contention capture: metadata, per-thread lock
// records, per-type wait histograms, stats, and its versioned JSON form.
package capture

import (
	"encoding/json"
	"slices"
	"time"
)

// FormatVersion is the JSON "version" this package writes and the only one Read accepts. Bump it for
// any change that an older reader would misinterpret; purely additive fields do not need a bump.
const FormatVersion = 1

// Capture is everything klockstat recorded in one run.
type Capture struct {
	Version    int         `json:"version"` // FormatVersion; set by whoever builds the capture
	Meta       Meta        `json:"meta"`
	Records    []Record    `json:"records"`
	Histograms []Histogram `json:"histograms"` // one per lock type that had waits, in spec order
	// HoldHistograms has one histogram of hold times per lock type that had holds timed, in spec
	// order; only the function-probe backends time holds.
	HoldHistograms []Histogram `json:"hold_histograms"`
	// Timeline is when the waits ended, or nil for a capture without one (klockstat before it, or a
	// capture that ran without counting it).
	Timeline *Timeline `json:"timeline,omitempty"`
	// Owners has the waits charged to the lock owners found when they began, and those whose owner
	// was unknown, by reason; sorted by SortOwners. Empty when owners were not captured.
	Owners []Owner `json:"owners"`
	// OwnerChains has the waits whose owner was itself waiting for a lock, by the end of the chain
	// of owners; sorted by SortOwnerChains. Empty when owners were not captured, or none waited.
	OwnerChains []OwnerChain `json:"owner_chains"`
	// Sources are the source lines of the frames, from a vmlinux with DWARF (--vmlinux); nil
	// without one.
	Sources *Sources `json:"sources,omitempty"`
}

// Meta describes how, where and with which settings a capture was taken, and how healthy it was.
type Meta struct {
	Tool         string    `json:"tool"` // "klockstat"
	ToolVersion  string    `json:"tool_version"`
	Kernel       string    `json:"kernel"`       // uname -r
	KernelBuild  string    `json:"kernel_build"` // uname -v
	Arch         string    `json:"arch"`
	Hostname     string    `json:"hostname"`
	CPUModel     string    `json:"cpu_model"`
	CPUs         int       `json:"cpus"`
	Start        time.Time `json:"start"`
	DurationNS   int64     `json:"duration_ns"`
	CommandLine  []string  `json:"command_line"` // klockstat's own argv
	Workload     []string  `json:"workload"`     // the `-- COMMAND ARGS` run during capture, or empty
	WorkloadExit *int      `json:"workload_exit,omitempty"`
	Probe        string    `json:"probe"` // backend name: "tp_btf", "rawtp", "tracepoint", "fentry", "kprobe"
	// Acquire describes a capture of a function-probe backend (fentry, kprobe), which times whole
	// acquire calls, fast path included, instead of waits; nil for the tracepoint backends.
	Acquire            *Acquire          `json:"acquire,omitempty"`
	StackDepth         int               `json:"stack_depth"`
	Types              []string          `json:"types"`     // lock types captured
	PIDs               []uint32          `json:"pids"`      // --pid filter (empty: all)
	Comm               string            `json:"comm"`      // --comm filter
	Cgroups            []string          `json:"cgroups"`   // --cgroup filter, cgroup paths (empty: all)
	MapSizes           map[string]uint32 `json:"map_sizes"` // BPF map name -> max entries
	Events             Events            `json:"events"`
	Stacks             StackStats        `json:"stacks"`              // how the kernel stacks were taken
	Lost               []Lost            `json:"lost"`                // events lost, by reason; empty when nothing lost
	Programs           []ProgramStats    `json:"programs"`            // kernel BPF run stats of our programs
	KallsymsRestricted bool              `json:"kallsyms_restricted"` // addresses could not be symbolized
	AddressesHashed    bool              `json:"addresses_hashed"`    // kernel addresses replaced by ids (HashAddresses)
	Warnings           []string          `json:"warnings"`
	// ProgramsMeasuredNS is how long of the capture the kernel counted the Programs' runs and run
	// time: klockstat turns its statistics on for a window of every period only, as they cost
	// every BPF program on the machine (docs/cost.md), and the stretches another holder had
	// them on (all of it under one that keeps them on throughout). 0 (absent) in older
	// captures, which kept them on for the whole duration, and when run time was not measured.
	ProgramsMeasuredNS int64 `json:"programs_measured_ns,omitempty"`
	// ProgramsEvents is how many lock events the programs counted themselves over the capture
	// (begins, filtered ones included, ends, and with function probes uncontended acquires and
	// holds), and ProgramsMeasuredEvents how many of them while their runs were counted: a
	// workload whose lock paths the statistics lengthen contends more while they are on, so
	// the lock events' programs' run time is scaled to the capture by events, not by time
	// (ProbeCPUShare). Both 0 (absent) in older captures and when run time was not measured.
	ProgramsEvents         uint64 `json:"programs_events,omitempty"`
	ProgramsMeasuredEvents uint64 `json:"programs_measured_events,omitempty"`
	// OwnerSampleHz is the rate lock owners were sampled at on their CPU (--owner-sample-hz),
	// on each CPU, while others waited for a lock they held; 0 when they were not.
	OwnerSampleHz int `json:"owner_sample_hz,omitempty"`
	// Scope says whose waits a capture of a workload holds: ScopeCommand, the workload's process
	// tree only; ScopeSystem, every process's, CommandPIDs telling the workload's apart. Empty
	// without a workload.
	Scope string `json:"scope,omitempty"`
	// CommandPIDs are the processes (tgids) of the workload's process tree, the workload and what
	// it forked, seen during the capture; sorted.
	CommandPIDs []uint32 `json:"command_pids,omitempty"`
	// CommandProcesses and CommandThreads are how many processes the workload's tree started
	// during the capture and how many threads it ran, its first process's and those alive at the
	// start included; CommandThreadNS is their time alive, summed over the threads, from their
	// start (or the capture's) to their free (or the capture's end). A thread is freed an RCU
	// grace period after its parent reaped it. All 0 without a workload and in older captures.
	CommandProcesses uint64 `json:"command_processes,omitempty"`
	CommandThreads   uint64 `json:"command_threads,omitempty"`
	CommandThreadNS  uint64 `json:"command_thread_ns,omitempty"`
	// KernelBuildID is the running kernel's GNU build id in hex (/sys/kernel/notes), which names
	// its debug image; "" when unknown.
	KernelBuildID string `json:"kernel_build_id,omitempty"`
	// KallsymsNoData says /proc/kallsyms listed no data symbols but section markers: a kernel
	// built without CONFIG_KALLSYMS_ALL, whose static locks kallsyms cannot name (Record.Static).
	// false when it listed some, and in older captures.
	KallsymsNoData bool `json:"kallsyms_no_data,omitempty"`
	// StaticNamesFrom is the kernel image (a vmlinux path) whose symbol table named the static
	// locks kallsyms could not (docs/lock-names.md); "" when none was read.
	StaticNamesFrom string `json:"static_names_from,omitempty"`
	// Unseen are the captured lock types whose waits the probes cannot see on the capturing
	// kernel, and why: a capture holds no wait of them whatever happened. Absent in older
	// captures and when every type could be seen.
	Unseen []UnseenType `json:"unseen_types,omitempty"`
}

// UnseenType is a lock type whose waits the capturing kernel does not show the probes.
type UnseenType struct {
	Type   string `json:"type"`
	Reason string `json:"reason"` // why, e.g. "this guest spins in virt_spin_lock() ..."
}

// UnseenOf returns why waits of a lock type could not be seen, and whether they could not.
func (m Meta) UnseenOf(typ string) (string, bool) {
	for _, u := range m.Unseen {
		if u.Type == typ {
			return u.Reason, true
		}
	}
	return "", false
}

// The scopes of a capture of a workload (Meta.Scope).
const (
	ScopeCommand = "command"
	ScopeSystem  = "system"
)

// InCommand reports whether process pid belongs to the workload's process tree.
func (m Meta) InCommand(pid uint32) bool {
	_, found := slices.BinarySearch(m.CommandPIDs, pid)
	return found
}

// Acquire says how a function-probe backend told contended acquires from uncontended ones, and what
// it probed. Its records hold acquire times: Count, TotalNS, MinNS and MaxNS of a record count only
// the acquires longer than ThresholdNS.
type Acquire struct {
	ThresholdNS uint64      `json:"threshold_ns"` // an acquire longer than this counts as contended
	Calibration Calibration `json:"calibration"`  // how ThresholdNS was chosen
	Uncontended uint64      `json:"uncontended"`  // acquires no longer than the threshold (not in the records)
	Holds       uint64      `json:"holds"`        // holds timed, acquire return to release
	Functions   []string    `json:"functions"`    // kernel functions probed, as the kernel names them
	Skipped     []Skipped   `json:"skipped"`      // functions of the lock catalogue not probed, and why
}

// Calibration is the uncontended cost of an acquire under the probes, measured at start-up on the
// capturing machine: Samples acquires that could not be contended, their median, 99th percentile
// and maximum, and the threshold derived from them.
type Calibration struct {
	Method  string `json:"method"` // what was driven to take the samples
	Samples int    `json:"samples"`
	P50NS   uint64 `json:"p50_ns"`
	P99NS   uint64 `json:"p99_ns"`
	MaxNS   uint64 `json:"max_ns"`
	Rule    string `json:"rule"` // how the threshold follows from the samples, e.g. "2 × p99"
}

// Skipped is a function of the lock catalogue that a function-probe backend did not probe.
type Skipped struct {
	Function string `json:"function"`
	Type     string `json:"type"`   // the lock type listing it
	Reason   string `json:"reason"` // e.g. "not in this kernel (/proc/kallsyms)"
}

// Events counts what the probes saw, so a reader can judge how complete the records are.
type Events struct {
	Begin          uint64 `json:"begin"` // contention_begin events seen (after filters)
	End            uint64 `json:"end"`
	Waits          uint64 `json:"waits"`           // paired begin/end = recorded waits
	InProgress     uint64 `json:"in_progress"`     // waits still running at the end, charged up to end time
	Nested         uint64 `json:"nested"`          // begin while another wait of the same thread/CPU was open
	UnmatchedBegin uint64 `json:"unmatched_begin"` // begin whose end never came (overwritten/stale)
	UnmatchedEnd   uint64 `json:"unmatched_end"`   // end with no begin
	Rescued        uint64 `json:"rescued"`         // nested events the kernel skipped for our main programs, taken by their rescue copies
}

// StackStats says how the kernel stacks of a capture were taken: walking a
// kernel stack is the probes' largest cost, so a path walked once is
// recognised afterwards from the raw stack instead.
type StackStats struct {
	Walked uint64 `json:"walked"` // stacks taken by walking the kernel stack
	Known  uint64 `json:"known"`  // stacks of paths recognised without a walk
	Failed uint64 `json:"failed"` // waits recorded without a stack
}

// Lost counts events that were dropped for one reason, e.g. "aggregation map full".
type Lost struct {
	Reason string `json:"reason"`
	Count  uint64 `json:"count"`
	// Map is the BPF map (a key of Meta.MapSizes) that was full, for a reason of that kind; ""
	// for another reason, or in a capture of before it was recorded.
	Map string `json:"map,omitempty"`
}

// ProgramStats are the kernel's run statistics of one of klockstat's BPF programs. Runs and run time
// are only counted while the kernel's BPF statistics are on (BPF_ENABLE_STATS, or the sysctl
// kernel.bpf_stats_enabled): for Meta.ProgramsMeasured of the capture.
type ProgramStats struct {
	Name            string `json:"name"`
	RunCount        uint64 `json:"run_count"`
	RunTimeNS       uint64 `json:"run_time_ns"`
	RecursionMisses uint64 `json:"recursion_misses"`
	// Begins marks the programs that run once per event seen (the begin of a wait, the entry of
	// an acquire), filtered or not: their runs are the events the probes' cost is spread over.
	Begins bool `json:"begins,omitempty"`
	// Hook is the scheduler event a bookkeeping program runs at (sched_process_free: a thread's
	// wait slot freed as it exits; sched_switch: lock owners' stacks); "" for the programs that
	// see lock events. Its runs follow the machine's thread exits or context switches, not
	// contention, so its cost is given apart.
	Hook string `json:"hook,omitempty"`
}

// LostTotal is the number of events lost for any reason.
func (m Meta) LostTotal() uint64 {
	var total uint64
	for _, l := range m.Lost {
		total += l.Count
	}
	return total
}

// ProbeRunTimeNS is the total kernel run time of all our BPF programs; 0 when it was not measured.
func (m Meta) ProbeRunTimeNS() uint64 {
	var total uint64
	for _, p := range m.Programs {
		total += p.RunTimeNS
	}
	return total
}

// ProbeNSPerEvent is the run time of the programs that see lock events divided by the number of
// events they ran for (ProbeEventsMeasured), i.e. the cost of one begin+end pair, filtered or lost
// events included; 0 when there were no events. The bookkeeping programs (Hooks) are left out: on
// an idle machine a few thread exits would otherwise be charged to a handful of events.
func (m Meta) ProbeNSPerEvent() float64 {
	return m.perEvent(false)
}

// ProbeNSPerEventWithHooks is ProbeNSPerEvent with the bookkeeping programs' run time spread over
// the events too: what capturing one event cost in all, as a benchmark against another tool
// counts it.
func (m Meta) ProbeNSPerEventWithHooks() float64 {
	return m.perEvent(true)
}

func (m Meta) perEvent(hooks bool) float64 {
	var ns uint64
	for _, p := range m.Programs {
		if hooks || p.Hook == "" {
			ns += p.RunTimeNS
		}
	}
	runs := m.ProbeEventsMeasured()
	if runs == 0 {
		return 0
	}
	return float64(ns) / float64(runs)
}

// ProbeEventsMeasured is how many events the programs' run time was measured over: the runs of
// the Begins programs, which the kernel counts with their run time (filtered events included; a
// sample of the events when ProgramsSampled), or Events.Begin in a capture that marks none.
func (m Meta) ProbeEventsMeasured() uint64 {
	var runs uint64
	marked := false
	for _, p := range m.Programs {
		if p.Begins {
			runs += p.RunCount
			marked = true
		}
	}
	if !marked {
		return m.Events.Begin
	}
	return runs
}

// HookCost is the run statistics of the bookkeeping programs at one scheduler event.
type HookCost struct {
	Event     string
	Runs      uint64
	RunTimeNS uint64
}

// Hooks are the bookkeeping programs' costs, per scheduler event in the order of Programs.
func (m Meta) Hooks() []HookCost {
	var out []HookCost
	for _, p := range m.Programs {
		if p.Hook == "" {
			continue
		}
		i := slices.IndexFunc(out, func(h HookCost) bool { return h.Event == p.Hook })
		if i < 0 {
			out = append(out, HookCost{Event: p.Hook})
			i = len(out) - 1
		}
		out[i].Runs += p.RunCount
		out[i].RunTimeNS += p.RunTimeNS
	}
	return out
}

// ProgramsMeasured is how long the kernel counted the programs' runs and run time:
// ProgramsMeasuredNS, or the whole duration in a capture that does not give it.
func (m Meta) ProgramsMeasured() time.Duration {
	if m.ProgramsMeasuredNS > 0 {
		return time.Duration(m.ProgramsMeasuredNS)
	}
	return m.Duration()
}

// ProgramsSampled reports whether the programs' runs and run time were counted for part of the
// capture only: they are then a sample of its events, not all of them.
func (m Meta) ProgramsSampled() bool {
	return m.ProgramsMeasuredNS > 0 && m.ProgramsMeasuredNS < m.DurationNS
}

// ProbeCPUShare is the fraction (0.01 = 1 %) of all CPU time the probes took over the capture:
// their run time divided by ProgramsMeasured × CPUs, the lock events' programs' run time of a
// sampled capture scaled by ProgramsEvents / ProgramsMeasuredEvents over its whole duration
// instead; 0 when the duration or the CPU count is unknown.
func (m Meta) ProbeCPUShare() float64 {
	measured := m.ProgramsMeasured()
	if measured <= 0 || m.CPUs <= 0 {
		return 0
	}
	if !m.ProgramsSampled() || m.ProgramsMeasuredEvents == 0 {
		return float64(m.ProbeRunTimeNS()) / (float64(measured) * float64(m.CPUs))
	}
	// The bookkeeping programs run at scheduler events, not lock events: scaled by time.
	var hooks float64
	for _, h := range m.Hooks() {
		hooks += float64(h.RunTimeNS)
	}
	events := float64(m.ProbeRunTimeNS()) - hooks
	perNS := events*float64(m.ProgramsEvents)/float64(m.ProgramsMeasuredEvents)/float64(m.DurationNS) + hooks/float64(measured)
	return perNS / float64(m.CPUs)
}

// Duration is the length of the capture.
func (m Meta) Duration() time.Duration {
	return time.Duration(m.DurationNS)
}

// Record aggregates the waits of one thread on one lock from one call site.
type Record struct {
	Type string `json:"type"`
	Lock Addr   `json:"lock"`
	Name string `json:"name"` // kernel symbol ("jiffies_lock"), "mmap_lock", "siglock", "mmap_lock (COMM)" or "siglock (COMM)" of another process, "rq_lock", "zone_lock (ZONE)", "lru_lock", "&CACHE" for a lock inside an object of slab cache CACHE, or "" when unknown
	// ObjectOffset is the lock's offset in its slab object ("0x408") when Name is "&CACHE", "" when
	// unknown. Field is the struct member the lock is, found in the kernel's BTF
	// ("super_block.s_vfs_rename_mutex", "ext4_inode_info.vfs_inode.i_rwsem"); when the object's
	// struct is a guess among several, FieldCandidates lists them all, Field's first (docs/lock-names.md).
	ObjectOffset    string   `json:"object_offset,omitempty"`
	Field           string   `json:"field,omitempty"`
	FieldCandidates []string `json:"field_candidates,omitempty"`
	// Static marks a lock in the kernel image's static data (vmlinux's data, read-only data or
	// bss): a global or static variable such as file_rwsem, not an object of the heap or a
	// module. Name is its symbol where kallsyms or the image's symbol table gave one, else ""
	// (LockLabel: "static (unnamed)"). false for other locks and in older captures.
	Static  bool   `json:"static,omitempty"`
	Comm    string `json:"comm"` // thread name (untrusted)
	PID     uint32 `json:"pid"`  // process (tgid)
	TID     uint32 `json:"tid"`  // thread
	Count   uint64 `json:"count"`
	TotalNS uint64 `json:"total_ns"`
	MinNS   uint64 `json:"min_ns"`
	MaxNS   uint64 `json:"max_ns"`
	// SpinNS is the part of TotalNS spent spinning: all of a spinning lock's wait, a mutex's
	// optimistic spin; the rest was slept. 0 for the function-probe backends, which see no spin.
	SpinNS     uint64   `json:"spin_ns"`
	InProgress uint64   `json:"in_progress"` // waits included here that had not ended when capture stopped
	Caller     string   `json:"caller"`      // "function+0xoff", the first frame outside lock functions
	Stack      []string `json:"stack"`       // "function+0xoff" innermost first; unknown frames as "0xffffffff81234567"
	// Hold times, from the acquire's return to the release, of the acquires of this record's key,
	// contended or not (Count may be 0); only the function-probe backends time holds.
	HoldCount   uint64 `json:"hold_count,omitempty"`
	HoldTotalNS uint64 `json:"hold_total_ns,omitempty"`
	HoldMinNS   uint64 `json:"hold_min_ns,omitempty"`
	HoldMaxNS   uint64 `json:"hold_max_ns,omitempty"`
	// CgroupID is the waiter's cgroup v2 id (the inode number of its directory) when the wait began;
	// Cgroup its path in the hierarchy ("/system.slice/cron.service", untrusted: containers name
	// them), or "" where it is unknown: a cgroup created and removed during the capture, or a
	// machine without a cgroup2 mount. 0 and "" in captures of klockstat before cgroups.
	CgroupID uint64 `json:"cgroup_id"`
	Cgroup   string `json:"cgroup"`
}

// HoldMeanNS is the average hold; 0 when no hold was timed.
func (r Record) HoldMeanNS() float64 {
	if r.HoldCount == 0 {
		return 0
	}
	return float64(r.HoldTotalNS) / float64(r.HoldCount)
}

// MeanNS is the average wait; 0 for an empty record.
func (r Record) MeanNS() float64 {
	if r.Count == 0 {
		return 0
	}
	return float64(r.TotalNS) / float64(r.Count)
}

// The MarshalJSON methods below encode nil slices and maps as [] and {}, so the JavaScript of the HTML
// report never meets null where it expects a list, however the capture is marshalled.

// MarshalJSON implements json.Marshaler.
func (c Capture) MarshalJSON() ([]byte, error) {
	type plain Capture // drops the methods, so json.Marshal does not recurse into this one
	c.Records = nonNil(c.Records)
	c.Histograms = nonNil(c.Histograms)
	c.HoldHistograms = nonNil(c.HoldHistograms)
	c.Owners = nonNil(c.Owners)
	c.OwnerChains = nonNil(c.OwnerChains)
	return json.Marshal(plain(c))
}

// MarshalJSON implements json.Marshaler.
func (m Meta) MarshalJSON() ([]byte, error) {
	type plain Meta
	m.CommandLine = nonNil(m.CommandLine)
	m.Workload = nonNil(m.Workload)
	m.Types = nonNil(m.Types)
	m.PIDs = nonNil(m.PIDs)
	m.Cgroups = nonNil(m.Cgroups)
	if m.MapSizes == nil {
		m.MapSizes = map[string]uint32{}
	}
	m.Lost = nonNil(m.Lost)
	m.Programs = nonNil(m.Programs)
	m.Warnings = nonNil(m.Warnings)
	return json.Marshal(plain(m))
}

// MarshalJSON implements json.Marshaler.
func (a Acquire) MarshalJSON() ([]byte, error) {
	type plain Acquire
	a.Functions = nonNil(a.Functions)
	a.Skipped = nonNil(a.Skipped)
	return json.Marshal(plain(a))
}

// MarshalJSON implements json.Marshaler.
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	r.Stack = nonNil(r.Stack)
	return json.Marshal(plain(r))
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
