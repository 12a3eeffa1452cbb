//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * Names for the locks a capture saw, found once, at its end, off the hot
 * path: user space fills `labels` with the lock addresses left unnamed and
 * runs two iterators over the kernel's own objects.
 *
 *  - name_task_locks walks every task: a lock that is some process's
 *    mmap_lock or siglock is named after that process, and one that is the
 *    lock of the runqueue a task's scheduling entity is queued on
 *    (se.cfs_rq->rq, CONFIG_FAIR_GROUP_SCHED) is rq_lock. Every CPU has
 *    tasks of its own (its kernel threads), so every runqueue is seen. The
 *    per-CPU `runqueues` itself cannot be reached: a __ksym needs the
 *    kernel's kallsyms to list it, which they do only with
 *    CONFIG_KALLSYMS_ALL.
 *  - name_other_locks walks `labels`: a lock inside a slab object is named
 *    after its cache (bpf_get_kmem_cache, Linux 6.13+).
 *
 * The objects are looked up when the capture ends: a lock freed before
 * then is not found, or its memory may by then hold another object.
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

struct bpf_iter__bpf_map_elem {
	struct bpf_iter_meta *meta;
	void *key;
	void *value;
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

struct kmem_cache {
	const char *name;
} __attribute__((preserve_access_index));

extern struct kmem_cache *bpf_get_kmem_cache(__u64 addr) __ksym __weak;

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
	return 0;
}

SEC("iter/bpf_map_elem")
int name_other_locks(struct bpf_iter__bpf_map_elem *ctx)
{
	__u64 *key = ctx->key;
	struct lock_label *l = ctx->value;
	struct kmem_cache *cache;

	if (!key || !l || l->kind != LABEL_NONE)
		return 0;
	if (!bpf_get_kmem_cache)
		return 0;
	cache = bpf_get_kmem_cache(*key);
	if (cache) {
		l->kind = LABEL_SLAB;
		bpf_probe_read_kernel_str(l->text, sizeof(l->text), BPF_CORE_READ(cache, name));
	}
	return 0;
}
