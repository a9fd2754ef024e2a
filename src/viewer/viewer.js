// zarrd's viewer: the dataset tree, an array's info, and a deep-zoom view of any numeric
// array of two or more dimensions through zarrd's own IIIF Image API, with OpenSeadragon
// served by zarrd (no CDN). The last two dimensions are height and width; sliders fix the
// leading ones. The value under the cursor comes from /v1/slice, so it is the stored value,
// not a colour read back.
//
// Private datasets: the person gives an API key or a token (kept in sessionStorage, so in
// this tab only, never in localStorage or a cookie); the viewer trades it for a capability
// URL (POST /v1/tokens) and reads everything behind it (/t/TOKEN/...), because
// OpenSeadragon's tile requests cannot carry an Authorization header. A page opened at a
// capability URL (/t/TOKEN/view/...) stays behind it.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { ds: null, path: null, meta: null, indices: [], viewer: null, info: null, base: "" };
const SECRET = "zarrd.credential";
const BEHIND = /^(\/t\/[^/]+)(\/.*)?$/;

function enc(path) { return path.split("/").map(encodeURIComponent).join("/"); }

// The capability URL prefix the page was opened behind, if any.
function pageBase() {
  const m = location.pathname.match(BEHIND);
  return m ? m[1] : "";
}

// Trades the stored credential for a capability URL to everything the person may read.
async function mint() {
  const secret = sessionStorage.getItem(SECRET);
  if (!secret) { state.base = pageBase(); return; }
  const r = await fetch("/v1/tokens", {
    method: "POST",
    headers: { "Authorization": `Bearer ${secret}`, "Content-Type": "application/json" },
    body: JSON.stringify({ prefix: "/", ttl_s: 3600 }),
  });
  const body = await r.json();
  if (!r.ok) {
    if (r.status === 401) sessionStorage.removeItem(SECRET);
    throw new Error(body.detail || r.statusText);
  }
  state.base = body.url.replace(/\/$/, "");
  state.expires = Date.parse(body.expires_at);
}

async function json(url, retried) {
  // Minted again a minute before it expires (or when the server says it has).
  if (sessionStorage.getItem(SECRET) && state.expires && Date.now() > state.expires - 60000) await mint();
  const r = await fetch(state.base + url);
  if (r.status === 401 && !retried && sessionStorage.getItem(SECRET)) {
    await mint();
    return json(url, true);
  }
  const body = await r.json();
  if (!r.ok) throw new Error(body.detail || r.statusText);
  return body;
}

function showWho() {
  const held = !!sessionStorage.getItem(SECRET);
  $("forget").hidden = !held;
  $("who").textContent = held ? "using your credential" : (state.base ? "using a capability URL" : "");
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  Object.assign(e, attrs || {});
  for (const c of children) e.append(c);
  return e;
}

async function loadTree() {
  const box = $("datasets");
  const { datasets } = await json("/v1/datasets");
  box.textContent = "";
  for (const d of datasets) {
    const list = el("ul");
    box.append(el("h2", { textContent: d.name, title: d.title || "" }));
    if (d.versioned) box.append(await versionPicker(d.name, list));
    box.append(list);
    await listArrays(d.name, list);
  }
  markCurrent();
}

// A versioned (Icechunk) dataset: its branches and tags; choosing one lists that version,
// whose arrays open as `NAME@REF`.
async function versionPicker(name, list) {
  const select = el("select", { className: "versions", title: "branch, tag or snapshot" });
  try {
    const { branches, tags } = await json(`/v1/datasets/${encodeURIComponent(name)}/versions`);
    for (const b of branches) select.append(el("option", { value: b.name, textContent: `branch ${b.name}` }));
    for (const t of tags) select.append(el("option", { value: t.name, textContent: `tag ${t.name}` }));
  } catch (e) {
    select.append(el("option", { textContent: e.message }));
  }
  const current = (state.ds || "").split("@");
  if (current[0] === name && current[1]) select.value = current[1];
  select.addEventListener("change", () => listArrays(`${name}@${select.value}`, list));
  return el("label", { className: "small" }, "version ", select);
}

async function listArrays(name, list) {
  list.textContent = "";
  try {
    const tree = await json(`/v1/datasets/${encodeURIComponent(name)}`);
    for (const n of tree.nodes.filter((n) => n.node_type === "array")) {
      const label = `${n.path} ${n.shape ? "(" + n.shape.join("×") + ")" : ""} ${n.data_type || ""}`;
      const a = el("a", { href: `${state.base}/view/${encodeURIComponent(name)}/${enc(n.path)}`, textContent: label });
      a.dataset.key = `${name}/${n.path}`;
      a.addEventListener("click", (ev) => {
        ev.preventDefault();
        history.pushState(null, "", a.href);
        openFromLocation();
      });
      list.append(el("li", {}, a));
    }
  } catch (e) {
    list.append(el("li", { className: "error", textContent: e.message }));
  }
  markCurrent();
}

function markCurrent() {
  for (const a of document.querySelectorAll("#datasets a")) {
    a.classList.toggle("current", a.dataset.key === `${state.ds}/${state.path}`);
  }
}

function openFromLocation() {
  const m = location.pathname.replace(BEHIND, "$2").match(/^\/view\/([^/]+)\/(.+)$/);
  if (m) openArray(decodeURIComponent(m[1]), m[2].split("/").map(decodeURIComponent).join("/"));
}

