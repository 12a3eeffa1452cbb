//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * klockstat's kernel side: pair lock:contention_begin/end per thread and
 * aggregate the waits in maps that user space reads at the end or drains
 * between runs (Rounds). Without the tracepoints, time the acquire functions
 * of locks.json instead (fentry/fexit or kprobe/kretprobe), and their holds.
 *
 * The programs run inside lock slow paths, so they take no locks of their own
 * on the steady-state path: spinning waits live in a per-CPU stack (a spinning
 * task cannot migrate), sleeping waits in a per-thread hash entry that is
 * reused rather than deleted while the thread lives, counters and histograms
 * in per-CPU arrays.
 *
 * This file holds the pairing of the waits (and spin_waits, the per-CPU
 * stack of spinning waits) and the tracepoint programs: contention begin and
 * end, a thread's free, the context switch. Each header in include/ includes
 * what it uses and owns its maps and globals, in any order:
 *
 *  common.bpf.h       vmlinux.h, libbpf's helpers, lockstat.h; the LCB_F_*
 *                     flags, EEXIST
 *  lockstat.h         every map key and value shared with Go (bpf2go -type)
 *  vmlinux.h          the kernel types the programs read, for CO-RE
 *  counters.bpf.h     counters, count()
 *  filter.bpf.h       --pid, --comm, --cgroup, --scope command: self_tgid,
 *                     filter_pids, filter_comm, comm_filter, filter_command,
 *                     cgroup_filters, pid_filter, cgroup_filter, wanted()
 *  tree.bpf.h         the workload's process tree: tree_on, command_tree, tree_threads,
 *                     in_tree(), tree_fork(), tree_free(), child_tgid()
 *  threads.bpf.h      thread_buckets, thread_waits, thread_slot()
 *  nesting.bpf.h      nested runs and rescue copies: busy, claim(), enter()
 *  stackpath.bpf.h    taking stacks, recognising known paths: stacks, paths,
 *                     unlearnable, first_frame, frame_step, scratch,
 *                     stack_depth and the other stack globals, get_stack()
 *  shared_flags.bpf.h a wait's lock type from its flags: flag_type,
 *                     flag_shared, shared_fn_*, shared_flags_type()
 *  spin.bpf.h         the part of a wait spent spinning
 *  rwbase.bpf.h       PREEMPT_RT's rwbase_rt (also used by names.bpf.c)
 *  owner.bpf.h        lock owners and their stacks: owners, owner_marks,
 *                     owner_exits, owners_on, owner_switch_skip
 *  ownerword.bpf.h    the owner a lock records: owner_word()
 *  ownerchain.bpf.h   wait chains through owners that wait: owner_chains
 *  ownersample.bpf.h  owners sampled on their CPU: owner_samples and the
 *                     perf event program owner_sample
 *  timeline.bpf.h     timeline, timeline_types, timeline_start,
 *                     timeline_control
 *  record.bpf.h       recording an ended wait: aggregate, histogram, record()
 *  slabname.bpf.h     a slab lock's cache, named at its first record:
 *                     slab_names, name_slab()
 *  funcprobe.bpf.h    the function probes and their programs: control,
 *                     calib_samples, holds, hold_aggregate, hold_histogram,
 *                     fn_cookie, fn_stack_at_entry, type_owner_flags
 */
#include "common.bpf.h"
#include "counters.bpf.h"
#include "filter.bpf.h"
#include "funcprobe.bpf.h"
#include "nesting.bpf.h"
#include "owner.bpf.h"
#include "ownersample.bpf.h"
#include "record.bpf.h"
#include "rwbase.bpf.h"
#include "shared_flags.bpf.h"
#include "spin.bpf.h"
#include "stackpath.bpf.h"
#include "threads.bpf.h"
#include "tree.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Force BTF for the types bpf2go generates Go code for. */
const enum counter unused_counter __attribute__((unused));
const enum lock_name unused_lock_name __attribute__((unused));
const enum fn_info unused_fn_info __attribute__((unused));
const enum owner_reason unused_owner_reason __attribute__((unused));
const enum owner_state unused_owner_state __attribute__((unused));
const enum owner_stack_reason unused_owner_stack_reason __attribute__((unused));
const enum owner_held unused_owner_held __attribute__((unused));
const enum owner_waker unused_owner_waker __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct cpu_waits);
	__uint(max_entries, 1);
} spin_waits SEC(".maps");

