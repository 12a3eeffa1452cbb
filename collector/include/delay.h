/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The map values of delay.bpf.c shared with Go (bpf2go -type): the
 * counters of the delays a `klockstat whatif` run added, and the bounds
 * the kernel program enforces whatever user space asks.
 */
#ifndef __KLOCKSTAT_DELAY_H__
#define __KLOCKSTAT_DELAY_H__

/* The bounds: one delay is at most DELAY_MAX_NS, and the delays one CPU adds
 * in one second of ktime at most DELAY_BUDGET_MAX_NS. */
enum delay_limits {
	DELAY_MAX_NS = 100000,
	DELAY_BUDGET_MAX_NS = 200000000,
};

/* Per CPU, summed by user space. */
struct delay_counters {
	__u64 matched;        /* contended acquisitions of the chosen lock */
	__u64 fired;          /* delays added */
	__u64 added_ns;       /* time they added, as spun */
	__u64 refused_budget; /* not added: the CPU's budget of the second was spent */
	__u64 refused_spin;   /* not added: a spinning lock, not allowed */
	__u64 skipped_locked; /* not added: the mutex's wait_lock held (unlocked_only) */
	__u64 fired_locked;   /* of fired: with a mutex's wait_lock held, IRQs off */
	__u64 no_stack;       /* the waiter's stack could not be taken */
	__u64 hold_samples;   /* contended holds measured */
	__u64 hold_ns;        /* their sum */
	__u64 hold_min_ns;    /* the shortest, 0 before the first */
	__u64 hold_max_ns;    /* the longest */
	__u64 hold_spun;      /* of hold_samples, ended by a spinner's acquisition */
	__u64 hold_spun_ns;   /* their sum */
	__u64 lost;           /* waits not followed: the map of waits in progress was full */
};

/* The waiter's wait in progress, per thread, from its begin to its end. */
struct delay_wait {
	__u64 begin_ns;
	__u64 lock;
	__u32 flags;  /* contention_begin's last flags */
	__u16 begins; /* contention_begin's of this wait: a mutex's second is in its slow path */
	__u16 pad;
};

/* A contended hold in progress, per thread. */
struct delay_hold {
	__u64 lock;
	__u64 acquired_ns;
};

/* The last contended acquisition of a lock: by whom, when. */
struct delay_holder {
	__u64 acquired_ns;
	__u32 tid;
	__u32 pad;
};

/* The budget of one CPU in the current second. */
struct delay_budget {
	__u64 second;
	__u64 used_ns;
};

#endif /* __KLOCKSTAT_DELAY_H__ */
