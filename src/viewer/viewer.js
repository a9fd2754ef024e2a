// zarrd's viewer: the dataset tree, an array's info, and a view of any numeric array of two
// or more dimensions. Arrays on a latitude/longitude grid (1-D coordinate arrays named by
// their last two dimensions beside them, as xarray writes) are a map over zarrd's /maps/
// tiles; others a deep-zoom view over its IIIF service (views.js). The last two dimensions
// are height and width; a slider fixes each leading one, labelled with its coordinate
// values (CF times as the server's ISO dates, in the coordinate's own calendar; cf.js only
// where no coordinate array gives them). The value under the cursor comes from /v1/slice,
// so it is the stored value, not a colour read back. The colorbar is drawn from the
// server's own colormap tables and window, and every tile is asked for with that explicit
// window, so the two cannot disagree. A click on the map, or an area drawn on it, shows a
// series below (series.js). The view (indices, colormap, window, position, the series'
// point or area, monthly means) is kept in the URL's query, so a view can be shared. An
// array that is a parameter of an OGC API – EDR collection (its group, docs/edr.md) links to
// the collection's document, and a clicked point's series to its EDR position query.
//
// Private datasets: the person gives an API key or a token (kept in sessionStorage, so in
// this tab only, never in localStorage or a cookie); the viewer trades it for a capability
// URL (POST /v1/tokens) and reads everything behind it (/t/TOKEN/...), because tile
// requests cannot carry an Authorization header. A page opened at a capability URL
// (/t/TOKEN/view/...) stays behind it.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  ds: null, path: null, meta: null, base: "", dims: [], indices: [], geo: null, edr: null,
  auto: null, colormaps: null, series: null, monthly: false, nodes: new Map(), restore: null, opened: 0,
  datasets: [],
};
const SECRET = "zarrd.credential";
const BEHIND = /^(\/t\/[^/]+)(\/.*)?$/;
const LAT = /^(lat|latitude|y)$/i;
const LON = /^(lon|longitude|x)$/i;
const VERTICAL = /^(level|plev|depth|height|z)$/i;

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

// A GET behind the capability URL in use.
async function request(url, retried) {
  // Minted again a minute before it expires (or when the server says it has).
  if (sessionStorage.getItem(SECRET) && state.expires && Date.now() > state.expires - 60000) await mint();
  const r = await fetch(state.base + url);
  if (r.status === 401 && !retried && sessionStorage.getItem(SECRET)) {
    await mint();
    return request(url, true);
  }
  return r;
}

