//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * klockstat's kernel side: pair lock:contention_begin/end per thread and
 * aggregate the waits in maps that user space reads once, at the end. Where
 * the tracepoints are missing, time the acquire functions of locks.json
 * instead (fentry/fexit or kprobe/kretprobe), and their hold time.
 *
 * The programs run inside lock slow paths, so they take no locks of their own
 * on the steady-state path: spinning waits live in a per-CPU stack (a spinning
 * task cannot migrate), sleeping waits in a per-thread hash entry that is
 * reused rather than deleted while the thread lives, counters and histograms
 * in per-CPU arrays.
 *
 * This file holds the maps of the waits, their pairing, their recording and
 * the entry points. Headers in include/ hold the rest, one concern each:
 * nesting.bpf.h (nested runs and rescue copies), stackpath.bpf.h (taking
 * stacks and recognising known paths), funcprobe.bpf.h (the function
 * probes).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "lockstat.h"

char LICENSE[] SEC("license") = "GPL";

/* contention_begin flags, include/trace/events/lock.h */
#define LCB_F_SPIN (1U << 0)
#define LCB_F_MUTEX (1U << 5)

/* Map helpers return an int zero-extended to 64 bits before Linux 6.4:
 * keep their results in an int to compare them with negative errnos. */
#define EEXIST 17

/* Set by the loader before load. */
const volatile __u32 self_tgid = 0;
const volatile bool filter_pids = false;
const volatile bool filter_comm = false;
const volatile char comm_filter[16] = {};
/* Entries of cgroup_filter in use: 0, no filter. */
const volatile __u32 cgroup_filters = 0;
/* flags value -> index of the lock type that claims it, or -1 (not captured) */
const volatile __s32 flag_type[MAX_FLAGS] = {};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, CNT_MAX);
} counters SEC(".maps");

/* Force BTF for the types bpf2go generates Go code for. */
const enum counter unused_counter __attribute__((unused));
const enum lock_name unused_lock_name __attribute__((unused));
const enum fn_info unused_fn_info __attribute__((unused));
const enum owner_reason unused_owner_reason __attribute__((unused));
const enum owner_state unused_owner_state __attribute__((unused));
const enum owner_stack_reason unused_owner_stack_reason __attribute__((unused));

/* Per-CPU cells are still shared with the runs nested on their CPU (an
 * interrupt's contention, a rescue copy): a plain read-modify-write there
 * loses the nested run's increment, so every per-CPU sum adds atomically. */
static __always_inline void count(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		__sync_fetch_and_add(c, n);
}

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

#include "nesting.bpf.h"
#include "stackpath.bpf.h"
#include "spin.bpf.h"
#include "owner.bpf.h"
#include "shared_flags.bpf.h"
#include "rwbase.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct wait_key);
	__type(value, struct wait_stats);
	__uint(max_entries, 16384); /* resized by the loader */
} aggregate SEC(".maps");

/* Sleeping waits, one entry per live thread that waited during the capture. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct wait_slot);
	__uint(max_entries, 16384); /* resized by the loader */
} thread_waits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct cpu_waits);
	__uint(max_entries, 1);
} spin_waits SEC(".maps");

/* The timeline: per generation, lock type and bucket of the window, the
 * waits that ended there; index (gen * timeline_types + type) *
 * TIMELINE_BUCKETS + bucket. A bucket is 1 << shift ns wide, shift and gen
 * in timeline_control (gen << 8 | shift). To double the width while the
 * programs run, user space switches to the other generation at twice the
 * width, and folds the one it left, which nothing writes any more
 * (collector.timeline): per-CPU cells, no lock. */
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

/* Log-linear wait histogram per lock type: index type*HIST_BUCKETS + bucket. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, MAX_TYPES * HIST_BUCKETS); /* resized to the types in use */
} histogram SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1); /* resized to the number of --pid values */
} pid_filter SEC(".maps");

/* The cgroups of --cgroup: a task in one of them or their descendants is
 * captured. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, MAX_CGROUP_FILTERS); /* resized to the number of --cgroup values */
} cgroup_filter SEC(".maps");

static __always_inline bool in_cgroups(void)
{
	for (__u32 i = 0; i < MAX_CGROUP_FILTERS; i++) {
		if (i >= cgroup_filters)
			break;
		if (bpf_current_task_under_cgroup(&cgroup_filter, i) == 1)
			return true;
	}
	return false;
}

