package capture

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// The histogram layout is log-linear: values below 16 get a bucket each, and every power-of-two range
// [2^m, 2^(m+1)) above is split into 16 equal buckets. A bucket is therefore at most 1/16 as wide as
// its lower bound, and an estimate taken inside the right bucket is off by less than one bucket width.
//
// The BPF programs bucket waits with the same arithmetic, which must stay identical bit for bit:
//
//	v < 16:  index = v
//	else:    m = 63 - clz(v);  index = (m-3)*16 + ((v >> (m-4)) & 15)
const (
	SubBucketBits = 4                                     // 16 linear sub-buckets per power of two: relative error <= 1/16
	NumBuckets    = (64 - SubBucketBits + 1) * subBuckets // 976: covers the whole uint64 range

	subBuckets = 1 << SubBucketBits
)

// BucketIndex returns the bucket of a wait of ns nanoseconds: v < 16 -> v, otherwise with
// m = floor(log2(v)) (>= 4): (m-3)*16 + ((v >> (m-4)) & 15).
func BucketIndex(ns uint64) int {
	if ns < subBuckets {
		return int(ns)
	}
	shift := bits.Len64(ns) - 1 - SubBucketBits // m-4
	return (shift+1)*subBuckets + int(ns>>shift&(subBuckets-1))
}

// BucketBounds returns the half-open range [lo, hi) of bucket i, which must be in [0, NumBuckets).
// i < 16 -> [i, i+1); otherwise m = i/16 + 3, s = i%16, lo = (16+s) << (m-4), hi = lo + 1<<(m-4).
// The last bucket's hi saturates at math.MaxUint64, so that bucket also holds math.MaxUint64 itself.
func BucketBounds(i int) (lo, hi uint64) {
	if i < 0 || i >= NumBuckets {
		panic(fmt.Sprintf("capture: bucket index %d out of range [0, %d)", i, NumBuckets))
	}
	if i < subBuckets {
		return uint64(i), uint64(i) + 1
	}
	shift := i/subBuckets - 1 // m-4
	lo = uint64(subBuckets+i%subBuckets) << shift
	width := uint64(1) << shift
	if lo > math.MaxUint64-width {
		return lo, math.MaxUint64
	}
	return lo, lo + width
}

// Bucket is one non-empty histogram bucket: Count waits lasted at least LoNS and less than HiNS.
type Bucket struct {
	LoNS  uint64 `json:"lo_ns"`
	HiNS  uint64 `json:"hi_ns"`
	Count uint64 `json:"count"`
}

// center is the middle of the integer values the bucket holds, so a one-value bucket is exact.
func (b Bucket) center() float64 {
	if b.HiNS <= b.LoNS {
		return float64(b.LoNS)
	}
	return float64(b.LoNS) + float64(b.HiNS-b.LoNS-1)/2
}

// Histogram is the distribution of the waits on one lock type. Count, TotalNS, MinNS and MaxNS are
// exact; the buckets locate every other order statistic to within one bucket width.
type Histogram struct {
	Type          string   `json:"type"`
	SubBucketBits int      `json:"sub_bucket_bits"` // SubBucketBits; Read rejects other layouts
	Count         uint64   `json:"count"`           // exact, = sum of bucket counts
	TotalNS       uint64   `json:"total_ns"`        // exact, from records
	MinNS         uint64   `json:"min_ns"`          // exact
	MaxNS         uint64   `json:"max_ns"`          // exact
	Buckets       []Bucket `json:"buckets"`         // non-empty buckets only, ascending
}

