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
 * where it blocked, and where it was preempted, while others waited. Once
 * per tenure for each, not once per waiter.
 *
 * A wait is split by what its owner did over it: on its CPU, runnable but
 * not running (preempted holding the lock), or off its CPU. The mark keeps a
 * clock of the owner's time on its CPU, runnable, and with its tenure over
 * (free), turned at each of its switches (owner_switch, owner_arrive) and
 * as its tenure ends (tenure_over); the wait reads it as it begins and as
 * it ends, and charges each share to its own key (owner_split): the on-CPU
 * share to OWNER_STACK_RAN, which user space spreads over the owner's
 * samples, the runnable share to where it was preempted, the free share to
 * OWNER_PASSED, no owner's, the rest to where it blocked. A thread woken is
 * counted off its CPU until it runs: there is no hook at wakeups.
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

/* Frames of the probe machinery on top of the stacks owner_switch and
 * owner_waking take: both are sched hooks of one kind (collector.schedHook). */
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

/* Marked owners by their task_struct's address, hashed (task_bucket): the
 * raw sched_switch tracepoint names the task arriving on a CPU by pointer,
 * and reading its pid at every switch would cost a helper call where this
 * costs an array read. Set as an owner is marked, never cleared: a task
 * that shares a bucket with an owner costs that read and a lookup. */
#define TASK_BUCKETS 16384

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, TASK_BUCKETS);
} owner_tasks SEC(".maps");

/* task_bucket is the owner_tasks index of task t: task_structs are
 * kilobytes apart, so their low bits say little. */
static __always_inline __u32 task_bucket(__u64 t)
{
	return ((t >> 10) ^ (t >> 24)) & (TASK_BUCKETS - 1);
}

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

/* held_state is an owner's clock state for its enum owner_state. */
static __always_inline __u16 held_state(__u16 state)
{
	if (state == OWNER_ON_CPU)
		return OWNER_HELD_ON_CPU;
	if (state == OWNER_RUNNABLE)
		return OWNER_HELD_RUNNABLE;
	return OWNER_HELD_OFF_CPU;
}

/* clock_read reads one total of the clock of mark m at now, that of state
 * (its time on its CPU, runnable, or with its tenures over since it was
 * first marked), total before the clock's last turn. Returned, not written
 * through pointers: the function probes have no stack to spare. */
static __always_inline __u64 clock_read(const struct owner_mark *m, __u16 state, __u64 total, __u64 now)
{
	__u64 since = m->clock_since;

	return total + (m->clock_state == state && now > since ? now - since : 0);
}

/* A wait keeps the clock's runnable and free totals as it begins in 32 bits
 * each, in units of 64 ns: differences modulo 2^32 of them are right for
 * waits up to 4.5 minutes, 64 ns at most off (the slot has no room for
 * 64-bit copies: the function probes copy it onto the verifier's 512-byte
 * stack). */
#define OWNER_SNAP_SHIFT 6

static __always_inline __u32 clock_snap(__u64 ns)
{
	return (__u32)(ns >> OWNER_SNAP_SHIFT);
}

/* clock_since_snap is the time a clock total now at ns gained since it was
 * snap (clock_snap). */
static __always_inline __u64 clock_since_snap(__u64 ns, __u32 snap)
{
	return (__u64)(__u32)(clock_snap(ns) - snap) << OWNER_SNAP_SHIFT;
}

/* clock_passed is the time of wait w, up to now, after its owner, with
 * mark m, let the lock go: its clock's free time since the wait's
 * snapshot. */
static __always_inline __u64 clock_passed(const struct wait_slot *w, const struct owner_mark *m, __u64 now)
{
	return clock_since_snap(clock_read(m, OWNER_HELD_FREE, m->clock_free_ns, now), w->owner_free_snap);
}

/* clock_snapshot notes in wait slot s the clock of mark m at now. */
static __always_inline void clock_snapshot(struct wait_slot *s, const struct owner_mark *m, __u64 now)
{
	s->owner_on_ns = clock_read(m, OWNER_HELD_ON_CPU, m->clock_on_ns, now);
	s->owner_run_snap = clock_snap(clock_read(m, OWNER_HELD_RUNNABLE, m->clock_run_ns, now));
	s->owner_free_snap = clock_snap(clock_read(m, OWNER_HELD_FREE, m->clock_free_ns, now));
	s->owner_clocked = 1;
}

