package report

import (
	"strings"
	"testing"

	"github.com/klockstat/klockstat/capture"
)

func TestHighlightsNamedShare(t *testing.T) {
	c := &capture.Capture{Records: []capture.Record{
		{Type: "rwsem:W", Lock: 1, Name: "&ext4_inode_cache", TID: 1, Count: 1, TotalNS: 25, MinNS: 25, MaxNS: 25},
		{Type: "spinlock", Lock: 2, TID: 2, Count: 3, TotalNS: 75, MinNS: 25, MaxNS: 25},
	}}
	for _, h := range highlights(c, nil, nil) {
		if h.Label == "Contended locks" {
			if !strings.Contains(h.Detail, "25.0% of the wait time on locks with a name") {
				t.Errorf("contended locks: %q does not give the named share of the wait time", h.Detail)
			}
			return
		}
	}
	t.Error("no Contended locks highlight")
}
