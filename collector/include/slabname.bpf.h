/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Slab names: a lock inside a slab object is named after its cache the first
 * time a record of its address is made, while the object is alive, as perf
 * lock contention does. Naming at the end of the capture would miss the
 * objects freed by then, or name whatever took their memory. Only new
 * records look (record.bpf.h), so the steady-state path pays nothing.
 *
 * bpf_get_kmem_cache is Linux 6.13's; where the kernel lacks it the loader
 * removes the call and the branch that guards it, and nothing is named here.
 */
#ifndef __KLOCKSTAT_SLABNAME_BPF_H__
#define __KLOCKSTAT_SLABNAME_BPF_H__

#include "common.bpf.h"
#include "counters.bpf.h"

struct kmem_cache {
	const char *name;
} __attribute__((preserve_access_index));

extern struct kmem_cache *bpf_get_kmem_cache(__u64 addr) __ksym __weak;

/* Lock address -> its slab cache's name; addresses outside slab objects are
 * not stored. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct slab_name);
	__uint(max_entries, 1); /* sized by the loader */
} slab_names SEC(".maps");

static __always_inline void name_slab(__u64 lock)
{
	struct slab_name name = {};
	struct kmem_cache *cache;
	int err;

	if (!bpf_get_kmem_cache)
		return;
	if (bpf_map_lookup_elem(&slab_names, &lock))
		return;
	cache = bpf_get_kmem_cache(lock);
	if (!cache)
		return;
	bpf_probe_read_kernel_str(name.cache, sizeof(name.cache), BPF_CORE_READ(cache, name));
	err = bpf_map_update_elem(&slab_names, &lock, &name, BPF_NOEXIST);
	if (err && err != -EEXIST)
		count(CNT_LOST_SLAB_NAME, 1);
}

#endif /* __KLOCKSTAT_SLABNAME_BPF_H__ */