function imageable(meta) {
  return meta.shape.length >= 2 && !/complex|string/.test(meta.data_type) && meta.shape.every((n) => n > 0);
}

async function openArray(ds, path) {
  state.ds = ds;
  state.path = path;
  markCurrent();
  const info = $("info");
  info.textContent = "Loading…";
  let meta;
  try {
    meta = await json(`/v1/arrays/${encodeURIComponent(ds)}/${enc(path)}`);
  } catch (e) {
    info.replaceChildren(el("p", { className: "error", textContent: e.message }));
    return;
  }
  state.meta = meta;
  info.replaceChildren(
    el("h2", { textContent: `${ds}/${path}` }),
    el("pre", {
      textContent: `shape ${JSON.stringify(meta.shape)}  data_type ${meta.data_type}  dims ${JSON.stringify(meta.dimension_names)}\n` +
        `chunks ${JSON.stringify(meta.chunk_grid.chunk_sizes)}  fill ${JSON.stringify(meta.fill_value)}\n` +
        `attributes ${JSON.stringify(meta.attributes)}`,
    }),
  );
  if (!imageable(meta)) {
    $("controls").hidden = true;
    info.append(el("p", { textContent: "Not shown as an image: an image needs two or more real-valued dimensions." }));
    if (state.viewer) state.viewer.close();
    return;
  }
  const leading = meta.shape.slice(0, -2);
  state.indices = leading.map(() => 0);
  const sliders = $("sliders");
  sliders.textContent = "";
  leading.forEach((n, d) => {
    const name = (meta.dimension_names && meta.dimension_names[d]) || `dim ${d}`;
    const out = el("output", { textContent: "0" });
    const input = el("input", { type: "range", min: 0, max: n - 1, value: 0, id: `slider-${d}` });
    input.addEventListener("change", () => { state.indices[d] = Number(input.value); showImage(); });
    input.addEventListener("input", () => { out.textContent = input.value; });
    sliders.append(el("label", {}, `${name} `, input, " ", out));
  });
  $("controls").hidden = false;
  await showImage();
}

function identifier() {
  const fixed = state.indices.length ? `[${state.indices.join(",")}]` : "";
  return encodeURIComponent(`${state.ds}/${state.path}${fixed}`);
}

function styleQuery() {
  const q = new URLSearchParams();
  if ($("vmin").value !== "") q.set("vmin", $("vmin").value);
  if ($("vmax").value !== "") q.set("vmax", $("vmax").value);
  q.set("colormap", $("colormap").value);
  return q.toString();
}

async function showImage() {
  const id = identifier();
  let info;
  try {
    info = await json(`/iiif/3/${id}/info.json`);
  } catch (e) {
    $("value").textContent = e.message;
    return;
  }
  state.info = info;
  // The window and colormap are zarrd query parameters outside IIIF, added to every tile.
  const source = new OpenSeadragon.IIIFTileSource(OpenSeadragon.IIIFTileSource.prototype.configure(info, info.id + "/info.json"));
  const tileUrl = source.getTileUrl.bind(source);
  const query = styleQuery();
  source.getTileUrl = (level, x, y) => `${tileUrl(level, x, y)}?${query}`;
  if (!state.viewer) {
    state.viewer = OpenSeadragon({
      id: "osd",
      // The canvas drawer keeps pixels readable (tests, screenshots) and smooths nothing.
      drawer: "canvas",
      showNavigationControl: false,
      imageSmoothingEnabled: false,
      maxZoomPixelRatio: 16,
      crossOriginPolicy: "Anonymous",
    });
    window.zarrdViewer = state.viewer;
    new OpenSeadragon.MouseTracker({ element: state.viewer.container, moveHandler: (ev) => pointAt(ev.position) }).setTracking(true);
  }
  state.viewer.open(source);
}

let pending = 0;
async function pointAt(position) {
  const viewer = state.viewer;
  if (!viewer || !viewer.world.getItemCount()) return;
  const p = viewer.viewport.viewerElementToImageCoordinates(position);
  const [h, w] = state.meta.shape.slice(-2);
  const x = Math.floor(p.x), y = Math.floor(p.y);
  if (x < 0 || y < 0 || x >= w || y >= h) { $("value").textContent = ""; return; }
  const ticket = ++pending;
  const s = [...state.indices, y, x].join(",");
  try {
    const v = await json(`/v1/slice/${encodeURIComponent(state.ds)}/${enc(state.path)}?s=${s}&format=json`);
    if (ticket === pending) $("value").textContent = `[${s}] = ${v.data === null ? "NaN/Inf" : v.data}`;
  } catch (e) {
    if (ticket === pending) $("value").textContent = e.message;
  }
}

async function start() {
  try {
    await mint();
  } catch (e) {
    $("who").textContent = e.message;
  }
  showWho();
  await loadTree().catch((e) => { $("datasets").textContent = e.message; });
  openFromLocation();
}

$("credential").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const secret = $("secret").value.trim();
  $("secret").value = "";
  if (!secret) return;
  sessionStorage.setItem(SECRET, secret);
  start();
});
$("forget").addEventListener("click", () => {
  sessionStorage.removeItem(SECRET);
  // Leave the capability URL too: the page is then what anyone sees.
  location.href = "/";
});

for (const id of ["vmin", "vmax", "colormap"]) $(id).addEventListener("change", () => state.meta && showImage());
window.addEventListener("popstate", openFromLocation);
start();