async function json(url) {
  const r = await request(url);
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
  state.datasets = datasets;
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

// The nodes of a dataset (or version), fetched once: the tree and the coordinate lookup.
function nodesOf(name) {
  if (!state.nodes.has(name)) {
    const p = json(`/v1/datasets/${encodeURIComponent(name)}`).then((t) => t.nodes);
    p.catch(() => state.nodes.delete(name));
    state.nodes.set(name, p);
  }
  return state.nodes.get(name);
}

async function listArrays(name, list) {
  list.textContent = "";
  try {
    // OME-Zarr images and plates first (ome.js), then the arrays.
    omeListEntries(name, await nodesOf(name), list);
    for (const n of (await nodesOf(name)).filter((n) => n.node_type === "array")) {
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
  // /view/DS alone is the dataset's root (an OME-Zarr image or plate can be the root).
  const m = location.pathname.replace(BEHIND, "$2").match(/^\/view\/([^/]+)(?:\/(.*))?$/);
  if (m) openArray(decodeURIComponent(m[1]), (m[2] || "").split("/").map(decodeURIComponent).join("/"), new URLSearchParams(location.search));
  return !!m;
}

// The landing page opens the first map of the tree rather than an empty pane: the first
// array, dataset by dataset, whose last two dimensions are latitude and longitude with
// coordinate arrays of those names beside it (the bundled sample's climate/t2m).
async function firstMap() {
  for (const d of state.datasets || []) {
    const arrays = (await nodesOf(d.name).catch(() => [])).filter((n) => n.node_type === "array");
    // The names of the arrays of each group, found once.
    const parentOf = (path) => path.split("/").slice(0, -1).join("/");
    const names = new Map();
    for (const a of arrays) {
      const group = parentOf(a.path);
      if (!names.has(group)) names.set(group, new Set());
      names.get(group).add(a.path.split("/").pop());
    }
    for (const n of arrays) {
      if (!Array.isArray(n.shape) || n.shape.length < 2 || /complex|string|bytes|bool/.test(n.data_type || "")) continue;
      // Only arrays with a latitude and a longitude beside them are asked for their metadata.
      const siblings = names.get(parentOf(n.path));
      if (![...siblings].some((s) => LAT.test(s)) || ![...siblings].some((s) => LON.test(s))) continue;
      const meta = await json(`/v1/arrays/${encodeURIComponent(d.name)}/${enc(n.path)}`).catch(() => null);
      if (!meta) continue;
      const [y, x] = dimensionNames(meta).slice(-2);
      if (LAT.test(y) && LON.test(x) && siblings.has(y) && siblings.has(x)) return { ds: d.name, path: n.path };
    }
  }
  return null;
}

function imageable(meta) {
  return meta.shape.length >= 2 && !/complex|string|bytes|bool/.test(meta.data_type) && meta.shape.every((n) => n > 0);
}

function dimensionNames(meta) {
  const names = meta.dimension_names || (meta.attributes && meta.attributes._ARRAY_DIMENSIONS);
  return meta.shape.map((_, d) => (Array.isArray(names) && typeof names[d] === "string" && names[d]) || `dim_${d}`);
}

// The 1-D coordinate array named `name` beside the array, with `n` values: its values,
// attributes and labels (CF times as dates), or null.
async function coordinate(name, n, nodes) {
  const parent = state.path.split("/").slice(0, -1).join("/");
  const path = parent ? `${parent}/${name}` : name;
  if (path === state.path) return null;
  const node = nodes.find((x) => x.path === path && x.node_type === "array");
  if (!node || !node.shape || node.shape.length !== 1 || node.shape[0] !== n || n > 1000000) return null;
  const at = `${encodeURIComponent(state.ds)}/${enc(path)}`;
  const meta = await json(`/v1/arrays/${at}`);
  const attrs = meta.attributes || {};
  // A CF time: the server's labels (a label selection of all of it, `..` a date past any
  // data), the very text its series, sel= and resample use, in every CF calendar.
  if (/\ssince\s/.test(attrs.units || "")) {
    try {
      const all = await json(`/v1/slice/${at}?sel=${encodeURIComponent(`${name}:..9999-12-30`)}&format=json`);
      const labels = all.coords && all.coords[name];
      if (Array.isArray(labels) && labels.length === n) return { name, path, values: all.data, attrs, labels, isTime: true, server: true };
    } catch (e) {
      // An older server, or labels it cannot make: the page decodes them below.
    }
  }
  const slice = await json(`/v1/slice/${at}?format=json`);
  const values = slice.data;
  const dates = timeLabels(values, attrs.units, attrs.calendar);
  const units = attrs.units ? ` ${attrs.units}` : "";
  const labels = dates || values.map((v) => (typeof v === "number" ? formatValue(v) + units : String(v)));
  return { name, path, values, attrs, labels, isTime: !!dates };
}

async function openArray(ds, path, query) {
  const ticket = ++state.opened;
  state.ds = ds;
  state.path = path;
  state.edr = null;
  state.restore = query || new URLSearchParams();
  markCurrent();
  const info = $("info");
  info.textContent = "Loading…";
  // OME-Zarr images, their levels, plates and wells open in the microscopists' view (ome.js).
  if (await omeOpen(ds, path, state.restore, ticket)) return;
  let meta;
  try {
    meta = await json(`/v1/arrays/${encodeURIComponent(ds)}/${enc(path)}`);
  } catch (e) {
    info.replaceChildren(el("p", { className: "error", textContent: e.message }));
    return;
  }
  if (ticket !== state.opened) return;
  state.meta = meta;
  const attrs = meta.attributes || {};
  info.replaceChildren(
    el("h2", { textContent: `${ds}/${path}`, title: attrs.long_name || "" }),
    el("details", {},
      el("summary", { textContent: `${attrs.long_name ? attrs.long_name + " · " : ""}${meta.shape.join("×")} ${meta.data_type}${attrs.units ? " · " + attrs.units : ""}` }),
      el("pre", {
        textContent: `shape ${JSON.stringify(meta.shape)}  data_type ${meta.data_type}  dims ${JSON.stringify(meta.dimension_names)}\n` +
          `chunks ${JSON.stringify(meta.chunk_grid.chunk_sizes)}  fill ${JSON.stringify(meta.fill_value)}\n` +
          `attributes ${JSON.stringify(attrs)}`,
      })),
  );
  closeSeries();
  if (!imageable(meta)) {
    $("controls").hidden = true;
    info.append(el("p", { textContent: "Not shown as an image: an image needs two or more real-valued dimensions." }));
    hideViews();
    return;
  }
  const names = dimensionNames(meta);
  const nodes = await nodesOf(ds).catch(() => []);
  const coords = await Promise.all(names.map((name, d) => coordinate(name, meta.shape[d], nodes).catch(() => null)));
  if (ticket !== state.opened) return;
  state.dims = names.map((name, d) => ({ name, n: meta.shape[d], coord: coords[d] }));
  // A leading dimension without a coordinate array whose offsets the array's attributes
  // give (`time_units: "days since ..."`): its index is the offset.
  state.dims.slice(0, -2).forEach((dim) => {
    if (dim.coord || !attrs[`${dim.name}_units`]) return;
    const values = Array.from({ length: dim.n }, (_, i) => i);
    const dates = timeLabels(values, attrs[`${dim.name}_units`], attrs[`${dim.name}_calendar`]);
    if (dates) dim.coord = { name: dim.name, values, attrs: {}, labels: dates, isTime: true };
  });
  const restored = (state.restore.get("idx") || "").split(",").map(Number);
  state.indices = state.dims.slice(0, -2).map((dim, d) => (Number.isInteger(restored[d]) && restored[d] >= 0 && restored[d] < dim.n ? restored[d] : 0));
  state.geo = await geoGrid(ticket);
  if (ticket !== state.opened) return;
  edrCollection(ticket).catch(() => {});
  state.series = restoredSeries(state.restore);
  state.monthly = state.restore.get("monthly") === "1";
  buildSliders();
  $("colormap").value = state.restore.get("cmap") || $("colormap").value || "viridis";
  $("vmin").value = state.restore.get("vmin") || "";
  $("vmax").value = state.restore.get("vmax") || "";
  $("controls").hidden = false;
  await refresh(true);
  if (state.series && state.indices.length) showSeries();
}

// The series of the URL: `area` (a drawn area) or `ll` (a clicked place) on a map, `pt`
// (a cell by index; on a map, the place of that cell's coordinates).
function restoredSeries(q) {
  const ring = state.geo ? parseRing(q.get("area")) : null;
  if (ring) return { kind: "area", ring };
  const ll = (q.get("ll") || "").split(",").map(Number);
  if (state.geo && ll.length === 2 && ll.every(Number.isFinite)) return { kind: "point", lat: ll[0], lon: ll[1] };
  const pt = (q.get("pt") || "").split(",").map(Number);
  const [h, w] = state.meta.shape.slice(-2);
  if (pt.length !== 2 || !pt.every(Number.isInteger) || pt[0] < 0 || pt[1] < 0 || pt[0] >= h || pt[1] >= w) return null;
  return state.geo && !state.geo.projected ? { kind: "point", lat: state.geo.lat.values[pt[0]], lon: state.geo.lon.values[pt[1]] } : { kind: "cell", cell: pt };
}

// The grid of the array when the map tiles serve it: a latitude/longitude grid (its cells
// found here from the coordinates), or a projected, rotated, geostationary or curvilinear
// one that /v1/arrays names (`grid`; its cells found by the server: docs/grids.md).
async function geoGrid(ticket) {
  const [y, x] = state.dims.slice(-2);
  const grid = state.meta.grid;
  if (grid && grid.kind !== "geographic" && grid.dims[0] === y.name && grid.dims[1] === x.name) {
    try {
      const tilejson = await json(`/maps/${identifier()}/tilejson.json`);
      return ticket === state.opened ? { tilejson, projected: true } : null;
    } catch (e) {
      $("info").append(el("p", { className: "small", textContent: `Shown as an image, not a map: ${e.message}` }));
      return null;
    }
  }
  if (!y.coord || !x.coord || !LAT.test(y.name) || !LON.test(x.name) || y.n < 2 || x.n < 2) return null;
  const finite = (vs, lim) => vs.every((v) => typeof v === "number" && Math.abs(v) <= lim);
  if (!finite(y.coord.values, 90) || !finite(x.coord.values, 360)) return null;
  try {
    const tilejson = await json(`/maps/${identifier()}/tilejson.json`);
    if (ticket !== state.opened) return null;
    return {
      tilejson,
      lat: { values: y.coord.values, edges: cellEdges(y.coord.values) },
      lon: { values: x.coord.values, edges: cellEdges(x.coord.values) },
    };
  } catch (e) {
    $("info").append(el("p", { className: "small", textContent: `Shown as an image, not a map: ${e.message}` }));
    return null;
  }
}

// What each leading dimension is to OGC API – EDR ("t" a CF time, from a coordinate array
// or `time_units`; "z" a vertical one with a coordinate array; at most one of each), or null when the array cannot be a
// parameter of an EDR collection (docs/edr.md: as /edr finds them).
function edrAxes() {
  const axes = state.dims.slice(0, -2).map((dim) => {
    const c = dim.coord;
    // A time without a coordinate array is one EDR takes from `time_units` too.
    if (c && c.isTime) return "t";
    if (!c || !c.path) return null;
    return VERTICAL.test(dim.name) || String(c.attrs.axis || "").toLowerCase() === "z" ? "z" : null;
  });
  return axes.every(Boolean) && new Set(axes).size === axes.length ? axes : null;
}

// The EDR collection of the array's group (`DATASET` for the root group, else
// `DATASET:GROUP:PATH`; a version `DATASET@REF` is that collection's instance REF), when
// the array is one of its parameters: state.edr, and a link to the collection's document
// in the info (behind the capability URL in use, like every request). Asked only for a map
// whose leading dimensions EDR takes, so that other arrays cost no request that must fail.
async function edrCollection(ticket) {
  const axes = state.geo && edrAxes();
  const [name, ref] = state.ds.split("@");
  const parts = state.path.split("/");
  const parameter = parts.pop();
  if (!axes || name.includes(":") || parts.some((p) => p.includes(":"))) return;
  const cid = [name, ...parts].join(":");
  const url = `/edr/collections/${[name, ...parts].map(encodeURIComponent).join(":")}` +
    (ref ? `/instances/${encodeURIComponent(ref)}` : "");
  const doc = await json(url);
  if (ticket !== state.opened || !doc.parameter_names || !Object.hasOwn(doc.parameter_names, parameter)) return;
  state.edr = { cid, url, parameter, axes };
  $("info").append(el("p", { className: "small links" }, el("a", {
    id: "edr-link", href: state.base + url, textContent: "OGC EDR collection",
    title: `${cid}${ref ? " at " + ref : ""}: OGC API – EDR position, area, cube and radius queries of ${parameter} as CoverageJSON, GeoJSON or CSV`,
  })));
  seriesEdrLink();
}

function buildSliders() {
  const sliders = $("sliders");
  sliders.textContent = "";
  state.dims.slice(0, -2).forEach((dim, d) => {
    const label = (i) => (dim.coord ? dim.coord.labels[i] : String(i));
    const out = el("output", { id: `slider-${d}-label`, textContent: label(state.indices[d]) });
    const input = el("input", { type: "range", min: 0, max: dim.n - 1, value: state.indices[d], id: `slider-${d}` });
    input.addEventListener("input", () => { out.textContent = label(Number(input.value)); });
    input.addEventListener("change", () => setIndex(d, Number(input.value)));
    sliders.append(el("label", { title: `${dim.name}: index ${dim.n} values` }, `${dim.name} `, input, out));
  });
}

function setIndex(d, i) {
  state.indices[d] = i;
  const input = $(`slider-${d}`);
  if (input) {
    input.value = i;
    $(`slider-${d}-label`).textContent = state.dims[d].coord ? state.dims[d].coord.labels[i] : String(i);
  }
  // The series runs along the first dimension at the others' indices: a new one for those.
  if (d > 0 && state.series && !$("series").hidden) showSeries();
  refresh(false);
}

function identifier() {
  const fixed = state.indices.length ? `[${state.indices.join(",")}]` : "";
  return encodeURIComponent(`${state.ds}/${state.path}${fixed}`);
}

// The window in use: the person's vmin/vmax, else the server's own (attributes, else the
// array's valid range).
function windowNow() {
  const pick = (id, auto) => ($(id).value !== "" && Number.isFinite(Number($(id).value)) ? Number($(id).value) : auto);
  return { vmin: pick("vmin", state.auto ? state.auto.vmin : 0), vmax: pick("vmax", state.auto ? state.auto.vmax : 1) };
}

function styleQuery() {
  const w = windowNow();
  const q = new URLSearchParams();
  if (w.vmin !== null) q.set("vmin", String(w.vmin));
  if (w.vmax !== null) q.set("vmax", String(w.vmax));
  q.set("colormap", $("colormap").value);
  return q.toString();
}

// Draws the array at the current indices and style: the window first (the colorbar's and
// the tiles'), then the view.
async function refresh(fresh) {
  if (!state.meta) return;
  if (fresh || !state.auto) {
    try {
      state.auto = await json(`/viewer/window/${identifier()}`);
    } catch (e) {
      state.auto = null;
      $("value").textContent = e.message;
    }
    $("vmin").placeholder = state.auto && state.auto.vmin !== null ? formatValue(state.auto.vmin) : "auto";
    $("vmax").placeholder = state.auto && state.auto.vmax !== null ? formatValue(state.auto.vmax) : "auto";
  }
  drawLegend();
  if (state.geo) await showMap(fresh); else await showImage(fresh);
  if (!$("series").hidden) drawSeriesMarker();
  saveState();
}

// The view in the URL's query (replaceState: moving around does not fill the history).
function saveState() {
  if (!state.meta) return;
  const q = new URLSearchParams();
  if (state.indices.length) q.set("idx", state.indices.join(","));
  q.set("cmap", $("colormap").value);
  if ($("vmin").value !== "") q.set("vmin", $("vmin").value);
  if ($("vmax").value !== "") q.set("vmax", $("vmax").value);
  for (const [k, v] of Object.entries(viewPosition())) q.set(k, v);
  const s = state.series;
  if (s && !$("series").hidden) {
    if (s.kind === "point") q.set("ll", `${s.lat},${s.lon}`);
    else if (s.kind === "cell") q.set("pt", s.cell.join(","));
    else q.set("area", ringText(s.ring));
    if (state.monthly && monthlyAvailable()) q.set("monthly", "1");
  }
  const url = `${location.pathname}?${q}`;
  if (url !== location.pathname + location.search) history.replaceState(null, "", url);
}

async function loadColormaps() {
  try {
    const list = await (await fetch("/viewer/colormaps.json")).json();
    state.colormaps = Object.fromEntries(list.map((c) => [c.name, c.colors]));
    $("colormap").replaceChildren(...list.map((c) => el("option", { textContent: c.name })));
  } catch (e) {
    state.colormaps = null;
  }
}

async function start() {
  try {
    await mint();
  } catch (e) {
    $("who").textContent = e.message;
  }
  showWho();
  if (!state.colormaps) await loadColormaps();
  await loadTree().catch((e) => { $("datasets").textContent = e.message; });
  if (openFromLocation() || state.path !== null) return;
  const found = await firstMap();
  // Unless the person opened something meanwhile.
  if (!found || state.path !== null) return;
  history.replaceState(null, "", `${state.base}/view/${encodeURIComponent(found.ds)}/${enc(found.path)}${location.search}`);
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

for (const id of ["vmin", "vmax", "colormap"]) $(id).addEventListener("change", () => state.meta && refresh(false));
setupSeries();
window.addEventListener("popstate", openFromLocation);
start();
