//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * `klockstat whatif`: lengthen one lock's contended critical sections on
 * purpose. Right after a waiter of the chosen lock acquires it
 * (lock:contention_end with ret 0) the waiter spins for delay_ns, so the
 * lock is held that much longer exactly where it was contended.
 *
 * The chosen lock is the acquisitions whose lock address is in
 * target_locks (when match_locks) and whose waiter's kernel stack holds a
 * return address of target_callers (when match_callers): a call site names
 * the lock across its instances (a file's i_rwsem, new every run).
 *
 * Where it spins: a mutex acquired in the wait loop of __mutex_lock_common
 * (after a second contention_begin: it slept, or spun again as the first
 * waiter) reaches contention_end with lock->wait_lock held and interrupts
 * off, so the spin also keeps other waiters from queueing; those delays are
 * counted apart (fired_locked), and unlocked_only skips them to measure the
 * difference. A mutex acquired by its first optimistic spin, and an rwsem,
 * reach it with no spinlock held. A
 * spinning lock (spinlock, rwlock) is delayed only when allow_spin is set.
 *
 * Only waits whose contention_begin flags are among the chosen lock type's
 * (flag_mask, a bit per flags value) are followed: the others cost a test.
 *
 * Bounds, whatever user space sets: one delay at most DELAY_MAX_NS, and at
 * most DELAY_BUDGET_MAX_NS (or budget_ns, if lower) added per CPU in each
 * second of ktime; refused delays are counted. enabled == 0 stops the delays
 * at once while the programs stay attached.
 *
 * The contended hold (measured with or without delays) runs from a waiter's
 * acquisition of a chosen lock (contention_end) to its release, which no
 * tracepoint shows. It is measured where another waiter W waited for the
 * lock since before the hold began, and ends at the first of
 *  - W, spinning on the lock since it began to wait (a mutex's first
 *    optimistic spin, one contention_begin with LCB_F_SPIN), acquires it: a
 *    spinner takes the lock as it is let go, so these are tight (hold_spun);
 *  - the holder wakes W (sched_waking by the holder of a thread whose wait
 *    on that lock is in progress), as a release with sleeping waiters does.
 *    If the lock was let go and taken without contention in between (a woken
 *    waiter loses it to a newcomer), this sample spans those holds too.
 * Any other acquisition of the lock by a waiter ends the hold unmeasured.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "delay.h"

char LICENSE[] SEC("license") = "GPL";

/* Keeps the bounds in BTF, for bpf2go to give them to Go. */
const enum delay_limits *unused_delay_limits __attribute__((unused));

#define LCB_F_SPIN (1U << 0)
#define LCB_F_MUTEX (1U << 5)

#define STACK_FRAMES 16
#define SPIN_LOOPS (1U << 17)

const volatile bool match_locks = false;
const volatile bool match_callers = false;
const volatile bool allow_spin = false;
const volatile bool unlocked_only = false;
const volatile __u64 budget_ns = DELAY_BUDGET_MAX_NS;
/* Bit f set: contention_begin flags f are the chosen type's; all set: any. */
const volatile __u64 flag_mask = ~0ULL;

/* Changed between runs of one experiment. */
volatile __u64 delay_ns = 0;
volatile __u32 enabled = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64); /* lock address */
	__type(value, __u8);
	__uint(max_entries, 64);
} target_locks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64); /* return address of the call to the lock function */
	__type(value, __u8);
	__uint(max_entries, 64);
} target_callers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32); /* thread id */
	__type(value, struct delay_wait);
	__uint(max_entries, 16384);
} waits SEC(".maps");

/* Holds and holders of the chosen lock, whose instances may be new every run
 * (a file's i_rwsem): the least recently used make room. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32); /* thread id */
	__type(value, struct delay_hold);
	__uint(max_entries, 16384);
} holders SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64); /* lock address */
	__type(value, struct delay_holder);
	__uint(max_entries, 1024);
} last_holder SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct delay_counters);
	__uint(max_entries, 1);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct delay_budget);
	__uint(max_entries, 1);
} budget SEC(".maps");

static __always_inline struct delay_counters *counts(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&counters, &zero);
}

