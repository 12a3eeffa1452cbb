package collector

import (
	"testing"
	"time"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/internal/testenv"
)

// TestTimelineAddsUpToRecords captures real contention in windows of several lengths and checks that
// the timeline counts every recorded wait that ended, in at least 100 buckets that widened to cover
// the window.
func TestTimelineAddsUpToRecords(t *testing.T) {
	testenv.RequireRoot(t)
	for _, length := range []string{"300ms", "1500ms"} {
		t.Run(length, func(t *testing.T) {
			// Captured again, up to three times, when no wait was recorded: two vCPUs emulated
			// on one host thread (the kernel matrix) may go through 300 ms without one.
			var cp *capture.Capture
			for round := 0; round < 3 && (cp == nil || cp.Meta.Events.Waits == 0); round++ {
				cp = capture1(t, defaultConfig(t), func() {
					waitContend(t, startContend(t, "-lock", "mmap,pipe", "-threads", "4", "-duration", length))
				})
			}
			tl := cp.Timeline
			if tl == nil {
				t.Fatal("no timeline")
			}
			buckets := uint64(tl.Buckets())
			if buckets < 100 || buckets > timelineBuckets || tl.BucketNS*buckets < uint64(cp.Meta.DurationNS) {
				t.Errorf("%d buckets of %d ns for a window of %d ns", buckets, tl.BucketNS, cp.Meta.DurationNS)
			}
			if tl.BucketNS <= 1<<timelineFirstShift {
				t.Errorf("buckets of %d ns after %v: they did not widen", tl.BucketNS, cp.Meta.Duration())
			}
			ended := map[string]uint64{}
			endedNS := map[string]uint64{}
			open := map[string]bool{}
			for _, r := range cp.Records {
				ended[r.Type] += r.Count - r.InProgress
				endedNS[r.Type] += r.TotalNS
				open[r.Type] = open[r.Type] || r.InProgress > 0
			}
			var waits uint64
			for _, s := range tl.Series {
				var n, ns uint64
				for b := range s.Count {
					n += s.Count[b]
					ns += s.TotalNS[b]
				}
				if n != ended[s.Type] {
					t.Errorf("%s: the timeline counts %d waits, the records %d that ended", s.Type, n, ended[s.Type])
				}
				// A wait in progress at the end is charged in its record only.
				if !open[s.Type] && ns != endedNS[s.Type] {
					t.Errorf("%s: the timeline counts %d ns of wait, the records %d", s.Type, ns, endedNS[s.Type])
				}
				waits += n
				delete(ended, s.Type)
			}
			for typ, n := range ended {
				if n > 0 {
					t.Errorf("%s: %d waits ended, no series in the timeline", typ, n)
				}
			}
			if waits == 0 || waits != cp.Meta.Events.Waits-cp.Meta.Events.InProgress {
				t.Errorf("the timeline counts %d waits, the capture %d recorded of which %d in progress", waits, cp.Meta.Events.Waits, cp.Meta.Events.InProgress)
			}
			t.Logf("%d waits in %d buckets of %v", waits, buckets, time.Duration(tl.BucketNS))
		})
	}
}