static __always_inline void fill(struct wait_slot *s, void *ctx, __u64 lock, __u32 flags,
				 __u32 tid, __u32 pid, __s32 type, bool skip, __u32 level)
{
	s->lock = lock;
	s->tid = tid;
	s->pid = pid;
	s->type = skip ? 0 : type;
	s->skip = skip;
	s->cgroup = skip ? 0 : bpf_get_current_cgroup_id();
	s->stack = skip ? 0 : get_stack(ctx, flags, level);
	count(skip ? CNT_FILTERED : CNT_BEGIN, 1);
}

/* spin_slot pushes a spinning wait of lock by thread tid on cw, the CPU's
 * spinning waits, and returns its slot to fill, or NULL for none: the same
 * wait announced again, or no room. */
static __always_inline struct wait_slot *spin_slot(struct cpu_waits *cw, __u64 lock, __u32 tid)
{
	struct wait_slot *s;
	__u32 d;

	if (!cw)
		return NULL;
	d = cw->depth;
	if (d > 0 && d <= MAX_NEST) {
		struct wait_slot *top = &cw->slot[(d - 1) & (MAX_NEST - 1)];

		if (top->tid != tid) {
			/* Its owner stopped spinning here without an end. */
			count(CNT_UNMATCHED_BEGIN, d);
			d = 0;
		} else if (top->lock == lock) {
			return NULL; /* the same wait announced again, still spinning */
		} else {
			count(CNT_NESTED, 1);
		}
	}
	if (d >= MAX_NEST) {
		count(CNT_LOST_NEST_DEPTH, 1);
		return NULL;
	}
	s = &cw->slot[d & (MAX_NEST - 1)];
	/* Claimed before it is pushed: a run nested from here on finds it
	 * ours. */
	s->lock = lock;
	s->tid = tid;
	cw->depth = d + 1;
	return s;
}

/*
 * sleep_slot returns the slot to fill for a sleeping wait of lock by thread
 * tid, announced with flags, or NULL for none. Mutexes announce one wait
 * several times (optimistic spin, then sleep, then spin again when first in
 * line) and may migrate in between, so all of them go to the thread's entry
 * and only the first announcement counts. Threads of processes the filters
 * reject take no entry: their ends find none and are not counted.
 */
static __always_inline struct wait_slot *sleep_slot(__u64 lock, __u32 flags, __u32 tid, bool captured)
{
	struct wait_slot *s;

	if (!captured) {
		count(CNT_FILTERED, 1);
		return NULL;
	}
	s = thread_slot(tid);
	if (!s || !s->lock)
		return s;
	if (s->lock == lock || rwbase_part(s->lock, lock)) {
		spin_again(s, flags);
		owner_again(s, lock, flags);
		return NULL;
	}
	/* A thread sleeps on one lock at a time: the old end was lost. */
	count(CNT_UNMATCHED_BEGIN, 1);
	owner_waiting(tid, s->owner_reason, -1);
	return s;
}

