#!/usr/bin/env bash
# Rebuilds the copy of Apache ECharts that the HTML pages inline, from the npm package `echarts`:
# ./update-echarts.sh 5.6.0
#
# Only what echarts-entry.js imports is bundled (esbuild, minified): the charts and components the
# pages draw, about half of the full echarts.min.js. go-echarts v2.6 writes options for ECharts 5;
# stay on 5.x unless go-echarts moves. Review the diff of ECHARTS-NOTICE and ECHARTS-LICENSE before
# committing. Needs node and npm.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 VERSION   (e.g. 5.6.0)" >&2
	exit 2
fi
version=$1
esbuild=0.24.0
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cp "$here/echarts-entry.js" "$work/entry.js"
(cd "$work" && npm install --silent --no-save --no-audit --no-fund "echarts@$version" "esbuild@$esbuild" >/dev/null)
"$work/node_modules/.bin/esbuild" "$work/entry.js" --bundle --minify --format=iife --target=es2020 \
	--legal-comments=none --log-level=warning --outfile="$here/echarts.min.js"

cp "$work/node_modules/echarts/LICENSE" "$here/ECHARTS-LICENSE"
cp "$work/node_modules/echarts/NOTICE" "$here/ECHARTS-NOTICE"
printf '%s\n' "$version" >"$here/ECHARTS-VERSION"
echo "templates: ECharts $version, charts of echarts-entry.js ($(wc -c <"$here/echarts.min.js") bytes)"
