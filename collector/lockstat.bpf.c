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
 * reused rather than deleted, counters and histograms in per-CPU arrays.
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
#define BPF_F_SKIP_FIELD_MASK 0xffULL

/* Set by the loader before load. */
const volatile __u32 self_tgid = 0;
/* Kernel frames kept per stack, 0: no stacks. */
const volatile __u32 stack_depth = 16;
/* Frames of the probe machinery itself on top of every stack. */
const volatile __u32 stack_skip = 0;
/* The program's context lives on the kernel stack of the probed code
 * (raw tracepoints: bpf_trace_runN's argument array), so the raw stack
 * above it can be read to recognise a path. */
const volatile bool ctx_on_stack = false;
/* How many first frames of a walk to try as the first above the context. */
const volatile __u32 lead_frames = 1;
/* Code of the functions that move the kernel stack by a random offset, each
 * [lo, hi): syscall entry under randomize_kstack_offset. Frames above theirs
 * move relative to the context from one syscall to the next, so a learnt
 * path ends with the frame that returns into one of them. */
const volatile __u64 kstack_shifter_lo[MAX_KSTACK_SHIFTERS] = {};
const volatile __u64 kstack_shifter_hi[MAX_KSTACK_SHIFTERS] = {};
/* Code of the tracepoint machinery that some kernels put between the probe
 * and the lock function (__traceiter_*, the iterator called once more than
 * one program is attached, and __bpf_trace_*), each [lo, hi). Every path
 * has the same such frames, so a path's key starts above them. */
const volatile __u64 key_skip_lo[MAX_KEY_SKIP] = {};
const volatile __u64 key_skip_hi[MAX_KEY_SKIP] = {};
/* Function probes read their FN_* value from the BPF cookie (else from a
 * patched constant, see fn_info). */
const volatile bool fn_cookie = false;
const volatile bool filter_pids = false;
const volatile bool filter_comm = false;
const volatile char comm_filter[16] = {};
/* flags value -> index of the lock type that claims it, or -1 (not captured) */
const volatile __s32 flag_type[MAX_FLAGS] = {};

/* Stacks by hash of their frames; the value is resized to the stack depth. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(key_size, sizeof(__u64));
	__uint(value_size, 16 * sizeof(__u64));
	__uint(max_entries, 16384); /* resized by the loader */
} stacks SEC(".maps");

/* Paths walked before; see struct path. A full map only costs walks. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct path_key);
	__type(value, struct path);
	__uint(max_entries, 4096);
} paths SEC(".maps");

/* Stacks (by stacks map key) whose path cannot be recognised: frames on
 * another stack or beyond the window. Their walks skip the search of the
 * window for their frames, which costs most when it finds nothing. A full
 * map only costs those searches. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, __u8);
	__uint(max_entries, 4096);
} unlearnable SEC(".maps");

/*
 * Where a path_key's frames lie in the window, learnt from walks; a wrong
 * guess only costs a walk, as paths are verified in full. first_frame: per
 * flags value, 1 + the word of the last learnt path's first frame (the same
 * tracepoint machinery lies between every context and its first frame).
 * frame_step: per return address, the words from its slot to the next
 * frame's, that is the size of the caller's frame at that call.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, MAX_FLAGS);
} first_frame SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, __u32);
	__uint(max_entries, 8192);
} frame_step SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct scratch);
	__uint(max_entries, MAX_LEVELS); /* one per nesting level */
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct wait_key);
	__type(value, struct wait_stats);
	__uint(max_entries, 16384); /* resized by the loader */
} aggregate SEC(".maps");

/* Sleeping waits, one entry per thread that ever waited during the capture. */
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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct cpu_busy);
	__uint(max_entries, 1);
} busy SEC(".maps");

/* Log-linear wait histogram per lock type: index type*HIST_BUCKETS + bucket. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, MAX_TYPES * HIST_BUCKETS); /* resized to the types in use */
} histogram SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, CNT_MAX);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1); /* resized to the number of --pid values */
} pid_filter SEC(".maps");

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

/* Force BTF for the types bpf2go generates Go code for. */
const enum counter unused_counter __attribute__((unused));
const enum lock_name unused_lock_name __attribute__((unused));
const enum fn_info unused_fn_info __attribute__((unused));

static __always_inline void count(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += n;
}

