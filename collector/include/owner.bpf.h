/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Owners: who held the lock a thread waits for. At the first announcement
 * of a sleeping lock's wait, the owner recorded in the lock (a mutex's or an
 * rwsem's owner word, an rtmutex's owner) is read with its state, and the
 * wait, when it ends, is charged to that owner.
 *
 * And to the owner's kernel stack. The programs cannot walk another task's
 * stack (bpf_get_task_stack wants a BTF task pointer, which raw tracepoints
 * do not give), so the owner is marked instead, and its stack is taken by
 * owner_switch as it leaves a CPU still holding the lock, when it is current:
 * where it blocked or was preempted while others waited. Once per tenure,
 * not once per waiter. An owner that holds the lock on its CPU for the whole
 * wait never leaves it: its waits are charged to that reason
 * (OWNER_STACK_RAN).
 *
 * The owner is read again when the waiter announces its wait again (a
 * mutex's), and when it goes back to sleep without the lock (on_switch in
 * lockstat.bpf.c, the same sched_switch program): rwsem writers and rtmutex
 * waiters announce their wait once, then wake, lose the lock to another
 * thread and sleep again.
 */
#ifndef __KLOCKSTAT_OWNER_BPF_H__
#define __KLOCKSTAT_OWNER_BPF_H__

#include "common.bpf.h"
#include "counters.bpf.h"
#include "nesting.bpf.h"
#include "ownerchain.bpf.h"
#include "ownerword.bpf.h"
#include "stackpath.bpf.h"
#include "threads.bpf.h"

/* include/linux/sched.h */
#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2

/* Set by the loader before load: read owners at all. */
const volatile bool owners_on = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct owner_key);
	__type(value, struct owner_stats);
	__uint(max_entries, 4096); /* resized by the loader */
} owners SEC(".maps");

/* Frames of the probe machinery on top of the stacks owner_switch takes. */
const volatile __u32 owner_switch_skip = 0;

/* Owners waited for, by owner thread: see struct owner_mark. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct owner_mark);
	__uint(max_entries, 4096); /* resized by the loader */
} owner_marks SEC(".maps");

/* Owners that exited, by thread: their marks, moved here when they are
 * freed, so that the waits they caused that end later keep the stack taken,
 * or say that the owner exited, instead of finding no mark. Least recently
 * used first out: nothing has to delete them. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct owner_mark);
	__uint(max_entries, 1024); /* 1 when owners are off */
} owner_exits SEC(".maps");

/* task_state is a task's __state (state before Linux 5.14). */
static __always_inline unsigned int task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/* owner_state is what a task was doing: see enum owner_state. */
static __always_inline __u16 owner_state(struct task_struct *t)
{
	unsigned int state;

	if (BPF_CORE_READ(t, on_cpu))
		return OWNER_ON_CPU;
	if (BPF_CORE_READ(t, on_rq))
		return OWNER_RUNNABLE;
	state = task_state(t);
	if (state & TASK_UNINTERRUPTIBLE)
		return OWNER_SLEEP_D;
	if (state & TASK_INTERRUPTIBLE)
		return OWNER_SLEEP_S;
	return OWNER_OTHER;
}

/* mark_owner marks task t, thread tid, which owns lock (announced with
 * flags), for its stack, unless it is marked for this tenure already: the
 * waits charged to it, by key, are of key->lock and key->type. A full map
 * leaves it unmarked: its waits are charged to OWNER_STACK_LOST. */
static __always_inline void mark_owner(__u32 tid, struct task_struct *t, __u64 lock, __u32 flags,
				       const struct owner_key *key)
{
	struct owner_mark *m, init = {
		.lock = lock, .task = (__u64)t, .flags = flags, .taken = OWNER_STACK_RAN,
		.charged = key->lock, .type = key->type,
	};
	struct thread_bucket *bucket;

	if (!stack_depth)
		return;
	m = bpf_map_lookup_elem(&owner_marks, &tid);
	if (m && m->lock == lock && m->task == (__u64)t && !m->ended)
		return;
	if (bpf_map_update_elem(&owner_marks, &tid, &init, BPF_ANY))
		return;
	bucket = thread_bucket_of(tid);
	if (bucket && !bucket->owner)
		bucket->owner = 1;
}

/*
 * owner_switch takes the kernel stack of thread tid leaving its CPU
 * (sched_switch's prev, still current) when it is an owner marked for one and
 * still holds the lock; it ends the mark's tenure when it no longer does.
 */
