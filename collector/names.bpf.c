//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * Names for the locks a capture saw that only the kernel's objects at the
 * end of the capture can give, found once, off the hot path: user space
 * fills `labels` with the lock addresses left unnamed and runs
 * name_task_locks over every task.
 *
 *  - A lock that is some process's mmap_lock or siglock is named after that
 *    process, and one that is the lock of the runqueue a task's scheduling
 *    entity is queued on (se.cfs_rq->rq, CONFIG_FAIR_GROUP_SCHED) is
 *    rq_lock. Every CPU has tasks of its own (its kernel threads), so every
 *    runqueue is seen. The per-CPU `runqueues` itself cannot be reached: a
 *    __ksym needs the kernel's kallsyms to list it, which they do only with
 *    CONFIG_KALLSYMS_ALL. For the same reason the memory nodes (node_data,
 *    contig_page_data) are reached from the tasks' memory cgroups instead: a
 *    task's memcg has an LRU vector per node, whose lru_lock is a lock of its
 *    own and which points to its node, whose zones' locks are zone_lock.
 *
 * Locks inside slab objects are named by the tracing programs as their first
 * record is made (slabname.bpf.h), while the object is alive. Iterating the
 * labels map to name them here would also need an iterator over a map's
 * elements, which hardened kernels refuse.
 *
 * The objects are looked up when the capture ends: a process or memory
 * cgroup gone by then is not found.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "names.h"
#include "rwbase.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64); /* lock address */
	__type(value, struct lock_label);
	__uint(max_entries, 1); /* sized by the loader */
} labels SEC(".maps");

struct bpf_iter_meta {
	__u64 seq_num;
} __attribute__((preserve_access_index));

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

struct cfs_rq;

struct sched_entity {
	struct cfs_rq *cfs_rq;
} __attribute__((preserve_access_index));

struct task_struct___names {
	int tgid;
	struct sched_entity se;
} __attribute__((preserve_access_index));

struct raw_spinlock {
	int raw_lock;
} __attribute__((preserve_access_index));

struct rq {
	struct raw_spinlock __lock;
	int cpu;
} __attribute__((preserve_access_index));

struct cfs_rq {
	struct rq *rq;
} __attribute__((preserve_access_index));

/* Before Linux 5.14 the runqueue lock was rq->lock. */
struct rq___pre514 {
	struct raw_spinlock lock;
} __attribute__((preserve_access_index));

/* The memory nodes, as the memory cgroups reach them (CONFIG_MEMCG). */
struct cgroup_subsys_state;

struct css_set {
	struct cgroup_subsys_state *subsys[0];
} __attribute__((preserve_access_index));

struct task_struct___memcg {
	struct css_set *cgroups;
} __attribute__((preserve_access_index));

enum cgroup_subsys_id {
	memory_cgrp_id = 4,
};

struct zone {
	struct spinlock lock;
	const char *name;
} __attribute__((preserve_access_index));

struct pglist_data {
	struct zone node_zones[0];
	int node_id;
} __attribute__((preserve_access_index));

struct lruvec {
	struct spinlock lru_lock;
	struct pglist_data *pgdat;
} __attribute__((preserve_access_index));

/* Before Linux 5.11 the LRU lock was the node's. */
struct pglist_data___pre511 {
	struct spinlock lru_lock;
} __attribute__((preserve_access_index));

struct mem_cgroup_per_node {
	struct lruvec lruvec;
} __attribute__((preserve_access_index));

struct mem_cgroup {
	struct mem_cgroup_per_node *nodeinfo[0];
} __attribute__((preserve_access_index));

/* Nodes and zones looked at: more than any machine klockstat runs on has
 * (MAX_NUMNODES is 1024 at most, but nodeinfo[] ends at nr_node_ids, which
 * the loop finds as the first entry that is not a node of its index). */
#define MAX_NODES 64
#define MAX_ZONES 8

/* Whether the zones' locks were labelled: once is enough. */
bool zones_labelled = false;

/* The value of a pointer, as a number to compare lock addresses with. */
static __always_inline __u64 address(const void *p)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), &p);
	return v;
}

static __always_inline void label_owner(__u64 lock, __u32 kind, struct task_struct *task)
{
	struct lock_label *l = bpf_map_lookup_elem(&labels, &lock);

	if (!l || l->kind != LABEL_NONE)
		return;
	l->kind = kind;
	l->id = BPF_CORE_READ((struct task_struct___names *)task, tgid);
	BPF_CORE_READ_STR_INTO(&l->text, task, group_leader, comm);
}

