/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The filters of --pid, --comm, --cgroup and --scope command, and the
 * capture's own process, which is never captured. Filters apply to the process: its tgid, and its
 * main thread's name; and to the thread's cgroup. Set by the loader before
 * load: a filter not asked for costs nothing once the verifier has seen its
 * flag.
 */
#ifndef __KLOCKSTAT_FILTER_BPF_H__
#define __KLOCKSTAT_FILTER_BPF_H__

#include "common.bpf.h"
#include "tree.bpf.h"

/* The capture's own process. */
const volatile __u32 self_tgid = 0;
/* --pid: the tgids in pid_filter. */
const volatile bool filter_pids = false;
/* --comm: the process's main thread is named comm_filter. */
const volatile bool filter_comm = false;
const volatile char comm_filter[16] = {};
/* --scope command: the process is in the workload's tree (tree.bpf.h). */
const volatile bool filter_command = false;
/* Entries of cgroup_filter in use: 0, no filter. */
const volatile __u32 cgroup_filters = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1); /* resized to the number of --pid values */
} pid_filter SEC(".maps");

/* The cgroups of --cgroup: a task in one of them or their descendants is
 * captured. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, MAX_CGROUP_FILTERS); /* resized to the number of --cgroup values */
} cgroup_filter SEC(".maps");

static __always_inline bool in_cgroups(void)
{
	for (__u32 i = 0; i < MAX_CGROUP_FILTERS; i++) {
		if (i >= cgroup_filters)
			break;
		if (bpf_current_task_under_cgroup(&cgroup_filter, i) == 1)
			return true;
	}
	return false;
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

/* wanted reports whether the current thread, of process pid, is captured. */
static __always_inline bool wanted(__u32 pid)
{
	if (pid == self_tgid)
		return false;
	if (filter_pids && !bpf_map_lookup_elem(&pid_filter, &pid))
		return false;
	if (filter_command && !in_tree(pid))
		return false;
	if (filter_comm) {
		struct task_struct *task = (void *)bpf_get_current_task();
		char comm[16] = {};

		BPF_CORE_READ_STR_INTO(&comm, task, group_leader, comm);
		if (!comm_equal(comm, comm_filter))
			return false;
	}
	if (cgroup_filters && !in_cgroups())
		return false;
	return true;
}

#endif /* __KLOCKSTAT_FILTER_BPF_H__ */