/* clock_turn moves the clock of mark m to state at now, adding the time
 * since its last turn to the state it leaves. Only the owner's switches
 * turn it, one at a time; a waiter reading it meanwhile on another CPU may
 * see it half turned, which the split of the wait bounds (owner_split). */
static __always_inline void clock_turn(struct owner_mark *m, __u16 state, __u64 now)
{
	__u64 d = now > m->clock_since ? now - m->clock_since : 0;

	if (m->clock_state == OWNER_HELD_ON_CPU)
		m->clock_on_ns += d;
	else if (m->clock_state == OWNER_HELD_RUNNABLE)
		m->clock_run_ns += d;
	else if (m->clock_state == OWNER_HELD_FREE)
		m->clock_free_ns += d;
	m->clock_state = state;
	m->clock_since = now;
}

/* tenure_over ends the tenure of mark m at now: the owner no longer holds
 * the lock. Its switches turn the clock no more, which counts the time
 * until its next tenure as free: the waits still charged to it, asleep
 * and not woken for it (a mutex or an rwsem wakes its first waiter only),
 * wait for the threads the lock went to next, unread (OWNER_PASSED). */
static __always_inline void tenure_over(struct owner_mark *m, __u64 now)
{
	clock_turn(m, OWNER_HELD_FREE, now);
	m->ended = 1;
}

/* mark_owner marks task t, thread tid, which owns lock (announced with
 * flags) and is in state (enum owner_state), for its stack, unless it is marked for this tenure already: the
 * waits charged to it, by key, are of key->lock and key->type. A full map
 * leaves it unmarked: its waits are charged to OWNER_STACK_LOST. A new
 * tenure of the same task keeps its clock, which waits of the old one
 * still read. Returns the mark, NULL for none. */
static __always_inline struct owner_mark *mark_owner(__u32 tid, struct task_struct *t, __u16 state, __u64 lock,
						      __u32 flags, const struct owner_key *key)
{
	struct owner_mark *m, init = {
		.lock = lock, .task = (__u64)t, .flags = flags, .taken = OWNER_STACK_RAN,
		.preempt_taken = OWNER_STACK_RAN, .charged = key->lock, .type = key->type,
	};
	struct thread_bucket *bucket;
	__u32 i = task_bucket((__u64)t), *marked;

	if (!stack_depth)
		return NULL;
	m = bpf_map_lookup_elem(&owner_marks, &tid);
	if (m && m->lock == lock && m->task == (__u64)t && !m->ended)
		return m;
	init.clock_state = held_state(state);
	init.clock_since = bpf_ktime_get_ns();
	if (m && m->task == (__u64)t) {
		/* The clock goes on: an ended tenure's time since it ended
		 * is counted free, a tenure of another lock not seen ended
		 * goes on in its state. */
		if (m->ended)
			clock_turn(m, init.clock_state, init.clock_since);
		init.clock_on_ns = m->clock_on_ns;
		init.clock_run_ns = m->clock_run_ns;
		init.clock_free_ns = m->clock_free_ns;
		init.clock_state = m->clock_state;
		init.clock_since = m->clock_since;
	}
	if (bpf_map_update_elem(&owner_marks, &tid, &init, BPF_ANY))
		return NULL;
	bucket = thread_bucket_of(tid);
	if (bucket && !bucket->owner)
		bucket->owner = 1;
	marked = bpf_map_lookup_elem(&owner_tasks, &i);
	if (marked && !*marked)
		*marked = 1;
	return bpf_map_lookup_elem(&owner_marks, &tid);
}

/* A new owners entry's first value, read from a map rather than built on
 * the BPF stack: the function-probe programs, whose stack adds to that of
 * their bpf_loop callbacks, come within 32 bytes of the verifier's 512. */
static const struct owner_stats owner_stats_zero;

/* owner_entry makes the owners entry of key, unless it is there, with the
 * pid and name of task t; false when the map is full, counted. */