/* What a program does for an event: the function probes have no roles. */
enum role { ROLE_BEGIN, ROLE_END, ROLE_FUNCTION };

/*
 * Runs of our programs nest when an interrupt, or a lock one of our own map
 * operations contends on, fires a probe while one runs: the per-CPU stack of
 * spinning waits and the per-level scratch keep them apart. But the kernel
 * never runs a program inside itself; it skips the run and counts a
 * recursion miss. So each tracepoint program has a rescue copy attached
 * after it to the same event. The main copy notes every event it takes, by
 * lock and nesting level; the rescue copy, which runs next, finds and clears
 * that note, or, when there is none, knows the kernel skipped the main copy
 * and does its work. A note is written in the main program, never in a
 * window of the kernel's around it, so no skip goes unseen.
 */
static __always_inline struct cpu_busy *cpu_busy(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&busy, &zero);
}

/*
 * claim returns the CPU's busy state when this copy of a tracepoint program
 * is to handle the event, NULL when not: the main copy always, noting the
 * event; the rescue copy only when it finds no note, and then counts it.
 * Whatever nests inside the main copy's note reaches the rescue copy,
 * which only clears notes, so next never races.
 */
static __always_inline struct cpu_busy *claim(enum role role, __u64 lock, bool rescue)
{
	struct cpu_busy *b = cpu_busy();
	struct taken *t;

	if (!b)
		return NULL;
	if (!rescue) {
		t = &b->taken[role & 1][b->next[role & 1]++ & (TAKEN_SLOTS - 1)];
		t->lock = lock;
		t->level = b->depth;
		return b;
	}
	for (int i = 0; i < TAKEN_SLOTS; i++) {
		t = &b->taken[role & 1][i];
		if (t->lock == lock && t->level == b->depth) {
			t->lock = 0;
			return NULL;
		}
	}
	count(role == ROLE_BEGIN ? CNT_RESCUED_BEGIN : CNT_RESCUED_END, 1);
	return b;
}

/* enter admits a run on this CPU and returns the nesting level it works at
 * (the index of its scratch space), or -1 when it must do nothing. */
static __always_inline int enter(struct cpu_busy *b, enum role role)
{
	if (!b)
		return -1;
	if (b->depth >= MAX_LEVELS) {
		/* A dropped end leaves its begin open: counted when replaced. */
		if (role != ROLE_END)
			count(CNT_LOST_LEVELS, 1);
		return -1;
	}
	return b->depth++;
}

static __always_inline void leave(struct cpu_busy *b)
{
	b->depth--;
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

/* Filters apply to the process: its tgid, and its main thread's name. */
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
	return true;
}

