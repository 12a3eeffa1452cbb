// Package export writes a capture in the formats other tools read: pprof's profile.proto (go tool
// pprof, Pyroscope, Parca), folded stacks (flamegraph.pl, inferno, speedscope) and CSV (spreadsheets).
//
// Every writer takes the analysis of a capture (Analysis: report.Analysis) that the summary and the
// HTML report of the same run render from: its records (filtering them is the caller's choice, made
// on the analysis) and its kernel addresses written as it shows them, lock addresses and the stack
// frames and callers kallsyms could not name as the page's ids. Records without waits (holds only,
// from the function-probe backends) are left out, so every format's wait times add up to the same
// total, the sum of the records' TotalNS.
package export
