package collector

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// A Backend attaches the BPF programs to one kind of kernel hook. All
// backends feed the same maps, so what they capture reads the same way.
type Backend interface {
	// Name is the --probe value that selects the backend.
	Name() string
	// Programs names the programs of the BPF object the backend needs,
	// the one that sees a wait begin first; the others are not loaded.
	Programs() []string
	// StackLayout says how kernel stacks look from the backend's programs.
	StackLayout() StackLayout
	// Attach attaches the loaded programs, keyed by name.
	Attach(progs map[string]*ebpf.Program) ([]link.Link, error)
}

// StackLayout describes kernel stacks as a backend's programs see them.
type StackLayout struct {
	// Skip is how many frames on top of every stack are the probe
	// machinery itself, on every kernel; machinery frames only some
	// kernels have are trimmed in user space.
	Skip uint32
	// ContextOnStack is true when the program's context pointer points
	// into the probed thread's kernel stack, so that a path walked once
	// can be recognised from the raw stack above it instead of walked
	// again.
	ContextOnStack bool
}

// Backends lists every backend in the order "auto" tries them.
func Backends() []Backend {
	return []Backend{rawTracepoint{}, perfTracepoint{}}
}

// BackendNames lists the valid --probe values.
func BackendNames() []string {
	names := []string{"auto"}
	for _, b := range Backends() {
		names = append(names, b.Name())
	}
	return names
}

func backendByName(name string) (Backend, error) {
	for _, b := range Backends() {
		if b.Name() == name {
			return b, nil
		}
	}
	return nil, fmt.Errorf("unknown probe backend %q (want one of %v)", name, BackendNames())
}

// rawTracepoint attaches to the lock:contention_begin/end raw tracepoints
// (Linux 5.19+): no perf event and no tracefs, the cheapest hook.
type rawTracepoint struct{}

func (rawTracepoint) Name() string { return "rawtp" }

func (rawTracepoint) Programs() []string {
	return []string{"raw_contention_begin", "raw_contention_end"}
}

// The BPF program and bpf_trace_runN come first; __traceiter_* or
// __bpf_trace_* follow on some kernels only. The context is bpf_trace_runN's
// argument array, on the probed thread's stack.
func (rawTracepoint) StackLayout() StackLayout {
	return StackLayout{Skip: 2, ContextOnStack: true}
}

func (rawTracepoint) Attach(progs map[string]*ebpf.Program) ([]link.Link, error) {
	return attachEach([]string{"contention_begin", "contention_end"}, func(i int, event string) (link.Link, error) {
		return link.AttachRawTracepoint(link.RawTracepointOptions{
			Name:    event,
			Program: progs[rawTracepoint{}.Programs()[i]],
		})
	})
}

// perfTracepoint attaches through perf events to the lock:contention_*
// tracepoints, for kernels or sandboxes where raw tracepoint attach fails.
// It needs tracefs to look up the event ids.
type perfTracepoint struct{}

func (perfTracepoint) Name() string { return "tracepoint" }

func (perfTracepoint) Programs() []string {
	return []string{"tp_contention_begin", "tp_contention_end"}
}

// Perf events unwind from the tracepoint's caller; the context is the perf
// event's record buffer.
func (perfTracepoint) StackLayout() StackLayout { return StackLayout{} }

func (perfTracepoint) Attach(progs map[string]*ebpf.Program) ([]link.Link, error) {
	if err := mountTracefs(); err != nil {
		return nil, err
	}
	return attachEach([]string{"contention_begin", "contention_end"}, func(i int, event string) (link.Link, error) {
		return link.Tracepoint("lock", event, progs[perfTracepoint{}.Programs()[i]], nil)
	})
}

// attachEach attaches one link per event and closes them all if one fails.
func attachEach(events []string, attach func(i int, event string) (link.Link, error)) ([]link.Link, error) {
	var links []link.Link
	for i, event := range events {
		l, err := attach(i, event)
		if err != nil {
			closeLinks(links)
			return nil, fmt.Errorf("attaching to lock:%s: %w", event, err)
		}
		links = append(links, l)
	}
	return links, nil
}

func closeLinks(links []link.Link) {
	for _, l := range links {
		l.Close()
	}
}

const tracefsPath = "/sys/kernel/tracing"

// mountTracefs mounts tracefs where the kernel expects it unless some tracefs
// is mounted already. Boot does not always mount it, and perf-event
// tracepoints are looked up there.
func mountTracefs() error {
	if _, err := os.Stat(tracefsPath + "/events"); err == nil {
		return nil
	}
	err := unix.Mount("nodev", tracefsPath, "tracefs", 0, "")
	if err != nil && !errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("mounting tracefs on %s (try: mount -t tracefs nodev %s): %w", tracefsPath, tracefsPath, err)
	}
	return nil
}
