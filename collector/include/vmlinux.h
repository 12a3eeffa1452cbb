/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel types klockstat's BPF programs touch, instead of a full
 * bpftool-generated vmlinux.h: the build stays independent of the kernel it
 * runs on, and CO-RE (preserve_access_index) relocates every field access
 * against the running kernel's BTF at load time. Only the fields we read are
 * declared; their order and offsets here do not matter.
 */
#ifndef __KLOCKSTAT_VMLINUX_H__
#define __KLOCKSTAT_VMLINUX_H__

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
enum { false = 0, true = 1 };

/* From include/uapi/linux/bpf.h: only what the programs use. */
enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_STACK_TRACE = 7,
	BPF_MAP_TYPE_CGROUP_ARRAY = 8,
	BPF_MAP_TYPE_LRU_HASH = 9,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

struct bpf_raw_tracepoint_args {
	__u64 args[0];
};

/* Tracepoint lock:contention_begin / lock:contention_end (kernel 5.19+). */
struct trace_entry {
	unsigned short type;
	unsigned char flags;
	unsigned char preempt_count;
	int pid;
} __attribute__((preserve_access_index));

struct trace_event_raw_contention_begin {
	struct trace_entry ent;
	void *lock_addr;
	unsigned int flags;
} __attribute__((preserve_access_index));

struct trace_event_raw_contention_end {
	struct trace_entry ent;
	void *lock_addr;
	int ret;
} __attribute__((preserve_access_index));

/* A kprobe's context: the probed function's registers, its first argument
 * in di (x86-64) or regs[0] (arm64, whose kprobe context is the
 * user_pt_regs at the start of pt_regs). */
#if defined(__TARGET_ARCH_x86)
struct pt_regs {
	unsigned long di;
} __attribute__((preserve_access_index));
#define PT_REGS_ARG1(ctx) ((ctx)->di)
#elif defined(__TARGET_ARCH_arm64)
struct user_pt_regs {
	__u64 regs[31];
} __attribute__((preserve_access_index));
struct pt_regs;
#define PT_REGS_ARG1(ctx) (((const struct user_pt_regs *)(ctx))->regs[0])
#else
#error "kprobe argument access: only x86 and arm64 are supported"
#endif

/* Enough of the task to name a lock the way perf does. */
struct task_struct;

typedef struct {
	long counter;
} atomic_long_t;

struct rw_semaphore {
	long count;
	atomic_long_t owner;
} __attribute__((preserve_access_index));

struct spinlock {
	int rlock;
} __attribute__((preserve_access_index));
typedef struct spinlock spinlock_t;

struct mm_struct {
	struct rw_semaphore mmap_lock;
} __attribute__((preserve_access_index));

/* Kernels before 5.8 called the field mmap_sem. */
struct mm_struct___pre58 {
	struct rw_semaphore mmap_sem;
} __attribute__((preserve_access_index));

struct sighand_struct {
	spinlock_t siglock;
} __attribute__((preserve_access_index));

struct mutex {
	atomic_long_t owner;
} __attribute__((preserve_access_index));

struct rt_mutex_base {
	struct task_struct *owner;
} __attribute__((preserve_access_index));

/* Kernels before 5.15 had no rt_mutex_base: the owner is rt_mutex's. */
struct rt_mutex___pre515 {
	struct task_struct *owner;
} __attribute__((preserve_access_index));

/* Kernels before 5.14 called __state state (a long before 5.14). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid; /* the thread's id */
	int tgid;
	int on_cpu;
	int on_rq;
	unsigned int __state;
	struct mm_struct *mm;
	struct sighand_struct *sighand;
	struct task_struct *group_leader;
	char comm[16];
} __attribute__((preserve_access_index));

/* Tracepoint sched:sched_process_free: a task is freed. */
struct trace_event_raw_sched_process_template {
	struct trace_entry ent;
	int pid;
} __attribute__((preserve_access_index));

/* Tracepoints sched:sched_waking and sched_wakeup: pid is woken. */
struct trace_event_raw_sched_wakeup_template {
	struct trace_entry ent;
	char comm[16];
	int pid;
} __attribute__((preserve_access_index));

/* Tracepoint sched:sched_switch: a CPU switches from prev to next. */
struct trace_event_raw_sched_switch {
	struct trace_entry ent;
	char prev_comm[16];
	int prev_pid;
	int prev_prio;
	long prev_state;
	char next_comm[16];
	int next_pid;
} __attribute__((preserve_access_index));

#endif /* __KLOCKSTAT_VMLINUX_H__ */
