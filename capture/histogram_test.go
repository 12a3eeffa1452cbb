package capture

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func bucketWidth(v uint64) uint64 {
	lo, hi := BucketBounds(BucketIndex(v))
	return hi - lo
}

// contains reports whether bucket i holds v; the last bucket's hi saturates and is inclusive.
func contains(i int, v uint64) bool {
	lo, hi := BucketBounds(i)
	return lo <= v && (v < hi || i == NumBuckets-1)
}

func TestBucketIndexByHand(t *testing.T) {
	for _, tc := range []struct {
		ns     uint64
		index  int
		lo, hi uint64
	}{
		{0, 0, 0, 1},
		{15, 15, 15, 16},
		{16, 16, 16, 17},
		{31, 31, 31, 32},
		{32, 32, 32, 34}, // from 32 on, buckets are 2 wide
		{33, 32, 32, 34},
		{34, 33, 34, 36},
		{1000, 111, 992, 1024}, // m=9: (9-3)*16 + (1000>>5)&15 = 96 + 15
		{math.MaxUint64, NumBuckets - 1, 31 << 59, math.MaxUint64},
	} {
		if got := BucketIndex(tc.ns); got != tc.index {
			t.Errorf("BucketIndex(%d) = %d, want %d", tc.ns, got, tc.index)
		}
		if lo, hi := BucketBounds(tc.index); lo != tc.lo || hi != tc.hi {
			t.Errorf("BucketBounds(%d) = [%d, %d), want [%d, %d)", tc.index, lo, hi, tc.lo, tc.hi)
		}
	}
	if NumBuckets != 976 {
		t.Errorf("NumBuckets = %d, the BPF side uses 976", NumBuckets)
	}
}

func TestBucketPowersOfTwo(t *testing.T) {
	for k := range 64 {
		v := uint64(1) << k
		i := BucketIndex(v)
		for _, w := range []uint64{v - 1, v, v + 1} {
			if !contains(BucketIndex(w), w) {
				lo, hi := BucketBounds(BucketIndex(w))
				t.Errorf("value %d is outside its bucket %d [%d, %d)", w, BucketIndex(w), lo, hi)
			}
		}
		if v >= 16 {
			// A power of two starts a bucket, right after the bucket of v-1.
			if lo, _ := BucketBounds(i); lo != v {
				t.Errorf("bucket of 2^%d starts at %d", k, lo)
			}
			if prev := BucketIndex(v - 1); prev != i-1 {
				t.Errorf("BucketIndex(2^%d-1) = %d, want %d", k, prev, i-1)
			}
		}
	}
}

func TestBucketBoundsContinuous(t *testing.T) {
	if lo, _ := BucketBounds(0); lo != 0 {
		t.Errorf("first bucket starts at %d", lo)
	}
	if _, hi := BucketBounds(NumBuckets - 1); hi != math.MaxUint64 {
		t.Errorf("last bucket ends at %d", hi)
	}
	for i := range NumBuckets {
		lo, hi := BucketBounds(i)
		if BucketIndex(lo) != i || BucketIndex(hi-1) != i {
			t.Errorf("bucket %d [%d, %d): its ends map to buckets %d and %d", i, lo, hi, BucketIndex(lo), BucketIndex(hi-1))
		}
		if width := hi - lo; width > max(1, lo/16) {
			t.Errorf("bucket %d [%d, %d) is wider than 1/16 of its lower bound", i, lo, hi)
		}
		if i+1 < NumBuckets {
			if next, _ := BucketBounds(i + 1); next != hi {
				t.Errorf("bucket %d ends at %d, bucket %d starts at %d", i, hi, i+1, next)
			}
		}
	}
}

func TestBucketIndexMonotone(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	values := make([]uint64, 100000)
	for i := range values {
		values[i] = rng.Uint64() >> rng.IntN(64) // spread over all magnitudes
	}
	slices.Sort(values)
	for i, v := range values {
		if !contains(BucketIndex(v), v) {
			t.Fatalf("value %d is outside its bucket %d", v, BucketIndex(v))
		}
		if i > 0 && BucketIndex(v) < BucketIndex(values[i-1]) {
			t.Fatalf("BucketIndex(%d) = %d < BucketIndex(%d) = %d", v, BucketIndex(v), values[i-1], BucketIndex(values[i-1]))
		}
	}
}