static __always_inline int on_begin(void *ctx, __u64 lock, __u32 flags, bool rescue)
{
	__u64 id;
	__u32 tid, pid, zero = 0;
	__s32 type = flags < MAX_FLAGS ? flag_type[flags] : -1;
	struct cpu_busy *b = claim(ROLE_BEGIN, lock, rescue);
	struct wait_slot *s;
	bool captured;
	int level;

	level = enter(b, ROLE_BEGIN);
	if (level < 0)
		return 0;
	id = bpf_get_current_pid_tgid();
	tid = (__u32)id;
	pid = id >> 32;
	captured = wanted(pid);

	if ((flags & LCB_F_SPIN) && !(flags & LCB_F_MUTEX))
		s = spin_slot(bpf_map_lookup_elem(&spin_waits, &zero), lock, tid);
	else
		s = sleep_slot(lock, flags, tid, captured);
	if (!s)
		goto out;
	type = shared_flags_type(ctx, flags, type);
	fill(s, ctx, lock, flags, tid, pid, type, type < 0 || !captured, level);
	owner_begin(s, lock, flags, (flags & LCB_F_SPIN) && !(flags & LCB_F_MUTEX));
	owner_waiting(tid, s->owner_reason, 1);
	/* Last: the wait must not include our own work. */
	s->ts = bpf_ktime_get_ns();
	s->owner_from = s->ts;
	spin_first(s, flags);
out:
	leave(b);
	return 0;
}

static __always_inline int on_end(__u64 lock, bool rescue)
{
	struct cpu_busy *b = NULL;
	struct cpu_waits *cw;
	struct wait_slot w, *s;
	__u32 tid, pid, zero = 0, d;
	__u64 now, id;

	/* The rescue copy returns at once for almost every event, before
	 * reading the clock. */
	if (rescue && !(b = claim(ROLE_END, lock, true)))
		return 0;
	/* First for the main copy: the wait must not include our own work. */
	now = bpf_ktime_get_ns();
	if (!rescue)
		b = claim(ROLE_END, lock, false);
	id = bpf_get_current_pid_tgid();
	tid = (__u32)id;
	pid = id >> 32;
	if (enter(b, ROLE_END) < 0)
		return 0;

	cw = bpf_map_lookup_elem(&spin_waits, &zero);
	if (!cw)
		goto out;
	d = cw->depth;
	if (d > 0 && d <= MAX_NEST) {
		s = &cw->slot[(d - 1) & (MAX_NEST - 1)];
		if (s->lock == lock && s->tid == tid) {
			w = *s;
			cw->depth = d - 1;
			goto found;
		}
	}
	s = bpf_map_lookup_elem(&thread_waits, &tid);
	if (s && s->lock == lock) {
		w = *s;
		s->lock = 0;
		/* For the waking program of --owners only: without it a
		 * wait touches nothing past the slot's first 64 bytes. */
		if (owners_on)
			s->last_lock = lock;
		goto found;
	}
	if (s && rwbase_part(s->lock, lock))
		goto out; /* the outer wait goes on */
	/* An inner end that never came leaves its begin above ours. */
	for (int i = MAX_NEST - 2; i >= 0; i--) {
		if (i + 1 >= d)
			continue;
		s = &cw->slot[i];
		if (s->lock == lock && s->tid == tid) {
			count(CNT_UNMATCHED_BEGIN, d - 1 - i);
			w = *s;
			cw->depth = i;
			goto found;
		}
	}
	if (wanted(pid))
		count(CNT_UNMATCHED_END, 1);
	goto out;

found:
	owner_waiting(tid, w.owner_reason, -1);
	if (!w.skip) {
		count(CNT_END, 1);
		record(&w, now - w.ts, spin_total(&w, now));
		owner_end(&w, now);
	}
out:
	leave(b);
	return 0;
}

SEC("raw_tp/contention_begin")
int raw_contention_begin(struct bpf_raw_tracepoint_args *ctx)
{
	return on_begin(ctx, ctx->args[0], (__u32)ctx->args[1], false);
}

SEC("raw_tp/contention_end")
int raw_contention_end(struct bpf_raw_tracepoint_args *ctx)
{
	return on_end(ctx->args[0], false);
}

/* Rescue copies: see claim(). */
SEC("raw_tp/contention_begin")
int raw_contention_begin_rescue(struct bpf_raw_tracepoint_args *ctx)
{
	return on_begin(ctx, ctx->args[0], (__u32)ctx->args[1], true);
}