static __always_inline void owner_switch(void *ctx, __u32 tid)
{
	__u32 reason = OWNER_KNOWN;
	struct stack_scratch *sc;
	struct owner_mark *m;
	struct cpu_busy *b;
	__u64 h = 0;
	int level;

	m = bpf_map_lookup_elem(&owner_marks, &tid);
	if (!m || m->ended || m->taken != OWNER_STACK_RAN)
		return;
	if (owner_word(m->lock, m->flags, &reason) != bpf_get_current_task()) {
		m->ended = 1;
		return;
	}
	b = cpu_busy();
	level = enter(b, ROLE_FUNCTION);
	if (level < 0)
		return;
	sc = bpf_map_lookup_elem(&scratch, &level);
	if (sc && store_stack(ctx, sc, walk_size(sc), owner_switch_skip, &h, NULL) > 0) {
		m->stack = h;
		m->taken = OWNER_STACK_TAKEN;
		count(CNT_OWNER_STACK, 1);
	} else {
		m->taken = OWNER_STACK_FAILED;
		count(CNT_OWNER_STACK_FAILED, 1);
	}
	leave(b);
}

/* owner_exit moves the mark of thread tid, being freed, to owner_exits. */
static __always_inline void owner_exit(__u32 tid)
{
	struct owner_mark *m = bpf_map_lookup_elem(&owner_marks, &tid);

	if (!m)
		return;
	bpf_map_update_elem(&owner_exits, &tid, m, BPF_ANY);
	bpf_map_delete_elem(&owner_marks, &tid);
}

/* owner_waiting adds n (1 as a wait opens, -1 as its slot closes) to the
 * owner-tracked waits open in thread tid's bucket, for on_switch. The
 * bucket is looked up only then: every wait passes here, and without
 * --owners none is tracked. */
static __always_inline void owner_waiting(__u32 tid, __u16 reason, __s32 n)
{
	struct thread_bucket *bucket;

	if (!owners_on || reason == OWNER_UNTRACKED)
		return;
	bucket = thread_bucket_of(tid);
	if (bucket)
		__sync_fetch_and_add(&bucket->waiters, n);
}

/*
 * owner_begin notes in a wait's slot who owns the lock it waits for and in
 * what state, and makes a known owner's entry with its pid and name, read
 * while it surely exists. An unknown owner's entry is made by the first wait
 * charged to it: the function probes begin a wait at every acquire, and
 * most find no owner. Waits of spinning locks and filtered waits note
 * nothing.
 */
static __always_inline void owner_begin(struct wait_slot *s, __u64 lock, __u32 flags, bool spinning)
{
	/* The slot's lock, not the one read: on PREEMPT_RT, owner_again
	 * reads an rwsem's inner rtmutex, and its charges go to the rwsem. */
	struct owner_key key = { .lock = s->lock, .type = s->type };
	struct task_struct *t;
	__u64 word;
	int err;

	/* Without --owners a wait writes no owner field: owner_reason stays
	 * OWNER_UNTRACKED as the slot was made (zeroed, by thread_slot or in
	 * spin_waits), and the rest is read only when it is not. */
	if (!owners_on)
		return;
	s->owner_reason = OWNER_UNTRACKED;
	if (spinning || s->skip)
		return;
	key.reason = OWNER_KNOWN;
	word = owner_word(lock, flags, &key.reason);
	if (!word && key.reason == OWNER_KNOWN)
		key.reason = OWNER_NONE; /* released, or handed over, as we looked */
	s->owner_tid = 0;
	s->owner_state = 0;
	s->owner_lock = lock;
	s->owner_flags = flags;
	if (key.reason == OWNER_KNOWN) {
		t = (void *)word;
		key.tid = BPF_CORE_READ(t, pid);
		s->owner_tid = key.tid;
		s->owner_state = owner_state(t);
		mark_owner(key.tid, t, lock, flags, &key);
		chain_follow(s, s->tid, key.tid);
		if (!bpf_map_lookup_elem(&owners, &key)) {
			struct owner_stats init = { .pid = BPF_CORE_READ(t, tgid) };

			BPF_CORE_READ_STR_INTO(&init.comm, t, comm);
			err = bpf_map_update_elem(&owners, &key, &init, BPF_NOEXIST);
			if (err && err != -EEXIST) {
				count(CNT_LOST_OWNER_FULL, 1);
				return;
			}
		}
	}
	s->owner_reason = key.reason;
}

/* owner_stack sets the stack of a known owner's key from its mark, made
 * for owner_lock, and ends the mark's tenure when the owner no longer holds
 * the lock. */
