package report

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"
	"unicode"

	"github.com/klockstat/klockstat/capture"
	"github.com/klockstat/klockstat/templates"
)

// What both pages, the report and the diff, are made of: one template set (templates/page.html) whose
// parts both use, one stylesheet, one script, and ECharts, all inlined so a page works offline.

// assets are what every page inlines, prepared once.
type assets struct {
	pages          *template.Template
	css            template.CSS
	echarts        template.JS
	js             template.JS
	csp            string
	echartsVersion string
	echartsNotice  string
}

var loadAssets = sync.OnceValues(func() (*assets, error) {
	files := make(map[string]string)
	for _, name := range []string{"page.css", "echarts.min.js", "ECHARTS-VERSION", "ECHARTS-NOTICE"} {
		b, err := templates.FS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("loading the page's %s: %w", name, err)
		}
		files[name] = string(b)
	}
	js, err := templates.PageScript()
	if err != nil {
		return nil, err
	}
	// html/template inlines CSS as it is, so it must not end its <style> element early.
	if strings.Contains(strings.ToLower(files["page.css"]), "</style") {
		return nil, errors.New("page.css contains </style")
	}
	pages, err := parsePageTemplates("page.html")
	if err != nil {
		return nil, err
	}
	a := &assets{
		pages:          pages,
		css:            template.CSS(files["page.css"]),
		echarts:        template.JS(scriptSafe(files["echarts.min.js"])),
		js:             template.JS(scriptSafe(js)),
		echartsVersion: strings.TrimSpace(files["ECHARTS-VERSION"]),
		echartsNotice:  strings.TrimSpace(files["ECHARTS-NOTICE"]),
	}
	a.csp = contentSecurityPolicy([]string{string(a.echarts), string(a.js)})
	return a, nil
})

// parsePageTemplates parses page.html, whose named parts every page shares, and the files that use
// them. Each page's set is parsed apart: html/template cannot clone a set once it has executed.
func parsePageTemplates(files ...string) (*template.Template, error) {
	pages, err := template.New("page.html").Funcs(template.FuncMap{
		"visible": visible,
		"card":    func(title string, fields []field) fieldCard { return fieldCard{title, fields} },
	}).ParseFS(templates.FS, files...)
	if err != nil {
		return nil, fmt.Errorf("parsing the page templates %s: %w", strings.Join(files, ", "), err)
	}
	return pages, nil
}

// newKey draws the key that hashes the addresses of one page.
func newKey() []byte {
	key := make([]byte, 32)
	rand.Read(key) // never fails: crypto/rand.Read crashes the program rather than return an error
	return key
}

// hasherFor returns the hasher of key when hash is set, else nil.
func hasherFor(hash bool, key []byte) *capture.AddressHasher {
	if !hash {
		return nil
	}
	return capture.NewAddressHasher(key)
}

// fieldCard is one card of header fields.
type fieldCard struct {
	Title  string
	Fields []field
}

// page is what both pages show around their own parts; page.html's parts read it.
type page struct {
	Title, Subtitle string
	CSP             string
	CSS             template.CSS
	ECharts, JS     template.JS
	Tool            string
	ECVersion       string
	ECNotice        string
	AddrHashed      bool
	FooterNote      string
	Warnings        []string
	WarningsTitle   string
	Highlights      []highlight
	Empty           bool
	Charts          chartSet
	Data            template.HTML // the page data element (embed.go)
}

// newPage fills in what comes from the assets.
func newPage(a *assets, title, subtitle, tool string) page {
	return page{
		Title: title, Subtitle: subtitle, Tool: tool,
		CSP: a.csp, CSS: a.css, ECharts: a.echarts, JS: a.js,
		ECVersion: a.echartsVersion, ECNotice: a.echartsNotice,
	}
}

// tables is a section of tables: views shown one at a time, chosen by tabs.
type tables struct {
	ID, Title   string
	Views       []view
	PageSize    int
	Placeholder string // of the filter
	Note        string // under the title
}

// ViewIDs are the ids of the views, the first shown first.
func (t tables) ViewIDs() string {
	ids := make([]string, len(t.Views))
	for i, v := range t.Views {
		ids[i] = v.ID
	}
	return strings.Join(ids, " ")
}

// renderPage writes the page template name ("report" or "diff") of what build makes of the assets.
func renderPage(w io.Writer, name string, o HTMLOptions, build func(*assets, HTMLOptions) (any, error)) error {
	a, err := loadAssets()
	if err != nil {
		return err
	}
	if o.Top <= 0 {
		o.Top = defaultTop
	}
	p, err := build(a, o)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := a.pages.ExecuteTemplate(bw, name, p); err != nil {
		return fmt.Errorf("rendering the HTML %s: %w", name, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the HTML %s: %w", name, err)
	}
	return nil
}

// visible shows the bidirectional-text controls of s (U+061C, U+200E, U+200F, U+202A to U+202E,
// U+2066 to U+2069), which would reorder what a page shows around them, as "<U+202E>": a thread can
// name itself so that its name reads as another's. The terminal summary prints them as '?'
// (sanitize); a page can afford to say which they are.
func visible(s string) string {
	if strings.IndexFunc(s, isBidiControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isBidiControl(r) {
			fmt.Fprintf(&b, "<U+%04X>", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isBidiControl(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }

// scriptSafe makes JavaScript source safe to inline in a <script> element, where the HTML parser ends
// the element at the first "</script" and treats "<!--" specially. "</" becomes "<\/" and "<!--"
// becomes "<\!--", which mean the same in the only places they can occur in our scripts and ECharts:
// string literals, regular expressions and comments.
func scriptSafe(js string) string {
	return scriptEscaper.Replace(js)
}

var scriptEscaper = strings.NewReplacer("</", `<\/`, "<!--", `<\!--`)

// contentSecurityPolicy allows exactly the given inline scripts (by hash) and nothing else to run, and
// nothing at all to be fetched: defence in depth should escaping ever miss an injected script or event
// handler, and a guarantee that opening the page makes no network request. Inline styles stay
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
