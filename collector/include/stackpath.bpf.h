/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The stack path: take the kernel stack of a wait, and recognise a path
 * walked before instead of walking it again.
 */
#ifndef __KLOCKSTAT_STACKPATH_BPF_H__
#define __KLOCKSTAT_STACKPATH_BPF_H__

#include "common.bpf.h"
#include "counters.bpf.h"

#define BPF_F_SKIP_FIELD_MASK 0xffULL

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
 * frame's, that is the size of the caller's frame at that call (struct
 * frame_steps).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, MAX_FLAGS);
} first_frame SEC(".maps");

/* A frame's size at one call: one, or two where the function aligns its
 * stack to 16 bytes (rwsem_down_write_slowpath does, 21 or 22 words on
 * 6.18) and its frame is a word larger or smaller as its caller's ended,
 * which differs from one path to another. With one size kept, the paths of
 * either alignment replaced it in turn and hid the others' from read_key:
 * the exit_mmap path of stress-ng --fork was walked at every event. */
struct frame_steps {
	__u32 step[2]; /* step[1]: the other size, 0 for none */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct frame_steps);
	__uint(max_entries, 8192);
} frame_step SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct stack_scratch);
	__uint(max_entries, MAX_LEVELS); /* one per nesting level */
} scratch SEC(".maps");

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
static __always_inline bool path_matches(const struct path *p, const struct stack_scratch *sc, __u32 nwords, __u32 top)
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
	const struct stack_scratch *sc;
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
static __always_inline bool learn_path(struct path *p, const struct stack_scratch *sc, __u32 nips, bool truncated,
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
static __always_inline bool read_key(struct path_key *pk, const struct stack_scratch *sc, __u32 first, __u32 nwords)
{
	__u32 pos = first;

	for (int k = 0; k < KEY_FRAMES; k++) {
		struct frame_steps *steps;
		__u32 step;

		if (pos >= nwords)
			return false;
		pk->ip[k] = sc->window[pos & (STACK_WINDOW_WORDS - 1)];
		if (k + 1 == KEY_FRAMES)
			break;
		steps = bpf_map_lookup_elem(&frame_step, &pk->ip[k]);
		if (!steps)
			return false;
		step = steps->step[0];
		/* Of two sizes, the one that leads to a frame learnt before
		 * (learn_key learns every key frame's step). */
		if (steps->step[1] && pos + step < nwords &&
		    !bpf_map_lookup_elem(&frame_step, &sc->window[(pos + step) & (STACK_WINDOW_WORDS - 1)]))
			step = steps->step[1];
		pos += step;
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
			struct frame_steps *known = bpf_map_lookup_elem(&frame_step, &ip);

			/* A frame's size rarely changes: an update costs an
			 * element swap under the bucket lock, a lookup none.
			 * A third size replaces the older of two. */
			if (!known) {
				struct frame_steps fresh = { .step = { step, 0 } };

				bpf_map_update_elem(&frame_step, &ip, &fresh, BPF_ANY);
			} else if (known->step[0] != step && known->step[1] != step) {
				known->step[1] = known->step[0];
				known->step[0] = step;
			}
		}
		changed |= pk->ip[k] != ip;
		pk->ip[k] = ip;
	}
	return changed;
}

/* The search of a key's ways for the current path: a bpf_loop callback,
 * checked once by the verifier however many ways there are. */
struct way_search {
	struct path_key pk;
	const struct stack_scratch *sc;
	__u32 nwords, top;
	int free_way; /* the first empty way, -1 for none */
	__u64 stack;  /* the known path's stack, 0 for none */
};

