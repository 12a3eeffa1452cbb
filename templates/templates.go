// Package templates holds the report's HTML, CSS and JavaScript and the pinned ECharts library, embedded.
package templates

import "embed"

// FS holds report.html (an html/template), report.css, report.js, and Apache ECharts as released on npm:
// echarts.min.js with its ECHARTS-LICENSE, ECHARTS-NOTICE and ECHARTS-VERSION, refreshed by
// update-echarts.sh.
//
//go:embed report.html report.css report.js echarts.min.js ECHARTS-LICENSE ECHARTS-NOTICE ECHARTS-VERSION
var FS embed.FS
