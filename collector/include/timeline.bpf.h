/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The timeline: per generation, lock type and bucket of the window, the
 * waits that ended there; index (gen * timeline_types + type) *
 * TIMELINE_BUCKETS + bucket. A bucket is 1 << shift ns wide, shift and gen
 * in timeline_control (gen << 8 | shift). To double the width while the
 * programs run, user space switches to the other generation at twice the
 * width, and folds the one it left, which nothing writes any more
 * (collector.timeline): per-CPU cells, no lock.
 */
#ifndef __KLOCKSTAT_TIMELINE_BPF_H__
#define __KLOCKSTAT_TIMELINE_BPF_H__

#include "common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct timeline_cell);
	__uint(max_entries, 2 * MAX_TYPES * TIMELINE_BUCKETS); /* resized to the types in use */
} timeline SEC(".maps");

/* Set by the loader before load. */
const volatile __u32 timeline_types = 1;
/* CLOCK_MONOTONIC at the start of the window, set when the probes are
 * attached; waits ending before then count in the first bucket. */
volatile __u64 timeline_start SEC(".data") = 0;
volatile __u64 timeline_control SEC(".data") = 20;

static __always_inline void timeline_add(__u32 type, __u64 end, __u64 delta)
{
	__u64 ctl = timeline_control, start = timeline_start, b = 0;
	struct timeline_cell *c;
	__u32 idx;

	if (end > start)
		b = (end - start) >> (ctl & 63);
	/* A window longer than planned (a slow stop) ends in the last bucket. */
	if (b >= TIMELINE_BUCKETS)
		b = TIMELINE_BUCKETS - 1;
	idx = (((ctl >> 8) & 1) * timeline_types + type) * TIMELINE_BUCKETS + b;
	c = bpf_map_lookup_elem(&timeline, &idx);
	if (c) {
		__sync_fetch_and_add(&c->count, 1);
		__sync_fetch_and_add(&c->total_ns, delta);
	}
}

#endif /* __KLOCKSTAT_TIMELINE_BPF_H__ */
