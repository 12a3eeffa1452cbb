/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every header of lockstat.bpf.c builds on: the kernel types, libbpf's
 * helpers, the map keys and values shared with Go (lockstat.h), and the
 * kernel constants the programs compare with.
 */
#ifndef __KLOCKSTAT_COMMON_BPF_H__
#define __KLOCKSTAT_COMMON_BPF_H__

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "lockstat.h"

/* contention_begin flags, include/trace/events/lock.h */
#define LCB_F_SPIN (1U << 0)
#define LCB_F_READ (1U << 1)
#define LCB_F_WRITE (1U << 2)
#define LCB_F_RT (1U << 3)
#define LCB_F_PERCPU (1U << 4)
#define LCB_F_MUTEX (1U << 5)

/* Map helpers return an int zero-extended to 64 bits before Linux 6.4:
 * keep their results in an int to compare them with negative errnos. */
#define EEXIST 17

#endif /* __KLOCKSTAT_COMMON_BPF_H__ */
