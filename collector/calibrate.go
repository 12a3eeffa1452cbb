package collector

import (
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/klockstat/klockstat/capture"
)

// The function probes time whole acquire calls: an uncontended acquire
// takes the probes' own cost plus the fast path, a few hundred nanoseconds
// on bare metal, microseconds under emulation. Start measures that on the
// machine itself, with acquires that cannot be contended, and counts an
// acquire as contended only when it takes longer.

const (
	// calibrationRounds bounds the rounds of uncontended acquires; each
	// takes at least three samples where mutexes and rwsems are probed.
	calibrationRounds = 4096
	// calibrationSamples is enough for a 99th percentile that moves by
	// less than a few percent between runs.
	calibrationSamples = 2048
	// thresholdFactor times the 99th percentile of uncontended acquires is
	// the threshold: what the probes and a fast path take, with room for
	// the cache misses the calibration did not see.
	thresholdFactor = 2
)

const calibrationMethod = "uncontended acquires driven from one thread of klockstat: a 1-byte write and read on a private pipe (pipe mutex), " +
	"madvise(MADV_WILLNEED) on a private page (mmap_lock read), mmap and munmap of a page (mmap_lock write); every probed acquire of that thread is a sample"

// calibrate measures uncontended acquires and sets the threshold.
func (c *Collector) calibrate() error {
	// The programs time only this thread while calibrating.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctl := c.obj.maps.Control
	tid := uint32(unix.Gettid())
	if err := ctl.Update(uint32(0), lockstatFnControl{CalibTid: tid}, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("starting the calibration: %w", err)
	}
	taken := func() (uint32, error) {
		var v lockstatFnControl
		err := ctl.Lookup(uint32(0), &v)
		return v.CalibN, err
	}
	driveErr := driveUncontended(func() bool {
		n, err := taken()
		return err != nil || n >= calibrationSamples
	})
	n, err := taken()
	if err != nil {
		return fmt.Errorf("reading the calibration: %w", err)
	}
	samples := make([]uint64, n)
	for i := range samples {
		if err := c.obj.maps.CalibSamples.Lookup(uint32(i), &samples[i]); err != nil {
			return fmt.Errorf("reading calibration sample %d: %w", i, err)
		}
	}
	cal, threshold := calibration(samples)
	cal.Method = calibrationMethod
	// Threshold first, then the end of the calibration: no program may see
	// the end with the old threshold of 0.
	for _, v := range []lockstatFnControl{{ThresholdNs: threshold, CalibTid: tid}, {ThresholdNs: threshold}} {
		if err := ctl.Update(uint32(0), v, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("setting the threshold: %w", err)
		}
	}
	a := c.att.acquire
	a.ThresholdNS, a.Calibration = threshold, cal
	switch {
	case driveErr != nil:
		c.warn("calibration cut short (%v): threshold %d ns from %d samples", driveErr, threshold, len(samples))
	case len(samples) == 0:
		c.warn("calibration sampled no acquire (none of the probed functions is a pipe mutex or an mmap_lock): every acquire counts as contended")
	}
	return nil
}

// driveUncontended takes locks no other thread takes, round after round,
// until enough says so or calibrationRounds are done.
func driveUncontended(enough func() bool) error {
	var pipe [2]int
	if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("creating a pipe: %w", err)
	}
	defer unix.Close(pipe[0])
	defer unix.Close(pipe[1])
	size := unix.Getpagesize()
	anon := func() ([]byte, error) {
		return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	}
	page, err := anon()
	if err != nil {
		return fmt.Errorf("mapping a page: %w", err)
	}
	defer unix.Munmap(page)
	page[0] = 1 // fault it in
	buf := []byte{0}
	for i := range calibrationRounds {
		if i%64 == 0 && enough() {
			return nil
		}
		if _, err := unix.Write(pipe[1], buf); err != nil {
			return fmt.Errorf("writing to the pipe: %w", err)
		}
		if _, err := unix.Read(pipe[0], buf); err != nil {
			return fmt.Errorf("reading from the pipe: %w", err)
		}
		if err := unix.Madvise(page, unix.MADV_WILLNEED); err != nil {
			return fmt.Errorf("madvise: %w", err)
		}
		m, err := anon()
		if err != nil {
			return fmt.Errorf("mapping a page: %w", err)
		}
		if err := unix.Munmap(m); err != nil {
			return fmt.Errorf("unmapping a page: %w", err)
		}
	}
	return nil
}

// calibration summarises uncontended acquire times and derives the
// threshold: thresholdFactor times their 99th percentile (nearest rank).
// Without samples the threshold is 0: every acquire counts.
func calibration(samples []uint64) (capture.Calibration, uint64) {
	cal := capture.Calibration{Samples: len(samples), Rule: fmt.Sprintf("%d × p99", thresholdFactor)}
	if len(samples) == 0 {
		return cal, 0
	}
	sorted := slices.Sorted(slices.Values(samples))
	rank := func(p float64) uint64 {
		i := int(math.Ceil(p*float64(len(sorted)))) - 1
		return sorted[max(i, 0)]
	}
	cal.P50NS, cal.P99NS, cal.MaxNS = rank(0.50), rank(0.99), sorted[len(sorted)-1]
	if cal.P99NS > math.MaxUint64/thresholdFactor {
		return cal, math.MaxUint64
	}
	return cal, thresholdFactor * cal.P99NS
}
