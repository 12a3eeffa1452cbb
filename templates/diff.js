// klockstat diff: the formatters the charts' options name (klock.diff.*), and the rows table, rebuilt
// from the JSON of all rows with sorting, filtering and paging. It builds on report.js (klock.fmtNS,
// klock.axisNS, klock.label), which the page loads first.
//
// Every string comes from the captures, that is from the kernel or from processes, so data only ever
// reaches the page through textContent and setAttribute, or, in ECharts tooltips, which take HTML,
// through echarts.format.encodeHTML.
"use strict";
(function () {
  const klock = window.klock;
  const diff = {};
  klock.diff = diff;

  let chartData = null;
  function data() {
    if (chartData === null) {
      chartData = JSON.parse(document.getElementById("klockstat-diff-charts").textContent);
    }
    return chartData;
  }

  const esc = (s) => echarts.format.encodeHTML(String(s));
  const pct = (x) => (100 * x).toFixed(1) + "%";
  const dot = (color) => '<span class="kl-dot" style="background:' + esc(color) + '"></span>';
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

  function tipTable(title, rows) {
    let html = '<div class="kl-tip"><div class="kl-tip-title">' + title + "</div><table>";
    for (const [label, value] of rows) {
      html += "<tr><td>" + esc(label) + "</td><td>" + esc(value) + "</td></tr>";
    }
    return html + "</table></div>";
  }

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

  // The rows table.

  const text = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

  function el(tag, cls, content) {
    const e = document.createElement(tag);
    if (cls) {
      e.className = cls;
    }
    if (content !== undefined) {
      e.textContent = content;
    }
    return e;
  }

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

  function stackCell(frames) {
    const td = el("td", "stack");
    if (frames.length === 0) {
      td.appendChild(el("span", "muted", "no stack"));
      return td;
    }
    const details = el("details");
    details.appendChild(el("summary", "", frames.length + (frames.length === 1 ? " frame" : " frames")));
    // The frames are only put into the page when the stack is opened: a page of 500 rows stays light.
    details.addEventListener("toggle", function () {
      if (details.open && details.querySelector("ol") === null) {
        const ol = el("ol");
        for (const f of frames) {
          ol.appendChild(el("li", "", f));
        }
        details.appendChild(ol);
      }
    });
    td.appendChild(details);
    return td;
  }

  function render(view) {
    const rows = view.filtered;
    const pages = Math.max(1, Math.ceil(rows.length / view.size));
    view.page = Math.min(view.page, pages - 1);
    const start = view.page * view.size;
    const frag = document.createDocumentFragment();
    for (const r of rows.slice(start, start + view.size)) {
      const tr = el("tr");
      for (const key of view.keys) {
        tr.appendChild(view.columns[key].cell(r));
      }
      frag.appendChild(tr);
    }
    if (rows.length === 0) {
      const tr = el("tr", "empty-row");
      const td = el("td", "", view.rows.length ? "No rows match the filter." : "No rows.");
      td.colSpan = view.keys.length;
      tr.appendChild(td);
      frag.appendChild(tr);
    }
    view.table.tBodies[0].replaceChildren(frag);
    for (const th of view.table.querySelectorAll("th[data-col]")) {
      if (th.dataset.col === view.sortKey) {
        th.setAttribute("aria-sort", view.sortDesc ? "descending" : "ascending");
      } else {
        th.removeAttribute("aria-sort");
      }
    }
    const p = view.pager;
    const end = Math.min(start + view.size, rows.length);
    p.info.textContent = rows.length === 0 ? "0 rows" :
      "Rows " + (start + 1) + "–" + end + " of " + rows.length +
      (rows.length !== view.rows.length ? " (filtered from " + view.rows.length + ")" : "");
    p.prev.disabled = view.page === 0;
    p.next.disabled = view.page >= pages - 1;
  }

  function applyFilter(view, q) {
    view.query = q;
    view.filtered = q === "" ? view.rows : view.rows.filter(function (r) {
      for (const key of view.keys) {
        const search = view.columns[key].search;
        if (search && String(search(r)).toLowerCase().includes(q)) {
          return true;
        }
      }
      return false;
    });
    view.page = 0;
    render(view);
  }

  function sortBy(view, key) {
    const col = view.columns[key];
    if (view.sortKey === key) {
      view.sortDesc = !view.sortDesc;
    } else {
      view.sortKey = key;
      view.sortDesc = Boolean(col.num);
    }
    const dir = view.sortDesc ? -1 : 1;
    view.rows.sort(function (a, b) {
      const x = col.sort(a);
      const y = col.sort(b);
      if (x === null || y === null) {
        return (x === null) - (y === null); // missing values last
      }
      return dir * (typeof x === "number" ? (x === y ? 0 : x < y ? -1 : 1) : text(x, y));
    });
    applyFilter(view, view.query);
  }

  function makePager(view, box, sizes) {
    const prev = el("button", "", "‹ Prev");
    const next = el("button", "", "Next ›");
    prev.type = next.type = "button";
    const info = el("span", "info");
    const select = el("select");
    select.setAttribute("aria-label", "Rows per page");
    for (const n of sizes) {
      const o = el("option", "", n + " rows per page");
      o.value = String(n);
      select.appendChild(o);
    }
    select.value = String(view.size);
    prev.addEventListener("click", () => {
      view.page--;
      render(view);
    });
    next.addEventListener("click", () => {
      view.page++;
      render(view);
    });
    select.addEventListener("change", () => {
      view.size = Number(select.value);
      view.page = 0;
      render(view);
    });
    box.replaceChildren(prev, next, info, el("span", "spacer"), select);
    box.hidden = false;
    return { prev, next, info };
  }

  function initTable() {
    const section = document.getElementById("diff-rows-section");
    const source = document.getElementById("klockstat-diff-rows");
    if (section && source) {
      const all = JSON.parse(source.textContent);
      const table = document.getElementById("table-diff-rows");
      const pageSize = Number(section.dataset.pageSize) || 20;
      const view = {
        table, columns: makeColumns(all.per_second), rows: all.rows.slice(), keys: [],
        size: pageSize, page: 0, sortKey: "", sortDesc: true, query: "",
      };
      view.keys = table.dataset.cols.split(" "); // in the order of the cells
      for (const th of table.querySelectorAll("th[data-col]")) {
        const key = th.dataset.col;
        if (!view.columns[key].sort) {
          continue;
        }
        th.tabIndex = 0;
        th.classList.add("sortable");
        th.title = "Sort by " + key.replace(/_b$/, " before").replace(/_a$/, " after").replace(/_d$/, " change").replace(/_r$/, " ratio");
        th.addEventListener("click", () => sortBy(view, key));
        th.addEventListener("keydown", (e) => {
          if (e.key === "Enter" || e.key === " ") {
            e.preventDefault();
            sortBy(view, key);
          }
        });
      }
      const sizes = [...new Set([pageSize, 50, 100, 500])].sort((a, b) => a - b);
      view.pager = makePager(view, section.querySelector(".pager"), sizes);
      const filter = document.getElementById("diff-filter");
      let timer = 0;
      filter.addEventListener("input", () => {
        clearTimeout(timer);
        timer = setTimeout(() => applyFilter(view, filter.value.trim().toLowerCase()), 120);
      });
      document.getElementById("diff-toolbar").hidden = false;
      applyFilter(view, "");
    }
    // Tests and styles wait for this mark of a page whose script has run.
    document.documentElement.classList.add("js");
  }

  document.addEventListener("DOMContentLoaded", initTable);
})();
