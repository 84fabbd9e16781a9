// util.js: DOM building, formatting and the paginated table every page
// uses. Everything the UI shows goes through text nodes (never innerHTML),
// so names and labels from the cluster cannot inject markup.
"use strict";

// el builds an element: el("a", {href: "#/x", class: "y"}, "text", child, [more]).
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
    else if (k === "style" && typeof v === "object") Object.assign(node.style, v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(node, c);
    else if (c instanceof Node) node.appendChild(c);
    else node.appendChild(document.createTextNode(String(c)));
  }
}

// replace swaps a node's children.
function replace(node, ...children) {
  node.replaceChildren();
  append(node, children);
}

const fmt = {
  // num drops trailing zeros: 0.5, 2, 1.25.
  num(v) {
    if (v === undefined || v === null || !isFinite(v)) return "–";
    return String(Math.round(v * 100) / 100);
  },
  // mem renders megabytes: 512 MB, 1.25 GB.
  mem(mb) {
    if (!mb) return "0";
    if (mb >= 1024 * 1024) return fmt.num(mb / 1024 / 1024) + " TB";
    if (mb >= 1024) return fmt.num(mb / 1024) + " GB";
    return fmt.num(mb) + " MB";
  },
  // bytes renders a file size.
  bytes(n) {
    if (n < 1024) return n + " B";
    if (n < 1024 * 1024) return fmt.num(n / 1024) + " KB";
    if (n < 1024 * 1024 * 1024) return fmt.num(n / 1024 / 1024) + " MB";
    return fmt.num(n / 1024 / 1024 / 1024) + " GB";
  },
  pct(x) {
    if (!isFinite(x)) return "–";
    return (Math.round(x * 1000) / 10) + "%";
  },
  // ago renders how long ago a Mesos timestamp (seconds) was.
  ago(secs) {
    if (!secs) return "–";
    const d = Math.max(0, Date.now() / 1000 - secs);
    if (d < 60) return Math.floor(d) + "s ago";
    if (d < 3600) return Math.floor(d / 60) + "m ago";
    if (d < 48 * 3600) return Math.floor(d / 3600) + "h ago";
    return Math.floor(d / 86400) + "d ago";
  },
  // duration renders seconds as "8s", "1m30s", "2h".
  duration(secs) {
    if (!isFinite(secs) || secs < 0) return "–";
    if (secs < 60) return fmt.num(secs) + "s";
    const h = Math.floor(secs / 3600), m = Math.floor((secs % 3600) / 60), s = Math.round(secs % 60);
    return (h ? h + "h" : "") + (m ? m + "m" : "") + (s ? s + "s" : "");
  },
  // time renders a Mesos timestamp as local date and time.
  time(secs) {
    if (!secs) return "–";
    return new Date(secs * 1000).toLocaleString();
  },
  // res renders a resource summary's scalars: "cpus 2 · mem 1 GB".
  res(r) {
    if (!r) return "–";
    const parts = [];
    for (const k of Object.keys(r).sort()) {
      const v = r[k];
      if (typeof v === "number") {
        if (v === 0) continue;
        const bytes = k === "mem" || k === "disk" || k === "mem_revocable" || k === "disk_revocable";
        parts.push(k + " " + (bytes ? fmt.mem(v) : fmt.num(v)));
      } else if (v) {
        parts.push(k + " " + v);
      }
    }
    return parts.length ? parts.join(" · ") : "–";
  },
};

// TERMINAL task states; the rest are live (UNREACHABLE may come back).
const TERMINAL = new Set(["TASK_FINISHED", "TASK_FAILED", "TASK_KILLED", "TASK_LOST", "TASK_ERROR",
  "TASK_DROPPED", "TASK_GONE", "TASK_GONE_BY_OPERATOR"]);

function statePill(state) {
  let cls = "pill";
  if (state === "TASK_RUNNING") cls += " ok";
  else if (["TASK_STAGING", "TASK_STARTING", "TASK_KILLING"].includes(state)) cls += " info";
  else if (["TASK_FINISHED"].includes(state)) cls += "";
  else if (["TASK_UNREACHABLE", "TASK_KILLED"].includes(state)) cls += " warn";
  else cls += " bad";
  return el("span", {class: cls}, (state || "").replace(/^TASK_/, ""));
}

