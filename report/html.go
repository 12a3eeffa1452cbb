package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/klockstat/klockstat/capture"
)

// HTMLOptions tune WriteHTML and WriteDiffHTML.
type HTMLOptions struct {
	Top          int  // rows on a table page and bars in the callers or changes chart (CLI default 20); <= 0 means 20
	RawAddresses bool // show real kernel addresses instead of hashed ids
	// AddressKey hashes the addresses, so that other outputs of the same key (klockstat's exports)
	// show the same ids; nil draws a key for this page only.
	AddressKey []byte
}

const defaultTop = 20

// WriteHTML renders c as one self-contained page. It does not modify c.
//
// The page works offline from file://: ECharts, the CSS and the JavaScript are inlined, and so is the
// page data (embed.go): the rows of every table and the whole capture, which ReadInput reads back.
// Unless o.RawAddresses is set, kernel addresses are replaced by ids under o.AddressKey, or a key drawn
// for this report only (capture.HashAddresses), in the page and in the embedded capture alike.
func WriteHTML(w io.Writer, c *capture.Capture, o HTMLOptions) error {
	return newModel(c, o.RawAddresses, o.AddressKey).writeHTML(w, o)
}

// writeHTML is WriteHTML of m's capture, its addresses shown as m shows them.
func (m *model) writeHTML(w io.Writer, o HTMLOptions) error {
	return renderPage(w, "report", o, func(a *assets, o HTMLOptions) (any, error) {
		return newReportPage(m, o, a)
	})
}

// reportPage is what page.html's report template renders.
type reportPage struct {
	page
	Lost                       []capture.Lost
	LostTotal                  uint64
	Captured, Settings, Health []field
	Tables                     tables
	Flame                      bool // the page draws flame graphs of the waits
}

func newReportPage(an *model, o HTMLOptions, a *assets) (*reportPage, error) {
	c := an.c
	tab := newStrtab(an.hasher)
	tab.sources = c.Sources
	m := c.Meta
	m.AddressesHashed = an.hashed
	var sub []string
	for _, s := range []string{m.Hostname, m.Kernel, formatStart(m.Start), FormatDuration(float64(m.DurationNS))} {
		if s != "" {
			sub = append(sub, s)
		}
	}
	p := &reportPage{
		page:      newPage(a, "klockstat report", strings.Join(sub, " · "), strings.TrimSpace("klockstat "+m.ToolVersion)),
		Lost:      m.Lost,
		LostTotal: m.LostTotal(),
	}
	p.Warnings, p.WarningsTitle = c.Warnings(), "Warnings"
	p.Empty = len(c.Records) == 0
	p.AddrHashed = m.AddressesHashed
	p.FooterNote = fmt.Sprintf("%d %s · the capture is embedded: klockstat can read this file back", len(c.Records), plural(len(c.Records), "record", "records"))

	// Interning every string and stack of the records (newRecordFields) takes the longest; grouping
	// them and laying out the flame graphs do not touch tab, so they run beside it.
	var records *recordFields
	interned := make(chan struct{})
	go func() {
		defer close(interned)
		records = newRecordFields(c.Records, an.order(), tab)
	}()
	laidOut := make(chan struct{})
	go func() {
		defer close(laidOut)
		an.trees()
	}()
	byCaller, byLock, byCgroup := an.groups["caller"](), an.groups["lock"](), an.groups["cgroup"]()
	an.contended()
	<-interned
	<-laidOut
	order := an.order()
	p.Highlights = highlights(an)
	p.Captured, p.Settings, p.Health = headerFields(m)
	ms := an.ms
	if f, ok := scopeField(c, ms); ok {
		// After the workload's line, which it is about; the report's alone: a diff pairs the
		// lines of headerFields.
		i := slices.IndexFunc(p.Captured, func(f field) bool { return f.Label == "Workload" })
		p.Captured = slices.Insert(p.Captured, i+1, f)
	}
	if !p.Empty {
		charts, err := reportCharts(an, o.Top)
		if err != nil {
			return nil, err
		}
		p.Charts = charts
	}

	holds := holdsTimed(c.Records)
	p.Tables = tables{
		ID: "locks", Title: "Locks", PageSize: o.Top,
		Placeholder: "Filter: lock, type, thread, PID, cgroup, caller, frame…",
		Views: []view{
			recordView(c.Records, order, records, tab, ms, holds),
			groupView("callers", "By caller", "all threads and locks merged per lock type and caller", capture.FieldCaller, byCaller, c.Records, tab, ms, holds),
			groupView("locks", "By lock", "all threads and callers merged per lock", capture.FieldLock, byLock, c.Records, tab, ms, holds),
			groupView("cgroups", "By cgroup", "all locks, threads and callers merged per cgroup of the waiting threads", capture.FieldCgroup, byCgroup, c.Records, tab, ms, holds),
		},
	}
	views := p.Tables.Views
	addWhoseColumns(c, tab, &views[0], order, []groupedView{
		{&views[1], byCaller, capture.ByCaller}, {&views[2], byLock, capture.ByLock}, {&views[3], byCgroup, capture.ByCgroup}})
	if len(c.Owners) > 0 {
		links := newOwnerLinks(c.Owners, c.Records, tab)
		threads, locks := &p.Tables.Views[0], &p.Tables.Views[2]
		threads.insertAfter("type", links.toOwners(len(order), func(i int) lockKey {
			r := &c.Records[order[i]]
			return lockKey{r.Type, r.Lock}
		}))
		locks.insertAfter("type", links.toOwners(len(byLock), func(i int) lockKey { return lockKey{byLock[i].Type, byLock[i].Lock} }))
		p.Tables.Views = append(p.Tables.Views, ownerView(c.Owners, an.ownerWaits(), c.OwnerChains, m.OwnerSampleHz, tab, links))
	}

	embedded := *c
	embedded.Meta, embedded.Records, embedded.Owners = m, nil, hashedOwners(c.Owners, tab)
	embedded.OwnerChains = hashedChains(c.OwnerChains, tab)
	flame := newFlameGraphs(an.trees(), tab)
	if of := an.ownerTree(); of.ok {
		flame = append(flame, ownerFlameGraph(of.tree, tab))
	}
	sources := tab.pageSources()
	data := pageData{tab: tab, capture: &embedded, records: records, flame: flame, views: p.Tables.Views, sources: &sources}
	p.Flame = len(flame) > 0
	var err error
	if p.Data, err = data.encode(); err != nil {
		return nil, err
	}
	return p, nil
}
