// The flame graphs of the report. Fed by report/flame.go, which laid out every node (depth, start and
// width in nanoseconds of wait); this draws them on a canvas, where a name is only ever drawn as
// text, finds the node under the pointer, zooms, and colours what the search matches.

function initFlame(data) {
  const section = document.getElementById("flame");
  if (!section || !data.flame || data.flame.length === 0) {
    return;
  }
  const text = textOf(data);
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
  // In the owners' graph, what a holder did over the shares above it (capture.HolderFrame) sits
  // between its thread and its frames; a share not split goes straight to its frames.
  const holderFrame = (g, i) => g.owners && Object.values(g.holders).includes(g.name[i]);
  const kindOf = (g, i) =>
    g.depth[i] === 0
      ? g.owners ? "all wait charged" : "all waits"
      : g.depth[i] === 1
        ? g.owners ? "lock owner's thread" : "thread"
        : holderFrame(g, i) ? "what the holder did over this share of the wait" : "kernel function";

  // A name's colour stays the same across graphs and draws: warm hues for functions, blue for threads.
  function colour(g, i) {
    if (state.matched && state.matched[i]) {
      return "#d65ad6";
    }
    const d = g.depth[i];
    if (d === 0) {
      return "#c9ced6";
    }
    if (holderFrame(g, i)) {
      // The preempted share in the colour of the tables' preempted rows (td.status-preempted).
      return g.name[i] === g.holders.runnable ? "#c2410c" : "#a8b0bc";
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
