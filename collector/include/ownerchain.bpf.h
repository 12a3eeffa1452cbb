/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Wait chains: a wait whose lock's owner is itself waiting for another lock
 * is blocked by that lock's owner too, and so on. When a wait's owner is
 * read (owner_begin in owner.bpf.h), the owner's own open wait is looked up
 * in thread_waits, then that wait's owner's, up to MAX_CHAIN owners past
 * the wait's own; the chain's end, the last lock and thread reached, is
 * noted in the wait's slot, and the wait, when it ends, is charged to it
 * too. A chain that comes back to a thread already in it (the waiter or an
 * owner) is a cycle: a deadlock, or one in the making.
 *
 * Each link is the owner its lock records now, read again from the lock
 * (owner_word), not the one the owner's wait noted when it began, which the
 * lock may have passed on since: a chain of stale owners could close a
 * cycle that never was. A lock found without an owner ends the chain
 * before it. Only the chain as the wait's owner was read counts: an owner
 * that begins to wait after its waiters did is not seen waiting, until
 * they read the owner again (owner_again).
 */
#ifndef __KLOCKSTAT_OWNERCHAIN_BPF_H__
#define __KLOCKSTAT_OWNERCHAIN_BPF_H__

#include "common.bpf.h"
#include "counters.bpf.h"
#include "ownerword.bpf.h"
#include "threads.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct chain_key);
	__type(value, struct chain_stats);
	__uint(max_entries, 1024); /* resized by the loader; 1 when owners are off */
} owner_chains SEC(".maps");

/* chain_follow notes in slot s, a wait of thread waiter whose lock is owned
 * by thread owner, the end of the chain of owners that wait in turn. */
static __always_inline void chain_follow(struct wait_slot *s, __u32 waiter, __u32 owner)
{
	__u32 seen[MAX_CHAIN + 2] = { waiter, owner };
	__u32 tid = owner;
	struct wait_slot *next;
	__u8 depth = 0, cycle = 0;

	s->chain_depth = 0;
	s->chain_cycle = 0;
#pragma unroll
	for (int i = 0; i < MAX_CHAIN; i++) {
		__u32 reason = OWNER_KNOWN, holder;
		__u64 word;

		next = bpf_map_lookup_elem(&thread_waits, &tid);
		if (!next || !next->lock || next->skip || next->owner_reason != OWNER_KNOWN)
			break;
		word = owner_word(next->owner_lock, next->owner_flags, &reason);
		if (!word || reason != OWNER_KNOWN)
			break; /* released as we looked: the chain ends at tid */
		holder = BPF_CORE_READ((struct task_struct *)word, pid);
		if (holder == tid)
			break; /* handed over to tid, which no longer waits */
		tid = holder;
		depth++;
		s->chain_lock = next->lock;
		s->chain_type = next->type;
		s->chain_tid = tid;
#pragma unroll
		for (int j = 0; j < i + 2; j++) {
			if (seen[j] == tid)
				cycle = 1;
		}
		if (cycle)
			break;
		seen[i + 2] = tid;
	}
	s->chain_depth = depth;
	s->chain_cycle = cycle;
}

/* chain_charge charges delta ns of wait w, charged to its owner, to the end
 * of its chain, if the owner was waiting. */
static __always_inline void chain_charge(const struct wait_slot *w, __u64 delta)
{
	struct chain_key key = {
		.lock = w->lock,
		.end_lock = w->chain_lock,
		.tid = w->owner_tid,
		.end_tid = w->chain_tid,
		.type = w->type,
		.end_type = w->chain_type,
		.depth = w->chain_depth,
		.cycle = w->chain_cycle,
	};
	struct chain_stats *v, init = {};
	int err;

	if (!w->chain_depth)
		return;
	v = bpf_map_lookup_elem(&owner_chains, &key);
	if (!v) {
		err = bpf_map_update_elem(&owner_chains, &key, &init, BPF_NOEXIST);
		if (err && err != -EEXIST) {
			count(CNT_LOST_CHAIN_FULL, 1);
			return;
		}
		v = bpf_map_lookup_elem(&owner_chains, &key);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->total_ns, delta);
}

#endif /* __KLOCKSTAT_OWNERCHAIN_BPF_H__ */
