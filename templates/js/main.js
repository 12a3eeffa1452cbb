// Where the page's script starts once the page is parsed: the charts first, then the tables and the
// flame graphs, which wait for the page data. Fed by report/page.go, which inlines this script and
// the page's parts (templates/page.html) into one file.

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