/* hash_frames mixes a stack's frames into its stacks map key (never 0). */
static __always_inline __u64 hash_frames(const __u64 *ips)
{
	__u64 h = 0x9e3779b97f4a7c15ULL;

	for (int i = 0; i < MAX_STACK_DEPTH; i++) {
		if (i >= stack_depth)
			break;
		h ^= ips[i] * 0xc2b2ae3d27d4eb4fULL;
		h = ((h << 31) | (h >> 33)) * 0x9e3779b185ebca87ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h ? h : 1;
}

/* path_matches says whether the stack above the context, top bytes below
 * the top of its stack, is the path p: the same return addresses at the
 * same places, and, for a path that ends at the top of its stack, as far
 * from the top. */
static __always_inline bool path_matches(const struct path *p, const struct scratch *sc, __u32 nwords, __u32 top)
{
	if (p->top && p->top != top)
		return false;
	for (int j = 0; j < VERIFY_FRAMES; j++) {
		__u32 pos;

		if (j >= p->nframes)
			break;
		pos = p->pos[j];
		if (pos >= nwords || sc->window[pos & (STACK_WINDOW_WORDS - 1)] != p->ip[j])
			return false;
	}
	return p->nframes > 0;
}

struct learn {
	struct path *path;
	const struct scratch *sc;
	__u32 nips, nwords;
	__u32 first; /* index of the first walked frame found in the window */
	bool shifted; /* stopped at a frame of a kstack shifter */
};

static __always_inline bool shifts_kstack(__u64 ip)
{
	for (int i = 0; i < MAX_KSTACK_SHIFTERS; i++) {
		if (ip >= kstack_shifter_lo[i] && ip < kstack_shifter_hi[i])
			return true;
	}
	return false;
}

static long learn_word(__u64 i, struct learn *l)
{
	struct path *p = l->path;
	__u32 n = p->nframes, f = l->first + n;
	__u64 ip;

	if (i >= l->nwords || f >= l->nips || n >= VERIFY_FRAMES)
		return 1;
	ip = l->sc->ips[f & MAX_STACK_DEPTH];
	if (l->sc->window[i & (STACK_WINDOW_WORDS - 1)] != ip)
		return 0;
	p->ip[n & (VERIFY_FRAMES - 1)] = ip;
	p->pos[n & (VERIFY_FRAMES - 1)] = i;
	p->nframes = n + 1;
	/* The next frame lies above the random gap: the same path would not
	 * be recognised at another offset. The frames above are the syscall
	 * entry, which the shifter's own frame already tells apart. */
	l->shifted = shifts_kstack(ip);
	return l->shifted;
}

/*
 * learn_path finds the walked frames' return addresses in the raw window, in
 * one pass: each frame's return address lies above the previous one's. The
 * stack skip makes the first frame the first one above the context where it
 * can (tracepoints); where the first frame may lie below it (the return of
 * a kprobed function), the pass starts at each of the first lead_frames
 * frames in turn, until one is found above the context. bpf_loop keeps the
 * verifier from exploring every (word, frame) pair.
 *
 * It returns whether the path can be recognised exactly: every walked frame
 * found, up to the syscall entry, the stack depth or the top of the stack
 * (see struct path's top). Not so when frames lie beyond the window,
 * on another stack (an interrupt's frames on the IRQ stack, the interrupted
 * ones on the task's) or past VERIFY_FRAMES; such paths are walked each time.
 */
static __always_inline bool learn_path(struct path *p, const struct scratch *sc, __u32 nips, bool truncated,
				       __u32 nwords, __u32 top)
{
	struct learn l = { .path = p, .sc = sc, .nips = nips, .nwords = nwords, .first = 0 };

	p->nframes = 0;
	for (__u32 first = 0; first < LEAD_FRAMES && first < lead_frames && first < nips; first++) {
		l.first = first;
		l.shifted = false;
		p->nframes = 0;
		bpf_loop(STACK_WINDOW_WORDS, learn_word, &l, 0);
		if (p->nframes)
			break;
	}
	/* A walk that ended by itself ended at the top of the stack; one
	 * cut at the depth or at a shifter says nothing about what is above. */
	p->top = l.shifted || truncated ? 0 : top;
	return p->nframes && (l.shifted || l.first + p->nframes == nips);
}

/* read_key names the path in the window, from the learnt frame positions. */
static __always_inline bool read_key(struct path_key *pk, const struct scratch *sc, __u32 first, __u32 nwords)
{
	__u32 pos = first;

	for (int k = 0; k < KEY_FRAMES; k++) {
		__u32 *step;

		if (pos >= nwords)
			return false;
		pk->ip[k] = sc->window[pos & (STACK_WINDOW_WORDS - 1)];
		if (k + 1 == KEY_FRAMES)
			break;
		step = bpf_map_lookup_elem(&frame_step, &pk->ip[k]);
		if (!step)
			return false;
		pos += *step;
	}
	return true;
}

/* key_start is the index of a learnt path's first frame above the
 * tracepoint machinery: where its key starts. */
static __always_inline __u32 key_start(const struct path *p)
{
	__u32 k;

	for (k = 0; k < MAX_KEY_SKIP && k + 1 < p->nframes; k++) {
		__u64 ip = p->ip[k];
		bool machinery = false;

		for (int i = 0; i < MAX_KEY_SKIP; i++)
			machinery |= ip >= key_skip_lo[i] && ip < key_skip_hi[i];
		if (!machinery)
			break;
	}
	return k;
}

/* learn_key names a learnt path as read_key will, from its frame first on,
 * and teaches read_key where those frames lie. It returns whether the key
 * changed. */
static __always_inline bool learn_key(struct path_key *pk, const struct path *p, __u32 first)
{
	bool changed = false;

	for (int k = 0; k < KEY_FRAMES; k++) {
		__u32 f = first + k;
		__u64 ip = f < p->nframes ? p->ip[f & (VERIFY_FRAMES - 1)] : 0;

		if (f + 1 < p->nframes) {
			__u32 step = p->pos[(f + 1) & (VERIFY_FRAMES - 1)] - p->pos[f & (VERIFY_FRAMES - 1)];
			__u32 *known = bpf_map_lookup_elem(&frame_step, &ip);

			/* A frame's size rarely changes: an update costs an
			 * element swap under the bucket lock, a lookup none. */
			if (!known || *known != step)
				bpf_map_update_elem(&frame_step, &ip, &step, BPF_ANY);
		}
		changed |= pk->ip[k] != ip;
		pk->ip[k] = ip;
	}
	return changed;
}

static __always_inline int first_free_way(struct path_key *pk)
{
	for (int way = 0; way < PATH_WAYS; way++) {
		pk->way = way;
		if (!bpf_map_lookup_elem(&paths, pk))
			return way;
	}
	return -1;
}

/*
 * get_stack returns the stacks map key of the current kernel stack, 0 for
 * none. Walking a kernel stack costs microseconds, most of it fixed, so a
 * path seen before is recognised instead: its first frames, read where
 * walks found them, name the few paths it may be, and the same return
 * addresses at the same places above the context are the same frames,
 * exactly. Only then is the walk skipped.
 */
static __always_inline __u64 get_stack(void *ctx, __u32 flags, __u32 level)
{
	struct path_key pk = { .flags = flags };
	struct path *known, *fresh;
	__u32 nwords = 0, top = 0, size, fkey = flags & (MAX_FLAGS - 1), *hint, first;
	struct scratch *sc;
	__u64 base = 0, h;
	int free_way = -1, err;
	bool searched = false;
	long n;

	if (!stack_depth)
		return 0;
	sc = bpf_map_lookup_elem(&scratch, &level);
	if (!sc)
		return 0;

	if (ctx_on_stack) {
		void *p = ctx;
		__u32 avail;

		/* The context pointer's value, as a number. */
		bpf_probe_read_kernel(&base, sizeof(base), &p);
		top = KSTACK_SIZE - (base & (KSTACK_SIZE - 1));
		avail = top;
		if (avail > sizeof(sc->window))
			avail = sizeof(sc->window);
		if (bpf_probe_read_kernel(sc->window, avail, (void *)base) == 0)
			nwords = avail / sizeof(__u64);
	}
	hint = bpf_map_lookup_elem(&first_frame, &fkey);
	if (hint && *hint && read_key(&pk, sc, *hint - 1, nwords)) {
		searched = true;
		/* Ways fill in order and are never emptied: the first empty one
		 * ends the search. */
		for (int way = 0; way < PATH_WAYS; way++) {
			pk.way = way;
			known = bpf_map_lookup_elem(&paths, &pk);
			if (!known) {
				free_way = way;
				break;
			}
			if (path_matches(known, sc, nwords, top)) {
				count(CNT_STACK_KNOWN, 1);
				return known->stack;
			}
		}
	}

	size = stack_depth * sizeof(__u64);
	if (size > sizeof(sc->ips))
		size = sizeof(sc->ips);
	n = bpf_get_stack(ctx, sc->ips, size, stack_skip & BPF_F_SKIP_FIELD_MASK);
	if (n <= 0) {
		count(CNT_STACK_FAILED, 1);
		return 0;
	}
	h = hash_frames(sc->ips);
	err = bpf_map_update_elem(&stacks, &h, sc->ips, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count(CNT_STACK_FAILED, 1);
		return 0;
	}
	count(CNT_STACK_WALKED, 1);
	if (nwords && hint && !bpf_map_lookup_elem(&unlearnable, &h)) {
		__u8 one = 1;

		fresh = &sc->fresh;
		if (!learn_path(fresh, sc, n / sizeof(__u64), n == size, nwords, top)) {
			bpf_map_update_elem(&unlearnable, &h, &one, BPF_NOEXIST);
			return h;
		}
		fresh->stack = h;
		first = key_start(fresh);
		if (*hint != fresh->pos[first & (VERIFY_FRAMES - 1)] + 1)
			*hint = fresh->pos[first & (VERIFY_FRAMES - 1)] + 1;
		if (learn_key(&pk, fresh, first) || !searched)
			/* Not under the key searched: file it where read_key
			 * will look next time. */
			free_way = first_free_way(&pk);
		/* Evict only when every way is taken, and then not always the same. */
		pk.way = free_way >= 0 ? free_way : bpf_get_prandom_u32() % PATH_WAYS;
		bpf_map_update_elem(&paths, &pk, fresh, BPF_ANY);
	}
	return h;
}

static __always_inline void fill(struct wait_slot *s, void *ctx, __u64 lock,
				 __u32 flags, __u32 tid, __u32 pid, __s32 type, __u32 level)
{
	bool skip = type < 0 || !wanted(pid);

	s->lock = lock;
	s->tid = tid;
	s->pid = pid;
	s->type = skip ? 0 : type;
	s->skip = skip;
	s->stack = skip ? 0 : get_stack(ctx, flags, level);
	count(skip ? CNT_FILTERED : CNT_BEGIN, 1);
}

/* thread_slot returns the thread's entry in thread_waits, made on its first
 * wait and reused for every later one: no allocation on the steady path. */
static __always_inline struct wait_slot *thread_slot(__u32 tid)
{
	struct wait_slot *s = bpf_map_lookup_elem(&thread_waits, &tid);
	struct wait_slot empty = {};
	int err;

	if (s)
		return s;
	err = bpf_map_update_elem(&thread_waits, &tid, &empty, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		count(CNT_LOST_WAIT_FULL, 1);
		return NULL;
	}
	return bpf_map_lookup_elem(&thread_waits, &tid);
}

static __always_inline int on_begin(void *ctx, __u64 lock, __u32 flags, bool rescue)
{
	__u64 id;
	__u32 tid, pid, zero = 0;
	__s32 type = flags < MAX_FLAGS ? flag_type[flags] : -1;
	struct cpu_busy *b = claim(ROLE_BEGIN, lock, rescue);
	struct wait_slot *s;
	int level;

	level = enter(b, ROLE_BEGIN);
	if (level < 0)
		return 0;
	id = bpf_get_current_pid_tgid();
	tid = (__u32)id;
	pid = id >> 32;

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
				goto out; /* the same wait announced again */
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
		 * and only the first announcement counts.
		 */
		s = thread_slot(tid);
		if (!s)
			goto out;
		if (s->lock) {
			if (s->lock == lock)
				goto out;
			/* A thread sleeps on one lock at a time: the old end was lost. */
			count(CNT_UNMATCHED_BEGIN, 1);
		}
	}
	fill(s, ctx, lock, flags, tid, pid, type, level);
	/* Last: the wait must not include our own work. */
	s->ts = bpf_ktime_get_ns();
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
		if (addr == lock)
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

/* record_in adds one wait (or hold) of w's key to an aggregation map and its
 * type's histogram; lost is the counter of what a full map drops. */
static __always_inline void record_in(void *agg, void *hist, __u32 lost,
				      struct wait_slot *w, __u64 delta)
{
	struct wait_key key = {
		.lock = w->lock,
		.stack = w->stack,
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
		};
		int err;

		bpf_get_current_comm(&init.comm, sizeof(init.comm));
		init.lock_name = name_lock(w->lock);
		err = bpf_map_update_elem(agg, &key, &init, BPF_NOEXIST);
		if (err) {
			count(lost, 1);
			return;
		}
	}

	idx = w->type * HIST_BUCKETS + hist_bucket(delta);
	h = bpf_map_lookup_elem(hist, &idx);
	if (h)
		*h += 1;
}

