/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Nesting and rescue: runs of the programs on one CPU, nested by
 * interrupts, and the rescue copies that take the events the kernel skips
 * for a running program.
 */
#ifndef __KLOCKSTAT_NESTING_BPF_H__
#define __KLOCKSTAT_NESTING_BPF_H__

#include "common.bpf.h"
#include "counters.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct cpu_busy);
	__uint(max_entries, 1);
} busy SEC(".maps");

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
	/* The main copy's note is the last one written, unless an event
	 * nested between the two copies (its own note, cleared since) or a
	 * skip happened: only then are the other notes searched. Notes of one
	 * lock and level are interchangeable, so which is cleared is the
	 * same. */
	t = &b->taken[role & 1][(b->next[role & 1] - 1) & (TAKEN_SLOTS - 1)];
	if (t->lock == lock && t->level == b->depth) {
		t->lock = 0;
		return NULL;
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

#endif /* __KLOCKSTAT_NESTING_BPF_H__ */
