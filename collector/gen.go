package collector

//go:generate go tool bpf2go -tags linux -target amd64,arm64 -type wait_key -type wait_stats -type wait_slot -type cpu_waits -type cpu_busy -type path_key -type path -type fn_control -type stack_scratch -type timeline_cell -type owner_key -type owner_stats -type owner_sample_key -type chain_key -type chain_stats -type slab_name lockstat lockstat.bpf.c -- -I./include -Wall -Werror -O2 -g
//go:generate go tool bpf2go -tags linux -target amd64,arm64 -type lock_label -type label_kind names names.bpf.c -- -I./include -Wall -Werror -O2 -g
//go:generate go tool bpf2go -tags linux -target amd64,arm64 -type delay_counters -type delay_limits delay delay.bpf.c -- -I./include -Wall -Werror -O2 -g
