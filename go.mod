module github.com/klockstat/klockstat

go 1.26.8

require (
	github.com/cilium/ebpf v0.22.0
	github.com/spf13/pflag v1.0.10
	golang.org/x/sys v0.49.0
)

tool github.com/cilium/ebpf/cmd/bpf2go
