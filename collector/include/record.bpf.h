/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Recording: a wait that ended, or a hold (funcprobe.bpf.h), added to the
 * records of its key (lock, stack, cgroup, thread, type), its type's
 * histogram and the timeline. The programs' results, read by user space at
 * the end, or drained between runs (collector Rounds).
 */
#ifndef __KLOCKSTAT_RECORD_BPF_H__
#define __KLOCKSTAT_RECORD_BPF_H__

#include "common.bpf.h"
#include "counters.bpf.h"
#include "rwbase.bpf.h"
#include "slabname.bpf.h"
#include "timeline.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct wait_key);
	__type(value, struct wait_stats);
	__uint(max_entries, 16384); /* resized by the loader */
} aggregate SEC(".maps");

/* Log-linear wait histogram per lock type: index type*HIST_BUCKETS + bucket. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, MAX_TYPES * HIST_BUCKETS); /* resized to the types in use */
} histogram SEC(".maps");

/* name_lock names a lock of the current task the way perf does. */
static __always_inline __u32 name_lock(__u64 lock)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	struct sighand_struct *sighand;

	if (mm) {
		__u64 addr;

		if (bpf_core_field_exists(mm->mmap_lock))
			addr = (__u64)mm + bpf_core_field_offset(struct mm_struct, mmap_lock);
		else
			addr = (__u64)mm + bpf_core_field_offset(struct mm_struct___pre58, mmap_sem);
		if (addr == lock || (rwbase_inner() && addr + rwbase_inner() == lock))
			return LOCK_NAME_MMAP;
	}
	sighand = BPF_CORE_READ(task, sighand);
	if (sighand && (__u64)sighand + bpf_core_field_offset(struct sighand_struct, siglock) == lock)
		return LOCK_NAME_SIGHAND;
	return LOCK_NAME_NONE;
}

/* hist_bucket is capture.BucketIndex: log-linear, HIST_SUB_BITS per power of two. */
static __always_inline __u32 hist_bucket(__u64 delta)
{
	__u64 v = delta;
	__u32 m = 0;

	if (delta < (1 << (HIST_SUB_BITS)))
		return delta;
	/* m = floor(log2(delta)) without a loop */
	if (v >> 32) { v >>= 32; m += 32; }
	if (v >> 16) { v >>= 16; m += 16; }
	if (v >> 8) { v >>= 8; m += 8; }
	if (v >> 4) { v >>= 4; m += 4; }
	if (v >> 2) { v >>= 2; m += 2; }
	if (v >> 1) { m += 1; }
	return (m - HIST_SUB_BITS + 1) * (1 << HIST_SUB_BITS) +
	       ((delta >> (m - HIST_SUB_BITS)) & ((1 << HIST_SUB_BITS) - 1));
}

/* record_in adds one wait (or hold) of w's key, spin of it spent spinning,
 * to an aggregation map and its type's histogram; lost is the counter of
 * what a full map drops. It returns whether the map had room. */
static __always_inline bool record_in(void *agg, void *hist, __u32 lost,
				      struct wait_slot *w, __u64 delta, __u64 spin)
{
	struct wait_key key = {
		.lock = w->lock,
		.stack = w->stack,
		.cgroup = w->cgroup,
		.pid = w->pid,
		.tid = w->tid,
		.type = w->type,
	};
	struct wait_stats *v;
	__u32 idx;
	__u64 *h;

	v = bpf_map_lookup_elem(agg, &key);
	if (v) {
		/* The key holds the thread, so only this thread writes here. */
		v->count++;
		v->total_ns += delta;
		v->spin_ns += spin;
		if (delta < v->min_ns)
			v->min_ns = delta;
		if (delta > v->max_ns)
			v->max_ns = delta;
	} else {
		struct wait_stats init = {
			.count = 1,
			.total_ns = delta,
			.min_ns = delta,
			.max_ns = delta,
			.spin_ns = spin,
		};
		int err;

		bpf_get_current_comm(&init.comm, sizeof(init.comm));
		init.lock_name = name_lock(w->lock);
		if (init.lock_name == LOCK_NAME_NONE)
			name_slab(w->lock);
		err = bpf_map_update_elem(agg, &key, &init, BPF_NOEXIST);
		if (err) {
			count(lost, 1);
			return false;
		}
	}

	idx = w->type * HIST_BUCKETS + hist_bucket(delta);
	h = bpf_map_lookup_elem(hist, &idx);
	if (h)
		__sync_fetch_and_add(h, 1);
	return true;
}

/* record records a wait that began at w->ts and lasted delta: in the
 * records, and, where they have room for it, the timeline. */
static __always_inline void record(struct wait_slot *w, __u64 delta, __u64 spin)
{
	if (record_in(&aggregate, &histogram, CNT_LOST_AGG_FULL, w, delta, spin))
		timeline_add(w->type, w->ts + delta, delta);
}

#endif /* __KLOCKSTAT_RECORD_BPF_H__ */
