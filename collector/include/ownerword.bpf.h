/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The owner a lock records: a mutex's or an rwsem's owner word, an
 * rtmutex's owner, read by CO-RE wherever the kernel puts them. Read as a
 * wait begins (owner.bpf.h), as an owner is sampled (ownersample.bpf.h), and
 * along a wait chain (ownerchain.bpf.h).
 */
#ifndef __KLOCKSTAT_OWNERWORD_BPF_H__
#define __KLOCKSTAT_OWNERWORD_BPF_H__

#include "common.bpf.h"

/* Flag bits in the low bits of the owner words: MUTEX_FLAGS (3 bits),
 * RWSEM_OWNER_FLAGS_MASK (2), RT_MUTEX_HAS_WAITERS (1). */
#define MUTEX_OWNER_FLAGS 0x7UL
#define RWSEM_READER_OWNED 0x1UL
#define RWSEM_OWNER_FLAGS 0x3UL
#define RT_MUTEX_OWNER_FLAGS 0x1UL

/* owner_word returns the owner word of a lock announced with flags, with
 * its flag bits, and sets *reason when the lock has none. */
static __always_inline __u64 owner_word(__u64 lock, __u32 flags, __u32 *reason)
{
	if (flags & LCB_F_MUTEX) {
		struct mutex *m = (void *)lock;

		/* PREEMPT_RT's mutex and rwsem are rtmutex-based, with no
		 * owner word of their own, and announce their waits as
		 * LCB_F_RT: the guards keep reads CO-RE cannot relocate
		 * there out of the verifier's way. */
		if (!bpf_core_field_exists(m->owner)) {
			*reason = OWNER_NO_FIELD;
			return 0;
		}
		return BPF_CORE_READ(m, owner.counter) & ~MUTEX_OWNER_FLAGS;
	}
	if (flags == LCB_F_READ || flags == LCB_F_WRITE) {
		struct rw_semaphore *sem = (void *)lock;
		__u64 w;

		if (!bpf_core_field_exists(sem->owner)) {
			*reason = OWNER_NO_FIELD;
			return 0;
		}
		w = BPF_CORE_READ(sem, owner.counter);

		if (w & RWSEM_READER_OWNED) {
			/* Readers do not stay in the word: it names the
			 * last one, which may be long gone. */
			*reason = OWNER_READERS;
			return 0;
		}
		return w & ~RWSEM_OWNER_FLAGS;
	}
	if (flags == LCB_F_RT) {
		if (bpf_core_type_exists(struct rt_mutex_base)) {
			struct rt_mutex_base *rt = (void *)lock;

			return (__u64)BPF_CORE_READ(rt, owner) & ~RT_MUTEX_OWNER_FLAGS;
		}
		struct rt_mutex___pre515 *old = (void *)lock;

		return (__u64)BPF_CORE_READ(old, owner) & ~RT_MUTEX_OWNER_FLAGS;
	}
	*reason = OWNER_NO_FIELD;
	return 0;
}

#endif /* __KLOCKSTAT_OWNERWORD_BPF_H__ */