/* of_type reports whether contention_begin flags are the chosen type's. */
static __always_inline bool of_type(__u32 flags)
{
	if (flag_mask == ~0ULL)
		return true;
	return flags < 64 && (flag_mask & (1ULL << flags));
}

static __always_inline int on_begin(__u64 lock, __u32 flags)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct delay_wait *w, fresh = {};
	struct delay_counters *c;
	struct delay_hold *h;

	if (!enabled || !of_type(flags) || (match_locks && !bpf_map_lookup_elem(&target_locks, &lock)))
		return 0;
	h = bpf_map_lookup_elem(&holders, &tid);
	if (h && h->lock == lock)
		bpf_map_delete_elem(&holders, &tid); /* it let the lock go */
	w = bpf_map_lookup_elem(&waits, &tid);
	if (w && w->lock == lock) {
		w->flags = flags; /* a mutex's optimistic spin, then its sleep */
		if (w->begins < 0xffff)
			w->begins++;
		return 0;
	}
	fresh.begin_ns = bpf_ktime_get_ns();
	fresh.lock = lock;
	fresh.flags = flags;
	fresh.begins = 1;
	if (bpf_map_update_elem(&waits, &tid, &fresh, BPF_ANY) && (c = counts()))
		c->lost++;
	return 0;
}

/* chosen reports whether the waiter's stack passes a target call site. */
static __always_inline bool chosen(void *ctx, struct delay_counters *c)
{
	__u64 stack[STACK_FRAMES];
	long n;

	if (!match_callers)
		return true;
	n = bpf_get_stack(ctx, stack, sizeof(stack), 0);
	if (n <= 0) {
		c->no_stack++;
		return false;
	}
	for (int i = 0; i < STACK_FRAMES; i++) {
		if (i * 8 >= n)
			break;
		if (bpf_map_lookup_elem(&target_callers, &stack[i]))
			return true;
	}
	return false;
}

static long spin_step(__u64 index, void *until)
{
	return bpf_ktime_get_ns() >= *(__u64 *)until;
}

/* spin adds up to want ns on this CPU within its budget; the time added. */
static __always_inline __u64 spin(__u64 now, __u64 want, struct delay_counters *c)
{
	__u32 zero = 0;
	struct delay_budget *b = bpf_map_lookup_elem(&budget, &zero);
	__u64 limit = budget_ns < DELAY_BUDGET_MAX_NS ? budget_ns : DELAY_BUDGET_MAX_NS;
	__u64 until, added;

	if (!b)
		return 0;
	if (want > DELAY_MAX_NS)
		want = DELAY_MAX_NS;
	if (b->second != now / 1000000000ULL) {
		b->second = now / 1000000000ULL;
		b->used_ns = 0;
	}
	if (b->used_ns + want > limit) {
		c->refused_budget++;
		return 0;
	}
	until = now + want;
	bpf_loop(SPIN_LOOPS, spin_step, &until, 0);
	added = bpf_ktime_get_ns() - now;
	b->used_ns += added;
	return added;
}

/* count_hold counts one contended hold of ns, ended by a spinner or not. */
static __always_inline void count_hold(__u64 ns, bool spun)
{
	struct delay_counters *c = counts();

	if (!c)
		return;
	c->hold_samples++;
	c->hold_ns += ns;
	if (!c->hold_min_ns || ns < c->hold_min_ns)
		c->hold_min_ns = ns;
	if (ns > c->hold_max_ns)
		c->hold_max_ns = ns;
	if (spun) {
		c->hold_spun++;
		c->hold_spun_ns += ns;
	}
}

/* held ends the previous contended hold of lock, if another thread's, and
 * starts this thread's. */
static __always_inline void held(__u32 tid, __u64 lock, __u64 now, struct delay_wait *w)
{
	struct delay_hold h = {.lock = lock, .acquired_ns = now};
	struct delay_holder me = {.tid = tid, .acquired_ns = now};
	struct delay_holder *prev = bpf_map_lookup_elem(&last_holder, &lock);

	if (prev && prev->tid != tid) {
		__u32 prev_tid = prev->tid;
		struct delay_hold *ph = bpf_map_lookup_elem(&holders, &prev_tid);

		if (ph && ph->lock == lock && ph->acquired_ns == prev->acquired_ns) {
			if (w && (w->flags & LCB_F_SPIN) && w->begins == 1 && w->begin_ns <= ph->acquired_ns)
				count_hold(now - ph->acquired_ns, true);
			bpf_map_delete_elem(&holders, &prev_tid);
		}
	}
	bpf_map_update_elem(&last_holder, &lock, &me, BPF_ANY);
	bpf_map_update_elem(&holders, &tid, &h, BPF_ANY);
}

