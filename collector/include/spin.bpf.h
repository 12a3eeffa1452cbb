/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Spin and sleep: the part of a wait spent spinning. A spinning lock
 * (spinlock, rwlock) spins for all of its wait. A mutex announces its wait
 * with LCB_F_MUTEX|LCB_F_SPIN before its optimistic spin, again with
 * LCB_F_MUTEX before it sleeps, and with LCB_F_SPIN again when, woken first
 * in line, it spins once more: each announcement closes the phase before
 * it. No other sleeping lock announces its spin (rwsem writers and rtmutex
 * spin on the owner without a tracepoint), so their waits count as slept.
 */
#ifndef __KLOCKSTAT_SPIN_BPF_H__
#define __KLOCKSTAT_SPIN_BPF_H__

#include "common.bpf.h"

/* spin_first starts the phases of a wait whose first announcement carried
 * flags, at s->ts. */
static __always_inline void spin_first(struct wait_slot *s, __u32 flags)
{
	s->spin_ns = 0;
	s->spin_from = (flags & LCB_F_SPIN) ? s->ts : 0;
}

/* spin_again closes the phase a wait announced again with flags was in, and
 * opens the next. */
static __always_inline void spin_again(struct wait_slot *s, __u32 flags)
{
	__u64 now = bpf_ktime_get_ns();

	if (s->spin_from)
		s->spin_ns += now - s->spin_from;
	s->spin_from = (flags & LCB_F_SPIN) ? now : 0;
}

/* spin_total is the time a wait ending at now spent spinning. */
static __always_inline __u64 spin_total(const struct wait_slot *w, __u64 now)
{
	return w->spin_ns + (w->spin_from ? now - w->spin_from : 0);
}

#endif /* __KLOCKSTAT_SPIN_BPF_H__ */
