/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-thread state: the wait slot of every thread that waited (sleeping
 * waits, and the function probes' acquires), and the buckets of threads
 * that tell the programs run for every thread of the machine whether a
 * thread has any state at all.
 */
#ifndef __KLOCKSTAT_THREADS_BPF_H__
#define __KLOCKSTAT_THREADS_BPF_H__

#include "common.bpf.h"
#include "counters.bpf.h"

/* Threads by tid & (THREAD_BUCKETS - 1), counted (struct thread_bucket) so
 * that the programs run for every thread of the machine read an array
 * instead of looking the thread up in a hash map: the one at every thread's
 * free deletes a wait slot only where its bucket counts one (a fork-heavy
 * workload frees several threads per contention event, most of which never
 * waited), and under --owners the one at every context switch (on_switch)
 * looks further only where a thread of the bucket was ever marked an owner
 * or has an owner-tracked wait open. The owner mark is never cleared: a
 * thread that shares a bucket with an owner only costs that lookup. */
#define THREAD_BUCKETS 16384

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct thread_bucket);
	__uint(max_entries, THREAD_BUCKETS);
} thread_buckets SEC(".maps");

static __always_inline struct thread_bucket *thread_bucket_of(__u32 tid)
{
	__u32 i = tid & (THREAD_BUCKETS - 1);

	return bpf_map_lookup_elem(&thread_buckets, &i);
}

/* Sleeping waits, one entry per live thread that waited during the capture;
 * freed with the thread (free_thread in lockstat.bpf.c), unless the map has
 * room for every thread id (collector.freesThreads). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct wait_slot);
	__uint(max_entries, 16384); /* resized by the loader */
} thread_waits SEC(".maps");

/* thread_slot returns the thread's entry in thread_waits, made on its first
 * wait and reused for every later one: no allocation on the steady path. */
static __always_inline struct wait_slot *thread_slot(__u32 tid)
{
	struct wait_slot *s = bpf_map_lookup_elem(&thread_waits, &tid);
	struct wait_slot empty = {};
	struct thread_bucket *bucket;
	int err;

	if (s)
		return s;
	err = bpf_map_update_elem(&thread_waits, &tid, &empty, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count(CNT_LOST_WAIT_FULL, 1);
		return NULL;
	}
	bucket = thread_bucket_of(tid);
	if (!err && bucket)
		__sync_fetch_and_add(&bucket->slots, 1);
	return bpf_map_lookup_elem(&thread_waits, &tid);
}

#endif /* __KLOCKSTAT_THREADS_BPF_H__ */
