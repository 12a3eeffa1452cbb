package report

import (
	"slices"
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// unseenLines say, one a lock type, which captured types the kernel could not show the probes
// and why, e.g. "spinlock waits cannot be seen on this kernel: this guest spins in
// virt_spin_lock() ...": a capture without waits of such a type says nothing of its contention.
// The summary, the page's health card and its highlight all say it in these words.
func unseenLines(m capture.Meta) []string {
	var lines []string
	for _, u := range m.Unseen {
		lines = append(lines, sanitize(u.Type)+" waits cannot be seen on this kernel: "+sanitize(u.Reason))
	}
	return lines
}

// unseenTypes names the captured types the kernel could not show, "spinlock" or
// "spinlock, rwlock:R".
func unseenTypes(m capture.Meta) string {
	var types []string
	for _, u := range m.Unseen {
		types = append(types, sanitize(u.Type))
	}
	return strings.Join(types, ", ")
}

// filtersUnseen reports whether a type filter asks for a type the kernel could not show.
func filtersUnseen(m capture.Meta, types []string) bool {
	return slices.ContainsFunc(m.Unseen, func(u capture.UnseenType) bool {
		return slices.ContainsFunc(types, func(t string) bool { return TypeFilterMatches(u.Type, t) })
	})
}
