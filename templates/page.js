// klockstat's pages, the report and the diff: draws the charts whose options Go built, and renders the
// tables whose rows Go computed (report/views.go), with sorting, filtering and paging. Nothing here
// groups, sums or compares: every number comes from the page's data; this script only formats it.
//
// Every string of a capture comes from the kernel or from processes (a thread can name itself
// "<img src=x onerror=...>"), so data only ever reaches the page through textContent and setAttribute,
// or, in ECharts tooltips, which take HTML, through echarts.format.encodeHTML.
"use strict";
(function () {
  const klock = {};
  window.klock = klock;

  // fmtNS renders nanoseconds as report.FormatDuration does: "812 ns", "15.64 us", "1.04 ms", "2.50 s".
  function fmtNS(ns) {
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
  }

  // axisNS labels an axis tick briefly, as report's axisDuration does: "512 ns", "4.1 us", "131 us".
  function axisNS(ns) {
    let v = ns;
    let unit = "ns";
    for (const [name, scale] of [["us", 1e3], ["ms", 1e6], ["s", 1e9]]) {
      if (ns >= scale) {
        v = ns / scale;
        unit = name;
      }
    }
    return (v < 10 ? v.toFixed(1).replace(/\.0$/, "") : v.toFixed(0)) + " " + unit;
  }

  const signed = (v, s) => (v > 0 ? "+" + s : s);

  // Charts.

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
    axisDelta: (ns) => signed(ns, ns < 0 ? "-" + axisNS(-ns) : axisNS(ns)),
    tip: (tips) => function (p) {
      const list = Array.isArray(p) ? p : [p];
      if (list.length === 0) {
        return "";
      }
      const tip = (tips[Array.isArray(p) ? 0 : p.seriesIndex] || [])[list[0].dataIndex];
      return tip ? tipHTML(tip) : "";
    },
  };

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

  // The page data: JSON, gzip-compressed and base64-encoded by Go (report/embed.go).
  async function loadData() {
    const source = document.getElementById("klockstat-data");
    const b64 = source.textContent.trim();
    let bytes;
    if (Uint8Array.fromBase64) {
      bytes = Uint8Array.fromBase64(b64);
    } else {
      const bin = atob(b64);
      bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) {
        bytes[i] = bin.charCodeAt(i);
      }
    }
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  // Tables.

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

  // A view of the page data: its columns with their values, and the order and filter of its rows.
  function makeView(data, v) {
    const n = v.rows;
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      order[i] = i;
    }
    const columns = v.columns.map((c) => Object.assign({}, c, { values: c.ref ? data.records[c.ref] : c.values }));
    return Object.assign({}, v, { columns, order, shown: order, page: 0, sortKey: v.sort, sortDesc: true, query: "", saturated: new Set(v.saturated) });
  }

  function tableOf(data) {
    const text = (i) => (i in data.shown ? data.shown[i] : data.strings[i]);

    const muted = (cls) => el("td", cls + " muted", "–");
    // Columns of words, aligned left and sorted A to Z first; the others hold numbers.
    const textual = (c) => c.kind === "text" || c.kind === "status" || c.kind === "stack" || c.kind === "link";
    const change = (v) => (v > 0 ? "num worse" : v < 0 ? "num better" : "num");

    function stackCell(i) {
      const td = el("td", "stack");
      const frames = i >= 0 ? data.stacks[i] : [];
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
            const li = el("li", "", text(f));
            // A frame's source line and inlined functions, which Go wrote (capture.SourceText).
            const source = data.sources && data.sources.frames[f];
            if (source) {
              const s = el("span", "source", source[0]);
              s.title = source[1];
              li.appendChild(s);
            }
            ol.appendChild(li);
          }
          details.appendChild(ol);
          if (data.sources && data.sources.note) {
            const note = el("div", "source-note muted", data.sources.note);
            note.title = data.sources.help;
            details.appendChild(note);
          }
        }
      });
      td.appendChild(details);
      return td;
    }

    // textCell renders s, the text of column c in row r. A long text is cut to the width of its
    // column, with an ellipsis: its title holds the whole, with the cell's own title, and a click
    // opens it in place.
    function textCell(c, r, s) {
      const td = el("td", c.class || "");
      const own = c.titles && c.titles[r] >= 0 ? text(c.titles[r]) : "";
      if (own) {
        td.setAttribute("title", own);
      }
      const clip = el("span", "clip", s);
      clip.setAttribute("title", own ? s + "\n" + own : s);
      td.appendChild(clip);
      return td;
    }

    // linkCell renders key of a link column: a button that shows the rows of the link's target view
    // with the same key (view.follow), or the link's text for rows without one.
    function linkCell(view, link, key) {
      if (key < 0) {
        const td = el("td", "muted", text(link.none[0]));
        td.setAttribute("title", text(link.none[1]));
        return td;
      }
      const td = el("td");
      const button = el("button", "link", text(link.labels[key]));
      button.type = "button";
      // The label may be cut to the column's width: the title holds it whole.
      button.setAttribute("title", text(link.labels[key]) + "\n" + text(link.titles[key]));
      button.addEventListener("click", () => view.follow(link.target, key, text(link.titles[key])));
      td.appendChild(button);
      return td;
    }

    // cell renders value v of column c in row r of view view.
    function cell(view, c, r) {
      const v = c.values[r];
      if (v === null) {
        return muted(c.kind === "text" ? "" : "num");
      }
      const lowerBound = c.sum && view.saturated.has(r) ? "≥ " : "";
      let td;
      switch (c.kind) {
        case "text":
          if (v < 0) {
            return el("td", "muted", "various");
          }
          return textCell(c, r, text(v));
        case "status":
          return el("td", "status-" + text(v), text(v));
        case "stack":
          return stackCell(v);
        case "link":
          return linkCell(view, c.link, v);
        case "int":
          td = el("td", "num", lowerBound + String(v));
          break;
        case "ns":
          td = el("td", "num", lowerBound + fmtNS(v));
          td.setAttribute("title", v + " ns");
          break;
        case "nsf":
          td = el("td", "num", fmtNS(v));
          td.setAttribute("title", v.toFixed(1) + " ns");
          break;
        case "num":
          td = el("td", "num", v.toFixed(c.decimals || 0));
          break;
        case "delta":
          if (c.unit === "ns") {
            const s = fmtNS(v);
            td = el("td", change(v), s === "0 ns" ? s : signed(v, s));
            td.setAttribute("title", v.toFixed(1) + " ns");
          } else if (c.unit === "points") {
            td = el("td", "num", signed(v, v.toFixed(c.decimals || 0)) + " pts");
          } else {
            td = el("td", change(v), signed(v, v.toFixed(c.decimals || 0)));
          }
          return td;
        case "ratio":
          if (v === -1) {
            return el("td", "num worse", "new");
          }
          if (v === 0) {
            return el("td", "num better", "gone");
          }
          return el("td", change(v - 1), "×" + v.toFixed(2));
      }
      if (lowerBound) {
        td.classList.add("bad");
        td.setAttribute("title", "the sum exceeds 2^64-1 and stopped there: the capture's numbers are corrupt");
      } else if (c.titles && c.titles[r] >= 0) {
        // A number that needs a word of explanation (an average above p99) is marked and carries it.
        td.classList.add("noted");
        td.setAttribute("title", text(c.titles[r]));
      }
      return td;
    }

    // sortValue is what row r is ordered by in column c: a number, a string, or null (last either way).
    function sortValue(c, r) {
      const v = c.values[r];
      if (v === null) {
        return null;
      }
      switch (c.kind) {
        case "text":
        case "status":
          return v < 0 ? null : text(v);
        case "ratio":
          return v === -1 ? Infinity : v;
      }
      return v;
    }

    function matcher(view, q) {
      const strings = new Uint8Array(data.strings.length);
      for (let i = 0; i < strings.length; i++) {
        strings[i] = text(i).toLowerCase().includes(q) ? 1 : 0;
      }
      const stacks = new Uint8Array(data.stacks.length);
      for (let i = 0; i < stacks.length; i++) {
        stacks[i] = data.stacks[i].some((f) => strings[f]) ? 1 : 0;
      }
      return function (r) {
        for (const c of view.columns) {
          const v = c.values[r];
          if (v === null) {
            continue;
          }
          switch (c.kind) {
            case "text":
            case "status":
              if ((v >= 0 && strings[v]) || (c.titles && c.titles[r] >= 0 && strings[c.titles[r]])) {
                return true;
              }
              break;
            case "stack":
              if (v >= 0 && stacks[v]) {
                return true;
              }
              break;
            case "link":
              if (v >= 0 && strings[c.link.labels[v]]) {
                return true;
              }
              break;
            case "int":
              if (c.search && String(v).includes(q)) {
                return true;
              }
          }
        }
        return false;
      };
    }

    // glossaryLink appends to a heading a link to the glossary's entry term, if any, which explains it.
    function glossaryLink(th, term, label) {
      if (!term || !document.getElementById("g-" + term)) {
        return;
      }
      const a = el("a", "gl", "?");
      a.href = "#g-" + term;
      a.setAttribute("aria-label", "What " + label + " means");
      a.setAttribute("title", "What " + label + " means, in the glossary");
      a.addEventListener("click", (e) => e.stopPropagation()); // follows the link, does not sort
      th.appendChild(a);
    }

    function header(view) {
      const thead = el("thead");
      const grouped = view.columns.some((c) => c.group);
      const top = el("tr");
      const bottom = el("tr");
      for (let i = 0; i < view.columns.length; i++) {
        const c = view.columns[i];
        const th = el("th", textual(c) ? "" : "num", c.label);
        th.dataset.col = c.key;
        th.scope = "col";
        if (!c.group) {
          glossaryLink(th, c.term, c.label);
        }
        if (!grouped || !c.group) {
          if (grouped) {
            th.rowSpan = 2;
          }
          top.appendChild(th);
          continue;
        }
        if (i === 0 || view.columns[i - 1].group !== c.group) {
          let span = 1;
          while (i + span < view.columns.length && view.columns[i + span].group === c.group) {
            span++;
          }
          const g = el("th", "group", c.group);
          g.colSpan = span;
          g.scope = "colgroup";
          const termed = view.columns.slice(i, i + span).find((col) => col.term);
          glossaryLink(g, termed && termed.term, c.group);
          top.appendChild(g);
        }
        bottom.appendChild(th);
      }
      thead.appendChild(top);
      if (grouped) {
        thead.appendChild(bottom);
      }
      return thead;
    }

    function render(view) {
      const rows = view.shown;
      const pages = Math.max(1, Math.ceil(rows.length / view.size));
      view.page = Math.min(view.page, pages - 1);
      const start = view.page * view.size;
      const end = Math.min(start + view.size, rows.length);
      const frag = document.createDocumentFragment();
      for (let k = start; k < end; k++) {
        const tr = el("tr");
        for (const c of view.columns) {
          tr.appendChild(cell(view, c, rows[k]));
        }
        frag.appendChild(tr);
      }
      if (rows.length === 0) {
        const tr = el("tr", "empty-row");
        const td = el("td", "", view.rows ? "No rows match the filter." : "No rows.");
        td.colSpan = view.columns.length;
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
      p.info.textContent = rows.length === 0 ? "0 rows" :
        "Rows " + (start + 1) + "–" + end + " of " + rows.length +
        (rows.length !== view.rows ? " (filtered from " + view.rows + ")" : "");
      p.prev.disabled = view.page === 0;
      p.next.disabled = view.page >= pages - 1;
    }

    // filter shows the rows that match q and, when the view is pinned to a link's key (a link of
    // another view was followed), have that key.
    function filter(view, q) {
      view.query = q;
      let rows = view.order;
      if (view.pin) {
        const keys = view.columns.find((c) => c.kind === "link").values;
        rows = rows.filter((r) => keys[r] === view.pin.key);
      }
      if (q !== "") {
        rows = rows.filter(matcher(view, q));
      }
      view.shown = rows;
      view.page = 0;
      render(view);
    }

    // showPin says above the table which link's rows it is pinned to, with a button that unpins it.
    function showPin(view) {
      const box = view.pinBox;
      if (!view.pin) {
        box.hidden = true;
        box.replaceChildren();
        return;
      }
      const all = el("button", "", "Show all rows");
      all.type = "button";
      all.addEventListener("click", () => {
        view.pin = null;
        filter(view, view.query);
        showPin(view);
        view.search.focus();
      });
      box.replaceChildren(el("span", "", view.pin.text), all);
      box.hidden = false;
    }

    function sortBy(view, key) {
      const c = view.columns.find((col) => col.key === key);
      const num = !textual(c);
      view.sortDesc = view.sortKey === key ? !view.sortDesc : num;
      view.sortKey = key;
      const dir = view.sortDesc ? -1 : 1;
      const keys = new Array(view.rows);
      for (let r = 0; r < view.rows; r++) {
        keys[r] = sortValue(c, r);
      }
      const order = Array.from(view.order);
      order.sort(function (a, b) {
        const x = keys[a];
        const y = keys[b];
        if (x === null || y === null) {
          return (x === null) - (y === null) || a - b;
        }
        return dir * (x < y ? -1 : x > y ? 1 : 0) || a - b;
      });
      view.order = Uint32Array.from(order);
      filter(view, view.query);
    }

    function pager(view, box) {
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

    // show puts view into the section's table, with sortable headings.
    function show(view, section) {
      const table = section.querySelector("table");
      table.replaceChildren(header(view), el("tbody"));
      // The keys of the cells in their order, which the headings do not give where they span two rows.
      table.dataset.cols = view.columns.map((c) => c.key).join(" ");
      view.table = table;
      if (!table.dataset.clips) {
        table.dataset.clips = "1";
        table.addEventListener("click", (e) => {
          const clip = e.target.closest && e.target.closest(".clip");
          if (clip && (clip.classList.contains("open") || clip.scrollWidth > clip.clientWidth)) {
            clip.classList.toggle("open");
          }
        });
      }
      for (const th of table.querySelectorAll("th[data-col]")) {
        const key = th.dataset.col;
        const c = view.columns.find((col) => col.key === key);
        if (c.kind === "stack" || c.kind === "link") {
          continue; // the filter finds frames and links' texts
        }
        th.tabIndex = 0;
        th.classList.add("sortable");
        th.title = "Sort by " + (c.group ? c.group.toLowerCase() + " " : "") + c.label.toLowerCase();
        th.addEventListener("click", () => sortBy(view, key));
        th.addEventListener("keydown", (e) => {
          if (e.key === "Enter" || e.key === " ") {
            e.preventDefault();
            sortBy(view, key);
          }
        });
      }
      view.pager = pager(view, section.querySelector(".pager"));
      view.pinBox = section.querySelector(".pin");
      view.search = section.querySelector("input[type=search]");
      showPin(view);
      filter(view, view.search.value.trim().toLowerCase());
    }

    return { show, filter };
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

  function initTables(data) {
    const table = tableOf(data);
    const byID = new Map(data.views.map((v) => [v.id, v]));
    for (const section of document.querySelectorAll("section[data-views]")) {
      const size = Number(section.dataset.pageSize) || 20;
      const views = {};
      const view = (id) => {
        if (!views[id]) {
          views[id] = makeView(data, byID.get(id));
          views[id].size = size;
          views[id].follow = (target, key, text) => follow(target, key, text);
        }
        return views[id];
      };
      const tabs = section.querySelectorAll(".tab");
      let active = section.dataset.views.split(" ")[0];
      const select = (id) => {
        active = id;
        for (const tab of tabs) {
          tab.setAttribute("aria-selected", String(tab.dataset.view === id));
        }
        table.show(view(id), section);
      };
      // Following a link shows the target view's rows of the link's key, and only them: the filter
      // typed for the view left behind would hide them.
      const follow = (target, key, text) => {
        const v = view(target);
        v.pin = { key, text };
        section.querySelector("input[type=search]").value = "";
        select(target);
        section.querySelector(".pin button").focus();
      };
      for (const tab of tabs) {
        tab.addEventListener("click", () => select(tab.dataset.view));
      }
      onFilter(section.querySelector("input[type=search]"), (q) => table.filter(view(active), q));
      section.querySelector(".toolbar").hidden = false;
      select(active);
    }
  }

  // The flame graphs (report/flame.go): Go laid out every node (depth, start and width in nanoseconds
  // of wait); this draws them on a canvas, where a name is only ever drawn as text, finds the node
  // under the pointer, zooms, and colours what the search matches.
  function initFlame(data) {
    const section = document.getElementById("flame");
    if (!section || !data.flame || data.flame.length === 0) {
      return;
    }
    const text = (i) => (i in data.shown ? data.shown[i] : data.strings[i]);
    const canvas = document.getElementById("flame-canvas");
    const tip = document.getElementById("flame-tip");
    const info = document.getElementById("flame-info");
    const select = document.getElementById("flame-type");
    const search = document.getElementById("flame-search");
    const reset = document.getElementById("flame-reset");
    const rowH = 18;
    const font = "12px " + getComputedStyle(document.documentElement).getPropertyValue("--mono");
    // What the tests read: the graph shown, the zoomed node, the search's matches, the last draw.
    const state = { graph: 0, zoom: 0, query: "", matched: null, matchedNS: 0, matchedShare: 0, drawn: 0, drawMS: 0, boxes: null };
    klock.flame = state;

    for (const g of data.flame) {
      // Where each depth's nodes start in a list by depth, for finding the node under the pointer:
      // depth-first order puts the nodes of one depth in the order of their starts.
      g.maxDepth = 0;
      for (const d of g.depth) {
        g.maxDepth = Math.max(g.maxDepth, d);
      }
      g.byDepth = Array.from({ length: g.maxDepth + 1 }, () => []);
      for (let i = 0; i < g.depth.length; i++) {
        g.byDepth[g.depth[i]].push(i);
      }
      const o = el("option", "", g.owners ? "Owners' critical sections" : g.type < 0 ? "All lock types" : text(g.type));
      o.value = String(select.options.length);
      select.appendChild(o);
    }

    const graph = () => data.flame[state.graph];
    function nameOf(g, i) {
      if (g.name[i] >= 0) {
        return text(g.name[i]);
      }
      if (g.owners) {
        return "all wait charged to lock owners";
      }
      return g.type < 0 ? "all waits" : "all " + text(g.type) + " waits";
    }
    const kindOf = (g, i) =>
      g.depth[i] === 0 ? (g.owners ? "all wait charged" : "all waits") : g.depth[i] === 1 ? (g.owners ? "lock owner's thread" : "thread") : "kernel function";

    // A name's colour stays the same across graphs and draws: warm hues for functions, blue for threads.
    function colour(g, i) {
      if (state.matched && state.matched[i]) {
        return "#d65ad6";
      }
      const d = g.depth[i];
      if (d === 0) {
        return "#c9ced6";
      }
      let h = 2166136261;
      const s = nameOf(g, i);
      for (let k = 0; k < s.length; k++) {
        h = Math.imul(h ^ s.charCodeAt(k), 16777619);
      }
      h >>>= 0;
      if (d === 1) {
        return "hsl(" + (200 + (h % 30)) + ",55%," + (70 + ((h >> 8) % 10)) + "%)";
      }
      return "hsl(" + (h % 50) + "," + (75 + ((h >> 8) % 20)) + "%," + (58 + ((h >> 16) % 12)) + "%)";
    }

    function draw() {
      const started = performance.now();
      const g = graph();
      const width = canvas.parentElement.clientWidth;
      const height = (g.maxDepth + 1) * rowH;
      const dpr = window.devicePixelRatio || 1;
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(height * dpr);
      canvas.style.width = width + "px";
      canvas.style.height = height + "px";
      const ctx = canvas.getContext("2d");
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, width, height);
      ctx.font = font;
      ctx.textBaseline = "middle";
      const charW = ctx.measureText("0").width;
      const z = state.zoom;
      const x0 = g.start[z];
      const span = g.value[z] || 1;
      const scale = width / span;
      // Every node overlapping the zoomed node's span is one of its ancestors (drawn across the whole
      // width) or of its descendants: the spans of siblings are apart.
      const boxes = new Float64Array(g.depth.length * 2).fill(-1);
      let drawn = 0;
      for (let i = 0; i < g.depth.length; i++) {
        const s = g.start[i];
        const v = g.value[i];
        if (s + v <= x0 || s >= x0 + span) {
          continue;
        }
        let x = (s - x0) * scale;
        let w = v * scale;
        if (x < 0) {
          w += x;
          x = 0;
        }
        w = Math.min(w, width - x);
        if (w < 0.4) {
          continue;
        }
        const y = height - (g.depth[i] + 1) * rowH;
        ctx.fillStyle = colour(g, i);
        ctx.fillRect(x, y, Math.max(w - 1, 0.4), rowH - 1);
        boxes[2 * i] = x;
        boxes[2 * i + 1] = w;
        drawn++;
        const room = Math.floor((w - 6) / charW);
        if (room >= 3) {
          const name = nameOf(g, i);
          ctx.fillStyle = "#1f2328";
          ctx.fillText(name.length <= room ? name : name.slice(0, room - 1) + "…", x + 3, y + rowH / 2);
        }
      }
      state.boxes = boxes;
      state.drawn = drawn;
      state.drawMS = performance.now() - started;
      section.dataset.zoom = z === 0 ? "" : nameOf(g, z);
    }

    function describe() {
      const g = graph();
      const parts = [];
      const root = g.value[0];
      parts.push(el("span", "", nameOf(g, 0) + ": " + fmtNS(root) + " in " + g.count[0] + " waits"));
      if (state.zoom !== 0) {
        const z = state.zoom;
        parts.push(el("span", "", " · zoomed to " + nameOf(g, z) + " (" + share(g.value[z], root) + ")"));
      }
      if (state.query !== "") {
        parts.push(el("span", "match", " · “" + state.query + "” matches " + share(state.matchedNS, root) + " of the wait time"));
      }
      if (g.dropped > 0) {
        parts.push(el("span", "muted", " · " + g.dropped + " frames too narrow to draw are left out"));
      }
      info.replaceChildren(...parts);
    }
    const share = (v, total) => (total > 0 ? ((100 * v) / total).toFixed(1) : "0.0") + " %";

    // match colours the nodes whose name contains the query and sums the wait under them, once each
    // where matches nest.
    function match() {
      const g = graph();
      const q = state.query;
      state.matched = null;
      state.matchedNS = 0;
      state.matchedShare = 0;
      if (q !== "") {
        const hit = new Map();
        const matched = new Uint8Array(g.depth.length);
        const covered = new Uint8Array(g.maxDepth + 1);
        for (let i = 0; i < g.depth.length; i++) {
          const n = g.name[i];
          let m = hit.get(n);
          if (m === undefined) {
            m = n >= 0 && text(n).toLowerCase().includes(q);
            hit.set(n, m);
          }
          const d = g.depth[i];
          const above = d > 0 && covered[d - 1] === 1;
          covered[d] = above || m ? 1 : 0;
          matched[i] = m ? 1 : 0;
          if (m && !above) {
            state.matchedNS += g.value[i];
          }
        }
        state.matched = matched;
        state.matchedShare = g.value[0] > 0 ? state.matchedNS / g.value[0] : 0;
      }
    }

    function update() {
      reset.disabled = state.zoom === 0;
      draw();
      describe();
    }

    // nodeAt is the node drawn at (x, y) of the canvas, or -1.
    function nodeAt(x, y) {
      const g = graph();
      const d = g.maxDepth - Math.floor(y / rowH);
      if (d < 0 || d > g.maxDepth) {
        return -1;
      }
      const list = g.byDepth[d];
      let lo = 0;
      let hi = list.length - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        const i = list[mid];
        const bx = state.boxes[2 * i];
        if (bx >= 0 && x >= bx && x < bx + state.boxes[2 * i + 1]) {
          return i;
        }
        // Nodes not drawn have no box; their place in the order is their start.
        const z = state.zoom;
        const at = g.start[z] + (x / canvas.clientWidth) * (g.value[z] || 1);
        if (g.start[i] + g.value[i] <= at) {
          lo = mid + 1;
        } else {
          hi = mid - 1;
        }
      }
      return -1;
    }

    function showTip(i, x, y) {
      if (i < 0) {
        tip.hidden = true;
        return;
      }
      const g = graph();
      const lines = [
        el("div", "name", nameOf(g, i)),
        el("div", "what", kindOf(g, i)),
        el("div", "", fmtNS(g.value[i]) + " of wait, " + share(g.value[i], g.value[0]) + " of " + nameOf(g, 0)),
        el("div", "", g.count[i] + (g.count[i] === 1 ? " wait" : " waits")),
      ];
      tip.replaceChildren(...lines);
      tip.hidden = false;
      const wrap = canvas.parentElement.clientWidth;
      tip.style.left = Math.min(x + 14, Math.max(0, wrap - tip.offsetWidth - 4)) + "px";
      tip.style.top = y + 16 + "px";
    }

    canvas.addEventListener("mousemove", (e) => showTip(nodeAt(e.offsetX, e.offsetY), e.offsetX, e.offsetY));
    canvas.addEventListener("mouseleave", () => (tip.hidden = true));
    canvas.addEventListener("click", (e) => {
      const i = nodeAt(e.offsetX, e.offsetY);
      if (i >= 0) {
        state.zoom = i;
        update();
      }
    });
    reset.addEventListener("click", () => {
      state.zoom = 0;
      update();
    });
    select.addEventListener("change", () => {
      state.graph = Number(select.value);
      state.zoom = 0;
      match();
      update();
    });
    onFilter(search, (q) => {
      state.query = q;
      match();
      update();
    });
    let resizing = 0;
    window.addEventListener("resize", () => {
      cancelAnimationFrame(resizing);
      resizing = requestAnimationFrame(draw);
    });
    state.graphShown = graph;
    state.nameOf = (i) => nameOf(graph(), i);
    // Where the tests click: the middle of the widest node drawn whose name is name, in viewport pixels.
    state.centreOf = function (name) {
      const g = graph();
      let best = -1;
      for (let i = 0; i < g.depth.length; i++) {
        if (state.boxes[2 * i] >= 0 && nameOf(g, i) === name && (best < 0 || state.boxes[2 * i + 1] > state.boxes[2 * best + 1])) {
          best = i;
        }
      }
      if (best < 0) {
        return null;
      }
      const r = canvas.getBoundingClientRect();
      return [r.left + state.boxes[2 * best] + state.boxes[2 * best + 1] / 2, r.top + (g.maxDepth - g.depth[best]) * rowH + rowH / 2];
    };
    section.querySelector(".toolbar").hidden = false;
    update();
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawCharts();
    // Marks of the page's progress, in milliseconds since its navigation began, for benchmarks.
    performance.mark("klockstat-charts");
    if (!document.getElementById("klockstat-data")) {
      return;
    }
    loadData().then((data) => {
      initTables(data);
      initFlame(data);
    }).then(
      // Tests and styles wait for this mark of a page whose tables are drawn.
      () => {
        document.documentElement.classList.add("js");
        performance.mark("klockstat-tables");
      },
      function (e) {
        for (const section of document.querySelectorAll("section[data-views], section.flame")) {
          section.appendChild(el("p", "note", "The page data could not be read (" + e.message + "): the tables cannot be shown."));
        }
        document.documentElement.classList.add("js-failed");
      });
  });
})();
