/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every map key and value shared by the BPF programs and the Go loader, defined
 * once. bpf2go generates the Go types from these (-type), so the two sides
 * cannot drift apart.
 */
#ifndef __KLOCKSTAT_LOCKSTAT_H__
#define __KLOCKSTAT_LOCKSTAT_H__

/* contention_begin flag bits are below 1<<6; see lockspec.MaxFlags. */
#define MAX_FLAGS 64
/* Lock types a spec can define; see collector.MaxTypes. */
#define MAX_TYPES 32
/* Log-linear histogram layout; must match capture.BucketIndex. */
#define HIST_SUB_BITS 4
#define HIST_BUCKETS 976
/* Waits open at once on one CPU: task, softirq, hardirq, NMI. */
#define MAX_NEST 4

/* Identifies one aggregate: a lock, as waited for by one thread from one stack. */
struct wait_key {
	__u64 lock;
	__s32 stack_id; /* negative: no stack (stacks off, or the stack map failed) */
	__u32 pid;      /* tgid */
	__u32 tid;
	__u32 type;     /* index into the lock spec's types */
};

enum lock_name {
	LOCK_NAME_NONE = 0,
	LOCK_NAME_MMAP = 1,    /* current->mm->mmap_lock */
	LOCK_NAME_SIGHAND = 2, /* current->sighand->siglock */
};

struct wait_stats {
	__u64 count;
	__u64 total_ns;
	__u64 min_ns;
	__u64 max_ns;
	char comm[16];
	__u32 lock_name; /* enum lock_name */
	__u32 _pad;
};

/* One wait in progress: begin seen, end not yet. */
struct wait_slot {
	__u64 lock; /* 0: slot free */
	__u64 ts;   /* bpf_ktime_get_ns() at begin */
	__s32 stack_id;
	__u32 tid;
	__u32 pid;
	__u16 type;
	__u16 skip; /* begin was filtered out: pair it, record nothing */
};

/* Waits of spinning locks on one CPU, innermost last. A spinning task cannot
 * migrate, and interrupts nest, so a small per-CPU stack is exact. */
struct cpu_waits {
	__u32 depth;
	__u32 _pad;
	struct wait_slot slot[MAX_NEST];
};

/* Per-CPU counters, summed in user space. */
enum counter {
	CNT_BEGIN = 0,          /* contention_begin events accepted by the filters */
	CNT_END,                /* contention_end events that closed a recorded wait */
	CNT_FILTERED,           /* begin events rejected by the filters */
	CNT_NESTED,             /* begin while another wait of this thread was open */
	CNT_UNMATCHED_BEGIN,    /* open wait abandoned: its end never came */
	CNT_UNMATCHED_END,      /* end with no begin */
	CNT_LOST_AGG_FULL,      /* wait not stored: aggregation map full */
	CNT_LOST_WAIT_FULL,     /* begin not stored: per-thread wait map full */
	CNT_LOST_NEST_DEPTH,    /* begin not stored: more than MAX_NEST nested waits */
	CNT_LOST_REENTERED,     /* begin dropped: our end program was running on this CPU */
	CNT_STACK_FAILED,       /* wait stored without a stack: stack map full or collision */
	CNT_MAX,
};

#endif /* __KLOCKSTAT_LOCKSTAT_H__ */
