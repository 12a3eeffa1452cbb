// klockstat report: the formatters the charts' options name (klock.*), and the lock tables, rebuilt from
// the capture embedded in the page with sorting, filtering and paging. The diff page loads this script
// before diff.js, which builds its tooltips and its table on the helpers exposed here (klock.el,
// klock.tipTable, klock.table, …), so that both pages escape, sort, filter and page alike.
//
// Every string of a capture comes from the kernel or from processes (a thread can name itself
// "<img src=x onerror=...>"), so data only ever reaches the page through textContent and setAttribute,
// or, in ECharts tooltips, which take HTML, through echarts.format.encodeHTML.
"use strict";
(function () {
  const klock = {};
  window.klock = klock;

  // fmtNS renders nanoseconds as report.FormatDuration does: "812 ns", "15.64 us", "1.04 ms", "2.50 s".
  klock.fmtNS = function (ns) {
    let sign = "";
    if (ns < 0) {
      sign = "-";
      ns = -ns;
    }
    const r = Math.round(ns);
    if (r < 1000) {
      return (r === 0 ? "" : sign) + r + " ns";
    }
    if (Math.round(ns / 10) < 100000) {
      return sign + (ns / 1e3).toFixed(2) + " us";
    }
    if (Math.round(ns / 1e4) < 100000) {
      return sign + (ns / 1e6).toFixed(2) + " ms";
    }
    return sign + (ns / 1e9).toFixed(2) + " s";
  };

  // axisNS labels an axis tick briefly, as report's axisDuration does: "512 ns", "4.1 us", "131 us".
  klock.axisNS = function (ns) {
    let v = ns;
    let unit = "ns";
    for (const [name, scale] of [["us", 1e3], ["ms", 1e6], ["s", 1e9]]) {
      if (ns >= scale) {
        v = ns / scale;
        unit = name;
      }
    }
    const s = v < 10 ? v.toFixed(1).replace(/\.0$/, "") : v.toFixed(0);
    return s + " " + unit;
  };

  // jsonOf returns a reader of the JSON in the element with the given id. The chart data is parsed when
  // a tooltip first needs it, not while the page loads.
  klock.jsonOf = function (id) {
    let parsed = null;
    return function () {
      if (parsed === null) {
        parsed = JSON.parse(document.getElementById(id).textContent);
      }
      return parsed;
    };
  };
  const data = klock.jsonOf("klockstat-charts");

  // ECharts puts what a tooltip formatter returns into the page as HTML.
  const esc = (s) => echarts.format.encodeHTML(String(s));
  const pct = (x) => (100 * x).toFixed(1) + "%";
  const dot = (color) => '<span class="kl-dot" style="background:' + esc(color) + '"></span>';
  // tipTable's title is HTML, for a dot before the name: callers escape what goes into it.
  function tipTable(title, rows) {
    let html = '<div class="kl-tip"><div class="kl-tip-title">' + title + "</div><table>";
    for (const [label, value] of rows) {
      html += "<tr><td>" + esc(label) + "</td><td>" + esc(value) + "</td></tr>";
    }
    return html + "</table></div>";
  }
  Object.assign(klock, { esc, pct, dot, tipTable });

  klock.label = {
    share: (p) => p.percent.toFixed(1) + "%",
  };

  klock.tooltip = {
    doughnut(p) {
      const m = data().measure;
      const t = data().types[p.dataIndex];
      return tipTable(dot(t.color) + esc(t.name), [
        ["total " + m.time, klock.fmtNS(t.total_ns) + " (" + pct(t.share) + ")"],
        [m.events, String(t.count)],
        ["average", klock.fmtNS(t.mean_ns)],
      ]);
    },
    // The box chart's second series, when there is one, is of hold times.
    box(p) {
      const hold = p.seriesIndex === 1;
      const t = (hold ? data().holds : data().types)[p.dataIndex];
      const f = klock.fmtNS;
      return tipTable(dot(t.color) + esc(t.name), [
        [hold ? "holds" : data().measure.events, String(t.count)],
        ["min", f(t.min_ns)], ["p25", f(t.p25_ns)], ["median", f(t.p50_ns)], ["p75", f(t.p75_ns)],
        ["p95", f(t.p95_ns)], ["p99", f(t.p99_ns)], ["max", f(t.max_ns)], ["mean", f(t.mean_ns)],
      ]);
    },
    histogram(params) {
      const d = data();
      const list = Array.isArray(params) ? params : [params];
      if (list.length === 0) {
        return "";
      }
      const r = d.ranges[list[0].dataIndex];
      const rows = [];
      let total = 0;
      for (const p of list) {
        const n = Number(p.value) || 0;
        if (n > 0) {
          rows.push([d.types[p.seriesIndex], n]);
          total += n;
        }
      }
      let html = '<div class="kl-tip"><div class="kl-tip-title">' +
        esc("[" + klock.fmtNS(r.lo_ns) + ", " + klock.fmtNS(r.hi_ns) + ")") + "</div><table>";
      for (const [t, n] of rows) {
        html += "<tr><td>" + dot(t.color) + esc(t.name) + "</td><td>" + esc(n) + "</td></tr>";
      }
      return html + "<tr><td>all types</td><td>" + esc(total) + " " + esc(d.measure.events) + "</td></tr></table></div>";
    },
    callers(p) {
      const m = data().measure;
      const c = data().callers[p.dataIndex];
      return tipTable(esc(c.caller), [
        ["lock type", c.type],
        ["total " + m.time, klock.fmtNS(c.total_ns)],
        [m.events, String(c.count)],
        ["average", klock.fmtNS(c.mean_ns)],
        ["max", klock.fmtNS(c.max_ns)],
      ]);
    },
  };

  window.addEventListener("resize", function () {
    for (const el of document.querySelectorAll(".chart")) {
      const chart = echarts.getInstanceByDom(el);
      if (chart) {
        chart.resize();
      }
    }
  });

  // Tables.

  // A table is a view of rows through columns, each an object with
  //   cell(r): the <td> of row r;
  //   sort(r): what r is ordered by, a number or a string, or null where it has none ("various", a side
  //     a row is missing from), which goes last either way; a column without sort is not sortable;
  //   search(r): what the filter looks for its text in, if anything;
  //   num: sorted largest first on the first click.
  // The report's three views and the diff's rows share this, so the two pages behave alike.

  const text = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

  const mean = (total, n) => (n === 0 ? 0 : total / n);

  // Columns of nanoseconds show a duration, with the exact number as the cell's title.
  function nsColumn(get, title) {
    return {
      num: true,
      sort: get,
      cell(r) {
        const ns = get(r);
        const td = el("td", "num", klock.fmtNS(ns));
        td.setAttribute("title", title ? title(r) : ns + " ns");
        return td;
      },
    };
  }

  function numColumn(get) {
    return { num: true, sort: get, search: get, cell: (r) => el("td", "num", String(get(r))) };
  }

  // A text of null is a group's "various".
  function textColumn(get, { cls = "", title, search = get } = {}) {
    return {
      sort: get,
      search,
      cell(r) {
        const v = get(r);
        if (v === null) {
          return el("td", "muted", "various");
        }
        const td = el("td", cls, v);
        const t = title ? title(r) : "";
        if (t) {
          td.setAttribute("title", t);
        }
        return td;
      },
    };
  }

  // A row is a record of the capture, or a group of records with the same fields, where a field its
  // records differ in is null ("various"). Hold columns exist when holds were timed; a record of holds
  // only has no waits.
  function makeColumns(hashed) {
    const lockID = (a) => (hashed ? a.slice(2).padStart(16, "0") : a);
    const avg = (total, n) => (r) => mean(total(r), n(r));
    const avgTitle = (get) => (r) => get(r).toFixed(1) + " ns";
    const waitAvg = avg((r) => r.total_ns, (r) => r.count);
    const holdAvg = avg((r) => r.hold_total_ns || 0, (r) => r.hold_count || 0);
    const stackText = (r) => r.stack.join("\n");
    return {
      lock: textColumn((r) => (r.lock === null ? null : r.name || lockID(r.lock)), {
        cls: "mono",
        title: (r) => (r.lock === null ? "" : "lock " + lockID(r.lock)),
        search: (r) => (r.lock === null ? "" : r.name + " " + lockID(r.lock)),
      }),
      type: textColumn((r) => r.type),
      comm: textColumn((r) => r.comm),
      pid: numColumn((r) => r.pid),
      tid: numColumn((r) => r.tid),
      records: numColumn((r) => r.records),
      count: numColumn((r) => r.count),
      total: nsColumn((r) => r.total_ns),
      avg: nsColumn(waitAvg, avgTitle(waitAvg)),
      max: nsColumn((r) => r.max_ns),
      hold_count: numColumn((r) => r.hold_count || 0),
      hold_total: nsColumn((r) => r.hold_total_ns || 0),
      hold_avg: nsColumn(holdAvg, avgTitle(holdAvg)),
      hold_max: nsColumn((r) => r.hold_max_ns || 0),
      caller: textColumn((r) => (r.caller === null ? null : r.caller || "[unknown]"), { cls: "mono" }),
      stack: { sort: stackText, search: stackText, cell: (r) => stackCell(r.stack) },
    };
  }

  // compareRecords is the order of capture.Sort: total wait, then type, caller, lock, pid, tid.
  function compareRecords(a, b) {
    return b.total_ns - a.total_ns || text(a.type, b.type) || text(a.caller, b.caller) ||
      text(BigInt(a.lock), BigInt(b.lock)) || a.pid - b.pid || a.tid - b.tid;
  }

  function group(records, keyOf) {
    const byKey = new Map();
    const groups = [];
    for (const r of records) {
      const k = keyOf(r);
      let g = byKey.get(k);
      if (g === undefined) {
        g = {
          key: k, type: r.type, lock: r.lock, name: r.name, comm: r.comm, caller: r.caller,
          count: 0, total_ns: 0, max_ns: 0, hold_count: 0, hold_total_ns: 0, hold_max_ns: 0,
          records: 0, stack: r.stack, heaviest: r.total_ns,
        };
        byKey.set(k, g);
        groups.push(g);
      } else {
        if (g.lock !== r.lock) {
          g.lock = null;
          g.name = "";
        }
        if (g.comm !== r.comm) {
          g.comm = null;
        }
        if (g.caller !== r.caller) {
          g.caller = null;
        }
        if (r.total_ns > g.heaviest) {
          g.heaviest = r.total_ns;
          g.stack = r.stack;
        }
      }
      g.count += r.count;
      g.total_ns += r.total_ns;
      g.max_ns = Math.max(g.max_ns, r.max_ns);
      g.hold_count += r.hold_count || 0;
      g.hold_total_ns += r.hold_total_ns || 0;
      g.hold_max_ns = Math.max(g.hold_max_ns, r.hold_max_ns || 0);
      g.records++;
    }
    // The order of capture.GroupBy: total wait, count, key.
    groups.sort((a, b) => b.total_ns - a.total_ns || b.count - a.count || text(a.key, b.key));
    return groups;
  }

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

  function matches(view, r, q) {
    for (const key of view.keys) {
      const search = view.columns[key].search;
      const v = search ? search(r) : null;
      if (v !== null && v !== undefined && String(v).toLowerCase().includes(q)) {
        return true;
      }
    }
    return false;
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
    view.filtered = q === "" ? view.rows : view.rows.filter((r) => matches(view, r, q));
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
        return (x === null) - (y === null); // "various" or a missing side last
      }
      // Not x - y: a ratio from nothing is Infinity, and Infinity - Infinity is NaN.
      return dir * (typeof x === "number" ? (x === y ? 0 : x < y ? -1 : 1) : text(x, y));
    });
    applyFilter(view, view.query);
  }

  function makePager(view, box) {
    const sizes = [...new Set([view.size, 50, 100, 500])].sort((a, b) => a - b);
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

  // makeTable lets the headings of table sort rows (title(th, key) tells what a heading sorts by) and
  // pages them into it, size rows at a time, with buttons in the box pager. keys are the columns in the
  // order of the cells, which need not be the headings' order. Nothing is shown until the first filter.
  function makeTable({ table, pager, columns, rows, keys, size, sortKey, title }) {
    const view = {
      table, columns, rows, keys, size, page: 0, sortKey, sortDesc: true, query: "", filtered: rows,
    };
    for (const th of table.querySelectorAll("th[data-col]")) {
      const key = th.dataset.col;
      if (!columns[key].sort) {
        continue;
      }
      th.tabIndex = 0;
      th.classList.add("sortable");
      th.title = title(th, key);
      th.addEventListener("click", () => sortBy(view, key));
      th.addEventListener("keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          sortBy(view, key);
        }
      });
    }
    view.pager = makePager(view, pager);
    return view;
  }

  // onFilter applies what is typed into input once typing pauses: filtering 100,000 rows on every key
  // would make typing lag.
  function onFilter(input, apply) {
    let timer = 0;
    input.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => apply(input.value.trim().toLowerCase()), 120);
    });
  }

  Object.assign(klock, { el, stackCell });
  klock.table = { make: makeTable, filter: applyFilter, onFilter };

  function initTables() {
    const section = document.getElementById("tables");
    const source = document.getElementById("klockstat-capture");
    if (!section || !source) {
      return;
    }
    let cap;
    try {
      cap = JSON.parse(source.textContent);
    } catch (e) {
      section.insertBefore(el("p", "note", "The embedded capture could not be read (" + e.message + "); only the top rows are shown."), section.children[1]);
      return;
    }
    document.documentElement.classList.add("js");
    const records = cap.records.slice().sort(compareRecords);
    const columns = makeColumns(Boolean(cap.meta.addresses_hashed));
    const pageSize = Number(section.dataset.pageSize) || 20;
    const sources = {
      threads: () => records,
      callers: () => group(records, (r) => r.type + " " + r.caller),
      locks: () => group(records, (r) => r.type + " " + r.lock),
    };
    const views = {};
    const filter = document.getElementById("klockstat-filter");
    const tabs = section.querySelectorAll(".tab");

    function view(id) {
      if (views[id]) {
        return views[id];
      }
      const root = document.getElementById("view-" + id);
      const table = root.querySelector("table");
      views[id] = makeTable({
        table, pager: root.querySelector(".pager"), columns, rows: sources[id](),
        keys: [...table.tHead.rows[0].cells].map((th) => th.dataset.col),
        size: pageSize, sortKey: "total",
        title: (th) => "Sort by " + th.textContent.toLowerCase(),
      });
      return views[id];
    }

    function show(id) {
      for (const tab of tabs) {
        tab.setAttribute("aria-selected", String(tab.dataset.view === id));
      }
      for (const root of section.querySelectorAll(".view")) {
        root.hidden = root.dataset.view !== id;
      }
      const v = view(id);
      applyFilter(v, filter.value.trim().toLowerCase());
    }

    let active = "threads";
    for (const tab of tabs) {
      tab.addEventListener("click", () => {
        active = tab.dataset.view;
        show(active);
      });
    }
    onFilter(filter, (q) => applyFilter(view(active), q));
    document.getElementById("klockstat-toolbar").hidden = false;
    show(active);
  }

  document.addEventListener("DOMContentLoaded", initTables);
})();
