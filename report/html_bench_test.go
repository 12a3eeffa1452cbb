package report

import (
	"fmt"
	"testing"
)

// countingWriter counts what is written to it, so the benchmark measures rendering, not a buffer.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

func BenchmarkWriteHTML(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		c := syntheticCapture(n)
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var w countingWriter
			for b.Loop() {
				w.n = 0
				if err := WriteHTML(&w, c, HTMLOptions{Top: defaultTop}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(w.n)/1e6, "MB/report")
		})
	}
}
