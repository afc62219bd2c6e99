// thai-eval report: the views, the item browser and the two-model pairs.
// Every table is a DataTables table (the bundle itables ships, embedded in this file and imported from a Blob URL,
// so nothing is fetched); this script only loads the embedded data, wires the filters and renders one item.
// Every text from data, a model, a judge or a user goes in as text: DOM text nodes (el), or, in a
// DataTables cell or column title (which DataTables writes as HTML), through DataTables' own escaping renderer.
const meta = JSON.parse(document.getElementById("report-meta").textContent);

function bytesOf(b64) {
  const bin = atob(b64.trim());
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

async function importModule(b64) {  // an ES module from base64 text (as itables' offline mode loads it)
  const url = URL.createObjectURL(new Blob([bytesOf(b64)], { type: "text/javascript" }));
  try { return await import(url); } finally { URL.revokeObjectURL(url); }
}

async function gunzipJSON(b64) {  // the items are gzip-compressed JSON: the browser's DecompressionStream reads them
  const stream = new Blob([bytesOf(b64)]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

function el(tag, attrs = {}, ...kids) {  // text always goes in as text: item contents are never parsed as HTML
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const kid of kids) if (kid !== null && kid !== undefined) node.append(kid instanceof Node ? kid : String(kid));
  return node;
}

// DataTables writes a cell's display text and a column's title as HTML, and decodes a cell's search text as HTML
// (to read its entities); DataTable.render.text() escapes &, <, >, " for both, so the cell shows the text as it is
// and the search matches it as it is ("<<48/2=24>>", "3 > 2", "&amp;"). The type DataTables detects is read from
// the escaped text too: raw text holding "<" would be typed "html", whose search strips every "<...>" first.
// Sorting reads the raw text.
function textRender(DataTable, shorten = (t) => t) {
  const { display: escape } = DataTable.render.text();
  return { display: (t) => escape(shorten(String(t ?? ""))), filter: escape, type: escape };
}

const fmt = (v, d = 3) => (v === null || v === undefined ? "–" : Number(v).toFixed(d));

function block(title, text) {
  return [el("h4", {}, title), el("pre", {}, text)];
}

function renderItem(box, it, pools) {
  box.replaceChildren();
  box.hidden = false;
  const head = el("div", {}, el("strong", {}, it.m), ` · ${it.b} / ${it.t} · item ${it.k}`, it.sub ? ` · ${it.sub}` : null,
    " · score ", el("strong", {}, fmt(it.v)), " ");
  if (it.c !== undefined) head.append(el("span", { class: "badge " + (it.c ? "ok" : "bad") }, it.c ? "correct" : "incorrect"));
  box.append(head);
  if (it.note) box.append(el("p", { class: "notes" }, it.note));
  if (it.fs) {
    const pool = pools[it.fs[0]] || [];
    const shots = it.fs[1].map((i) => pool[i]).filter((x) => x !== undefined);
    const det = el("details", {}, el("summary", {}, `few-shot examples (${shots.length})`), el("pre", {}, shots.join("\n\n")));
    box.append(det);
  }
  if (it.q) box.append(...block(it.ql || "prompt", it.q));
  if (it.ch && it.ch.length) {
    const table = el("table", { class: "choices" }, el("tr", {}, el("th", {}, "#"), el("th", {}, "choice"), el("th", {}, "log-likelihood")));
    it.ch.forEach((c, i) => {
      const cls = [i === it.g ? "gold" : "", i === it.p ? "pred" : ""].join(" ").trim();
      table.append(el("tr", { class: cls }, el("td", {}, (i === it.p ? "▶ " : "") + i), el("td", {}, c),
        el("td", {}, it.ll ? fmt(it.ll[i], 4) : "")));
    });
    box.append(el("h4", {}, "choices (green: gold, ▶: the model's choice)"), table);
  } else if (it.ll) {
    box.append(...block("log-likelihoods", it.ll.map((x, i) => `${i}: ${fmt(x, 4)}`).join("\n")));
  }
  if (it.g !== undefined && !(it.ch && it.ch.length)) box.append(...block("gold", String(it.g)));
  if (it.o !== undefined) box.append(...block(it.ol || "output", it.o || "(empty)"));
  if (it.ref) box.append(...block("reference", it.ref));
  if (it.js !== undefined) box.append(...block(`judge (${it.js}, repeat ${it.r || 0}): score ${fmt(it.v, 1)}`, it.j || "(no reply)"));
  if (it.hash) box.append(el("p", { class: "caption" }, `prompt sha256 ${it.hash}…`));
}

function searchText(it) {  // what the search matches; it starts with the item's own question (the snippet shown)
  const q = it.q || "";
  const own = q.includes("\n\n") ? q.slice(q.lastIndexOf("\n\n") + 2) : "";  // after a preamble or description
  return [own, q, (it.ch || []).join("\n"), it.o, it.ref, it.j, it.sub].filter((x) => x !== undefined && x !== null && x !== "").join("\n");
}

function showView(name) {
  const view = ["leaderboard", "figures", "items", "compare"].includes(name) ? name : "leaderboard";
  document.querySelectorAll("section.view").forEach((s) => s.classList.toggle("active", s.id === "view-" + view));
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.view === view));
  return view;
}

function options(select, values) {
  const keep = select.value;
  select.replaceChildren(el("option", { value: "" }, "all"), ...values.map((v) => el("option", { value: v }, v)));
  select.value = values.includes(keep) ? keep : "";
}

