// The charts of the report and of the diff. Fed by report/charts.go, which builds every chart's
// ECharts options, the tooltips' texts, and the names of the formatters below that the options use;
// report/diff_charts.go and report/timeline.go build theirs the same way.

const esc = (s) => echarts.format.encodeHTML(String(s));
const dot = (color) => (color ? '<span class="kl-dot" style="background:' + esc(color) + '"></span>' : "");

// A tip is what Go wrote for one point of a chart: {t: title, c: colour, r: [[label, value, colour]]}.
function tipHTML(tip) {
  let html = '<div class="kl-tip"><div class="kl-tip-title">' + dot(tip.c) + esc(tip.t) + "</div><table>";
  for (const [label, value, color] of tip.r) {
    html += "<tr><td>" + dot(color) + esc(label) + "</td><td>" + esc(value) + "</td></tr>";
  }
  return html + "</table></div>";
}

// The functions chart options name (chart.formatters): tips[series][point] for a tooltip of one
// point, tips[0][point] for one of an axis.
const formatters = {
  axisNS,
  tip: (tips) => function (p) {
    const list = Array.isArray(p) ? p : [p];
    if (list.length === 0) {
      return "";
    }
    const tip = (tips[Array.isArray(p) ? 0 : p.seriesIndex] || [])[list[0].dataIndex];
    return tip ? tipHTML(tip) : "";
  },
};

// stripeReaders lays decal (report/palette.go's readerDecal) over the series and the items of reader
// types (rwsem:R), whose colour is a light shade of their writer's: a series or a slice named by its
// type, a box of a box plot by its category.
function stripeReaders(option, decal) {
  const reader = (name) => typeof name === "string" && name.endsWith(":R");
  const stripe = (o) => (o.itemStyle = Object.assign({}, o.itemStyle, { decal }));
  const axis = [].concat(option.xAxis || [])[0];
  const categories = (axis && axis.type === "category" && axis.data) || [];
  for (const s of [].concat(option.series || [])) {
    if (reader(s.name)) {
      stripe(s);
    }
    (s.data || []).forEach((d, i) => {
      if (d !== null && typeof d === "object" && !Array.isArray(d) && reader(d.name !== undefined ? d.name : categories[i])) {
        stripe(d);
      }
    });
  }
}

function drawCharts() {
  const source = document.getElementById("klockstat-charts");
  if (!source) {
    return;
  }
  for (const c of JSON.parse(source.textContent)) {
    const option = c.option;
    for (const [path, name] of c.formatters) {
      const keys = path.split(".");
      let at = option;
      for (const k of keys.slice(0, -1)) {
        at = at[k];
      }
      at[keys[keys.length - 1]] = name === "tip" ? formatters.tip(c.tips) : formatters[name];
    }
    stripeReaders(option, c.readerDecal);
    echarts.init(document.getElementById(c.id)).setOption(option);
  }
  window.addEventListener("resize", function () {
    for (const el of document.querySelectorAll(".chart")) {
      const chart = echarts.getInstanceByDom(el);
      if (chart) {
        chart.resize();
      }
    }
  });
}