/* on_waking ends the contended hold of the waker when it wakes a waiter of
 * the lock it holds. */
static __always_inline int on_waking(struct task_struct *p)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 wakee;
	struct delay_hold *h;
	struct delay_wait *w;

	if (!enabled)
		return 0;
	h = bpf_map_lookup_elem(&holders, &tid);
	if (!h)
		return 0;
	wakee = (__u32)BPF_CORE_READ(p, pid);
	w = bpf_map_lookup_elem(&waits, &wakee);
	if (!w || w->lock != h->lock)
		return 0;
	if (w->begin_ns <= h->acquired_ns)
		count_hold(bpf_ktime_get_ns() - h->acquired_ns, false);
	bpf_map_delete_elem(&holders, &tid);
	return 0;
}

static __always_inline int on_end(void *ctx, __u64 lock, int ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct delay_wait wait, *w;
	struct delay_counters *c;
	__u64 now, want, added;
	bool spinning, locked;

	/* The wait ends here: its entry goes, so the map holds only waits in
	 * progress, whatever the machine waits on. */
	w = bpf_map_lookup_elem(&waits, &tid);
	if (w) {
		wait = *w;
		bpf_map_delete_elem(&waits, &tid);
		w = wait.lock == lock ? &wait : NULL;
	}
	if (!enabled || (match_locks && !bpf_map_lookup_elem(&target_locks, &lock)))
		return 0;
	/* Without its begin, a wait of another type, when the type is known. */
	if (!w && flag_mask != ~0ULL)
		return 0;
	c = counts();
	if (!c || ret != 0 || !chosen(ctx, c))
		return 0;
	now = bpf_ktime_get_ns();
	c->matched++;
	held(tid, lock, now, w);
	want = delay_ns;
	if (!want)
		return 0;
	/* Without its begin the lock's kind is unknown: treated as spinning. */
	spinning = !w || (w->flags & (LCB_F_SPIN | LCB_F_MUTEX)) == LCB_F_SPIN;
	/* Past its first contention_begin a mutex waiter is in the wait loop,
	 * whose exit takes wait_lock before contention_end. */
	locked = w && (w->flags & LCB_F_MUTEX) && w->begins > 1;
	if (spinning && !allow_spin) {
		c->refused_spin++;
		return 0;
	}
	if (locked && unlocked_only) {
		c->skipped_locked++;
		return 0;
	}
	added = spin(now, want, c);
	if (!added)
		return 0;
	c->fired++;
	c->added_ns += added;
	if (locked)
		c->fired_locked++;
	return 0;
}

SEC("tp_btf/contention_begin")
int whatif_begin(__u64 *ctx)
{
	return on_begin(ctx[0], (__u32)ctx[1]);
}

SEC("tp_btf/contention_end")
int whatif_end(__u64 *ctx)
{
	return on_end(ctx, ctx[0], (int)ctx[1]);
}

SEC("raw_tp/contention_begin")
int whatif_rbegin(struct bpf_raw_tracepoint_args *ctx)
{
	return on_begin(ctx->args[0], (__u32)ctx->args[1]);
}

SEC("raw_tp/contention_end")
int whatif_rend(struct bpf_raw_tracepoint_args *ctx)
{
	return on_end(ctx, ctx->args[0], (int)ctx->args[1]);
}

SEC("tp_btf/sched_waking")
int whatif_waking(__u64 *ctx)
{
	return on_waking((struct task_struct *)ctx[0]);
}

SEC("raw_tp/sched_waking")
int whatif_rwaking(struct bpf_raw_tracepoint_args *ctx)
{
	return on_waking((struct task_struct *)ctx->args[0]);
}