async function main() {
  const { default: DataTable } = await importModule(document.getElementById("dt-bundle").textContent);
  const text = textRender(DataTable);
  const title = DataTable.render.text().display;  // a column title holding data (a model name), escaped
  const tables = {};
  document.querySelectorAll("table.lb").forEach((t) => {
    tables[t.id] = new DataTable(t, { paging: false, searching: false, info: false, order: [] });
  });
  let view = showView(location.hash.slice(1));
  window.addEventListener("hashchange", () => {
    view = showView(location.hash.slice(1));
    Object.values(tables).forEach((t) => t.columns.adjust());
  });

  const payload = await gunzipJSON(document.getElementById("report-items").textContent);
  const items = payload.items;
  for (const it of items) it._text = searchText(it);
  const f = (id) => document.getElementById(id);
  const tasksOf = (b) => [...new Set(items.filter((it) => !b || it.b === b).map((it) => it.t))].sort();
  options(f("f-bench"), [...new Set(items.map((it) => it.b))]);
  options(f("f-task"), tasksOf(""));
  options(f("f-model"), meta.models);

  const short = (t) => (t.length > 140 ? t.slice(0, 140) + "…" : t);
  const items_dt = new DataTable("#items-table", {
    data: items, deferRender: true, pageLength: 25, order: [], search: { smart: false },
    layout: { topEnd: null },  // the search box is the filter bar's
    columns: [
      { title: "model", data: "m", render: text }, { title: "benchmark", data: "b", render: text },
      { title: "task", data: "t", render: text }, { title: "item", data: "k", render: text },
      { title: "score", data: "v", defaultContent: "", render: (v, type) => (type === "display" ? fmt(v) : v) },
      { title: "correct", data: "c", defaultContent: "", render: (c) => (c === undefined ? "" : c ? "✓" : "✗") },
      { title: "text", data: "_text", orderable: false, className: "txt", render: textRender(DataTable, short) },
    ],
  });
  // Filters on the row data: benchmark, task, model exactly; correct; score range.
  items_dt.search.fixed("filters", (_, it) => {
    const b = f("f-bench").value, t = f("f-task").value, m = f("f-model").value, c = f("f-correct").value;
    const lo = f("f-min").value, hi = f("f-max").value;
    if ((b && it.b !== b) || (t && it.t !== t) || (m && it.m !== m)) return false;
    if (c && it.c !== (c === "1")) return false;
    if (lo !== "" && !(it.v >= Number(lo))) return false;
    if (hi !== "" && !(it.v <= Number(hi))) return false;
    return true;
  });
  // Thai has no spaces between words: the query is matched as one substring of the item's text (no smart split).
  const runSearch = () => items_dt.search(f("f-search").value, false, false).draw();
  f("f-search").addEventListener("input", runSearch);
  f("f-bench").addEventListener("change", () => { options(f("f-task"), tasksOf(f("f-bench").value)); items_dt.draw(); });
  for (const id of ["f-task", "f-model", "f-correct", "f-min", "f-max"]) f(id).addEventListener("input", () => items_dt.draw());
  items_dt.on("click", "tbody tr", function () {
    const it = items_dt.row(this).data();
    if (it) renderItem(f("item-detail"), it, payload.pools);
  });
  document.addEventListener("click", (e) => {
    const a = e.target.closest("a.cell-link");
    if (!a) return;
    const [b, t] = a.dataset.items.split("|");
    f("f-bench").value = b; options(f("f-task"), tasksOf(b)); f("f-task").value = t || "";
    f("f-model").value = a.dataset.model; f("f-correct").value = ""; f("f-min").value = ""; f("f-max").value = "";
    f("f-search").value = ""; items_dt.search("", false, false);
    items_dt.draw();
  });
  f("loading").hidden = true;

  if (meta.pair && f("pairs-table")) {
    const { model_a: A, model_b: B } = meta.pair;
    const byKey = new Map();
    for (const it of items) {
      if (it.m !== A && it.m !== B) continue;
      const key = [it.b, it.t, it.k, it.r || 0].join("|");
      const e = byKey.get(key) || {};
      e[it.m === A ? "a" : "b"] = it;
      byKey.set(key, e);
    }
    const pairs = [...byKey.values()].filter((e) => e.a && e.b).map((e) => {
      const d = e.a.v === null || e.b.v === null ? null : e.a.v - e.b.v;
      return { b: e.a.b, t: e.a.t, k: e.a.k, va: e.a.v, vb: e.b.v, d, ad: d === null ? -1 : Math.abs(d), a: e.a, bb: e.b,
               _text: e.a._text + "\n" + (e.b.o || "") };
    });
    pairs.sort((x, y) => y.ad - x.ad || x.b.localeCompare(y.b) || x.t.localeCompare(y.t));  // differing items first
    const pairs_dt = new DataTable("#pairs-table", {
      data: pairs, deferRender: true, pageLength: 10, order: [], search: { smart: false },
      columns: [
        { title: "benchmark", data: "b", render: text }, { title: "task", data: "t", render: text },
        { title: "item", data: "k", render: text },
        { title: title(`A: ${A}`), data: "va", render: (v, type) => (type === "display" ? fmt(v) : v) },
        { title: title(`B: ${B}`), data: "vb", render: (v, type) => (type === "display" ? fmt(v) : v) },
        { title: "A − B", data: "d", render: (v, type) => (type === "display" ? fmt(v) : v) },
        { title: "text", data: "_text", orderable: false, className: "txt", render: textRender(DataTable, short) },
      ],
    });
    pairs_dt.on("click", "tbody tr", function () {
      const p = pairs_dt.row(this).data();
      if (!p) return;
      f("pair-detail").hidden = false;
      renderItem(f("pair-a"), p.a, payload.pools);
      renderItem(f("pair-b"), p.bb, payload.pools);
    });
  }
  document.body.dataset.ready = "1";
}

main().catch((err) => { console.error("report failed to load:", err); });