static __always_inline void record(struct wait_slot *w, __u64 delta)
{
	record_in(&aggregate, &histogram, CNT_LOST_AGG_FULL, w, delta);
}

static __always_inline int on_end(__u64 lock, bool rescue)
{
	struct cpu_busy *b = NULL;
	struct cpu_waits *cw;
	struct wait_slot w, *s;
	__u32 tid, zero = 0, d;
	__u64 now;

	/* The rescue copy returns at once for almost every event, before
	 * reading the clock. */
	if (rescue && !(b = claim(ROLE_END, lock, true)))
		return 0;
	/* First for the main copy: the wait must not include our own work. */
	now = bpf_ktime_get_ns();
	if (!rescue)
		b = claim(ROLE_END, lock, false);
	tid = (__u32)bpf_get_current_pid_tgid();
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
	count(CNT_UNMATCHED_END, 1);
	goto out;

found:
	if (!w.skip) {
		count(CNT_END, 1);
		record(&w, now - w.ts);
	}
out:
	leave(b);
	return 0;
}

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

static __always_inline int fn_enter(__u64 lock, __u32 info)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, pid = id >> 32, zero = 0;
	struct fn_control *ctl;
	struct wait_slot *s;
	struct cpu_busy *b = cpu_busy();
	bool skip;

	if (enter(b, ROLE_FUNCTION) < 0)
		return 0;
	ctl = bpf_map_lookup_elem(&control, &zero);
	if (!ctl)
		goto out;
	if (ctl->calib_tid) {
		/* Calibrating: only the calibrating thread is timed. */
		if (tid != ctl->calib_tid)
			goto out;
		skip = false;
	} else {
		skip = !wanted(pid);
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
	}
	s->lock = lock;
	s->tid = tid;
	s->pid = pid;
	s->type = info & FN_TYPE_MASK;
	s->skip = skip;
	s->stack = 0;
	s->repeat = 0;
	count(skip ? CNT_FILTERED : CNT_BEGIN, 1);
	/* Last: the acquire time must not include our own work. */
	s->ts = bpf_ktime_get_ns();
