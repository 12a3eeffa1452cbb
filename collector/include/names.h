/* SPDX-License-Identifier: GPL-2.0 */
/* The lock names names.bpf.c finds, shared with the Go loader (bpf2go -type). */
#ifndef __KLOCKSTAT_NAMES_H__
#define __KLOCKSTAT_NAMES_H__

#include "vmlinux.h"

enum label_kind {
	LABEL_NONE = 0,
	LABEL_MMAP = 1,    /* a process's mm->mmap_lock; id: tgid, text: comm */
	LABEL_SIGHAND = 2, /* a process's sighand->siglock; id: tgid, text: comm */
	LABEL_RQ = 3,      /* a CPU's runqueue lock; id: CPU */
	LABEL_ZONE = 5,    /* a memory zone's lock; id: NUMA node, text: the zone's name */
	LABEL_LRU = 6,     /* a node's LRU lock (of a memory cgroup, or of the node); id: NUMA node */
};

struct lock_label {
	enum label_kind kind;
	__u32 id;
	char text[32];
};

#endif /* __KLOCKSTAT_NAMES_H__ */