static __always_inline bool owner_entry(const struct owner_key *key, struct task_struct *t)
{
	struct owner_stats *v;
	int err;

	if (bpf_map_lookup_elem(&owners, key))
		return true;
	err = bpf_map_update_elem(&owners, key, &owner_stats_zero, BPF_NOEXIST);
	if (err == -EEXIST)
		return true;
	if (err) {
		count(CNT_LOST_OWNER_FULL, 1);
		return false;
	}
	v = bpf_map_lookup_elem(&owners, key);
	if (v) {
		v->pid = BPF_CORE_READ(t, tgid);
		BPF_CORE_READ_STR_INTO(&v->comm, t, comm);
	}
	return true;
}

/* enter_scratch enters this CPU's nesting for a sched hook's stack walk,
 * and returns the walk's scratch, to leave(b) when done; NULL when the CPU
 * is nested too deep, with nothing to leave. */
static __always_inline struct stack_scratch *enter_scratch(struct cpu_busy *b)
{
	int level = enter(b, ROLE_FUNCTION);
	struct stack_scratch *sc;

	if (level < 0)
		return NULL;
	sc = bpf_map_lookup_elem(&scratch, &level);
	if (!sc)
		leave(b);
	return sc;
}

/* owner_take_stack walks current's kernel stack into the stacks map, its
 * key in *h, counting the walk; false when it failed (or the CPU is nested
 * too deep to walk). For the sched hooks: an owner leaving its CPU, a
 * blocker waking a waiter. */
static __always_inline bool owner_take_stack(void *ctx, __u64 *h)
{
	struct cpu_busy *b = cpu_busy();
	struct stack_scratch *sc = enter_scratch(b);
	bool taken;

	if (!sc)
		return false;
	taken = store_stack(ctx, sc, walk_size(sc), owner_switch_skip, h, NULL) > 0;
	count(taken ? CNT_OWNER_STACK : CNT_OWNER_STACK_FAILED, 1);
	leave(b);
	return taken;
}

/*
 * A percpu rwsem's writers' paths to the lock, by thread. Linux 6.x's
 * percpu_down_write announces a wait only when another writer holds the
 * lock: a writer waiting for its readers to drain (rcuwait_wait_event), or
 * for rcu_sync_enter's grace period, sleeps in it with no wait open, and the
 * readers it then blocks are woken by percpu_up_write, far from its path to
 * the lock (locks_stop tail-calls it from seq_read_iter). So a thread seen
 * waking a percpu rwsem's readers as their writer gets an entry here, and
 * each time it next sleeps uninterruptibly with no wait open its stack is
 * walked, and kept when percpu_down_write is on it: the path it last took to
 * a percpu rwsem, bound to the lock whose readers it wakes next. Least
 * recently used first out; freed with the thread.
 */
struct writer_path {
	__u64 stack; /* stacks map key, 0: not taken yet */
	__u64 lock;  /* the lock whose readers it woke since, 0: none yet */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct writer_path);
	__uint(max_entries, 1024); /* 1 when owners are off */
} writer_paths SEC(".maps");

/* percpu_down_write's code, [lo, hi), from kallsyms; 0: not known, and no
 * writer's path is looked for. */
const volatile __u64 pcpu_down_write_lo = 0;
const volatile __u64 pcpu_down_write_hi = 0;

/* How deep in a sleeping writer's stack percpu_down_write may be: under
 * __schedule and schedule, or rcu_sync_enter's wait for a grace period
 * (schedule_timeout, wait_for_completion, __wait_rcu_gp or
 * synchronize_rcu_expedited, synchronize_rcu, rcu_sync_enter). */
#define WRITER_PATH_FRAMES 10

/* writer_sleeps takes the stack of thread tid, current, going to sleep
 * uninterruptibly with no wait open, when it has a writer_paths entry and
 * sleeps in percpu_down_write: its path to the lock. */
