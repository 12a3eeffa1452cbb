/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The workload's process tree (klockstat -- COMMAND): the tgids of the
 * processes the command and its descendants forked during the capture, for
 * --scope command, which captures only them, and for the capture's
 * command_pids, which tell them from the rest under --scope system.
 *
 * The root is the capture's own process (self_tgid, which the filters never
 * capture): klockstat forks the command, so the command's tgid is in the
 * tree before it runs and none of its forks can come first. klockstat starts
 * no other process during a capture of a workload.
 *
 * A process stays in the tree once it exits, marked TREE_EXITED, so that the
 * capture lists every process of the tree; a tgid the kernel hands out again
 * to a process outside the tree is then not taken for the tree's.
 *
 * The tree's threads are counted and timed, for the share of their time
 * spent waiting (klockstat scale): tree_threads holds each live thread's
 * start, and the counters the number started and freed and the sums of their
 * start and free times. User space gets the thread time of any stretch from
 * two readings without walking the map: the integral of the live threads
 * from b to e is L(e)·e − L(b)·b − (starts summed) + (frees summed), exact
 * modulo 2^64. A thread ends at its free, an RCU grace period after its
 * parent reaped it.
 */
#ifndef __KLOCKSTAT_TREE_BPF_H__
#define __KLOCKSTAT_TREE_BPF_H__

#include "common.bpf.h"
#include "counters.bpf.h"

/* A workload runs: the fork and free programs keep command_tree. */
const volatile bool tree_on = false;

#define TREE_LIVE 1
#define TREE_EXITED 2

/* tgid -> TREE_LIVE or TREE_EXITED. Entries are never deleted: a fork-heavy
 * command that fills it loses the processes forked after (CNT_LOST_TREE_FULL),
 * and under --scope command their waits. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1); /* resized by the loader when a workload runs */
} command_tree SEC(".maps");

/* tid -> start, ns, of the tree's live threads. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1); /* resized by the loader when a workload runs */
} tree_threads SEC(".maps");

/* tree_thread_start times thread tid of the tree from now. */
static __always_inline void tree_thread_start(__u32 tid)
{
	__u64 now = bpf_ktime_get_ns();

	if (bpf_map_update_elem(&tree_threads, &tid, &now, BPF_ANY)) {
		count(CNT_LOST_TREE_THREAD, 1);
		return;
	}
	count(CNT_TREE_THREADS, 1);
	count(CNT_TREE_START_NS, now);
}

/* in_tree reports whether process tgid is a live process of the tree. */
static __always_inline bool in_tree(__u32 tgid)
{
	__u8 *v = bpf_map_lookup_elem(&command_tree, &tgid);

	return v && *v == TREE_LIVE;
}

/* tree_fork adds child, a new process forked by process parent, to the tree
 * when parent is root, the capture's own process, or in the tree, and times
 * its thread child_tid. A thread (child == parent) is its process's already:
 * it is timed when its process is in the tree. */
static __always_inline void tree_fork(__u32 parent, __u32 child, __u32 child_tid, __u32 root)
{
	__u8 live = TREE_LIVE;

	if (!tree_on)
		return;
	if (child == parent) {
		if (parent != root && in_tree(parent))
			tree_thread_start(child_tid);
		return;
	}
	if (parent != root && !in_tree(parent))
		return;
	if (bpf_map_update_elem(&command_tree, &child, &live, BPF_ANY)) {
		count(CNT_LOST_TREE_FULL, 1);
		return;
	}
	count(CNT_TREE_PROCESSES, 1);
	tree_thread_start(child_tid);
}

/* tree_free ends the time of thread tid of the tree, and marks a process of
 * the tree exited as its thread tid is freed: the thread whose tid is the
 * tgid, the group leader, is freed last. */
static __always_inline void tree_free(__u32 tid)
{
	__u8 *v;

	if (!tree_on)
		return;
	if (!bpf_map_delete_elem(&tree_threads, &tid)) {
		count(CNT_TREE_ENDED, 1);
		count(CNT_TREE_END_NS, bpf_ktime_get_ns());
	}
	v = bpf_map_lookup_elem(&command_tree, &tid);
	if (v)
		*v = TREE_EXITED;
}

/*
 * The perf-event tracepoint sched:sched_process_fork gives the child's
 * thread id, not its tgid: a new thread of the parent's process has an id
 * of its own. A new thread is the last on its process's thread list
 * (signal->thread_head; copy_process adds it before the tracepoint), so the
 * child is a thread when that last thread is it. Flavours of the kernel's
 * types, for CO-RE: vmlinux.h declares the fields the other programs read.
 */
struct list_head___tree {
	struct list_head___tree *next, *prev;
} __attribute__((preserve_access_index));

struct signal_struct___tree {
	struct list_head___tree thread_head;
} __attribute__((preserve_access_index));

struct task_struct___tree {
	int pid;
	struct signal_struct___tree *signal;
	struct list_head___tree thread_node;
} __attribute__((preserve_access_index));

struct trace_event_raw_sched_process_fork {
	struct trace_entry ent;
	int child_pid;
} __attribute__((preserve_access_index));

/* child_tgid is the tgid of the child of a fork the current task made,
 * whose thread id is child_tid. */
static __always_inline __u32 child_tgid(__u32 child_tid)
{
	struct task_struct___tree *parent = (void *)bpf_get_current_task();
	struct list_head___tree *last = BPF_CORE_READ(parent, signal, thread_head.prev);
	struct task_struct___tree *newest;

	newest = (void *)last - bpf_core_field_offset(struct task_struct___tree, thread_node);
	if (BPF_CORE_READ(newest, pid) == child_tid)
		return bpf_get_current_pid_tgid() >> 32;
	return child_tid;
}

#endif /* __KLOCKSTAT_TREE_BPF_H__ */
