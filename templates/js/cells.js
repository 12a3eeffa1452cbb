// The cells of the tables: each kind of column rendered its own way, what a column sorts by, what
// the filter finds in a row. Fed by report/views.go, which names the kinds (kindText and the others)
// and computes every value; the diff's kinds are in diff.js.

// cellsOf returns the cell functions of the tables of data.
function cellsOf(data) {
  const text = textOf(data);

  const muted = (cls) => el("td", cls + " muted", "–");

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
        return deltaCell(c, v);
      case "ratio":
        return ratioCell(v);
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

  return { cell, sortValue, matcher };
}

// textual tells the columns of words, aligned left and sorted A to Z first; the others hold numbers.
const textual = (c) => c.kind === "text" || c.kind === "status" || c.kind === "stack" || c.kind === "link";
