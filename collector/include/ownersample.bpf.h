/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Owners on their CPU. owner_switch (owner.bpf.h) takes an owner's stack
 * only as it leaves a CPU holding the lock; an owner that works through its
 * critical section on its CPU while others wait never does. So a software
 * cpu-clock perf event on every CPU, at --owner-sample-hz, runs
 * owner_sample, which takes the kernel stack of the task it interrupted
 * when that task is a marked owner (it has waiters) that still holds the
 * lock: samples per lock, owner and stack, which user space spreads the
 * owner's charged wait over.
 *
 * Most samples find a thread that is no marked owner, and cost one array
 * read (thread_buckets). A perf event program is not skipped while one of
 * our tracepoint programs runs on the CPU: it may interrupt one, so it
 * takes a nesting level and its own scratch like any of them.
 */
#ifndef __KLOCKSTAT_OWNERSAMPLE_BPF_H__
#define __KLOCKSTAT_OWNERSAMPLE_BPF_H__

#include "common.bpf.h"
#include "counters.bpf.h"
#include "nesting.bpf.h"
#include "owner.bpf.h"
#include "stackpath.bpf.h"
#include "threads.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct owner_sample_key);
	__type(value, __u64);
	__uint(max_entries, 4096); /* resized by the loader; 1 when owners are off */
} owner_samples SEC(".maps");

SEC("perf_event")
int owner_sample(struct bpf_perf_event_data *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), reason = OWNER_KNOWN;
	struct owner_sample_key key = { .tid = tid };
	struct thread_bucket *bucket;
	struct stack_scratch *sc;
	struct owner_mark *m;
	struct cpu_busy *b;
	__u64 *n, one = 1;
	int level, err;

	if (!tid)
		return 0; /* idle */
	bucket = thread_bucket_of(tid);
	if (!bucket || !bucket->owner)
		return 0;
	m = bpf_map_lookup_elem(&owner_marks, &tid);
	if (!m || m->ended)
		return 0;
	/* Its waiters may all have gone: the mark ends at the owner's next
	 * switch, or here, once the lock is no longer its own. */
	if (owner_word(m->lock, m->flags, &reason) != bpf_get_current_task()) {
		m->ended = 1;
		return 0;
	}
	key.lock = m->charged;
	key.type = m->type;
	b = cpu_busy();
	level = enter(b, ROLE_FUNCTION);
	if (level < 0)
		return 0;
	sc = bpf_map_lookup_elem(&scratch, &level);
	/* The interrupted registers: no frames of ours to skip. */
	if (!sc || store_stack(ctx, sc, walk_size(sc), 0, &key.stack, NULL) <= 0)
		key.stack = 0;
	leave(b);
	count(CNT_OWNER_SAMPLE, 1);
	n = bpf_map_lookup_elem(&owner_samples, &key);
	if (n) {
		__sync_fetch_and_add(n, 1);
		return 0;
	}
	err = bpf_map_update_elem(&owner_samples, &key, &one, BPF_NOEXIST);
	if (err == -EEXIST && (n = bpf_map_lookup_elem(&owner_samples, &key)))
		__sync_fetch_and_add(n, 1);
	else if (err && err != -EEXIST)
		count(CNT_LOST_OWNER_SAMPLE, 1);
	return 0;
}

#endif /* __KLOCKSTAT_OWNERSAMPLE_BPF_H__ */
