// The scaling report's script, also the what-if page's: its charts, the culprit tabs, and the level
// viewer, which shows a level's report or the diff of two levels in a frame. Fed by report/scale.go
// (and report/whatif.go), which build the charts' options and embed those pages compressed and
// without ECharts; this page's copy is put back before a page is shown. It is a page of its own,
// apart from the parts templates.PageScript joins.
"use strict";
(function () {
  const echartsMark = "/*klockstat:echarts*/";

  // An embedded page: gzip-compressed and base64-encoded by Go (report/scale.go).
  function decode(b64) {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }

  function initCharts() {
    const options = JSON.parse(document.getElementById("klockstat-scale-charts").textContent);
    for (const id of Object.keys(options)) {
      const el = document.getElementById(id);
      if (el) {
        const chart = echarts.init(el);
        chart.setOption(options[id]);
        window.addEventListener("resize", () => chart.resize());
      }
    }
  }

  function initCulpritTabs() {
    const tabs = document.querySelectorAll("#culprits [data-culprits]");
    for (const tab of tabs) {
      tab.addEventListener("click", () => {
        for (const t of tabs) {
          t.setAttribute("aria-selected", String(t === tab));
          document.getElementById(t.dataset.culprits).hidden = t !== tab;
        }
      });
    }
  }

  function option(value, text) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    return o;
  }

  function initLevels() {
    const pagesElement = document.getElementById("klockstat-scale-pages");
    if (!pagesElement) {
      return; // a page without levels: klockstat whatif's
    }
    const pages = JSON.parse(pagesElement.textContent);
    // ECharts is the first script of the head every page shares (page.html).
    const echartsSource = document.head.querySelector("script").textContent;
    const frame = document.getElementById("level-frame");
    const shown = document.getElementById("level-shown");
    const tabs = document.getElementById("level-tabs");
    const before = document.getElementById("diff-before");
    const after = document.getElementById("diff-after");
    const tabButtons = [];

    async function show(page, label) {
      const html = await decode(page);
      frame.srcdoc = html.replace(echartsMark, () => echartsSource);
      shown.textContent = label;
      frame.dataset.shown = label;
    }

    function showLevel(i) {
      const p = pages.levels[i];
      tabButtons.forEach((b, j) => b.setAttribute("aria-selected", String(i === j)));
      return show(p.page, "Level " + p.a);
    }

    function showDiff() {
      const a = Number(before.value);
      const b = Number(after.value);
      if (a === b) {
        shown.textContent = "Choose two different levels to compare.";
        return;
      }
      const [lo, hi] = a < b ? [a, b] : [b, a];
      const d = pages.diffs.find((x) => x.a === lo && x.b === hi);
      if (!d) {
        // report/scale.go's diffPair: a page of many levels holds the diffs with the lowest
        // level and between neighbours only.
        shown.textContent = "The page holds the comparisons of each level with the lowest and with the next only: " +
          "for levels " + lo + " and " + hi + ", run klockstat report on the sweep with --level " + lo + " and --level " + hi + ", then klockstat diff.";
        return;
      }
      tabButtons.forEach((t) => t.setAttribute("aria-selected", "false"));
      show(d.page, "Level " + lo + " compared with level " + hi);
    }

    pages.levels.forEach((p, i) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "tab";
      b.setAttribute("role", "tab");
      b.dataset.level = p.a;
      b.textContent = "Level " + p.a;
      b.addEventListener("click", () => showLevel(i));
      tabs.appendChild(b);
      tabButtons.push(b);
      before.appendChild(option(p.a, "level " + p.a));
      after.appendChild(option(p.a, "level " + p.a));
    });
    if (pages.levels.length === 0) {
      shown.textContent = "No level has a run that counts.";
      frame.hidden = true;
      return;
    }
    after.selectedIndex = pages.levels.length - 1;
    document.getElementById("diff-show").addEventListener("click", showDiff);
    frame.addEventListener("load", () => {
      // Same origin (srcdoc): the frame grows to its page, so the page scrolls as one.
      try {
        const doc = frame.contentDocument;
        if (doc && doc.documentElement) {
          frame.style.height = Math.max(600, doc.documentElement.scrollHeight + 20) + "px";
        }
      } catch (e) {
        // A browser that keeps the frame apart leaves it at its fixed height.
      }
    });
    showLevel(0);
  }

  function start() {
    initCulpritTabs();
    initLevels();
    initCharts();
    document.documentElement.classList.add("js");
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
