package collector

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/lockfield"
)

// slabGeometry is how a slab cache lays out its objects, as SLUB's /sys/kernel/slab/CACHE tells.
type slabGeometry struct {
	order      uint   // a slab is 2^order pages
	slabSize   uint64 // the stride of its objects: the object and its metadata
	objectSize uint64 // the object itself
	redZone    bool   // objects start after a left red zone, whose size sysfs does not tell
}

// objectOffset returns a lock's offset in its object, false when the geometry cannot say. A slab
// is a compound page from the buddy allocator, aligned in the direct map to its own size, and
// SLUB places its objects from its start, one every slabSize bytes. A slab allocated at a smaller
// order than the cache's current one (memory was short), or an object of KFENCE's pool, breaks
// that rule: an offset past the object's end then shows it, but not every such case is caught.
func (g slabGeometry) objectOffset(lock uint64) (uint32, bool) {
	if g.redZone || g.slabSize == 0 || g.objectSize == 0 {
		return 0, false
	}
	slabBytes := uint64(pageSize) << g.order
	off := (lock & (slabBytes - 1)) % g.slabSize
	if off >= g.objectSize {
		return 0, false
	}
	return uint32(off), true
}

// pageSize is the kernel's page size; SLUB's order counts in them.
var pageSize = os.Getpagesize()

// slabDir is where SLUB describes its caches.
const slabDir = "/sys/kernel/slab"

// readSlabGeometry reads a cache's geometry from SLUB's sysfs directory.
func readSlabGeometry(dir, cache string) (slabGeometry, error) {
	var g slabGeometry
	var redZone uint64
	for _, f := range []struct {
		name string
		dst  *uint64
	}{{"slab_size", &g.slabSize}, {"object_size", &g.objectSize}, {"red_zone", &redZone}} {
		n, err := readSlabNumber(dir, cache, f.name)
		if err != nil {
			return slabGeometry{}, err
		}
		*f.dst = n
	}
	order, err := readSlabNumber(dir, cache, "order")
	if err != nil {
		return slabGeometry{}, err
	}
	g.order, g.redZone = uint(order), redZone != 0
	return g, nil
}

func readSlabNumber(dir, cache, name string) (uint64, error) {
	path := filepath.Join(dir, cache, name)
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading the slab cache's geometry: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return n, nil
}

// slabLock is a lock inside a slab object, as the records of its waits describe it.
type slabLock struct {
	cache    string
	lockType string   // the first record's
	callers  []string // the functions of its waiters' stacks, innermost first, each once
}

// callerFrames is how many frames of a waiter's stack, from its caller outwards, may tell the
// struct a lock is in: the function that takes the lock, and those that hand it the object.
const callerFrames = 4

// slabLocks returns the records' locks named by a slab cache only ("&CACHE"), by address.
func slabLocks(records []capture.Record) map[capture.Addr]*slabLock {
	locks := map[capture.Addr]*slabLock{}
	for _, r := range records {
		cache, ok := strings.CutPrefix(r.Name, "&")
		if !ok || cache == "" {
			continue
		}
		l := locks[r.Lock]
		if l == nil {
			l = &slabLock{cache: cache, lockType: r.Type}
			locks[r.Lock] = l
		}
		frames := r.Stack
		if i := slices.Index(frames, r.Caller); i >= 0 {
			frames = frames[i:]
		}
		for _, f := range frames[:min(len(frames), callerFrames)] {
			fr := capture.ParseFrame(f)
			if fr.Kind == capture.FrameSymbol && fr.Module == "" && !slices.Contains(l.callers, fr.Function) {
				l.callers = append(l.callers, fr.Function)
			}
		}
	}
	return locks
}

// slabFields gives the records' slab locks their offset in their object and the struct field
// they are: *kernel does, from SLUB's sysfs and the kernel's BTF. It returns warnings for what it
// could not read.
func (k *kernel) slabFields(records []capture.Record) []string {
	types, err := k.types()
	if err != nil {
		return []string{fmt.Sprintf("the struct fields of slab locks are not named: %v", err)}
	}
	k.fieldsOnce.Do(func() { k.fields = lockfield.New(types) })
	return nameSlabFields(records, func(cache string) (slabGeometry, error) { return readSlabGeometry(slabDir, cache) }, k.fields)
}

// nameSlabFields gives the records' slab locks their offset in their object and the struct field
// they are, from the geometry geometry reads and the fields finder finds. A lock whose field is
// not found keeps its offset; one whose offset is unknown gets neither.
func nameSlabFields(records []capture.Record, geometry func(cache string) (slabGeometry, error), finder *lockfield.Finder) []string {
	type found struct {
		offset string
		fields []string
		guess  bool
	}
	byLock := map[capture.Addr]found{}
	geometries := map[string]slabGeometry{}
	var unread []string // the caches whose geometry could not be read
	var readErr error
	for addr, l := range slabLocks(records) {
		g, ok := geometries[l.cache]
		if !ok {
			var err error
			if g, err = geometry(l.cache); err != nil {
				unread = append(unread, l.cache)
				readErr = cmp.Or(readErr, err)
			}
			geometries[l.cache] = g
		}
		off, ok := g.objectOffset(uint64(addr))
		if !ok {
			continue
		}
		f := found{offset: fmt.Sprintf("%#x", off)}
		fields, err := finder.Find(lockfield.Query{Cache: l.cache, ObjectSize: uint32(g.objectSize), Offset: off, LockType: l.lockType, Callers: l.callers})
		if err != nil {
			return []string{fmt.Sprintf("the struct fields of slab locks are not named: %v", err)}
		}
		for _, fl := range fields[:min(len(fields), capture.MaxFieldCandidates)] {
			f.fields = append(f.fields, fl.String())
		}
		f.guess = len(fields) > 1
		byLock[addr] = f
	}
	for i := range records {
		f, ok := byLock[records[i].Lock]
		if !ok {
			continue
		}
		records[i].ObjectOffset = f.offset
		if len(f.fields) > 0 {
			records[i].Field = f.fields[0]
		}
		if f.guess {
			records[i].FieldCandidates = f.fields
		}
	}
	if len(unread) == 0 {
		return nil
	}
	slices.Sort(unread)
	return []string{fmt.Sprintf("the offsets of locks in slab caches %s are unknown: %v", strings.Join(unread, ", "), readErr)}
}