out:
	leave(b);
	return 0;
}

static __always_inline int fn_exit(void *ctx, __u32 info)
{
	/* First: the acquire time must not include our own work. */
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), zero = 0;
	struct fn_control *ctl;
	struct wait_slot w, *s;
	struct cpu_busy *b = cpu_busy();
	bool contended;
	__u64 delta;
	int level;

	level = enter(b, ROLE_FUNCTION);
	if (level < 0)
		return 0;
	s = bpf_map_lookup_elem(&thread_waits, &tid);
	if (!s || !s->lock)
		goto unmatched;
	if (s->repeat) {
		s->repeat--;
		goto out;
	}
	w = *s;
	s->lock = 0;
	ctl = bpf_map_lookup_elem(&control, &zero);
	if (w.skip || !ctl)
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

	contended = delta > ctl->threshold_ns;
	count(contended ? CNT_END : CNT_FAST, 1);
	if (!contended && !(info & FN_HOLD))
		goto out;
	w.stack = get_stack(ctx, w.type, level);
	if (contended)
		record(&w, delta);
	if (info & FN_HOLD) {
		struct hold_key hk = { .lock = w.lock, .tid = tid };
		struct hold_slot hs = { .ts = now, .stack = w.stack, .pid = w.pid, .type = w.type };

		if (bpf_map_update_elem(&holds, &hk, &hs, BPF_ANY))
			count(CNT_LOST_HOLD_FULL, 1);
	}
	goto out;