// distributions are the wait-time shapes the estimates are checked against.
var distributions = []struct {
	name string
	n    int
	draw func(*rand.Rand) uint64
}{
	{"uniform", 10000, func(r *rand.Rand) uint64 { return r.Uint64N(1_000_000) }},
	{"exponential", 10000, func(r *rand.Rand) uint64 { return uint64(r.ExpFloat64() * 50_000) }},
	{"lognormal", 20000, func(r *rand.Rand) uint64 { return uint64(math.Exp(r.NormFloat64()*2) * 10_000) }},
	{"bimodal", 5000, func(r *rand.Rand) uint64 {
		if r.IntN(10) < 9 {
			return 100 + r.Uint64N(50)
		}
		return 10_000_000 + r.Uint64N(1_000_000)
	}},
	{"small integers", 1000, func(r *rand.Rand) uint64 { return r.Uint64N(20) }},
	{"constant", 100, func(*rand.Rand) uint64 { return 123_456 }},
	{"single", 1, func(*rand.Rand) uint64 { return 777 }},
	{"few", 7, func(r *rand.Rand) uint64 { return r.Uint64N(1 << 40) }},
	{"huge", 1000, func(r *rand.Rand) uint64 { return math.MaxUint64 - r.Uint64N(1<<62) }},
}

// sample draws n values and returns them sorted, with the histogram built from them.
func sample(t *testing.T, n int, draw func(*rand.Rand) uint64) ([]uint64, Histogram) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	values := make([]uint64, n)
	h := Histogram{Type: "spinlock"}
	for i := range values {
		values[i] = draw(rng)
		h.Add(values[i])
	}
	slices.Sort(values)
	return values, h
}

