package capture

import (
	"errors"
	"fmt"
)

// Timeline says when in the window the waits ended: per lock type, the waits that ended in each
// bucket of the window and their wait time. Bucket i covers [i*BucketNS, (i+1)*BucketNS) from
// Meta.Start. Waits still in progress at the end are in the records, not here.
type Timeline struct {
	BucketNS uint64           `json:"bucket_ns"`
	Series   []TimelineSeries `json:"series"` // one per lock type with waits, in spec order
	// CommandStartNS and CommandEndNS are when the `-- COMMAND` started and exited, from the start of
	// the window; nil without a command, or for an end the window did not see.
	CommandStartNS *int64 `json:"command_start_ns,omitempty"`
	CommandEndNS   *int64 `json:"command_end_ns,omitempty"`
}

// TimelineSeries is the timeline of one lock type; Count and TotalNS have a value per bucket.
type TimelineSeries struct {
	Type    string   `json:"type"`
	Count   []uint64 `json:"count"`
	TotalNS []uint64 `json:"total_ns"`
}

// Buckets is the number of buckets of every series.
func (t *Timeline) Buckets() int {
	if len(t.Series) == 0 {
		return 0
	}
	return len(t.Series[0].Count)
}

// Waits is the number of waits the timeline counts, of all types.
func (t *Timeline) Waits() uint64 {
	var n uint64
	for _, s := range t.Series {
		for _, c := range s.Count {
			n, _ = AddSaturating(n, c)
		}
	}
	return n
}

func (t *Timeline) validate() error {
	if t.BucketNS == 0 {
		return errors.New("bucket_ns is 0")
	}
	types := map[string]bool{}
	for i, s := range t.Series {
		if types[s.Type] {
			return fmt.Errorf("series %d: second series of lock type %q", i, s.Type)
		}
		types[s.Type] = true
		if len(s.Count) != len(s.TotalNS) || len(s.Count) != t.Buckets() {
			return fmt.Errorf("series %d (%q): %d counts and %d totals, want %d of each", i, s.Type, len(s.Count), len(s.TotalNS), t.Buckets())
		}
		for k, c := range s.Count {
			if c == 0 && s.TotalNS[k] != 0 {
				return fmt.Errorf("series %d (%q), bucket %d: %d ns of wait in no wait", i, s.Type, k, s.TotalNS[k])
			}
		}
	}
	return nil
}
