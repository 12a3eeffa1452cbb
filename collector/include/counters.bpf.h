/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The counters (enum counter): per-CPU sums of events and losses that user
 * space adds up.
 */
#ifndef __KLOCKSTAT_COUNTERS_BPF_H__
#define __KLOCKSTAT_COUNTERS_BPF_H__

#include "common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, CNT_MAX);
} counters SEC(".maps");

/* Per-CPU cells are still shared with the runs nested on their CPU (an
 * interrupt's contention, a rescue copy): a plain read-modify-write there
 * loses the nested run's increment, so every per-CPU sum adds atomically. */
static __always_inline void count(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		__sync_fetch_and_add(c, n);
}

#endif /* __KLOCKSTAT_COUNTERS_BPF_H__ */
