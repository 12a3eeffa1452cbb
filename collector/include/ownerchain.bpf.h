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
 * before it. The chain is followed again whenever the wait's owner is read
 * again (owner_again), the same owner or another: an owner that begins to
 * wait after its waiters did is seen waiting then, and one whose wait ended
 * is no longer, each chain charged for the part of the wait it was seen
 * for (chain_again).
 */
#ifndef __KLOCKSTAT_OWNERCHAIN_BPF_H__
#define __KLOCKSTAT_OWNERCHAIN_BPF_H__

#include "common.bpf.h"
#include "counters.bpf.h"
#include "ownerword.bpf.h"
#include "rwbase.bpf.h"
#include "threads.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct chain_key);
	__type(value, struct chain_stats);
	__uint(max_entries, 1024); /* resized by the loader; 1 when owners are off */
} owner_chains SEC(".maps");

/* The end of a wait chain: the lock the last owner waited for (end_lock,
 * end_type), the thread holding it (end_tid), the owners between, and
 * whether it came back to a thread already in it. */
struct chain_end {
	__u64 lock;
	__u32 tid;
	__u8 type;
	__u8 depth;
	__u8 cycle;
};

/*
 * chain_find sets *e to the end of the chain from thread waiter through
 * thread owner, which holds the lock it waits for: depth 0 when owner does
 * not wait. A waiting owner's slot is linked through only when its owner
 * fields describe the wait its lock is of: they are the previous wait's
 * from the slot's fill until its owner_begin (stack walks between), and the
 * previous wait's owner_lock would read who holds a lock the owner no
 * longer waits for. A slot left from an earlier wait of the same lock links
 * the way its own would: the link is read from the lock, not from the slot.
 */
static __always_inline void chain_find(struct chain_end *e, __u32 waiter, __u32 owner)
{
	/* Written before it is read: seen[0..i+1] in the i-th round. */
	__u32 seen[MAX_CHAIN + 2];
	__u32 tid = owner;
	struct wait_slot *next;

	seen[0] = waiter;
	seen[1] = owner;
	e->lock = 0;
	e->tid = 0;
	e->type = 0;
	e->depth = 0;
	e->cycle = 0;
#pragma unroll
	for (int i = 0; i < MAX_CHAIN; i++) {
		__u32 reason = OWNER_KNOWN, holder;
		__u64 word, lock, owner_lock;

		next = bpf_map_lookup_elem(&thread_waits, &tid);
		if (!next)
			break;
		lock = next->lock;
		owner_lock = next->owner_lock;
		if (!lock || next->skip || next->owner_reason != OWNER_KNOWN ||
		    (owner_lock != lock && !rwbase_part(lock, owner_lock)))
			break;
		word = owner_word(owner_lock, next->owner_flags, &reason);
		if (!word || reason != OWNER_KNOWN)
			break; /* released as we looked: the chain ends at tid */
		holder = BPF_CORE_READ((struct task_struct *)word, pid);
		if (holder == tid)
			break; /* handed over to tid, which no longer waits */
		tid = holder;
		e->depth++;
		e->lock = lock;
		e->type = next->type;
		e->tid = tid;
#pragma unroll
		for (int j = 0; j < i + 2; j++) {
			if (seen[j] == tid)
				e->cycle = 1;
		}
		if (e->cycle)
			break;
		seen[i + 2] = tid;
	}
}

/* chain_note notes chain end e in slot s, charged from chain_from (0: from
 * the slot's owner_from). */
static __always_inline void chain_note(struct wait_slot *s, const struct chain_end *e, __u64 chain_from)
{
	s->chain_lock = e->lock;
	s->chain_tid = e->tid;
	s->chain_type = e->type;
	s->chain_depth = e->depth;
	s->chain_cycle = e->cycle;
	s->chain_from = chain_from;
}

/* chain_follow notes in slot s, a wait of thread waiter whose lock is owned
 * by thread owner, read now, the end of the chain of owners that wait in
 * turn. */
static __always_inline void chain_follow(struct wait_slot *s, __u32 waiter, __u32 owner)
{
	struct chain_end e;

	chain_find(&e, waiter, owner);
	chain_note(s, &e, 0);
}

/* chain_charge charges wait w, charged to its owner, to the end of its
 * chain up to now, if the owner was waiting, but for the passed ns after
 * the owner let the lock go (owner_split), when the chain was not its. */
static __always_inline void chain_charge(const struct wait_slot *w, __u64 now, __u64 passed)
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
	__u64 from = w->chain_from ? w->chain_from : w->owner_from;
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
	__sync_fetch_and_add(&v->total_ns, now - from > passed ? now - from - passed : 0);
}

/* chain_again follows the chain of slot s's wait again, its owner read
 * again and unchanged: when the owner began or ended a wait of its own
 * since, or the chain now ends elsewhere, the wait so far is charged to the
 * chain it had and the rest goes to the chain now. */
static __always_inline void chain_again(struct wait_slot *s)
{
	struct chain_end e;
	__u64 now;

	chain_find(&e, s->tid, s->owner_tid);
	if (e.depth == s->chain_depth && (!e.depth || (e.lock == s->chain_lock && e.tid == s->chain_tid &&
						       e.type == s->chain_type && e.cycle == s->chain_cycle)))
		return;
	now = bpf_ktime_get_ns();
	chain_charge(s, now, 0);
	chain_note(s, &e, now);
}

#endif /* __KLOCKSTAT_OWNERCHAIN_BPF_H__ */
