// The tables of the report and of the diff: views with sortable headings, a filter, pages of rows,
// and links from one view to the rows of another. Fed by report/views.go, which computes every
// view's rows and columns (the report's in report/html.go, the diff's in report/diff_html.go); the
// cells are in cells.js.

// A view of the page data: its columns with their values, the order and filter of its rows, and
// the functions rendering its cells (cellsOf).
function makeView(data, cells, v) {
  const n = v.rows;
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    order[i] = i;
  }
  const columns = v.columns.map((c) => Object.assign({}, c, { values: c.ref ? data.records[c.ref] : c.values }));
  return Object.assign({}, v, { columns, cells, order, shown: order, page: 0, sortKey: v.sort, sortDesc: true, query: "", saturated: new Set(v.saturated) });
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

function tableHeader(view) {
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

function renderTable(view) {
  const rows = view.shown;
  const pages = Math.max(1, Math.ceil(rows.length / view.size));
  view.page = Math.min(view.page, pages - 1);
  const start = view.page * view.size;
  const end = Math.min(start + view.size, rows.length);
  const frag = document.createDocumentFragment();
  for (let k = start; k < end; k++) {
    const tr = el("tr");
    for (const c of view.columns) {
      tr.appendChild(view.cells.cell(view, c, rows[k]));
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
  fitTable(view.table);
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

// fitTable keeps a table inside its frame. Where its columns need more room than the frame has (a
// view of twenty columns at 1400 px), the columns of numbers keep the width they need, and the
// widest columns of words give up the rest, down to a width all of them keep if they had it, their
// texts wrapping inside it: no column is cut off at the frame's edge, out of sight. Only if that
// width would be under minWords do all columns shrink alike; a cell then cuts what does not fit
// with an ellipsis, its title holding it whole.
function fitTable(table) {
  table.classList.remove("fit");
  const old = table.querySelector("colgroup");
  if (old) {
    old.remove();
  }
  const room = table.parentElement.clientWidth;
  const row = table.tBodies[0].rows[0];
  if (table.scrollWidth <= room || !row || row.classList.contains("empty-row")) {
    return;
  }
  const cells = [...row.cells];
  const numeric = cells.map((c) => c.classList.contains("num"));
  let widths = cells.map((c) => c.getBoundingClientRect().width);
  const total = widths.reduce((a, b) => a + b, 0);
  const left = room - widths.reduce((sum, w, i) => sum + (numeric[i] ? w : 0), 0);
  const capped = (cap) => widths.reduce((sum, w, i) => sum + (numeric[i] ? 0 : Math.min(w, cap)), 0);
  // The width cap that the columns of words fit in, found by halving: capped grows with it.
  let lo = 0;
  let hi = Math.max(...widths);
  for (let k = 0; k < 30; k++) {
    const mid = (lo + hi) / 2;
    if (capped(mid) <= left) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  const minWords = 56; // pixels, about seven characters
  if (lo >= minWords) {
    widths = widths.map((w, i) => (numeric[i] ? w : Math.min(w, lo)));
  } else {
    widths = widths.map((w) => (w * room) / total);
  }
  const cols = el("colgroup");
  for (const w of widths) {
    const col = el("col");
    col.style.width = w + "px"; // unrounded: a column of numbers a fraction of a pixel short would cut them
    cols.appendChild(col);
  }
  table.prepend(cols);
  table.classList.add("fit");
  for (const td of table.tBodies[0].querySelectorAll("td")) {
    const title = td.getAttribute("title") || "";
    if (td.scrollWidth > td.clientWidth && !title.includes(td.textContent)) {
      td.setAttribute("title", title ? td.textContent + "\n" + title : td.textContent);
    }
  }
}

// filterTable shows the rows that match q and, when the view is pinned to a link's key (a link of
// another view was followed), have that key.
function filterTable(view, q) {
  view.query = q;
  let rows = view.order;
  if (view.pin) {
    const keys = view.columns.find((c) => c.kind === "link").values;
    rows = rows.filter((r) => keys[r] === view.pin.key);
  }
  if (q !== "") {
    rows = rows.filter(view.cells.matcher(view, q));
  }
  view.shown = rows;
  view.page = 0;
  renderTable(view);
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
    filterTable(view, view.query);
    showPin(view);
    view.search.focus();
  });
  box.replaceChildren(el("span", "", view.pin.text), all);
  box.hidden = false;
}

function sortTable(view, key) {
  const c = view.columns.find((col) => col.key === key);
  const num = !textual(c);
  view.sortDesc = view.sortKey === key ? !view.sortDesc : num;
  view.sortKey = key;
  const dir = view.sortDesc ? -1 : 1;
  const keys = new Array(view.rows);
  for (let r = 0; r < view.rows; r++) {
    keys[r] = view.cells.sortValue(c, r);
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
  filterTable(view, view.query);
}

function tablePager(view, box) {
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
    renderTable(view);
  });
  next.addEventListener("click", () => {
    view.page++;
    renderTable(view);
  });
  select.addEventListener("change", () => {
    view.size = Number(select.value);
    view.page = 0;
    renderTable(view);
  });
  box.replaceChildren(prev, next, info, el("span", "spacer"), select);
  box.hidden = false;
  return { prev, next, info };
}

// showTable puts view into the section's table, with sortable headings.
function showTable(view, section) {
  const table = section.querySelector("table");
  table.replaceChildren(tableHeader(view), el("tbody"));
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
    th.addEventListener("click", () => sortTable(view, key));
    th.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        sortTable(view, key);
      }
    });
  }
  view.pager = tablePager(view, section.querySelector(".pager"));
  view.pinBox = section.querySelector(".pin");
  view.search = section.querySelector("input[type=search]");
  showPin(view);
  filterTable(view, view.search.value.trim().toLowerCase());
}

function initTables(data) {
  const cells = cellsOf(data);
  const byID = new Map(data.views.map((v) => [v.id, v]));
  // A table fitted to its frame is fitted again when the window, and its frame, change width.
  let fitting = 0;
  window.addEventListener("resize", () => {
    cancelAnimationFrame(fitting);
    fitting = requestAnimationFrame(() => document.querySelectorAll("section[data-views] table").forEach(fitTable));
  });
  for (const section of document.querySelectorAll("section[data-views]")) {
    const size = Number(section.dataset.pageSize) || 20;
    const views = {};
    const view = (id) => {
      if (!views[id]) {
        views[id] = makeView(data, cells, byID.get(id));
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
      showTable(view(id), section);
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
    onFilter(section.querySelector("input[type=search]"), (q) => filterTable(view(active), q));
    section.querySelector(".toolbar").hidden = false;
    select(active);
  }
}
