module github.com/klockstat/klockstat

go 1.26.8

require (
	github.com/chromedp/cdproto v0.159.0
	github.com/chromedp/chromedp v0.23.0
	github.com/cilium/ebpf v0.22.0
	github.com/go-echarts/go-echarts/v2 v2.6.7
	github.com/google/pprof v0.0.0-20261016150608-1facf8f91b50
	github.com/spf13/pflag v1.0.10
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.49.0
)

require github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875

tool github.com/cilium/ebpf/cmd/bpf2go