static __always_inline void owner_stack(struct owner_key *key, __u64 owner_lock)
{
	struct owner_mark *m;
	__u32 reason = OWNER_KNOWN;

	if (!stack_depth)
		return;
	m = bpf_map_lookup_elem(&owner_marks, &key->tid);
	if (!m || m->lock != owner_lock) {
		/* Only waits whose owner was not found still marked pay
		 * this lookup. */
		m = bpf_map_lookup_elem(&owner_exits, &key->tid);
		if (!m || m->lock != owner_lock) {
			key->stack_reason = OWNER_STACK_LOST;
			return;
		}
		key->stack = m->stack;
		key->stack_reason = m->taken == OWNER_STACK_RAN && !m->ended ? OWNER_STACK_EXITED : m->taken;
		return;
	}
	key->stack = m->stack;
	key->stack_reason = m->taken;
	if (!m->ended && owner_word(m->lock, m->flags, &reason) != m->task)
		m->ended = 1;
}

/* owner_charge charges a wait up to now to the owner its slot notes, since
 * owner_from, to the owner's stack, and to its chain. Waiters on other CPUs
 * charge the same owner at once. */
static __always_inline void owner_charge(const struct wait_slot *w, __u64 now)
{
	struct owner_key key = {
		.lock = w->lock,
		.tid = w->owner_tid,
		.type = w->type,
		.reason = w->owner_reason,
	};
	struct owner_stats *v;
	/* Masked so that Linux 5.10's verifier knows its bounds below. */
	__u32 st = w->owner_state & 7;
	__u64 delta = now - w->owner_from;
	int err;

	/* owners_on first: the verifier drops the rest from the programs
	 * of a capture without --owners, whose waits are all untracked. */
	if (!owners_on || w->owner_reason == OWNER_UNTRACKED)
		return;
	if (w->owner_reason == OWNER_KNOWN) {
		owner_stack(&key, w->owner_lock);
		chain_charge(w, now);
	}
	v = bpf_map_lookup_elem(&owners, &key);
	if (!v) {
		struct owner_key first = key;
		struct owner_stats init = {};

		if (key.reason == OWNER_KNOWN) {
			/* The first wait charged to this stack: the
			 * owner's pid and name are in the entry its
			 * begin made. */
			first.stack = 0;
			first.stack_reason = OWNER_STACK_TAKEN;
			v = bpf_map_lookup_elem(&owners, &first);
			if (!v)
				return;
			init.pid = v->pid;
			__builtin_memcpy(init.comm, v->comm, sizeof(init.comm));
		}
		err = bpf_map_update_elem(&owners, &key, &init, BPF_NOEXIST);
		if (err && err != -EEXIST) {
			count(CNT_LOST_OWNER_FULL, 1);
			return;
		}
		v = bpf_map_lookup_elem(&owners, &key);
	}
	if (!v)
		return;
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->total_ns, delta);
	if (st < OWNER_STATES) {
		__sync_fetch_and_add(&v->state_count[st], 1);
		__sync_fetch_and_add(&v->state_ns[st], delta);
	}
}

/* owner_end charges a wait ending at now to its owner, since owner_from. */
static __always_inline void owner_end(const struct wait_slot *w, __u64 now)
{
	owner_charge(w, now);
}

/*
 * owner_again re-reads the owner of the lock a wait announces again (a
 * mutex waiter going to sleep, or woken and spinning again), or of the lock
 * a waiter goes back to sleep on (on_switch: an rwsem writer or an rtmutex
 * waiter woken without the lock): when another thread owns it now, the
 * convoy moved on, so the wait so far is charged to the owner it had and the
 * rest to the new one. The same owner keeps the charge, its chain followed
 * again (chain_again): it may have begun or ended a wait of its own since.
 * An owner word found empty, or naming the waiter itself (the lock being
 * handed over to it), changes nothing.
 */
static __always_inline void owner_again(struct wait_slot *s, __u64 lock, __u32 flags)
{
	__u32 reason = OWNER_KNOWN;
	__u64 word, now;

	/* owners_on is known at load: without --owners the verifier drops
	 * the re-read instead of checking it at every wait. */
	if (!owners_on || s->owner_reason == OWNER_UNTRACKED)
		return;
	word = owner_word(lock, flags, &reason);
	if (!word || reason != OWNER_KNOWN || word == bpf_get_current_task())
		return;
	if (s->owner_reason == OWNER_KNOWN && BPF_CORE_READ((struct task_struct *)word, pid) == s->owner_tid) {
		chain_again(s);
		return;
	}
	now = bpf_ktime_get_ns();
	owner_charge(s, now);
	owner_begin(s, lock, flags, false);
	s->owner_from = now;
}

#endif /* __KLOCKSTAT_OWNER_BPF_H__ */
