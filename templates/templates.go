// Package templates holds klockstat's pages, the report and the diff, and the pinned ECharts library,
// embedded.
package templates

import "embed"

// FS holds page.html (the html/template set of both pages and their shared parts), page.css,
// page.js, and Apache ECharts as released on npm: echarts.min.js with its ECHARTS-LICENSE,
// ECHARTS-NOTICE and ECHARTS-VERSION, refreshed by update-echarts.sh.
//
//go:embed page.html page.css page.js echarts.min.js ECHARTS-LICENSE ECHARTS-NOTICE ECHARTS-VERSION
var FS embed.FS