static __always_inline bool comm_equal(const char *a, const volatile char *b)
{
	for (int i = 0; i < 16; i++) {
		if (a[i] != b[i])
			return false;
		if (a[i] == 0)
			return true;
	}
	return true;
}

/* Filters apply to the process: its tgid, and its main thread's name; and
 * to the thread's cgroup. */
static __always_inline bool wanted(__u32 pid)
{
	if (pid == self_tgid)
		return false;
	if (filter_pids && !bpf_map_lookup_elem(&pid_filter, &pid))
		return false;
	if (filter_comm) {
		struct task_struct *task = (void *)bpf_get_current_task();
		char comm[16] = {};

		BPF_CORE_READ_STR_INTO(&comm, task, group_leader, comm);
		if (!comm_equal(comm, comm_filter))
			return false;
	}
	if (cgroup_filters && !in_cgroups())
		return false;
	return true;
}

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

	if ((flags & LCB_F_SPIN) && !(flags & LCB_F_MUTEX)) {
		struct cpu_waits *cw = bpf_map_lookup_elem(&spin_waits, &zero);
		__u32 d;

		if (!cw)
			goto out;
		d = cw->depth;
		if (d > 0 && d <= MAX_NEST) {
			struct wait_slot *top = &cw->slot[(d - 1) & (MAX_NEST - 1)];

			if (top->tid != tid) {
				/* Its owner stopped spinning here without an end. */
				count(CNT_UNMATCHED_BEGIN, d);
				d = 0;
			} else if (top->lock == lock) {
				goto out; /* the same wait announced again, still spinning */
			} else {
				count(CNT_NESTED, 1);
			}
		}
		if (d >= MAX_NEST) {
			count(CNT_LOST_NEST_DEPTH, 1);
			goto out;
		}
		s = &cw->slot[d & (MAX_NEST - 1)];
		/* Claimed before it is pushed: a run nested from here on
		 * finds it ours. */
		s->lock = lock;
		s->tid = tid;
		cw->depth = d + 1;
	} else {
		/*
		 * Mutexes announce one wait several times (optimistic spin,
		 * then sleep, then spin again when first in line) and may
		 * migrate in between, so all of them go to the thread's entry
		 * and only the first announcement counts. Threads of
		 * processes the filters reject take no entry: their ends find
		 * none and are not counted.
		 */
		if (!captured) {
			count(CNT_FILTERED, 1);
			goto out;
		}
		s = thread_slot(tid);
		if (!s)
			goto out;
		if (s->lock) {
			if (s->lock == lock || rwbase_part(s->lock, lock)) {
				spin_again(s, flags);
				owner_again(s, lock, flags);
				goto out;
			}
			/* A thread sleeps on one lock at a time: the old end was lost. */
			count(CNT_UNMATCHED_BEGIN, 1);
			owner_waiting(tid, s->owner_reason, -1);
		}
	}
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
 * id can come round again.
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
	}
	/* Adding -1: an atomic subtraction needs BPF_FETCH (Linux 5.12). */
	if (slotted && !bpf_map_delete_elem(&thread_waits, &tid))
		__sync_fetch_and_add(&bucket->slots, -1);
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
 * Owners at sched_switch (owner.bpf.h), which runs while the task leaving
 * the CPU is still current: an owner's stack is the current stack, and a
 * waiter going back to sleep (woken without the lock: an rwsem writer, an
 * rtmutex waiter, which announce their wait once) has the owner of its lock
 * read again. Most switches are by neither: one array read tells them apart
 * (thread_buckets).
 */
static __always_inline int on_switch(void *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct thread_bucket *bucket;
	struct wait_slot *s;

	if (!tid)
		return 0; /* idle */
	bucket = thread_bucket_of(tid);
	if (!bucket)
		return 0;
	if (bucket->waiters &&
	    (task_state((void *)bpf_get_current_task()) & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE))) {
		s = bpf_map_lookup_elem(&thread_waits, &tid);
		if (s && s->lock)
			owner_again(s, s->owner_lock, s->owner_flags);
	}
	if (bucket->owner)
		owner_switch(ctx, tid);
	return 0;
}

SEC("raw_tp/sched_switch")
int raw_owner_switch(struct bpf_raw_tracepoint_args *ctx)
{
	return on_switch(ctx);
}

/* For the perf-event tracepoint backend. */
SEC("tracepoint/sched/sched_switch")
int tp_owner_switch(void *ctx)
{
	return on_switch(ctx);
}

#include "funcprobe.bpf.h"
