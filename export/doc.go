// Package export writes a capture in the formats other tools read: pprof's profile.proto (go tool
// pprof, Pyroscope, Parca), folded stacks (flamegraph.pl, inferno, speedscope) and CSV (spreadsheets).
//
// Every writer takes the records the capture has (filtering them is the caller's choice, made on the
// capture) and, given a capture.AddressHasher, writes kernel addresses as its ids, the way the HTML
// report shows them: lock addresses, and the stack frames and callers kallsyms could not name. Records without waits (holds only,
// from the function-probe backends) are left out, so every format's wait times add up to the same
// total, the sum of the records' TotalNS.
package export