static __always_inline void writer_sleeps(void *ctx, __u32 tid)
{
	struct writer_path *wp;
	struct stack_scratch *sc;
	struct cpu_busy *b;
	bool kept;
	long n;
	__u64 h;
	int i;

	if (!pcpu_down_write_lo || !stack_depth)
		return;
	wp = bpf_map_lookup_elem(&writer_paths, &tid);
	if (!wp)
		return;
	b = cpu_busy();
	sc = enter_scratch(b);
	if (!sc)
		return;
	n = bpf_get_stack(ctx, sc->ips, walk_size(sc), owner_switch_skip & BPF_F_SKIP_FIELD_MASK);
	for (i = 0; i < WRITER_PATH_FRAMES && i < n / (long)sizeof(__u64); i++) {
		if (sc->ips[i] < pcpu_down_write_lo || sc->ips[i] >= pcpu_down_write_hi)
			continue;
		kept = keep_stack(sc, &h, NULL);
		if (kept) {
			wp->stack = h;
			wp->lock = 0;
		}
		count(kept ? CNT_OWNER_STACK : CNT_OWNER_STACK_FAILED, 1);
		break;
	}
	leave(b);
}

/* writer_path_of gives in *h the path thread waker, waking a percpu rwsem's
 * reader as its writer, last took to lock (writer_sleeps); false when it has
 * none, and then it gets an entry, for its next sleep in percpu_down_write. */
static __always_inline bool writer_path_of(__u32 waker, __u64 lock, __u64 *h)
{
	struct writer_path *wp = bpf_map_lookup_elem(&writer_paths, &waker);
	struct writer_path none = {};
	struct thread_bucket *bucket;

	if (!wp) {
		bucket = thread_bucket_of(waker);
		if (bucket && !bpf_map_update_elem(&writer_paths, &waker, &none, BPF_NOEXIST) && !bucket->writers)
			bucket->writers = 1;
		return false;
	}
	if (!wp->stack || (wp->lock && wp->lock != lock))
		return false;
	wp->lock = lock;
	*h = wp->stack;
	return true;
}

/*
 * owner_switch turns the clock of thread tid leaving its CPU (sched_switch's
 * prev, still current) when it is marked for a tenure not ended, to runnable when it stays on the
 * run queue (preempted, or yielding) and off CPU when it does not; and takes
 * its kernel stack, once per tenure for each, when it still holds the lock
 * its mark is for; it ends the mark's tenure when it no longer does.
 */
static __always_inline void owner_switch(void *ctx, __u32 tid, bool runnable)
{
	__u32 reason = OWNER_KNOWN;
	struct owner_mark *m;
	__u16 *taken;
	__u64 h = 0, now;

	m = bpf_map_lookup_elem(&owner_marks, &tid);
	if (!m || m->ended)
		return;
	now = bpf_ktime_get_ns();
	clock_turn(m, runnable ? OWNER_HELD_RUNNABLE : OWNER_HELD_OFF_CPU, now);
	taken = runnable ? &m->preempt_taken : &m->taken;
	if (*taken != OWNER_STACK_RAN)
		return;
	if (owner_word(m->lock, m->flags, &reason) != bpf_get_current_task()) {
		tenure_over(m, now);
		return;
	}
	if (!owner_take_stack(ctx, &h)) {
		*taken = OWNER_STACK_FAILED;
		return;
	}
	if (runnable)
		m->preempt_stack = h;
	else
		m->stack = h;
	*taken = OWNER_STACK_TAKEN;
}

/* owner_stack_before takes the stack of task t, a marked owner about to
 * run again, when it was preempted before it was marked (before its
 * waiters came): owner_switch never saw it leave, and its stack, saved as
 * it left, is still where it was preempted. Only where t is a task pointer
 * bpf_get_task_stack takes (tp_btf). The kernel's walk of another task
 * leaves out the scheduler's functions (stack_trace_save_tsk): the stack
 * starts where it was preempted, under __cond_resched or the interrupt.
 * Not for an owner asleep before it was marked: the functions of a lock
 * it sleeps on are the scheduler's too, and would be lost. */
static __always_inline void owner_stack_before(struct owner_mark *m, struct task_struct *t)
{
	struct stack_scratch *sc;
	struct cpu_busy *b;
	long n;
	__u64 h;

	if (m->clock_state != OWNER_HELD_RUNNABLE || m->preempt_taken != OWNER_STACK_RAN)
		return;
	b = cpu_busy();
	sc = enter_scratch(b);
	if (!sc)
		return;
	n = bpf_get_task_stack(t, sc->ips, walk_size(sc), 0);
	if (n > 0 && keep_stack(sc, &h, NULL)) {
		m->preempt_stack = h;
		m->preempt_taken = OWNER_STACK_TAKEN;
		count(CNT_OWNER_STACK, 1);
	} else {
		m->preempt_taken = OWNER_STACK_FAILED;
		count(CNT_OWNER_STACK_FAILED, 1);
	}
	leave(b);
}

