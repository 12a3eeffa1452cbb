// klockstat report: the formatters the charts' options name (klock.*), and the lock tables, rebuilt from
// the capture embedded in the page with sorting, filtering and paging.
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

  let chartData = null;
  function data() {
    if (chartData === null) {
      chartData = JSON.parse(document.getElementById("klockstat-charts").textContent);
    }
    return chartData;
  }

  const esc = (s) => echarts.format.encodeHTML(String(s));
  const pct = (x) => (100 * x).toFixed(1) + "%";
  const dot = (color) => '<span class="kl-dot" style="background:' + esc(color) + '"></span>';
  function tipTable(title, rows) {
    let html = '<div class="kl-tip"><div class="kl-tip-title">' + title + "</div><table>";
    for (const [label, value] of rows) {
      html += "<tr><td>" + esc(label) + "</td><td>" + esc(value) + "</td></tr>";
    }
    return html + "</table></div>";
  }

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

  const text = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

  const mean = (total, n) => (n === 0 ? 0 : total / n);

  // A row is a record of the capture, or a group of records with the same fields, where a field its
  // records differ in is null ("various"). Hold columns exist when holds were timed; a record of holds
  // only has no waits.
  function makeColumns(hashed) {
    const lockID = (a) => (hashed ? a.slice(2).padStart(16, "0") : a);
    return {
      lock: {
        text: (r) => (r.lock === null ? null : r.name || lockID(r.lock)),
        title: (r) => (r.lock === null ? "" : "lock " + lockID(r.lock)),
        search: (r) => (r.lock === null ? "" : r.name + " " + lockID(r.lock)),
        cls: "mono",
      },
      type: { text: (r) => r.type },
      comm: { text: (r) => r.comm },
      pid: { num: (r) => r.pid },
      tid: { num: (r) => r.tid },
      records: { num: (r) => r.records },
      count: { num: (r) => r.count },
      total: { ns: (r) => r.total_ns },
      avg: { ns: (r) => mean(r.total_ns, r.count), title: (r) => mean(r.total_ns, r.count).toFixed(1) + " ns" },
      max: { ns: (r) => r.max_ns },
      hold_count: { num: (r) => r.hold_count || 0 },
      hold_total: { ns: (r) => r.hold_total_ns || 0 },
      hold_avg: { ns: (r) => mean(r.hold_total_ns || 0, r.hold_count || 0), title: (r) => mean(r.hold_total_ns || 0, r.hold_count || 0).toFixed(1) + " ns" },
      hold_max: { ns: (r) => r.hold_max_ns || 0 },
      caller: { text: (r) => (r.caller === null ? null : r.caller || "[unknown]"), cls: "mono" },
      stack: { stack: true, text: (r) => r.stack.join("\n") },
    };
  }

  function valueOf(col, r) {
    if (col.num) {
      return col.num(r);
    }
    if (col.ns) {
      return col.ns(r);
    }
    return col.text(r);
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

  function renderRow(view, r) {
    const tr = el("tr");
    for (const key of view.keys) {
      const col = view.columns[key];
      if (col.stack) {
        tr.appendChild(stackCell(r.stack));
        continue;
      }
      let td;
      if (col.num) {
        td = el("td", "num", String(col.num(r)));
      } else if (col.ns) {
        const ns = col.ns(r);
        td = el("td", "num", klock.fmtNS(ns));
        td.setAttribute("title", col.title ? col.title(r) : ns + " ns");
      } else {
        const v = col.text(r);
        if (v === null) {
          td = el("td", "muted", "various");
        } else {
          td = el("td", col.cls || "", v);
          const title = col.title ? col.title(r) : "";
          if (title) {
            td.setAttribute("title", title);
          }
        }
      }
      tr.appendChild(td);
    }
    return tr;
  }

  function matches(view, r, q) {
    for (const key of view.keys) {
      const col = view.columns[key];
      let v;
      if (col.search) {
        v = col.search(r);
      } else if (col.num) {
        v = col.num(r);
      } else if (col.ns) {
        continue;
      } else {
        v = col.text(r);
      }
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
      frag.appendChild(renderRow(view, r));
    }
    if (rows.length === 0) {
      const tr = el("tr", "empty-row");
      const td = el("td", "", view.rows.length ? "No rows match the filter." : "No rows.");
      td.colSpan = view.keys.length;
      tr.appendChild(td);
      frag.appendChild(tr);
    }
    view.table.tBodies[0].replaceChildren(frag);

    for (const th of view.table.tHead.rows[0].cells) {
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
      view.sortDesc = Boolean(col.num || col.ns);
    }
    const dir = view.sortDesc ? -1 : 1;
    view.rows.sort(function (a, b) {
      const x = valueOf(col, a);
      const y = valueOf(col, b);
      if (x === null || y === null) {
        return (x === null) - (y === null); // "various" last
      }
      return dir * (typeof x === "number" ? x - y : text(x, y));
    });
    applyFilter(view, view.query);
  }

  function makePager(view, sizes) {
    const box = view.root.querySelector(".pager");
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
    const sizes = [...new Set([pageSize, 50, 100, 500])].sort((a, b) => a - b);
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
      const v = {
        root, table, columns, rows: sources[id](), keys: [], size: pageSize, page: 0,
        sortKey: "total", sortDesc: true, query: "",
      };
      for (const th of table.tHead.rows[0].cells) {
        const key = th.dataset.col;
        v.keys.push(key);
        th.tabIndex = 0;
        th.title = "Sort by " + th.textContent.toLowerCase();
        th.addEventListener("click", () => sortBy(v, key));
        th.addEventListener("keydown", (e) => {
          if (e.key === "Enter" || e.key === " ") {
            e.preventDefault();
            sortBy(v, key);
          }
        });
      }
      v.pager = makePager(v, sizes);
      views[id] = v;
      return v;
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
    let timer = 0;
    filter.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => applyFilter(view(active), filter.value.trim().toLowerCase()), 120);
    });
    document.getElementById("klockstat-toolbar").hidden = false;
    show(active);
  }

  document.addEventListener("DOMContentLoaded", initTables);
})();
