// The shared helpers of the page's script: number formats, element building, the page data.
// Fed by report/embed.go, which writes the page data loadData decodes, and report/summary.go, whose
// FormatDuration fmtNS renders as.
//
// The page's script is the files of templates/js joined in one function, in the order
// templates/templates.go lists them (pageScripts): this file first, main.js last, so each may use
// what the files before it define. Every string of a capture comes from the kernel or from
// processes (a thread can name itself "<img src=x onerror=...>"), so data only ever reaches the page
// through textContent and setAttribute, or, in ECharts tooltips, which take HTML, through
// echarts.format.encodeHTML.

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

// textOf returns the function giving the text of a string index of data: its visible form where Go
// wrote one (data.shown), else the string itself.
function textOf(data) {
  return (i) => (i in data.shown ? data.shown[i] : data.strings[i]);
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