/* owner_arrive turns the clock of thread tid, marked for a tenure not
 * ended, back on its CPU: it is sched_switch's next, task t where the
 * hook gives one bpf_get_task_stack takes (NULL elsewhere). */
static __always_inline void owner_arrive(__u32 tid, struct task_struct *t)
{
	struct owner_mark *m = bpf_map_lookup_elem(&owner_marks, &tid);

	if (!m || m->ended)
		return;
	if (t && stack_depth)
		owner_stack_before(m, t);
	clock_turn(m, OWNER_HELD_ON_CPU, bpf_ktime_get_ns());
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
	struct owner_mark *m;
	struct task_struct *t;
	__u64 word;

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
	s->owner_clocked = 0;
	s->waker_tid = 0;
	s->owner_slept = 0;
	if (key.reason == OWNER_KNOWN) {
		t = (void *)word;
		key.tid = BPF_CORE_READ(t, pid);
		s->owner_tid = key.tid;
		s->owner_state = owner_state(t);
		m = mark_owner(key.tid, t, s->owner_state, lock, flags, &key);
		if (m) {
			/* The wait is charged from a moment later (its ts,
			 * or owner_again's now): owner_split bounds the
			 * difference. */
			clock_snapshot(s, m, bpf_ktime_get_ns());
		}
		chain_follow(s, s->tid, key.tid);
		if (!owner_entry(&key, t))
			return;
	}
	s->owner_reason = key.reason;
}

/* owner_mark_of returns the mark of a known owner, made for owner_lock:
 * the live one, or the one it left as it exited (*exited). NULL when it was
 * lost. */
static __always_inline struct owner_mark *owner_mark_of(__u32 tid, __u64 owner_lock, bool *exited)
{
	struct owner_mark *m = bpf_map_lookup_elem(&owner_marks, &tid);

	*exited = false;
	if (m && m->lock == owner_lock)
		return m;
	/* Only waits whose owner was not found still marked pay this
	 * lookup. */
	m = bpf_map_lookup_elem(&owner_exits, &tid);
	if (!m || m->lock != owner_lock)
		return NULL;
	*exited = true;
	return m;
}

/* owner_add charges part ns of a wait whose owner was in state st (enum
 * owner_state) as it began to owner key key. */
static __always_inline void owner_add(const struct owner_key *key, __u64 part, __u32 st)
{
	struct owner_stats *v, *first_v = NULL;
	int err;

	v = bpf_map_lookup_elem(&owners, key);
	if (!v) {
		if (key->reason == OWNER_KNOWN) {
			/* The first wait charged to this stack: the
			 * owner's pid and name are in the entry its
			 * begin made. */
			struct owner_key first = *key;

			first.stack = 0;
			first.stack_reason = OWNER_STACK_TAKEN;
			first.held = OWNER_HELD_UNSPLIT;
			first_v = bpf_map_lookup_elem(&owners, &first);
			if (!first_v)
				return;
		}
		err = bpf_map_update_elem(&owners, key, &owner_stats_zero, BPF_NOEXIST);
		if (err && err != -EEXIST) {
			count(CNT_LOST_OWNER_FULL, 1);
			return;
		}
		v = bpf_map_lookup_elem(&owners, key);
		if (v && first_v && !err) {
			v->pid = first_v->pid;
			__builtin_memcpy(v->comm, first_v->comm, sizeof(v->comm));
		}
	}
	if (!v)
		return;
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->total_ns, part);
	if (st < OWNER_STATES) {
		__sync_fetch_and_add(&v->state_count[st], 1);
		__sync_fetch_and_add(&v->state_ns[st], part);
	}
}

/* share_reason is why a runnable or off-CPU share, whose stack was taken
 * with reason taken, has none: the owner left its CPU so before its mark,
 * or exited. */
static __always_inline __u32 share_reason(__u16 taken, bool exited)
{
	if (taken != OWNER_STACK_RAN)
		return taken;
	return exited ? OWNER_STACK_EXITED : OWNER_STACK_BEFORE;
}

