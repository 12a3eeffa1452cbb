/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The function probes, for kernels without the contention tracepoints:
 * fentry/fexit or kprobe/kretprobe on the acquire and release functions of
 * locks.json. They share the wait slots, the filters, the owners and the
 * recording of the tracepoint programs.
 */
#ifndef __KLOCKSTAT_FUNCPROBE_BPF_H__
#define __KLOCKSTAT_FUNCPROBE_BPF_H__

#include "common.bpf.h"
#include "counters.bpf.h"
#include "filter.bpf.h"
#include "nesting.bpf.h"
#include "owner.bpf.h"
#include "record.bpf.h"
#include "stackpath.bpf.h"
#include "threads.bpf.h"

/* Function probes read their FN_* value from the BPF cookie (else from a
 * patched constant, see fn_info). */
const volatile bool fn_cookie = false;
/* Function probes take the stack at the acquire's entry: a kretprobe's stack
 * cannot be walked (the unwinder stops at the kretprobe trampoline before
 * Linux 5.15). Costs a walk per acquire, contended or not. */
const volatile bool fn_stack_at_entry = false;

/* Per lock type, the contention flags its owner word is read by (its first
 * flags in locks.json, see owner_word): the function probes see no flags. */
const volatile __u32 type_owner_flags[MAX_TYPES] = {};

/* Function probes: the threshold and the calibration state. An array, not
 * a global, so that user space can write it on kernels without mmapable
 * maps (before 5.5). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct fn_control);
	__uint(max_entries, 1);
} control SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, CALIB_SAMPLES);
} calib_samples SEC(".maps");

/* Locks held now, by thread: when each acquire returned. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct hold_key);
	__type(value, struct hold_slot);
	__uint(max_entries, 16384); /* resized by the loader */
} holds SEC(".maps");

/* Hold times, keyed like the waits of the same acquire. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct wait_key);
	__type(value, struct wait_stats);
	__uint(max_entries, 16384); /* resized by the loader */
} hold_aggregate SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, MAX_TYPES * HIST_BUCKETS); /* resized to the types in use */
} hold_histogram SEC(".maps");

/*
 * Function probes time whole acquire calls of sleeping locks, fast path
 * included: entry saves the lock and the time per thread, the return reads
 * them back, never the argument registers, which the function may have
 * reused. An acquire longer than the calibrated threshold counts as
 * contended; only then, or when hold time is wanted, is the stack taken.
 * Spinning locks are left to the tracepoints: a probe on their acquire
 * functions would run at every spin_lock in the kernel.
 */

/* fn_info returns the attachment's FN_* value: its BPF cookie, or the
 * constant the loader patched into this copy of the program. */
static __always_inline __u32 fn_info(void *ctx)
{
	__u64 v;

	if (fn_cookie)
		return bpf_get_attach_cookie(ctx);
	asm volatile("%0 = %1" : "=r"(v) : "i"(FN_MARK));
	return v;
}

static __always_inline int fn_enter(void *ctx, __u64 lock, __u32 info)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, pid = id >> 32, zero = 0;
	struct fn_control *ctl;
	struct wait_slot *s;
	struct cpu_busy *b = cpu_busy();
	bool skip;
	int level;

	level = enter(b, ROLE_FUNCTION);
	if (level < 0)
		return 0;
	ctl = bpf_map_lookup_elem(&control, &zero);
	if (!ctl || ctl->stopped)
		goto out;
	if (ctl->calib_tid) {
		/* Calibrating: only the calibrating thread is timed. */
		if (tid != ctl->calib_tid)
			goto out;
		skip = false;
	} else {
		skip = !wanted(pid);
	}
	if (skip) {
		/* No entry: the map holds the captured threads only. */
		count(CNT_FILTERED, 1);
		goto out;
	}

	s = thread_slot(tid);
	if (!s)
		goto out;
	if (s->lock) {
		if (s->lock == lock) {
			/* A listed function calling another for this lock. */
			s->repeat++;
			goto out;
		}
		/* One acquire per thread: the return of the old one was
		 * lost, or it called this one for another lock. */
		count(CNT_UNMATCHED_BEGIN, 1);
		owner_waiting(tid, s->owner_reason, -1);
	}
	s->lock = lock;
	s->tid = tid;
	s->pid = pid;
	s->type = info & FN_TYPE_MASK;
	s->skip = 0;
	s->cgroup = bpf_get_current_cgroup_id();
	s->stack = fn_stack_at_entry && !ctl->calib_tid ? walked_stack(ctx, level) : 0;
	s->repeat = 0;
	/* Calibration samples are not events of the capture. */
	if (!ctl->calib_tid) {
		count(CNT_BEGIN, 1);
		/* Before the acquire: the owner a wait, if it is one, waits for. */
		owner_begin(s, lock, type_owner_flags[s->type & (MAX_TYPES - 1)], false);
		owner_waiting(tid, s->owner_reason, 1);
	} else {
		s->owner_reason = OWNER_UNTRACKED;
	}
	/* Last: the acquire time must not include our own work. */
	s->ts = bpf_ktime_get_ns();
	s->owner_from = s->ts;
out:
	leave(b);
	return 0;
}

/* fn_exit times an acquire at its return. Without path_cache it walks every
 * stack it takes: its programs then call no bpf_loop (Linux 5.17+). */
