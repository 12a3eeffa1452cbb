//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/*
 * The cheapest possible probe on the contention tracepoints: the benchmark's
 * floor for what attaching anything there costs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("raw_tp/contention_begin")
int empty_begin(void *ctx)
{
	return 0;
}

SEC("raw_tp/contention_end")
int empty_end(void *ctx)
{
	return 0;
}
