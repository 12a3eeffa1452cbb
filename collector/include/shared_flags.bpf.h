/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The lock type of a wait, from its contention_begin flags: locks.json says
 * which type claims each flags value (flag_type).
 *
 * Some lock types share their contention_begin flags. On PREEMPT_RT an
 * rw_semaphore and an rwlock_t are both built on rwbase_rt, and both announce
 * a wait with LCB_F_RT|LCB_F_READ or LCB_F_RT|LCB_F_WRITE: only the acquire
 * function below the tracepoint (down_read or rt_read_lock) tells them
 * apart. locks.json lets several types claim one flags value; the loader
 * hands over the code of their acquire functions, and the begin programs
 * look for one among the first frames of the stack. That costs a short
 * stack walk per wait of such flags, and only those: other kernels never
 * announce them.
 */
#ifndef __KLOCKSTAT_SHARED_FLAGS_BPF_H__
#define __KLOCKSTAT_SHARED_FLAGS_BPF_H__

#include "common.bpf.h"
#include "stackpath.bpf.h"

/* Set by the loader before load: flags value -> index of the lock type that
 * claims it, or -1 (not captured). */
const volatile __s32 flag_type[MAX_FLAGS] = {};

/* Frames searched for an acquire function: the tracepoint machinery (up to
 * five frames with the perf-event backend), the lock's slow path (four for
 * an rwsem's inner rtmutex on PREEMPT_RT), then the acquire function. */
#define SHARED_FRAMES 16

/* flags value -> several types claim it: look at the stack */
const volatile bool flag_shared[MAX_FLAGS] = {};
/* The acquire and internal functions of those types, each [lo, hi), with the
 * flags value it tells apart, the type it means (-1: a type not captured)
 * and whether it is an internal function. */
const volatile __u64 shared_fn_lo[MAX_SHARED_FUNCS] = {};
const volatile __u64 shared_fn_hi[MAX_SHARED_FUNCS] = {};
const volatile __u32 shared_fn_flags[MAX_SHARED_FUNCS] = {};
const volatile __s32 shared_fn_type[MAX_SHARED_FUNCS] = {};
const volatile bool shared_fn_internal[MAX_SHARED_FUNCS] = {};

struct shared_search {
	__u64 ips[SHARED_FRAMES];
	long n;      /* bytes of ips walked */
	__u32 flags;
	__s32 type;  /* the type found so far */
};

/* shared_frame looks frame i up among the functions that decide flags; it
 * stops the search at an acquire function. A bpf_loop callback: the
 * verifier checks it once, not once per frame and function (the programs
 * that use it exist only on kernels with the contention tracepoints, 5.19,
 * which all have bpf_loop). */
static long shared_frame(__u64 i, struct shared_search *s)
{
	__u64 ip;

	if (i >= SHARED_FRAMES || (long)(i * sizeof(__u64)) >= s->n)
		return 1;
	ip = s->ips[i & (SHARED_FRAMES - 1)];
	for (int j = 0; j < MAX_SHARED_FUNCS; j++) {
		if (shared_fn_flags[j] != s->flags || ip < shared_fn_lo[j] || ip >= shared_fn_hi[j])
			continue;
		s->type = shared_fn_type[j];
		return !shared_fn_internal[j];
	}
	return 0;
}

/* shared_flags_type returns the type of a wait announced with flags: the
 * type flag_type gave it, unless the flags are shared. Then the innermost
 * acquire function of a sharing type on the stack decides, or, with none
 * there (down_write tail-calls rwbase_write_lock on PREEMPT_RT), the
 * outermost internal function: the lock's own slow path lies above the
 * rtmutex code that every such lock goes through. */
static __always_inline __s32 shared_flags_type(void *ctx, __u32 flags, __s32 type)
{
	struct shared_search s = { .flags = flags, .type = type };

	if (flags >= MAX_FLAGS || !flag_shared[flags])
		return type;
	s.n = bpf_get_stack(ctx, s.ips, sizeof(s.ips), stack_skip & BPF_F_SKIP_FIELD_MASK);
	if (s.n > 0)
		bpf_loop(SHARED_FRAMES, shared_frame, &s, 0);
	return s.type;
}

#endif /* __KLOCKSTAT_SHARED_FLAGS_BPF_H__ */