unmatched:
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
	count(CNT_HOLD, 1);
	record_in(&hold_aggregate, &hold_histogram, CNT_LOST_HOLD_AGG_FULL, &w, now - h->ts);
	bpf_map_delete_elem(&holds, &hk);
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

/* Templates: the loader attaches a copy per function of locks.json, so the
 * attach targets named here are placeholders. */
SEC("fentry/klockstat_acquire")
int fentry_acquire(__u64 *ctx)
{
	return fn_enter(ctx[0], fn_info(ctx));
}

SEC("fexit/klockstat_acquire")
int fexit_acquire(__u64 *ctx)
{
	return fn_exit(ctx, fn_info(ctx));
}

SEC("fentry/klockstat_release")
int fentry_release(__u64 *ctx)
{
	return fn_release(ctx[0]);
}

SEC("kprobe/klockstat_acquire")
int kprobe_acquire(struct pt_regs *ctx)
{
	return fn_enter(PT_REGS_ARG1(ctx), fn_info(ctx));
}

SEC("kretprobe/klockstat_acquire")
int kretprobe_acquire(struct pt_regs *ctx)
{
	return fn_exit(ctx, fn_info(ctx));
}

SEC("kprobe/klockstat_release")
int kprobe_release(struct pt_regs *ctx)
{
	return fn_release(PT_REGS_ARG1(ctx));
}

/* A thread's entry in thread_waits lives until the thread exits, and is
 * freed then: threads that come and go must not fill the map. The exiting
 * thread is current, and waits on nothing any more. */
static __always_inline int on_thread_exit(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	bpf_map_delete_elem(&thread_waits, &tid);
	return 0;
}

/* Raw tracepoints exist from Linux 4.17, before every backend's hooks. */
SEC("raw_tp/sched_process_exit")
int raw_thread_exit(void *ctx)
{
	return on_thread_exit();
}

/* For the perf-event tracepoint backend, where raw tracepoints may fail. */
SEC("tracepoint/sched/sched_process_exit")
int tp_thread_exit(void *ctx)
{
	return on_thread_exit();
}
