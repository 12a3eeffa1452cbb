// Package templates holds klockstat's pages, the report, the diff and the scaling report, and the
// pinned ECharts library, embedded.
package templates

import "embed"

// FS holds page.html (the html/template set of both pages and their shared parts), page.css,
// page.js, the scaling report of a sweep (scale.html, scale.css, scale.js), the page of a what-if experiment (whatif.html, with scale.css and scale.js), and the parts of Apache ECharts the pages use: echarts.min.js, bundled from the npm
// release by update-echarts.sh as echarts-entry.js lists them, with its ECHARTS-LICENSE,
// ECHARTS-NOTICE and ECHARTS-VERSION.
//
//go:embed page.html page.css page.js scale.html scale.css scale.js whatif.html echarts.min.js ECHARTS-LICENSE ECHARTS-NOTICE ECHARTS-VERSION
var FS embed.FS