/* label_runqueue names the lock of the runqueue the task is queued on. */
static __always_inline void label_runqueue(struct task_struct *task)
{
	struct task_struct___names *t = (void *)task;
	struct lock_label *l;
	struct rq *rq;
	__u64 lock;

	if (!bpf_core_field_exists(((struct cfs_rq *)0)->rq))
		return; /* no CONFIG_FAIR_GROUP_SCHED */
	rq = BPF_CORE_READ(t, se.cfs_rq, rq);
	if (!rq)
		return;
	if (bpf_core_field_exists(rq->__lock))
		lock = address(rq) + bpf_core_field_offset(struct rq, __lock);
	else
		lock = address(rq) + bpf_core_field_offset(struct rq___pre514, lock);
	l = bpf_map_lookup_elem(&labels, &lock);
	if (!l || l->kind != LABEL_NONE)
		return;
	l->kind = LABEL_RQ;
	l->id = BPF_CORE_READ(rq, cpu);
}

static __always_inline void label_node_lock(__u64 lock, __u32 kind, __u32 node, const char *text)
{
	struct lock_label *l = bpf_map_lookup_elem(&labels, &lock);

	if (!l || l->kind != LABEL_NONE)
		return;
	l->kind = kind;
	l->id = node;
	if (text)
		bpf_probe_read_kernel_str(l->text, sizeof(l->text), text);
}

/* label_zones names the locks of a node's zones. */
static __always_inline void label_zones(struct pglist_data *pgdat, __u32 node)
{
	__u32 size = bpf_core_type_size(struct zone);
	__u32 n = bpf_core_field_size(pgdat->node_zones) / (size ? size : 1);
	__u64 zones = address(pgdat) + bpf_core_field_offset(struct pglist_data, node_zones);

	for (__u32 z = 0; z < MAX_ZONES && z < n; z++) {
		struct zone *zone = (void *)(zones + z * size);

		label_node_lock(address(zone) + bpf_core_field_offset(struct zone, lock), LABEL_ZONE, node,
				BPF_CORE_READ(zone, name));
	}
}

/* label_memory_nodes names the LRU locks of the task's memory cgroup, one
 * per node, and, once, the zone locks of every node. */
static __always_inline void label_memory_nodes(struct task_struct *task)
{
	struct task_struct___memcg *t = (void *)task;
	struct cgroup_subsys_state *css;
	__u64 nodeinfo;
	int memory;

	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id) ||
	    !bpf_core_type_exists(struct mem_cgroup_per_node))
		return; /* no CONFIG_MEMCG */
	memory = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	if (memory < 0 || memory >= 32)
		return;
	css = BPF_CORE_READ(t, cgroups, subsys[memory & 31]);
	if (!css)
		return;
	/* The css is the memcg's first member. */
	nodeinfo = address(css) + bpf_core_field_offset(struct mem_cgroup, nodeinfo);
	for (__u32 node = 0; node < MAX_NODES; node++) {
		struct mem_cgroup_per_node *pn = NULL;
		struct pglist_data *pgdat;
		struct lruvec *lruvec;

		bpf_probe_read_kernel(&pn, sizeof(pn), (void *)(nodeinfo + node * sizeof(pn)));
		if (!pn)
			break;
		lruvec = (void *)(address(pn) + bpf_core_field_offset(struct mem_cgroup_per_node, lruvec));
		pgdat = BPF_CORE_READ(lruvec, pgdat);
		if (!pgdat || BPF_CORE_READ(pgdat, node_id) != node)
			break; /* past nr_node_ids */
		if (bpf_core_field_exists(lruvec->lru_lock))
			label_node_lock(address(lruvec) + bpf_core_field_offset(struct lruvec, lru_lock), LABEL_LRU, node, NULL);
		else
			label_node_lock(address(pgdat) + bpf_core_field_offset(struct pglist_data___pre511, lru_lock), LABEL_LRU, node, NULL);
		if (!zones_labelled)
			label_zones(pgdat, node);
	}
	zones_labelled = true;
}

SEC("iter/task")
int name_task_locks(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct mm_struct *mm;
	struct sighand_struct *sighand;

	if (!task)
		return 0;
	mm = BPF_CORE_READ(task, mm);
	if (mm) {
		__u64 lock;

		if (bpf_core_field_exists(mm->mmap_lock))
			lock = address(mm) + bpf_core_field_offset(struct mm_struct, mmap_lock);
		else
			lock = address(mm) + bpf_core_field_offset(struct mm_struct___pre58, mmap_sem);
		label_owner(lock, LABEL_MMAP, task);
		if (rwbase_inner())
			label_owner(lock + rwbase_inner(), LABEL_MMAP, task);
	}
	sighand = BPF_CORE_READ(task, sighand);
	if (sighand)
		label_owner(address(sighand) + bpf_core_field_offset(struct sighand_struct, siglock), LABEL_SIGHAND, task);
	label_runqueue(task);
	label_memory_nodes(task);
	return 0;
}