/* owner_split charges the delta ns of wait w ending at now, whose owner
 * has mark m, by what the owner did over it, read from m's clock against
 * the wait's snapshot: its time on its CPU (spread over its samples in
 * user space), runnable (at the stack it was preempted at), off its CPU
 * (at the stack it blocked at), and the free ns its tenures were over
 * (clock_passed), not its doing (OWNER_PASSED); each share to its own key, and a wait counts once
 * in each. The shares are bounded to add up to delta: the clock may be
 * read half turned. */
static __always_inline void owner_split(const struct wait_slot *w, struct owner_key *key, const struct owner_mark *m,
					bool exited, __u64 delta, __u64 free, __u64 now, __u32 st)
{
	__u64 on, run;

	/* First, so that no more is live over the rest: the function
	 * probes have no stack to spare. */
	if (free) {
		if (free > delta)
			free = delta;
		key->reason = OWNER_PASSED;
		key->tid = 0;
		owner_add(key, free, OWNER_STATES);
		key->reason = OWNER_KNOWN;
		key->tid = w->owner_tid;
		delta -= free;
		if (!delta)
			return;
	}
	on = clock_read(m, OWNER_HELD_ON_CPU, m->clock_on_ns, now);
	on = on > w->owner_on_ns ? on - w->owner_on_ns : 0;
	run = clock_since_snap(clock_read(m, OWNER_HELD_RUNNABLE, m->clock_run_ns, now), w->owner_run_snap);
	if (on > delta)
		on = delta;
	if (run > delta - on)
		run = delta - on;
	if (on) {
		key->held = OWNER_HELD_ON_CPU;
		key->stack = 0;
		key->stack_reason = OWNER_STACK_RAN;
		owner_add(key, on, st);
	}
	if (run) {
		key->held = OWNER_HELD_RUNNABLE;
		key->stack = m->preempt_stack;
		key->stack_reason = share_reason(m->preempt_taken, exited);
		owner_add(key, run, st);
	}
	/* The last share takes a wait of no time. */
	if (delta - on - run || !(on | run)) {
		key->held = OWNER_HELD_OFF_CPU;
		key->stack = m->stack;
		key->stack_reason = share_reason(m->taken, exited);
		owner_add(key, delta - on - run, st);
	}
}

/* owner_charge charges a wait up to now to the owner its slot notes, since
 * owner_from, to the owner's stacks, split by what the owner did over it
 * when its clock was read as the wait began, and to its chain. A known
 * owner's mark ends its tenure when the owner no longer holds the lock.
 * Waiters on other CPUs charge the same owner at once. */
static __always_inline void owner_charge(const struct wait_slot *w, __u64 now)
{
	struct owner_key key = {
		.lock = w->lock,
		.tid = w->owner_tid,
		.type = w->type,
		.reason = w->owner_reason,
	};
	/* Masked so that Linux 5.10's verifier knows its bounds below. */
	__u32 st = w->owner_state & 7, reason = OWNER_KNOWN;
	__u64 delta = now - w->owner_from, passed = 0;
	struct owner_mark *m = NULL;
	bool exited;

	/* owners_on first: the verifier drops the rest from the programs
	 * of a capture without --owners, whose waits are all untracked. */
	if (!owners_on || w->owner_reason == OWNER_UNTRACKED)
		return;
	if (w->waker_tid && (w->owner_reason == OWNER_NO_FIELD || w->owner_reason == OWNER_READERS)) {
		/* Its entry, with the waker's pid and name, was made as it
		 * woke the waiter. Its state then is no state over the wait:
		 * none is counted. */
		key.reason = OWNER_WOKEN;
		key.tid = w->waker_tid;
		key.stack = w->waker_stack;
		key.stack_reason = w->waker_taken;
		key.waker = w->waker;
		owner_add(&key, delta, OWNER_STATES);
		return;
	}
	/* No waker, for a waiter that never slept: under a hypervisor, or
	 * with the lock freed as it queued, the wait was not the holder's. */
	if (!w->owner_slept && (w->owner_reason == OWNER_NO_FIELD || w->owner_reason == OWNER_READERS))
		key.reason = OWNER_NEVER_SLEPT;
	if (w->owner_reason == OWNER_KNOWN) {
		if (stack_depth) {
			m = owner_mark_of(w->owner_tid, w->owner_lock, &exited);
			if (!m)
				key.stack_reason = OWNER_STACK_LOST;
		}
		if (m && w->owner_clocked)
			passed = clock_passed(w, m, now);
		chain_charge(w, now, passed);
	}
	if (m && !exited && !m->ended && owner_word(m->lock, m->flags, &reason) != m->task)
		tenure_over(m, now);
	if (m && w->owner_clocked) {
		owner_split(w, &key, m, exited, delta, passed, now, st);
		return;
	}
	if (m) {
		key.stack = m->stack;
		key.stack_reason = m->taken;
		if (exited && m->taken == OWNER_STACK_RAN && !m->ended)
			key.stack_reason = OWNER_STACK_EXITED;
	}
	owner_add(&key, delta, st);
}

