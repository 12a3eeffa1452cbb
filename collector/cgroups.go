package collector

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/cgroups"
)

// fillCgroupFilter puts the directories of --cgroup into the programs' cgroup array, before they are
// attached: the kernel holds the cgroups from then on, so the descriptors close at once.
func fillCgroupFilter(m *ebpf.Map, dirs []string) error {
	for i, dir := range dirs {
		f, err := os.Open(dir)
		if err != nil {
			return fmt.Errorf("--cgroup %s: %w", dir, err)
		}
		err = m.Update(uint32(i), uint32(f.Fd()), ebpf.UpdateAny)
		f.Close()
		if err != nil {
			return fmt.Errorf("--cgroup %s: filling the cgroup filter: %w", dir, err)
		}
	}
	return nil
}

// cgroupPaths names the cgroups of the records: the hierarchy is listed when the capture starts and
// again when it ends, so a cgroup removed in between keeps its path.
type cgroupPaths struct {
	hierarchy cgroups.Hierarchy
	start     map[uint64]string
	err       error // why cgroups have no paths
}

func newCgroupPaths() *cgroupPaths {
	p := &cgroupPaths{}
	if p.hierarchy, p.err = cgroups.Find(); p.err == nil {
		p.start, p.err = p.hierarchy.Paths()
	}
	return p
}

// cgroupListing is the paths of the hierarchy's cgroups by id at one moment, or why they could not be
// listed.
type cgroupListing struct {
	paths map[uint64]string
	err   error
}

// atEnd lists the hierarchy again, when the capture ends; nothing when it could not be found at the
// start.
func (p *cgroupPaths) atEnd() cgroupListing {
	if p.err != nil {
		return cgroupListing{}
	}
	paths, err := p.hierarchy.Paths()
	return cgroupListing{paths: paths, err: err}
}

// name sets the Cgroup of every record from its CgroupID, by the listing of the end and else of the
// start, and returns warnings of the cgroups that ended before the capture did.
func (p *cgroupPaths) name(records []capture.Record, atEnd cgroupListing) []string {
	if p.err != nil {
		if errors.Is(p.err, cgroups.ErrNoHierarchy) && !hasCgroups(records) {
			return nil
		}
		return []string{fmt.Sprintf("cgroups are shown by id, without a path: %v", p.err)}
	}
	if atEnd.err != nil {
		return []string{fmt.Sprintf("cgroups are shown by id, without a path: %v", atEnd.err)}
	}
	end := atEnd.paths
	removed, unknown := map[string]bool{}, map[uint64]bool{}
	for i := range records {
		r := &records[i]
		if r.CgroupID == 0 {
			continue
		}
		if path, ok := end[r.CgroupID]; ok {
			r.Cgroup = path
		} else if path, ok := p.start[r.CgroupID]; ok {
			r.Cgroup = path
			removed[path] = true
		} else {
			unknown[r.CgroupID] = true
		}
	}
	var warnings []string
	if len(removed) > 0 {
		paths := make([]string, 0, len(removed))
		for path := range removed {
			paths = append(paths, path)
		}
		sort.Strings(paths)
		warnings = append(warnings, fmt.Sprintf("cgroups removed during the capture, named as they were at its start: %s", strings.Join(paths, ", ")))
	}
	if len(unknown) > 0 {
		warnings = append(warnings, fmt.Sprintf("cgroups created and removed during the capture, their waits shown by cgroup id only: %d", len(unknown)))
	}
	return warnings
}

// hasCgroups reports whether a record is of a cgroup other than the root, which every task is in
// where no cgroup2 hierarchy is mounted.
func hasCgroups(records []capture.Record) bool {
	for _, r := range records {
		if r.CgroupID > 1 {
			return true
		}
	}
	return false
}
