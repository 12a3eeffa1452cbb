// Package collector loads klockstat's eBPF programs, attaches them to the
// kernel's lock contention tracepoints (or, on kernels without them, to the
// lock functions of locks.json), and turns what they aggregated in kernel
// maps into a capture.Capture: records with symbolized stacks, per-type
// histograms, and the capture's health (events, losses, probe cost).
package collector
