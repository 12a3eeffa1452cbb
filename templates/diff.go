package templates

import "embed"

// DiffFS holds the page comparing two captures: diff.html (an html/template), diff.css and diff.js.
// The page also inlines report.css, report.js and ECharts from FS.
//
//go:embed diff.html diff.css diff.js
var DiffFS embed.FS
