package lockspec

import (
	"slices"
	"testing"
)

func TestCaller(t *testing.T) {
	s := catalogue(t)
	tests := []struct {
		name  string
		stack []string
		want  string // the caller frame; "" for none
	}{
		{
			name: "rwsem write slow path spinning on its wait_lock",
			stack: []string{"bpf_prog_6deef7357e7b4530_x+0x4a", "bpf_trace_run2+0x5f", "__bpf_trace_contention_begin+0xb",
				"queued_spin_lock_slowpath+0x1e1", "_raw_spin_lock_irqsave+0x3d", "rwsem_down_write_slowpath+0x8c",
				"down_write_killable+0x56", "vm_mmap_pgoff+0xa5", "ksys_mmap_pgoff+0x1d"},
			want: "vm_mmap_pgoff+0xa5",
		},
		{
			name: "mutex taken in a module",
			stack: []string{"bpf_prog_0123456789abcdef_contention_begin+0x61", "bpf_trace_run2+0x5f",
				"__traceiter_contention_begin+0x4a", "__mutex_lock.constprop.0+0x5a3", "__mutex_lock_slowpath+0x13",
				"mutex_lock+0x3c", "btrfs_search_slot+0x4d1 [btrfs]", "btrfs_lookup_inode+0x3e [btrfs]"},
			want: "btrfs_search_slot+0x4d1 [btrfs]",
		},
		{
			name: "unsymbolized BPF program above the lock functions",
			stack: []string{"0xffffffffc0a1b2c3", "bpf_trace_run2+0x5f", "rwsem_down_read_slowpath+0x2bd",
				"down_read+0x4a", "do_user_addr_fault+0x1b6", "exc_page_fault+0x70"},
			want: "do_user_addr_fault+0x1b6",
		},
		{
			name:  "lockdep kernel",
			stack: []string{"trace_contention_begin+0x91", "mutex_lock_nested+0x1c", "kernfs_iop_lookup+0x2e"},
			want:  "kernfs_iop_lookup+0x2e",
		},
		{
			name: "the BPF program's frame in [bpf] is tracing machinery above the lock functions",
			stack: []string{"bpf_prog_3c85bede53fbd903_raw_contention_begin+0x5a1 [bpf]", "bpf_trace_run2+0x159",
				"rwsem_down_write_slowpath+0x8c", "down_write+0x44", "xfs_ilock+0x4c [xfs]", "xfs_file_write_iter+0x2e [xfs]"},
			want: "xfs_ilock+0x4c [xfs]",
		},
		{
			name:  "no lock function: the first module frame that is not tracing",
			stack: []string{"bpf_trampoline_6442485123+0x63 [bpf]", "nfs_wait_bit_killable+0x1d [nfs]", "__wait_on_bit+0x42"},
			want:  "nfs_wait_bit_killable+0x1d [nfs]",
		},
		{
			// A module's lock function is named and matched as in vmlinux.
			name:  "a lock function in a module is a lock function",
			stack: []string{"mutex_lock+0x3c [dbg]", "drm_modeset_lock+0x5a [drm]"},
			want:  "drm_modeset_lock+0x5a [drm]",
		},
		{
			name:  "a hashed id is no function",
			stack: []string{"000000001a2b3c4d", "mutex_lock+0x3c", "000000005e6f7a8b"},
			want:  "000000005e6f7a8b",
		},
		{
			name:  "unknown caller address",
			stack: []string{"__pv_queued_spin_lock_slowpath+0x2a1", "_raw_spin_lock+0x30", "0xffffffffc0123456"},
			want:  "0xffffffffc0123456",
		},
		{
			name:  "no lock function",
			stack: []string{"bpf_prog_6deef7357e7b4530_x+0x4a", "perf_trace_run_bpf_submit+0x4c", "do_sys_poll+0x3b1", "__x64_sys_poll+0xa4"},
			want:  "do_sys_poll+0x3b1",
		},
		{
			name:  "only lock functions",
			stack: []string{"bpf_trace_run2+0x5f", "queued_spin_lock_slowpath+0x1e1", "_raw_spin_lock+0x30"},
		},
		{
			name:  "only tracing functions",
			stack: []string{"bpf_prog_6deef7357e7b4530_x+0x4a", "bpf_trace_run2+0x5f", "__probestub_contention_begin+0x4"},
		},
		{
			name: "empty stack",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := slices.Index(tt.stack, tt.want) // -1 when want is ""
			if tt.want != "" && want < 0 {
				t.Fatalf("fixture: %q not in the stack", tt.want)
			}
			if got := s.Caller(tt.stack); got != want {
				t.Errorf("Caller = %d, want %d (%q)", got, want, tt.want)
			}
		})
	}
}

func TestTracingFrames(t *testing.T) {
	for _, tc := range []struct {
		stack []string
		want  int
	}{
		{[]string{"bpf_prog_3c85bede53fbd903_raw_contention_begin+0x5a1 [bpf]", "bpf_trace_run2+0x159", "__traceiter_contention_begin+0x2f", "rwsem_down_read_slowpath+0x335", "down_read+0x44"}, 3},
		{[]string{"0xffffffffc0001234", "__bpf_trace_contention_begin+0xb", "queued_spin_lock_slowpath+0x1e1"}, 2},
		{[]string{"__pv_queued_spin_lock_slowpath+0x10e", "_raw_spin_lock+0x3b"}, 0},
		// fexit: the trampoline, then the acquire function it returned from.
		{[]string{"bpf_trampoline_6442485123+0x63 [bpf]", "down_write_killable+0x5", "vm_mmap_pgoff+0xa1"}, 1},
		// kretprobe: the rethook and perf handlers, then the caller.
		{[]string{"trace_call_bpf+0xee", "kretprobe_perf_func+0x5f", "kretprobe_dispatcher+0x8d", "kretprobe_rethook_handler+0x5e",
			"rethook_trampoline_handler+0x8c", "arch_rethook_trampoline_callback+0x3b", "arch_rethook_trampoline+0x2c", "__vm_munmap+0x78"}, 7},
		// kprobe through ftrace, and through an int3.
		{[]string{"kprobe_perf_func+0x4c", "kprobe_ftrace_handler+0x10c", "0xffffffffc0204099", "mutex_lock+0x5", "anon_pipe_write+0x43"}, 3},
		{[]string{"kprobe_int3_handler+0xa1", "exc_int3+0x5e", "asm_exc_int3+0x39", "mutex_lock+0x1"}, 3},
		{[]string{"bpf_trace_run2+0x159", "__traceiter_contention_begin+0x2f"}, 0},
		// BPF programs and trampolines are in the [bpf] pseudo-module; a module's kernel code ends the run.
		{[]string{"bpf_prog_3c85bede53fbd903_x+0x5a1 [bpf]", "bpf_trampoline_6442485123+0x63 [bpf]", "mutex_lock+0x5"}, 2},
		{[]string{"bpf_trace_run2+0x159", "xfs_ilock+0x4c [xfs]", "bpf_prog_0+0x1 [bpf]"}, 1},
		{[]string{"bpf_prog_3c85bede53fbd903_x+0x5a1 [bpf]", "000000001a2b3c4d"}, 0}, // an id is no function
		{[]string{"0xffffffff81000000", "0xffffffff81000010"}, 0},
		{nil, 0},
	} {
		if got := TracingFrames(tc.stack); got != tc.want {
			t.Errorf("TracingFrames(%q) = %d, want %d", tc.stack, got, tc.want)
		}
	}
}
