package report

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/templates"
)

// HTMLOptions tune WriteHTML.
type HTMLOptions struct {
	Top          int  // rows on the first table page and callers in the top-callers chart (CLI default 20); <= 0 means 20
	RawAddresses bool // show real kernel addresses instead of hashed ids
}

const defaultTop = 20

// WriteHTML renders c as one self-contained page. It does not modify c (hash a copy).
//
// The page works offline from file://: ECharts, the CSS and the JavaScript are inlined, and the capture
// itself is embedded as JSON (see ReadInput), from which the page's tables are built. Unless
// o.RawAddresses is set, kernel addresses are replaced by ids under a key drawn for this report only
// (capture.HashAddresses), in the page and in the embedded capture alike.
func WriteHTML(w io.Writer, c *capture.Capture, o HTMLOptions) error {
	key := make([]byte, 32)
	rand.Read(key) // never fails: crypto/rand.Read crashes the program rather than return an error
	return writeHTML(w, c, o, key)
}

// writeHTML is WriteHTML with the address-hashing key chosen by the caller.
func writeHTML(w io.Writer, c *capture.Capture, o HTMLOptions, key []byte) error {
	a, err := loadAssets()
	if err != nil {
		return err
	}
	if o.Top <= 0 {
		o.Top = defaultTop
	}
	if !o.RawAddresses && !c.Meta.AddressesHashed {
		c = hashedCopy(c, key)
	}
	p, err := newPage(c, o, a)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := a.page.Execute(bw, p); err != nil {
		return fmt.Errorf("rendering the HTML report: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	return nil
}

// hashedCopy returns a copy of c with its addresses hashed; c and the slices it shares are untouched.
func hashedCopy(c *capture.Capture, key []byte) *capture.Capture {
	h := *c
	h.Records = slices.Clone(c.Records)
	for i := range h.Records {
		h.Records[i].Stack = slices.Clone(h.Records[i].Stack)
	}
	h.HashAddresses(key)
	return &h
}

// assets are what every report inlines, prepared once.
type assets struct {
	page           *template.Template
	css            template.CSS
	echarts        template.JS
	js             template.JS
	echartsVersion string
	echartsNotice  string
}

var loadAssets = sync.OnceValues(func() (*assets, error) {
	files := make(map[string]string)
	for _, name := range []string{"report.css", "echarts.min.js", "report.js", "ECHARTS-VERSION", "ECHARTS-NOTICE"} {
		b, err := templates.FS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("loading the report's %s: %w", name, err)
		}
		files[name] = string(b)
	}
	// html/template inlines CSS as it is, so it must not end its <style> element early.
	if strings.Contains(strings.ToLower(files["report.css"]), "</style") {
		return nil, errors.New("report.css contains </style")
	}
	page, err := template.New("report.html").ParseFS(templates.FS, "report.html")
	if err != nil {
		return nil, fmt.Errorf("parsing the report template: %w", err)
	}
	return &assets{
		page:           page,
		css:            template.CSS(files["report.css"]),
		echarts:        template.JS(scriptSafe(files["echarts.min.js"])),
		js:             template.JS(scriptSafe(files["report.js"])),
		echartsVersion: strings.TrimSpace(files["ECHARTS-VERSION"]),
		echartsNotice:  strings.TrimSpace(files["ECHARTS-NOTICE"]),
	}, nil
})

// scriptSafe makes JavaScript source safe to inline in a <script> element, where the HTML parser ends
// the element at the first "</script" and treats "<!--" specially. "</" becomes "<\/" and "<!--"
// becomes "<\!--", which mean the same in the only places they can occur in our scripts and ECharts:
// string literals, regular expressions and comments.
func scriptSafe(js string) string {
	return scriptEscaper.Replace(js)
}

var scriptEscaper = strings.NewReplacer("</", `<\/`, "<!--", `<\!--`)

// page is what report.html renders.
type page struct {
	Title        string
	Subtitle     string
	CSP          string // Content-Security-Policy: only the page's own scripts may run, nothing may load
	CSS          template.CSS
	ECharts      template.JS
	JS           template.JS
	Lost         []capture.Lost
	LostTotal    uint64
	Warnings     []string
	Highlights   []highlight
	Captured     []field
	Settings     []field
	Health       []field
	Charts       []chart
	ChartData    template.JS
	Tables       []table
	CaptureJSON  template.JS
	Empty        bool
	Tool         string
	ECVersion    string
	ECNotice     string
	AddrHashed   bool
	TableRecords int
	Top          int
}

func newPage(c *capture.Capture, o HTMLOptions, a *assets) (*page, error) {
	m := c.Meta
	p := &page{
		Title:        "klockstat report",
		CSS:          a.css,
		ECharts:      a.echarts,
		JS:           a.js,
		Lost:         m.Lost,
		LostTotal:    m.LostTotal(),
		Warnings:     m.Warnings,
		Empty:        len(c.Records) == 0,
		Tool:         strings.TrimSpace("klockstat " + m.ToolVersion),
		ECVersion:    a.echartsVersion,
		ECNotice:     a.echartsNotice,
		AddrHashed:   m.AddressesHashed,
		TableRecords: len(c.Records),
		Top:          o.Top,
	}
	var sub []string
	for _, s := range []string{m.Hostname, m.Kernel, formatStart(m.Start), FormatDuration(float64(m.DurationNS))} {
		if s != "" {
			sub = append(sub, s)
		}
	}
	p.Subtitle = strings.Join(sub, " · ")

	byCaller := capture.GroupBy(c.Records, capture.ByCaller)
	// Groups of holds only (uncontended acquires) have no place in the charts of waits.
	contended := slices.DeleteFunc(slices.Clone(byCaller), func(g capture.Group) bool { return g.Count == 0 })
	types := summarizeTypes(c.Histograms)
	p.Highlights = highlights(c, types, contended)
	p.Captured, p.Settings, p.Health = headerFields(m)

	if !p.Empty {
		charts, data, err := buildCharts(types, c.HoldHistograms, contended, o.Top, measureOf(m))
		if err != nil {
			return nil, err
		}
		p.Charts = charts
		p.ChartData = data
	}

	lockLabel := lockLabeler(m.AddressesHashed)
	ms, holds := measureOf(m), holdsTimed(c.Records)
	p.Tables = []table{
		recordTable(topRecords(c.Records, o.Top), len(c.Records), recordColumns(ms, holds), lockLabel),
		groupTable("callers", "By caller", "all threads and locks merged per lock type and caller", callerColumns(ms, holds), byCaller, o.Top, lockLabel),
		groupTable("locks", "By lock", "all threads and callers merged per lock", lockColumns(ms, holds), capture.GroupBy(c.Records, capture.ByLock), o.Top, lockLabel),
	}

	js, err := captureJSON(c)
	if err != nil {
		return nil, err
	}
	p.CaptureJSON = template.JS(js)

	scripts := []string{string(p.ECharts), string(p.JS)}
	for _, ch := range p.Charts {
		scripts = append(scripts, string(ch.Script))
	}
	p.CSP = contentSecurityPolicy(scripts)
	return p, nil
}

// topRecords returns the first n records in the order of capture.Sort, without sorting them all: Sort
// orders by total wait first, so they are among those with a total wait of at least the n-th largest.
func topRecords(records []capture.Record, n int) []capture.Record {
	if len(records) > n {
		totals := make([]uint64, len(records))
		for i, r := range records {
			totals[i] = r.TotalNS
		}
		slices.Sort(totals)
		nth := totals[len(totals)-n]
		var top []capture.Record
		for _, r := range records {
			if r.TotalNS >= nth {
				top = append(top, r)
			}
		}
		records = top
	}
	sorted := capture.Capture{Records: slices.Clone(records)}
	sorted.Sort()
	return sorted.Records[:min(n, len(sorted.Records))]
}

// captureJSON is json.Marshal(c), only faster for big captures. encoding/json re-reads what every
// MarshalJSON method returns, and Capture.MarshalJSON encodes the records inside its own result, so
// all of a capture's bytes would be scanned three times. Here the records are encoded apart, in
// parallel, and spliced into the encoding of the rest of the capture. encoding/json escapes <, > and &
// in strings, so the result cannot end the page's script element early.
func captureJSON(c *capture.Capture) ([]byte, error) {
	rest := *c
	rest.Records = nil
	head, err := json.Marshal(&rest)
	if err != nil {
		return nil, fmt.Errorf("encoding the capture for the HTML report: %w", err)
	}
	// A quote inside a JSON string is escaped, so this matches the records key and nothing else.
	const empty = `"records":[]`
	at := bytes.LastIndex(head, []byte(empty))
	if at < 0 {
		return nil, fmt.Errorf("encoding the capture for the HTML report: no %s in %.100s", empty, head)
	}
	at += len(empty) - 1 // before the ]

	workers := min(runtime.GOMAXPROCS(0), len(c.Records)/1000+1)
	chunks := make([][]byte, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			part := c.Records[i*len(c.Records)/workers : (i+1)*len(c.Records)/workers]
			if len(part) == 0 {
				return // json.Marshal would write null for a nil slice
			}
			js, err := json.Marshal(part)
			chunks[i], errs[i] = bytes.TrimSuffix(bytes.TrimPrefix(js, []byte("[")), []byte("]")), err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("encoding the capture's records for the HTML report: %w", err)
	}
	size := len(head)
	for _, chunk := range chunks {
		size += len(chunk) + 1
	}
	js := make([]byte, 0, size)
	js = append(js, head[:at]...)
	for _, chunk := range chunks {
		if len(chunk) == 0 {
			continue
		}
		if js[len(js)-1] != '[' {
			js = append(js, ',')
		}
		js = append(js, chunk...)
	}
	return append(js, head[at:]...), nil
}

// contentSecurityPolicy allows exactly the given inline scripts (by hash) and nothing else to run, and
// nothing at all to be fetched: defence in depth should escaping ever miss an injected script or event
// handler, and a guarantee that opening the report makes no network request. Inline styles stay
// allowed because ECharts styles its tooltips with them.
func contentSecurityPolicy(scripts []string) string {
	var b strings.Builder
	b.WriteString("default-src 'none'; base-uri 'none'; form-action 'none'; style-src 'unsafe-inline'; script-src")
	for _, s := range scripts {
		sum := sha256.Sum256([]byte(s))
		b.WriteString(" 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'")
	}
	return b.String()
}