function boolPill(b, yes, no) {
  return el("span", {class: b ? "pill ok" : "pill warn"}, b ? yes : no);
}

// scalar reads one resource quantity from a summary.
function scalar(r, name) {
  return r && typeof r[name] === "number" ? r[name] : 0;
}

// usageCell renders "used / total" with a small bar.
function usageCell(used, total, format) {
  const f = format || fmt.num;
  const pct = total > 0 ? Math.min(100, used / total * 100) : 0;
  return el("div", {}, f(used) + " / " + f(total),
    el("div", {class: "bar", style: {width: "90px"}}, el("span", {style: {width: pct + "%"}})));
}

// DataTable is a sortable, filterable, paginated table that can be fed new
// rows (setRows) without losing its filter, sort or page: pages re-render
// every refresh, and a list of thousands of tasks renders one page at a time.
class DataTable {
  // columns: [{label, value(row) -> sortable value, render(row) -> node|string, num}]
  constructor({columns, pageSize = 50, filterText, empty = "Nothing here.", sort = null, desc = false}) {
    this.columns = columns;
    this.pageSize = pageSize;
    this.filterText = filterText || ((row) => columns.map((c) => String(c.value(row) ?? "")).join(" "));
    this.emptyText = empty;
    this.rows = [];
    this.page = 0;
    this.sortCol = sort;
    this.desc = desc;
    this.search = el("input", {type: "search", placeholder: "Filter…", oninput: () => { this.page = 0; this.render(); }});
    this.count = el("span", {class: "count"});
    this.thead = el("thead");
    this.tbody = el("tbody");
    this.pager = el("div", {class: "pager"});
    this.extra = el("span");
    this.node = el("div", {class: "panel"},
      el("div", {class: "toolbar"}, this.search, this.extra, this.count),
      el("table", {}, this.thead, this.tbody), this.pager);
    this.renderHead();
  }

  renderHead() {
    const tr = el("tr");
    this.columns.forEach((c, i) => {
      const cls = [c.num ? "num" : "", this.sortCol === i ? "sorted" : "", this.sortCol === i && !this.desc ? "asc" : ""].join(" ").trim();
      tr.appendChild(el("th", {class: cls || null, title: "sort", onclick: () => {
        if (this.sortCol === i) this.desc = !this.desc; else { this.sortCol = i; this.desc = false; }
        this.renderHead();
        this.render();
      }}, c.label));
    });
    replace(this.thead, tr);
  }

  setRows(rows) {
    this.rows = rows;
    this.render();
  }

  render() {
    const q = this.search.value.trim().toLowerCase();
    let rows = q ? this.rows.filter((r) => this.filterText(r).toLowerCase().includes(q)) : this.rows.slice();
    if (this.sortCol !== null) {
      const v = this.columns[this.sortCol].value;
      const dir = this.desc ? -1 : 1;
      rows.sort((a, b) => {
        const x = v(a), y = v(b);
        if (x === y) return 0;
        if (x === undefined || x === null) return 1;
        if (y === undefined || y === null) return -1;
        return (x < y ? -1 : 1) * dir;
      });
    }
    const pages = Math.max(1, Math.ceil(rows.length / this.pageSize));
    this.page = Math.min(this.page, pages - 1);
    const start = this.page * this.pageSize;
    const shown = rows.slice(start, start + this.pageSize);
    replace(this.tbody, shown.length ? shown.map((r) => el("tr", {}, this.columns.map((c) =>
      el("td", {class: c.num ? "num" : null}, c.render ? c.render(r) : String(c.value(r) ?? "–")))))
      : el("tr", {}, el("td", {class: "empty", colspan: this.columns.length}, q ? "No match." : this.emptyText)));
    this.count.textContent = q ? `${rows.length} of ${this.rows.length}` : `${rows.length}`;
    if (pages <= 1) { replace(this.pager); this.pager.hidden = true; return; }
    this.pager.hidden = false;
    replace(this.pager,
      el("button", {disabled: this.page === 0, onclick: () => { this.page--; this.render(); }}, "‹ Prev"),
      `${start + 1}–${start + shown.length} of ${rows.length}`,
      el("button", {disabled: this.page >= pages - 1, onclick: () => { this.page++; this.render(); }}, "Next ›"));
  }
}