// NewHistogram builds a histogram from dense per-bucket counts as read from BPF: counts[i] is the
// number of waits in bucket i, and len(counts) must not exceed NumBuckets.
//
// Buckets alone cannot give the exact TotalNS, MinNS and MaxNS, so NewHistogram estimates them (the
// sum of bucket centres, the lowest and highest value the outermost buckets admit); the collector
// overwrites them with the exact values it measured.
func NewHistogram(typ string, counts []uint64) Histogram {
	if len(counts) > NumBuckets {
		panic(fmt.Sprintf("capture: %d histogram buckets, the layout has %d", len(counts), NumBuckets))
	}
	h := Histogram{Type: typ, SubBucketBits: SubBucketBits, Buckets: []Bucket{}}
	var total float64
	for i, n := range counts {
		if n == 0 {
			continue
		}
		lo, hi := BucketBounds(i)
		b := Bucket{LoNS: lo, HiNS: hi, Count: n}
		h.Buckets = append(h.Buckets, b)
		h.Count += n
		total += float64(n) * b.center()
	}
	if len(h.Buckets) > 0 {
		h.MinNS = h.Buckets[0].LoNS
		h.MaxNS = maxValue(h.Buckets[len(h.Buckets)-1])
		h.TotalNS = saturate(total)
	}
	return h
}

// maxValue is the largest value bucket b holds.
func maxValue(b Bucket) uint64 {
	if b.HiNS == math.MaxUint64 {
		return math.MaxUint64
	}
	return b.HiNS - 1
}

func saturate(f float64) uint64 {
	if f >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(f)
}

// Add records one wait of ns nanoseconds, updating the exact fields too. The zero Histogram (with
// Type set) is ready to use.
func (h *Histogram) Add(ns uint64) {
	if h.Count == 0 {
		h.SubBucketBits = SubBucketBits
		h.MinNS, h.MaxNS = ns, ns
	}
	lo, hi := BucketBounds(BucketIndex(ns))
	i, found := slices.BinarySearchFunc(h.Buckets, lo, func(b Bucket, lo uint64) int { return cmp.Compare(b.LoNS, lo) })
	if found {
		h.Buckets[i].Count++
	} else {
		h.Buckets = slices.Insert(h.Buckets, i, Bucket{LoNS: lo, HiNS: hi, Count: 1})
	}
	h.Count++
	h.TotalNS += ns
	h.MinNS = min(h.MinNS, ns)
	h.MaxNS = max(h.MaxNS, ns)
}

// Percentile estimates the p-th percentile (p in [0, 100]) of the waits: the nearest-rank sample's
// bucket is found exactly, the position inside it is interpolated linearly, and the result is clamped
// to [MinNS, MaxNS]. The estimate lies in the same bucket as the exact order statistic, so it is off by
// less than that bucket's width (at most 1/16 of the value). p <= 0 gives MinNS and p >= 100 MaxNS,
// both exact; an empty histogram gives 0.
func (h Histogram) Percentile(p float64) uint64 {
	if h.Count == 0 {
		return 0
	}
	if !(p > 0) { // also NaN
		return h.MinNS
	}
	if p >= 100 {
		return h.MaxNS
	}
	rank := h.Count
	if r := math.Ceil(p * float64(h.Count) / 100); r < float64(h.Count) {
		rank = max(uint64(r), 1)
	}
	var before uint64 // samples in the buckets already passed
	for _, b := range h.Buckets {
		if rank-before > b.Count {
			before += b.Count
			continue
		}
		est := b.LoNS
		if b.HiNS > b.LoNS {
			// The bucket's samples are taken as evenly spread; the k-th of n sits at (k-0.5)/n.
			width := b.HiNS - b.LoNS
			offset := saturate(float64(width) * (float64(rank-before) - 0.5) / float64(b.Count))
			est += min(offset, width-1)
		}
		return min(max(est, h.MinNS), h.MaxNS)
	}
	return h.MaxNS // only for histograms whose buckets hold fewer than Count samples
}

// Stats summarises a histogram. Count, TotalNS, MinNS, MaxNS and MeanNS are exact; the percentiles and
// MADNS are estimates from the buckets (see Histogram.Percentile and Histogram.Stats).
type Stats struct {
	Count, TotalNS, MinNS, MaxNS, P25, P50, P75, P90, P95, P99, MADNS uint64
	MeanNS                                                            float64
}