SEC("raw_tp/contention_end")
int raw_contention_end_rescue(struct bpf_raw_tracepoint_args *ctx)
{
	return on_end(ctx->args[0], true);
}

SEC("tracepoint/lock/contention_begin")
int tp_contention_begin(struct trace_event_raw_contention_begin *ctx)
{
	return on_begin(ctx, (__u64)ctx->lock_addr, ctx->flags, false);
}

SEC("tracepoint/lock/contention_end")
int tp_contention_end(struct trace_event_raw_contention_end *ctx)
{
	return on_end((__u64)ctx->lock_addr, false);
}

/* BTF-enabled raw tracepoints: the arguments, typed, without a helper call
 * to read them. */
SEC("tp_btf/contention_begin")
int btf_contention_begin(__u64 *ctx)
{
	return on_begin(ctx, ctx[0], (__u32)ctx[1], false);
}

SEC("tp_btf/contention_end")
int btf_contention_end(__u64 *ctx)
{
	return on_end(ctx[0], false);
}

SEC("tp_btf/contention_begin")
int btf_contention_begin_rescue(__u64 *ctx)
{
	return on_begin(ctx, ctx[0], (__u32)ctx[1], true);
}

SEC("tp_btf/contention_end")
int btf_contention_end_rescue(__u64 *ctx)
{
	return on_end(ctx[0], true);
}

/*
 * A thread's entry in thread_waits lives until the thread is freed: threads
 * that come and go must not fill the map. Not when it exits
 * (sched_process_exit): it still waits for locks after that, for
 * mmap_lock in exit_mm() among others, and would take its entry again.
 * A task is freed an RCU grace period after it is reaped, long before its
 * id can come round again. Not attached when the map holds every thread id
 * and nothing else needs it (collector.freesThreads).
 */
static __always_inline int free_thread(__u32 tid)
{
	struct thread_bucket *bucket = thread_bucket_of(tid);
	bool slotted = bucket && bucket->slots;

	if (owners_on && bucket) {
		struct wait_slot *s = slotted ? bpf_map_lookup_elem(&thread_waits, &tid) : NULL;

		if (s && s->lock)
			owner_waiting(tid, s->owner_reason, -1);
		if (bucket->owner)
			owner_exit(tid);
		if (bucket->writers)
			bpf_map_delete_elem(&writer_paths, &tid);
	}
	/* Adding -1: an atomic subtraction needs BPF_FETCH (Linux 5.12). */
	if (slotted && !bpf_map_delete_elem(&thread_waits, &tid))
		__sync_fetch_and_add(&bucket->slots, -1);
	tree_free(tid);
	return 0;
}

/* Raw tracepoints exist from Linux 4.17, before every backend's hooks. */
SEC("raw_tp/sched_process_free")
int raw_thread_free(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *task = (void *)ctx->args[0];

	return free_thread(BPF_CORE_READ(task, pid));
}

/* For the perf-event tracepoint backend, where raw tracepoints may fail. */
SEC("tracepoint/sched/sched_process_free")
int tp_thread_free(struct trace_event_raw_sched_process_template *ctx)
{
	return free_thread(ctx->pid);
}

/*
 * The workload's process tree (tree.bpf.h) grows at every fork of one of
 * its processes; attached only when a workload runs. The fork tracepoint
 * runs in the parent.
 */
SEC("raw_tp/sched_process_fork")
int raw_tree_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *parent = (void *)ctx->args[0];
	struct task_struct *child = (void *)ctx->args[1];

	tree_fork(BPF_CORE_READ(parent, tgid), BPF_CORE_READ(child, tgid), BPF_CORE_READ(child, pid), self_tgid);
	return 0;
}

/* For the perf-event tracepoint backend. */
SEC("tracepoint/sched/sched_process_fork")
int tp_tree_fork(struct trace_event_raw_sched_process_fork *ctx)
{
	tree_fork(bpf_get_current_pid_tgid() >> 32, child_tgid(ctx->child_pid), ctx->child_pid, self_tgid);
	return 0;
}

