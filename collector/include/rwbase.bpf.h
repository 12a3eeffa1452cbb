/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __KLOCKSTAT_RWBASE_BPF_H__
#define __KLOCKSTAT_RWBASE_BPF_H__

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

/* On PREEMPT_RT an rw_semaphore is a struct rwbase_rt, whose writers first
 * wait for its inner rtmutex (announced with LCB_F_RT, at the rtmutex's
 * address) and then for the readers (at the rwbase_rt's). */
struct rt_mutex_base___klockstat {
	int wait_lock;
} __attribute__((preserve_access_index));

struct rwbase_rt {
	struct rt_mutex_base___klockstat rtmutex;
} __attribute__((preserve_access_index));

/* rwbase_inner returns where an rwbase_rt keeps its rtmutex, 0 on kernels
 * without PREEMPT_RT. */
static __always_inline __u64 rwbase_inner(void)
{
	if (!bpf_core_type_exists(struct rwbase_rt))
		return 0;
	return bpf_core_field_offset(struct rwbase_rt, rtmutex);
}

/* rwbase_part reports whether a wait announced for lock is part of the wait
 * already open for outer: a reader of an rwbase_rt waits for its inner
 * rtmutex inside its wait for the rwbase_rt itself. */
static __always_inline bool rwbase_part(__u64 outer, __u64 lock)
{
	return outer && rwbase_inner() && outer + rwbase_inner() == lock;
}

#endif /* __KLOCKSTAT_RWBASE_BPF_H__ */
