package export

import "github.com/klockstat/klockstat/capture"

// Analysis is what an export takes of a capture's analysis (report.Analysis, which the summary and
// the page of the same run render from): the records to write, and what the analysis computed once
// for every view of them, so that an export names a lock by the id the page and the summary name it
// by and no export hashes or filters again what another did. It is an interface, not report's type,
// so that the formats do not import the page renderer, and report's tests can write an export.
type Analysis interface {
	// Capture is the capture to write, its records filtered as the analysis shows them.
	Capture() *capture.Capture
	// Addresses are how the analysis shows kernel addresses: as ids of its key, or as captured.
	Addresses() capture.AddressText
	// OwnerStacks are capture.OwnerStacks of the capture.
	OwnerStacks() []capture.Owner
}