static long search_way(__u64 way, struct way_search *w)
{
	struct path *known;

	w->pk.way = way;
	known = bpf_map_lookup_elem(&paths, &w->pk);
	if (!known) {
		/* Ways fill in order and are never emptied: the first empty
		 * one ends the search. */
		w->free_way = way;
		return 1;
	}
	if (path_matches(known, w->sc, w->nwords, w->top)) {
		w->stack = known->stack;
		return 1;
	}
	return 0;
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

/* walk_size is how many bytes of frames a walk takes. */
static __always_inline __u32 walk_size(const struct stack_scratch *sc)
{
	__u32 size = stack_depth * sizeof(__u64);

	return size > sizeof(sc->ips) ? sizeof(sc->ips) : size;
}

/* keep_stack stores the frames walked into sc->ips in the stacks map, its
 * key in *h, and in *first, unless NULL, whether the map did not hold it
 * yet; false when the map is full. */
static __always_inline bool keep_stack(const struct stack_scratch *sc, __u64 *h, bool *first)
{
	int err;

	*h = hash_frames(sc->ips);
	err = bpf_map_update_elem(&stacks, h, sc->ips, BPF_NOEXIST);
	if (err && err != -EEXIST)
		return false;
	if (first)
		*first = !err;
	return true;
}

/* store_stack walks the current kernel stack, skip frames of machinery
 * left out, into sc->ips and stores it in the stacks map: bpf_get_stack's
 * result (bytes), or -1 when nothing was stored; the key in *h, and in
 * *first, unless NULL, whether the map did not hold it yet. */
static __always_inline long store_stack(void *ctx, struct stack_scratch *sc, __u32 size, __u32 skip, __u64 *h,
					bool *first)
{
	long n = bpf_get_stack(ctx, sc->ips, size, skip & BPF_F_SKIP_FIELD_MASK);

	if (n <= 0 || !keep_stack(sc, h, first))
		return -1;
	return n;
}

/*
 * walk_stack is store_stack for a wait's stack, counted. It calls no
 * bpf_loop, so programs that use only it load on kernels before 5.17 (the
 * function probes on Linux 5.10).
 */
static __always_inline long walk_stack(void *ctx, struct stack_scratch *sc, __u32 size, __u64 *h, bool *first)
{
	long n = store_stack(ctx, sc, size, stack_skip, h, first);

	count(n > 0 ? CNT_STACK_WALKED : CNT_STACK_FAILED, 1);
	return n;
}

/* walked_stack is get_stack without the path cache. */
static __always_inline __u64 walked_stack(void *ctx, __u32 level)
{
	struct stack_scratch *sc;
	__u64 h = 0;

	if (!stack_depth)
		return 0;
	sc = bpf_map_lookup_elem(&scratch, &level);
	if (!sc || walk_stack(ctx, sc, walk_size(sc), &h, NULL) <= 0)
		return 0;
	return h;
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
	struct way_search ws = { .pk = { .flags = flags }, .free_way = -1 };
	struct path_key *pk = &ws.pk;
	struct path *fresh;
	__u32 nwords = 0, top = 0, size, fkey = flags & (MAX_FLAGS - 1), *hint, first;
	struct stack_scratch *sc;
	__u64 base = 0, h = 0;
	bool searched = false, first_sight = false;
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
	if (hint && *hint && read_key(pk, sc, *hint - 1, nwords)) {
		searched = true;
		ws.sc = sc;
		ws.nwords = nwords;
		ws.top = top;
		bpf_loop(PATH_WAYS, search_way, &ws, 0);
		if (ws.stack) {
			count(CNT_STACK_KNOWN, 1);
			return ws.stack;
		}
	}

	size = walk_size(sc);
	n = walk_stack(ctx, sc, size, &h, &first_sight);
	if (n <= 0)
		return 0;
	/* A path is learnt when its stack is seen again, not at first sight:
	 * most stacks of a cold start or of a low-rate workload are never
	 * seen twice, and learning each at first sight measured no cheaper.
	 * A path that recurs pays one walk more. */
	if (first_sight)
		return h;
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
		if (learn_key(pk, fresh, first) || !searched)
			/* Not under the key searched: file it where read_key
			 * will look next time. */
			ws.free_way = first_free_way(pk);
		/* Evict only when every way is taken, and then not always the same. */
		pk->way = ws.free_way >= 0 ? ws.free_way : bpf_get_prandom_u32() % PATH_WAYS;
		bpf_map_update_elem(&paths, pk, fresh, BPF_ANY);
	}
	return h;
}

#endif /* __KLOCKSTAT_STACKPATH_BPF_H__ */