// Stats computes the summary statistics of h.
//
// MADNS, the median absolute deviation, treats every sample as sitting at its bucket's centre and
// measures it from the estimated median. It is off from the exact MAD by at most half the width of the
// bucket holding median+MAD plus the width of the median's bucket (and rounding).
func (h Histogram) Stats() Stats {
	s := Stats{
		Count:   h.Count,
		TotalNS: h.TotalNS,
		MinNS:   h.MinNS,
		MaxNS:   h.MaxNS,
		P25:     h.Percentile(25),
		P50:     h.Percentile(50),
		P75:     h.Percentile(75),
		P90:     h.Percentile(90),
		P95:     h.Percentile(95),
		P99:     h.Percentile(99),
	}
	if h.Count > 0 {
		s.MeanNS = float64(h.TotalNS) / float64(h.Count)
		s.MADNS = h.mad(s.P50)
	}
	return s
}

// mad returns the median of the samples' distances from median, one distance per bucket.
func (h Histogram) mad(median uint64) uint64 {
	type deviation struct {
		ns    float64
		count uint64
	}
	devs := make([]deviation, len(h.Buckets))
	for i, b := range h.Buckets {
		devs[i] = deviation{math.Abs(b.center() - float64(median)), b.Count}
	}
	slices.SortFunc(devs, func(a, b deviation) int { return cmp.Compare(a.ns, b.ns) })
	rank := h.Count/2 + h.Count%2 // nearest rank of the median: ceil(Count/2)
	var seen uint64
	for _, d := range devs {
		seen += d.count
		if seen >= rank {
			return saturate(math.Round(d.ns))
		}
	}
	return 0 // only for histograms whose buckets hold fewer than Count samples
}

// MergeHistograms adds b's waits to a's, as if both had been recorded into one histogram. Both must
// have the same Type and the current bucket layout.
func MergeHistograms(a, b Histogram) (Histogram, error) {
	if a.Type != b.Type {
		return Histogram{}, fmt.Errorf("merging histograms of lock types %q and %q", a.Type, b.Type)
	}
	for _, h := range []Histogram{a, b} {
		if h.SubBucketBits != SubBucketBits {
			return Histogram{}, fmt.Errorf("merging %q histograms: layout has %d sub-bucket bits, want %d", h.Type, h.SubBucketBits, SubBucketBits)
		}
	}
	m := Histogram{
		Type:          a.Type,
		SubBucketBits: SubBucketBits,
		Count:         a.Count + b.Count,
		TotalNS:       a.TotalNS + b.TotalNS,
		Buckets:       make([]Bucket, 0, len(a.Buckets)+len(b.Buckets)),
	}
	switch {
	case a.Count == 0:
		m.MinNS, m.MaxNS = b.MinNS, b.MaxNS
	case b.Count == 0:
		m.MinNS, m.MaxNS = a.MinNS, a.MaxNS
	default:
		m.MinNS, m.MaxNS = min(a.MinNS, b.MinNS), max(a.MaxNS, b.MaxNS)
	}
	i, j := 0, 0
	for i < len(a.Buckets) && j < len(b.Buckets) {
		x, y := a.Buckets[i], b.Buckets[j]
		switch {
		case x.LoNS < y.LoNS:
			m.Buckets = append(m.Buckets, x)
			i++
		case x.LoNS > y.LoNS:
			m.Buckets = append(m.Buckets, y)
			j++
		default:
			x.Count += y.Count
			m.Buckets = append(m.Buckets, x)
			i++
			j++
		}
	}
	m.Buckets = append(m.Buckets, a.Buckets[i:]...)
	m.Buckets = append(m.Buckets, b.Buckets[j:]...)
	return m, nil
}

// MarshalJSON implements json.Marshaler, writing nil buckets as [].
func (h Histogram) MarshalJSON() ([]byte, error) {
	type plain Histogram
	h.Buckets = nonNil(h.Buckets)
	return json.Marshal(plain(h))
}
