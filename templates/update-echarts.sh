#!/usr/bin/env bash
# Refreshes the pinned copy of Apache ECharts that the HTML report inlines, from
# the npm package `echarts`: ./update-echarts.sh 5.6.0
#
# go-echarts v2.6 writes options for ECharts 5; stay on 5.x unless go-echarts
# moves. Review the diff of ECHARTS-NOTICE and ECHARTS-LICENSE before committing.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 VERSION   (e.g. 5.6.0)" >&2
	exit 2
fi
version=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$work" && npm pack --silent "echarts@$version" >/dev/null)
tar -xzf "$work/echarts-$version.tgz" -C "$work"

cp "$work/package/dist/echarts.min.js" "$here/echarts.min.js"
cp "$work/package/LICENSE" "$here/ECHARTS-LICENSE"
cp "$work/package/NOTICE" "$here/ECHARTS-NOTICE"
printf '%s\n' "$version" >"$here/ECHARTS-VERSION"
echo "templates: ECharts $version ($(wc -c <"$here/echarts.min.js") bytes)"