static __always_inline int fn_exit(void *ctx, __u32 info, bool path_cache)
{
	/* First: the acquire time must not include our own work. */
	__u64 now = bpf_ktime_get_ns();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, pid = id >> 32, zero = 0;
	struct fn_control *ctl;
	struct wait_slot w, *s;
	struct cpu_busy *b = cpu_busy();
	bool contended;
	__u64 delta;
	int level;

	level = enter(b, ROLE_FUNCTION);
	if (level < 0)
		return 0;
	/* After the end of the capture, a wait still open stays open: user
	 * space charges it up to the end. Detaching takes seconds on some
	 * kernels, long enough for such waits to end meanwhile. */
	ctl = bpf_map_lookup_elem(&control, &zero);
	if (!ctl || ctl->stopped)
		goto out;
	s = bpf_map_lookup_elem(&thread_waits, &tid);
	if (!s || !s->lock)
		goto unmatched;
	if (s->repeat) {
		s->repeat--;
		goto out;
	}
	w = *s;
	s->lock = 0;
	owner_waiting(tid, w.owner_reason, -1);
	if (w.skip)
		goto out;
	delta = now - w.ts;

	if (ctl->calib_tid) {
		__u32 n = ctl->calib_n;
		__u64 *sample;

		if (tid != ctl->calib_tid || n >= CALIB_SAMPLES)
			goto out;
		sample = bpf_map_lookup_elem(&calib_samples, &n);
		if (sample) {
			*sample = delta;
			ctl->calib_n = n + 1;
		}
		goto out;
	}

	/* A wait already charged in part to an owner slept for the lock
	 * while another thread held it (on_switch): contended, however short,
	 * so that the owners' charges stay the waits'. */
	contended = delta > ctl->threshold_ns || w.owner_from != w.ts;
	count(contended ? CNT_END : CNT_FAST, 1);
	if (!contended && !(info & FN_HOLD))
		goto out;
	if (!fn_stack_at_entry)
		w.stack = path_cache ? get_stack(ctx, w.type, level) : walked_stack(ctx, level);
	/* An acquire's time is not split: the probes see no spin. */
	if (contended) {
		record(&w, delta, 0);
		owner_end(&w, now);
		/* The path it took to the lock, for when it wakes waiters
		 * (owner_waking): as on_end leaves it in the slot. Looked up
		 * again: the slot's pointer kept over the calls above would
		 * take stack the verifier's 512 bytes have no room for. */
		if (owners_on && (s = bpf_map_lookup_elem(&thread_waits, &tid))) {
			s->last_lock = w.lock;
			s->stack = w.stack;
		}
	}
	if (info & FN_HOLD) {
		struct hold_key hk = { .lock = w.lock, .tid = tid };
		struct hold_slot hs = { .ts = now, .stack = w.stack, .pid = w.pid, .type = w.type };

		if (bpf_map_update_elem(&holds, &hk, &hs, BPF_ANY))
			count(CNT_LOST_HOLD_FULL, 1);
	}
	goto out;
unmatched:
	/* Filtered threads take no entry (fn_enter). */
	if (wanted(pid))
		count(CNT_UNMATCHED_END, 1);
out:
	leave(b);
	return 0;
}

/* fn_release ends a hold timed since its acquire returned. Holds of locks
 * acquired before the capture, or by threads filtered out, are not found. */
static __always_inline int fn_release(__u64 lock)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct hold_key hk = { .lock = lock, .tid = tid };
	struct hold_slot *h;
	struct cpu_busy *b = cpu_busy();
	struct wait_slot w;

	if (enter(b, ROLE_FUNCTION) < 0)
		return 0;
	h = bpf_map_lookup_elem(&holds, &hk);
	if (!h)
		goto out;
	w.lock = lock;
	w.stack = h->stack;
	w.pid = h->pid;
	w.tid = tid;
	w.type = h->type;
	w.cgroup = bpf_get_current_cgroup_id();
	count(CNT_HOLD, 1);
	record_in(&hold_aggregate, &hold_histogram, CNT_LOST_HOLD_AGG_FULL, &w, now - h->ts, 0);
	bpf_map_delete_elem(&holds, &hk);
out:
	leave(b);
	return 0;
}

/* Templates: the loader attaches a copy per function of locks.json, so the
 * attach targets named here are placeholders. */
SEC("fentry/klockstat_acquire")
int fentry_acquire(__u64 *ctx)
{
	return fn_enter(ctx, ctx[0], fn_info(ctx));
}

SEC("fexit/klockstat_acquire")
int fexit_acquire(__u64 *ctx)
{
	return fn_exit(ctx, fn_info(ctx), true);
}

SEC("fexit/klockstat_acquire")
int fexit_acquire_walk(__u64 *ctx)
{
	return fn_exit(ctx, fn_info(ctx), false);
}

SEC("fentry/klockstat_release")
int fentry_release(__u64 *ctx)
{
	return fn_release(ctx[0]);
}

SEC("kprobe/klockstat_acquire")
int kprobe_acquire(struct pt_regs *ctx)
{
	return fn_enter(ctx, PT_REGS_ARG1(ctx), fn_info(ctx));
}

SEC("kretprobe/klockstat_acquire")
int kretprobe_acquire(struct pt_regs *ctx)
{
	return fn_exit(ctx, fn_info(ctx), true);
}

SEC("kretprobe/klockstat_acquire")
int kretprobe_acquire_walk(struct pt_regs *ctx)
{
	return fn_exit(ctx, fn_info(ctx), false);
}

SEC("kprobe/klockstat_release")
int kprobe_release(struct pt_regs *ctx)
{
	return fn_release(PT_REGS_ARG1(ctx));
}

#endif /* __KLOCKSTAT_FUNCPROBE_BPF_H__ */
