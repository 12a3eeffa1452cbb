// Package templates holds klockstat's pages, the report, the diff and the scaling report, and the
// pinned ECharts library, embedded.
package templates

import (
	"embed"
	"fmt"
	"strings"
)

// FS holds page.html (the html/template set of both pages and their shared parts), page.css, the
// parts of the pages' script (js/, joined by PageScript), the scaling report of a sweep (scale.html,
// scale.css, js/scale.js), the page of a what-if experiment (whatif.html, with scale.css and
// js/scale.js), and the parts of Apache ECharts the pages use: echarts.min.js, bundled from the npm
// release by update-echarts.sh as echarts-entry.js lists them, with its ECHARTS-LICENSE,
// ECHARTS-NOTICE and ECHARTS-VERSION.
//
//go:embed page.html page.css js/*.js scale.html scale.css whatif.html echarts.min.js ECHARTS-LICENSE ECHARTS-NOTICE ECHARTS-VERSION
var FS embed.FS

// pageScripts are the parts of the script of the report and the diff, one file a kind of view, in
// the order PageScript joins them: a part may use what the parts before it define.
var pageScripts = []string{
	"js/util.js",   // formats, elements, the page data
	"js/charts.js", // report/charts.go
	"js/diff.js",   // report/diff_html.go, report/diff_charts.go
	"js/cells.js",  // report/views.go
	"js/tables.js", // report/views.go
	"js/flame.js",  // report/flame.go
	"js/main.js",   // starts the others
}

// PageScript is page.js, the script of the report and the diff, which the report's Go code and
// comments name so: the parts of pageScripts joined in one function, so that they share their names without making them the page's globals. Joining the files
// as they are, without a bundler, keeps the page's script the source a reader opens.
func PageScript() (string, error) {
	var b strings.Builder
	b.WriteString("\"use strict\";\n(function () {\n")
	for _, name := range pageScripts {
		part, err := FS.ReadFile(name)
		if err != nil {
			return "", fmt.Errorf("joining the page's script: %w", err)
		}
		fmt.Fprintf(&b, "// %s\n", name)
		b.Write(part)
		b.WriteString("\n")
	}
	b.WriteString("})();\n")
	return b.String(), nil
}
