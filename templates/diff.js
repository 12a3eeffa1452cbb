// klockstat diff: the formatters the charts' options name (klock.diff.*), and the rows table, rebuilt
// from the JSON of all rows with sorting, filtering and paging. It builds on report.js, which the page
// loads first: its formatters, tooltip and cell helpers, and its tables (klock.table), so that the diff
// escapes, sorts, filters and pages as the report does.
//
// Every string comes from the captures, that is from the kernel or from processes, so data only ever
// reaches the page through textContent and setAttribute, or, in ECharts tooltips, which take HTML,
// through echarts.format.encodeHTML.
"use strict";
(function () {
  const klock = window.klock;
  const { esc, pct, dot, tipTable, el, stackCell } = klock;
  const diff = {};
  klock.diff = diff;

  const data = klock.jsonOf("klockstat-diff-charts");
  const per = () => (data().per_second ? "/s" : "");

  // The formats of diff_html.go and diff_summary.go.
  function fmtDelta(ns) {
    const s = klock.fmtNS(ns);
    return s[0] !== "-" && s !== "0 ns" ? "+" + s : s;
  }
  function fmtCount(perSecond, n) {
    return n.toFixed(perSecond ? 1 : 0);
  }
  function fmtCountDelta(perSecond, n) {
    const s = fmtCount(perSecond, n);
    return n > 0 ? "+" + s : s;
  }
  function fmtRatio(b, a) {
    if (b === 0 && a === 0) {
      return "–";
    }
    if (b === 0) {
      return "new";
    }
    if (a === 0) {
      return "gone";
    }
    return "×" + (a / b).toFixed(2);
  }
  function fmtPct(b, a) {
    if (b === 0) {
      return a === 0 ? "+0.0%" : "from 0";
    }
    const p = ((a - b) * 100) / b;
    const factor = 1 + p / 100;
    if (factor >= 100) {
      return "×" + factor.toFixed(0);
    }
    if (factor >= 11) {
      return "×" + factor.toFixed(1);
    }
    return (p >= 0 ? "+" : "") + p.toFixed(1) + "%";
  }

  diff.axisDelta = (ns) => (ns < 0 ? "-" : ns > 0 ? "+" : "") + klock.axisNS(Math.abs(ns));

  function doughnut(side) {
    return function (p) {
      const d = data();
      const t = d.types[d.doughnuts[side][p.dataIndex]];
      const s = side === 0 ? t.before : t.after;
      return tipTable(dot(t.color) + esc(t.name), [
        ["total wait", klock.fmtNS(s.total_ns) + per() + " (" + pct(s.share) + ")"],
        ["waits", fmtCount(d.per_second, s.count) + per()],
        ["average", klock.fmtNS(s.mean_ns)],
      ]);
    };
  }

  diff.tooltip = {
    doughnutBefore: doughnut(0),
    doughnutAfter: doughnut(1),
    histogram(params) {
      const d = data();
      const list = Array.isArray(params) ? params : [params];
      if (list.length === 0) {
        return "";
      }
      const i = list[0].dataIndex;
      const r = d.ranges[i];
      const b = d.waits[0][i];
      const a = d.waits[1][i];
      return tipTable(esc("[" + klock.fmtNS(r.lo_ns) + ", " + klock.fmtNS(r.hi_ns) + ")"), [
        ["before", fmtCount(d.per_second, b) + " waits" + per()],
        ["after", fmtCount(d.per_second, a) + " waits" + per()],
        ["change", fmtPct(b, a)],
      ]);
    },
    box(p) {
      const t = data().types[p.dataIndex];
      const s = p.seriesIndex === 0 ? t.before : t.after;
      const name = p.seriesIndex === 0 ? "before" : "after";
      if (!s) {
        return tipTable(dot(t.color) + esc(t.name), [[name, "no waits"]]);
      }
      const f = klock.fmtNS;
      return tipTable(dot(t.color) + esc(t.name) + " " + name, [
        ["min", f(s.min_ns)], ["p25", f(s.p25_ns)], ["median", f(s.p50_ns)], ["p75", f(s.p75_ns)],
        ["p99", f(s.p99_ns)], ["max", f(s.max_ns)], ["mean", f(s.mean_ns)],
      ]);
    },
    changes(p) {
      const c = data().changes[p.dataIndex];
      const rows = [["lock type", c.type], ["lock", c.name || "unnamed"]];
      if (c.comm) {
        rows.push(["thread", c.comm]);
      }
      rows.push(
        ["status", c.status],
        ["before", klock.fmtNS(c.before_ns) + per()],
        ["after", klock.fmtNS(c.after_ns) + per()],
        ["change", fmtDelta(c.delta_ns) + per() + " (" + fmtPct(c.before_ns, c.after_ns) + ")"],
      );
      return tipTable(esc(c.caller), rows);
    },
  };

  // The rows table, whose columns are as klock.table takes them.

  const changeClass = (d) => (d > 0 ? "num worse" : d < 0 ? "num better" : "num");

  // compared returns the four columns of a value shown before, after, as a change and as a ratio,
  // as diff_html.go's comparedCells renders them. An additive value (a count, a total) is 0 on the
  // side a row is missing from; an average is not, and its change is unknown there.
  function compared(columns, key, get, fmt, fmtChange, title, additive) {
    const value = (side) => (side ? get(side) : additive ? 0 : null);
    const both = (r) => r.before !== null && r.after !== null;
    const change = (r) => (both(r) || additive ? value(r.after) - value(r.before) : null);
    const sideColumn = (which) => ({
      num: true,
      sort: (r) => (r[which] ? get(r[which]) : null),
      cell(r) {
        const side = r[which];
        if (!side) {
          return el("td", "num muted", "–");
        }
        const td = el("td", "num", fmt(get(side)));
        td.setAttribute("title", title(get(side)));
        return td;
      },
    });
    columns[key + "_b"] = sideColumn("before");
    columns[key + "_a"] = sideColumn("after");
    columns[key + "_d"] = {
      num: true,
      sort: change,
      cell(r) {
        const d = change(r);
        if (d === null) {
          return el("td", "num muted", "–");
        }
        const td = el("td", changeClass(d), fmtChange(d));
        td.setAttribute("title", title(d));
        return td;
      },
    };
    columns[key + "_r"] = {
      num: true,
      sort: (r) => {
        const d = change(r);
        if (d === null) {
          return null;
        }
        const b = value(r.before);
        return b === 0 ? (d === 0 ? 1 : Infinity) : value(r.after) / b;
      },
      cell(r) {
        const d = change(r);
        if (d === null) {
          return el("td", "num muted", "–");
        }
        return el("td", changeClass(d), fmtRatio(value(r.before), value(r.after)));
      },
    };
  }

  function makeColumns(perSecond) {
    const nsTitle = (ns) => ns.toFixed(1) + " ns";
    const textColumn = (get, cls) => ({
      sort: get,
      search: get,
      cell: (r) => el("td", cls ? cls(r) : "", get(r)),
    });
    const columns = {
      status: textColumn((r) => r.status, (r) => "status-" + r.status),
      type: textColumn((r) => r.type),
      comm: textColumn((r) => r.comm),
      caller: textColumn((r) => r.caller || "[unknown]", () => "mono"),
      lock: {
        sort: (r) => r.name,
        search: (r) => r.name || "unnamed",
        cell(r) {
          if (r.name) {
            return el("td", "mono", r.name);
          }
          const td = el("td", "muted", "unnamed");
          td.setAttribute("title", "all lock instances without a kernel symbol");
          return td;
        },
      },
      p99: {
        cell(r) {
          const td = el("td", "muted", "per type");
          const side = (v) => (v === null ? "none" : klock.fmtNS(v));
          td.setAttribute("title", "p99 of all " + r.type + " waits: " + side(r.p99[0]) + " before, " + side(r.p99[1]) + " after");
          return td;
        },
      },
      stack: { search: (r) => r.stack.join("\n"), cell: (r) => stackCell(r.stack) },
    };
    compared(columns, "total", (s) => s.total_ns, klock.fmtNS, fmtDelta, nsTitle, true);
    const count = (n) => fmtCount(perSecond, n);
    compared(columns, "count", (s) => s.count, count, (n) => fmtCountDelta(perSecond, n), count, true);
    compared(columns, "avg", (s) => s.mean_ns, klock.fmtNS, fmtDelta, nsTitle, false);
    return columns;
  }

  function initTable() {
    const section = document.getElementById("diff-rows-section");
    const source = document.getElementById("klockstat-diff-rows");
    if (section && source) {
      const all = JSON.parse(source.textContent);
      const table = document.getElementById("table-diff-rows");
      const view = klock.table.make({
        table, pager: section.querySelector(".pager"), columns: makeColumns(all.per_second), rows: all.rows.slice(),
        keys: table.dataset.cols.split(" "), // in the order of the cells: the headings span two rows
        size: Number(section.dataset.pageSize) || 20, sortKey: "",
        title: (th, key) => "Sort by " + key.replace(/_b$/, " before").replace(/_a$/, " after").replace(/_d$/, " change").replace(/_r$/, " ratio"),
      });
      klock.table.onFilter(document.getElementById("diff-filter"), (q) => klock.table.filter(view, q));
      document.getElementById("diff-toolbar").hidden = false;
      klock.table.filter(view, "");
    }
    // Tests and styles wait for this mark of a page whose script has run.
    document.documentElement.classList.add("js");
  }

  document.addEventListener("DOMContentLoaded", initTable);
})();