/* waker_of says who current, waking a waiter of lock announced with
 * flags, is to it, from ws, current's own wait slot (NULL for none): a
 * writer or a reader seen waiting for that lock as its last wait, a writer
 * when the waiter is a percpu rwsem's reader (percpu_up_write alone wakes
 * them), else the thread that released the lock. */
static __always_inline __u8 waker_of(const struct wait_slot *ws, __u64 lock, __u32 flags)
{
	if (ws && !ws->lock && ws->last_lock == lock && ws->stack && (ws->owner_flags & LCB_F_WRITE))
		return OWNER_WAKER_WRITER_WAITED;
	if (flags == (LCB_F_PERCPU | LCB_F_READ))
		return OWNER_WAKER_WRITER;
	if (ws && !ws->lock && ws->last_lock == lock && (ws->owner_flags & LCB_F_READ))
		return OWNER_WAKER_READER;
	return OWNER_WAKER_RELEASER;
}

/*
 * owner_waking notes, in the wait slot of thread tid being woken, the
 * waker (current) when tid waits for a lock that records no owner, or an
 * rwsem held by readers: a waiter of such a lock is woken by the thread
 * that releases it (percpu_up_write, up_read, up), which is what blocked
 * it. The waker's stack is the path it took to the lock when it was seen
 * waiting for it as a writer, or asleep in percpu_down_write (writer_path_of),
 * else where it wakes the waiter. The last
 * waker of a wait is the one it is charged to, as it ends (owner_charge).
 * Every wakeup of the machine comes here: a thread whose bucket has no
 * owner-tracked wait open costs an array read.
 */
static __always_inline int owner_waking(void *ctx, __u32 tid)
{
	struct owner_key key = { .reason = OWNER_WOKEN, .held = OWNER_HELD_UNSPLIT };
	struct thread_bucket *bucket = thread_bucket_of(tid);
	struct wait_slot *s, *ws;
	__u32 waker;
	__u64 h = 0;

	if (!bucket || !bucket->waiters)
		return 0;
	s = bpf_map_lookup_elem(&thread_waits, &tid);
	if (!s || !s->lock || (s->owner_reason != OWNER_NO_FIELD && s->owner_reason != OWNER_READERS))
		return 0;
	waker = (__u32)bpf_get_current_pid_tgid();
	if (!waker || waker == tid)
		return 0; /* an interrupt on an idle CPU, or the waiter itself */
	ws = bpf_map_lookup_elem(&thread_waits, &waker);
	key.waker = waker_of(ws, s->lock, s->owner_flags);
	key.stack_reason = OWNER_STACK_TAKEN;
	if (key.waker == OWNER_WAKER_WRITER_WAITED && ws) {
		h = ws->stack;
	} else if (key.waker == OWNER_WAKER_WRITER && writer_path_of(waker, s->lock, &h)) {
		key.waker = OWNER_WAKER_WRITER_WAITED;
	} else if (stack_depth && !owner_take_stack(ctx, &h)) {
		key.stack_reason = OWNER_STACK_FAILED;
	}
	key.lock = s->lock;
	key.type = s->type;
	key.tid = waker;
	key.stack = h;
	owner_entry(&key, (void *)bpf_get_current_task());
	s->waker_stack = h;
	s->waker_taken = key.stack_reason;
	s->waker = key.waker;
	s->waker_tid = waker;
	return 0;
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