// nearestRank is the exact p-th percentile of sorted values, p an integer in [1, 100].
func nearestRank(sorted []uint64, p int) uint64 {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[rank-1]
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

func TestPercentile(t *testing.T) {
	for _, d := range distributions {
		t.Run(d.name, func(t *testing.T) {
			values, h := sample(t, d.n, d.draw)
			for _, p := range []int{1, 25, 50, 75, 90, 95, 99, 100} {
				exact := nearestRank(values, p)
				got := h.Percentile(float64(p))
				if diff := absDiff(got, exact); diff > bucketWidth(exact) {
					t.Errorf("p%d = %d, exact %d: off by %d, more than the bucket width %d", p, got, exact, diff, bucketWidth(exact))
				}
			}
			if got := h.Percentile(0); got != values[0] {
				t.Errorf("p0 = %d, want the minimum %d", got, values[0])
			}
			if got := h.Percentile(100); got != values[len(values)-1] {
				t.Errorf("p100 = %d, want the maximum %d", got, values[len(values)-1])
			}
		})
	}
}

func TestPercentileEmpty(t *testing.T) {
	var h Histogram
	for _, p := range []float64{0, 50, 100, math.NaN()} {
		if got := h.Percentile(p); got != 0 {
			t.Errorf("empty histogram: Percentile(%v) = %d, want 0", p, got)
		}
	}
}

// exactMAD is the median of the distances from the median, both by nearest rank.
func exactMAD(sorted []uint64) (median, mad uint64) {
	median = nearestRank(sorted, 50)
	devs := make([]uint64, len(sorted))
	for i, v := range sorted {
		devs[i] = absDiff(v, median)
	}
	slices.Sort(devs)
	return median, nearestRank(devs, 50)
}

func TestStats(t *testing.T) {
	for _, d := range distributions {
		t.Run(d.name, func(t *testing.T) {
			values, h := sample(t, d.n, d.draw)
			s := h.Stats()

			var total uint64
			for _, v := range values {
				total += v
			}
			if s.Count != uint64(len(values)) || s.TotalNS != total || s.MinNS != values[0] || s.MaxNS != values[len(values)-1] {
				t.Errorf("Stats() count, total, min, max = %d, %d, %d, %d; want %d, %d, %d, %d",
					s.Count, s.TotalNS, s.MinNS, s.MaxNS, len(values), total, values[0], values[len(values)-1])
			}
			if want := float64(total) / float64(len(values)); s.MeanNS != want {
				t.Errorf("MeanNS = %v, want %v", s.MeanNS, want)
			}
			for p, got := range map[int]uint64{25: s.P25, 50: s.P50, 75: s.P75, 90: s.P90, 95: s.P95, 99: s.P99} {
				if want := h.Percentile(float64(p)); got != want {
					t.Errorf("Stats().P%d = %d, Percentile(%d) = %d", p, got, p, want)
				}
			}

			median, mad := exactMAD(values)
			// Each sample counts as its bucket's centre (off by half a bucket) and the median estimate
			// is off by less than the median's bucket; the samples that decide the MAD lie within
			// median ± MAD, whose widest bucket is the one of median+MAD.
			tolerance := bucketWidth(median+mad)/2 + bucketWidth(median) + 1
			if median+mad < median { // wrapped: the widest bucket is the last one
				tolerance = bucketWidth(math.MaxUint64)/2 + bucketWidth(median) + 1
			}
			if diff := absDiff(s.MADNS, mad); diff > tolerance {
				t.Errorf("MADNS = %d, exact %d: off by %d, tolerance %d", s.MADNS, mad, diff, tolerance)
			}
		})
	}
}

func TestNewHistogram(t *testing.T) {
	values, added := sample(t, 5000, distributions[2].draw)
	counts := make([]uint64, NumBuckets)
	for _, v := range values {
		counts[BucketIndex(v)]++
	}
	h := NewHistogram("spinlock", counts)
	if !reflect.DeepEqual(h.Buckets, added.Buckets) || h.Count != added.Count || h.Type != "spinlock" || h.SubBucketBits != SubBucketBits {
		t.Fatalf("NewHistogram from dense counts differs from adding the samples:\n%+v\n%+v", h, added)
	}
	// Without the exact values, min and max are the outer bucket ends around the true ones.
	if !contains(BucketIndex(h.MinNS), values[0]) || h.MinNS > values[0] {
		t.Errorf("estimated MinNS %d, true %d", h.MinNS, values[0])
	}
	if !contains(BucketIndex(h.MaxNS), values[len(values)-1]) || h.MaxNS < values[len(values)-1] {
		t.Errorf("estimated MaxNS %d, true %d", h.MaxNS, values[len(values)-1])
	}
	if err := h.validate(); err != nil {
		t.Errorf("NewHistogram result does not validate: %v", err)
	}

	empty := NewHistogram("mutex", nil)
	if empty.Count != 0 || len(empty.Buckets) != 0 || empty.validate() != nil {
		t.Errorf("NewHistogram with no counts = %+v", empty)
	}
}

func TestMergeHistograms(t *testing.T) {
	values, all := sample(t, 3000, distributions[1].draw)
	a := Histogram{Type: all.Type}
	b := Histogram{Type: all.Type}
	for i, v := range values {
		if i%3 == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
	}
	got, err := MergeHistograms(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, all) {
		t.Errorf("merged halves differ from the whole:\n%+v\n%+v", got, all)
	}

	empty := Histogram{Type: all.Type, SubBucketBits: SubBucketBits}
	for _, pair := range [][2]Histogram{{empty, all}, {all, empty}} {
		got, err := MergeHistograms(pair[0], pair[1])
		if err != nil {
			t.Fatal(err)
		}
		if got.Count != all.Count || got.MinNS != all.MinNS || got.MaxNS != all.MaxNS || !reflect.DeepEqual(got.Buckets, all.Buckets) {
			t.Errorf("merging with an empty histogram changed it: %+v", got)
		}
	}

	other := all
	other.Type = "mutex"
	if _, err := MergeHistograms(all, other); err == nil {
		t.Error("merging different lock types: no error")
	}
	oldLayout := all
	oldLayout.SubBucketBits = 3
	if _, err := MergeHistograms(all, oldLayout); err == nil {
		t.Error("merging different layouts: no error")
	}
}