/*
 * Owners at sched_switch (owner.bpf.h), which runs while the task leaving
 * the CPU is still current: an owner's stack is the current stack, and a
 * waiter going back to sleep (woken without the lock: an rwsem writer, an
 * rtmutex waiter, which announce their wait once) has the owner of its lock
 * read again. The clocks of marked owners turn as they leave (prev, here:
 * runnable when preempted or still TASK_RUNNING) and arrive (next, by the
 * callers). A percpu rwsem's writer going to sleep with no wait open may
 * sleep in percpu_down_write, which announces no wait: its path to the lock
 * (writer_sleeps). Most switches are by none of these: an array read for
 * each thread tells them apart (thread_buckets, owner_tasks).
 */
static __always_inline int on_switch(void *ctx, bool preempt)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct thread_bucket *bucket;
	struct wait_slot *s;
	unsigned int state;

	if (!tid)
		return 0; /* idle */
	bucket = thread_bucket_of(tid);
	if (!bucket || !(bucket->waiters | bucket->owner | bucket->writers))
		return 0;
	state = task_state((void *)bpf_get_current_task());
	if (state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE)) {
		s = bucket->waiters ? bpf_map_lookup_elem(&thread_waits, &tid) : NULL;
		if (s && s->lock) {
			owner_again(s, s->owner_lock, s->owner_flags);
			s->owner_slept |= !preempt;
		} else if (bucket->writers && !preempt && (state & TASK_UNINTERRUPTIBLE)) {
			writer_sleeps(ctx, tid);
		}
	}
	if (bucket->owner)
		owner_switch(ctx, tid, preempt || !state);
	return 0;
}

/* sched_switch(bool preempt, struct task_struct *prev, struct task_struct *next, ...) */
SEC("raw_tp/sched_switch")
int raw_owner_switch(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *next = (void *)ctx->args[2];
	__u32 i = task_bucket((__u64)next), *marked;

	marked = bpf_map_lookup_elem(&owner_tasks, &i);
	if (marked && *marked)
		owner_arrive(BPF_CORE_READ(next, pid), NULL);
	return on_switch(ctx, ctx->args[0]);
}

/* The same with BTF (the tp_btf backend): next is a task pointer the
 * verifier knows, read directly, whose stack bpf_get_task_stack walks, so
 * a marked owner that left its CPU before it was marked has its stack taken
 * as it comes back (owner_stack_before). */
SEC("tp_btf/sched_switch")
int btf_owner_switch(__u64 *ctx)
{
	struct task_struct *next = (void *)ctx[2];
	__u32 tid = next->pid;
	struct thread_bucket *bucket = thread_bucket_of(tid);

	if (bucket && bucket->owner)
		owner_arrive(tid, next);
	return on_switch(ctx, ctx[0]);
}

/* sched_waking(struct task_struct *p): the waker is current. Attached with
 * --owners only. */
SEC("raw_tp/sched_waking")
int raw_owner_waking(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *p = (void *)ctx->args[0];

	return owner_waking(ctx, BPF_CORE_READ(p, pid));
}

/* For the perf-event tracepoint backend. */
SEC("tracepoint/sched/sched_waking")
int tp_owner_waking(struct trace_event_raw_sched_wakeup_template *ctx)
{
	return owner_waking(ctx, ctx->pid);
}

/* For the perf-event tracepoint backend, whose record has no preempt flag:
 * a task preempted in a sleeping state counts as off its CPU. */
SEC("tracepoint/sched/sched_switch")
int tp_owner_switch(struct trace_event_raw_sched_switch *ctx)
{
	struct thread_bucket *bucket = thread_bucket_of(ctx->next_pid);

	if (bucket && bucket->owner)
		owner_arrive(ctx->next_pid, NULL);
	return on_switch(ctx, false);
}
