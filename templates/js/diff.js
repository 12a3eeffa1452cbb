// What only the diff of two captures shows: changes and ratios in its tables, signed durations on
// its chart's axis. Fed by report/diff_html.go (the diff's views, whose columns of kinds "delta" and
// "ratio" these cells render) and report/diff_charts.go (the chart of changes, which names axisDelta).

formatters.axisDelta = (ns) => signed(ns, ns < 0 ? "-" + axisNS(-ns) : axisNS(ns));

// change is the class of a cell of change v: red where the after side waits more, green less.
const change = (v) => (v > 0 ? "num worse" : v < 0 ? "num better" : "num");

// deltaCell renders change v of column c, in c.unit.
function deltaCell(c, v) {
  if (c.unit === "ns") {
    const s = fmtNS(v);
    const td = el("td", change(v), s === "0 ns" ? s : signed(v, s));
    td.setAttribute("title", v.toFixed(1) + " ns");
    return td;
  }
  if (c.unit === "points") {
    return el("td", "num", signed(v, v.toFixed(c.decimals || 0)) + " pts");
  }
  return el("td", change(v), signed(v, v.toFixed(c.decimals || 0)));
}

// ratioCell renders ratio v, after over before: -1 for a row that is new, 0 for one that is gone.
function ratioCell(v) {
  if (v === -1) {
    return el("td", "num worse", "new");
  }
  if (v === 0) {
    return el("td", "num better", "gone");
  }
  return el("td", change(v - 1), "×" + v.toFixed(2));
}
