// The series panel under the view (uPlot): the values along the first dimension at a
// clicked point, or the area-weighted mean over an area drawn on the map; monthly means of
// either; the series as CSV (and a clicked point's, where the array is an OGC API – EDR
// parameter, as the equivalent EDR position query's CoverageJSON). The server does the reading and the arithmetic, so the plot
// shows what a script asking the same URL gets:
//   a map click   /v1/slice?sel=LAT:~lat,LON:~lon   (the server picks the nearest grid
//                 point and says which in `point`; the title shows it)
//   a drawn area  /v1/reduce?op=mean&over=LAT,LON&weights=area&within=POLYGON((lon lat, ...))
//   monthly means the same on /v1/reduce with resample=TIME:1M (op=mean)
// and the x labels are the server's decoded coordinates (`coords`: CF times in the array's
// own calendar). Arrays whose dimensions have no coordinate arrays (the deep-zoom view, the
// sample's `time_units` days) are asked by index (`s=`) and labelled by the page (cf.js).
//
// state.series, kept in the URL by viewer.js (saveState):
//   {kind: "point", lat, lon}         a click on the map                  ll=lat,lon
//   {kind: "cell", cell: [row, col]}  a cell by index (deep-zoom view)    pt=row,col
//   {kind: "area", ring: [[lon, lat], ...]}  a drawn box or polygon      area=lon lat,lon lat,...
// state.monthly: monthly means instead of the steps                      monthly=1
"use strict";

// ticket: the latest request (an older answer arriving late is dropped); shown: what the
// plot shows (its URL, x labels and values; window.zarrdSeries for the browser tests);
// draw: the armed Draw interaction; layer: the grid point or area on the map.
const series = { ticket: 0, shown: null, draw: null, layer: null };

// ---- what to ask ----

// A `sel=` item fixing leading dimension d at its slider, by label, or null when the
// server has no labels for it (no coordinate array beside the array).
function labelItem(d) {
  const dim = state.dims[d], c = dim.coord, i = state.indices[d];
  if (!c || !c.path) return null;
  // The server's own label text (ISO dates) matches exactly; a number is asked as the
  // nearest label, so that a float32 coordinate's printing cannot miss it.
  if (c.server) return `${dim.name}:${c.labels[i]}`;
  return typeof c.values[i] === "number" && Number.isFinite(c.values[i]) ? `${dim.name}:~${c.values[i]}` : null;
}

// Monthly means need CF time labels on the first dimension from a coordinate array (the
// server resamples in that calendar; an index with `time_units` alone has none).
function monthlyAvailable() {
  const c = state.dims.length > 2 ? state.dims[0].coord : null;
  return !!(c && c.path && c.isTime);
}

function ringText(ring) { return ring.map(([x, y]) => `${x} ${y}`).join(","); }

// "lon lat,lon lat,..." (the URL's `area`) → a closed ring, or null.
function parseRing(text) {
  const ring = (text || "").split(",").map((p) => p.trim().split(/\s+/).map(Number));
  if (ring.length < 4 || !ring.every((p) => p.length === 2 && p.every(Number.isFinite))) return null;
  return closeRing(ring);
}

function closeRing(ring) {
  const [a, b] = [ring[0], ring[ring.length - 1]];
  return a[0] === b[0] && a[1] === b[1] ? ring : [...ring, a];
}

// The query for the series shown (format=json; the CSV link swaps the format), or null.
function seriesUrl(format) {
  const s = state.series;
  const dims = state.dims;
  const [ydim, xdim] = dims.slice(-2);
  const q = [];
  const set = (k, v) => q.push(`${k}=${encodeURIComponent(v)}`);
  let route = "slice";
  if (s.kind === "area") {
    route = "reduce";
    set("op", "mean");
    set("over", `${ydim.name},${xdim.name}`);
    set("weights", "area");
    set("within", `POLYGON((${s.ring.map(([x, y]) => `${x} ${y}`).join(", ")}))`);
    // The other leading dimensions at their sliders, by index (the first is the axis).
    if (dims.length > 3) set("s", [":", ...state.indices.slice(1), ":", ":"].join(","));
  } else {
    // A place on the map by label (the server picks the grid point); a cell, or a place
    // where another leading dimension has no labels (sel= and s= do not mix), by index.
    const items = s.kind === "point" ? state.indices.slice(1).map((_, d) => labelItem(d + 1)) : null;
    const [latName, lonName] = pointNames();
    if (items && items.every(Boolean)) {
      set("sel", [...items, `${latName}:~${s.lat}`, `${lonName}:~${s.lon}`].join(","));
    } else if (state.geo && state.geo.projected) {
      return null;
    } else {
      const cell = s.kind === "cell" ? s.cell : geoCell(s.lat, s.lon);
      if (!cell) return null;
      set("s", [":", ...state.indices.slice(1), ...cell].join(","));
    }
  }
  if (state.monthly && monthlyAvailable()) {
    if (route === "slice") { route = "reduce"; set("op", "mean"); }
    set("resample", `${dims[0].name}:1M`);
  }
  set("format", format);
  return `/v1/${route}/${encodeURIComponent(state.ds)}/${enc(state.path)}?${q.join("&")}`;
}

// The names a point's latitude and longitude go by in `sel=`: the grid's dimensions on a
// latitude/longitude grid, `lat`/`lon` on a projected one (the server finds the cell).
function pointNames() {
  if (state.geo && state.geo.projected) return ["lat", "lon"];
  return state.dims.slice(-2).map((d) => d.name);
}

// The grid cell [row, col] holding a longitude/latitude (the map tiles' cells), or null.
function geoCell(lat, lon) {
  const g = state.geo;
  if (!g || g.projected) return null;
  const iy = cellIndex(g.lat.values, g.lat.edges, lat, false);
  const ix = cellIndex(g.lon.values, g.lon.edges, lon, true);
  return iy < 0 || ix < 0 ? null : [iy, ix];
}

// ---- the panel ----

function closeSeries() {
  $("series").hidden = true;
  series.ticket++;
  state.series = null;
  disarmDraw();
  if (series.layer) series.layer.getSource().clear();
  dropPlot();
}

function dropPlot() {
  series.shown = null;
  window.zarrdSeries = null;
  if (views.plot) { views.plot.destroy(); views.plot = null; }
}

// Shows `next` (or the series already chosen, again: a slider of another dimension moved,
// the monthly toggle changed).
async function showSeries(next) {
  if (!state.indices.length) return;
  if (next) state.series = next;
  if (!state.series) return;
  const ticket = ++series.ticket;
  const url = seriesUrl("json");
  const monthly = state.monthly && monthlyAvailable();
  $("series").hidden = false;
  $("series-monthly").disabled = !monthlyAvailable();
  $("series-monthly").checked = monthly;
  $("series-monthly").parentElement.title = monthlyAvailable()
    ? `each calendar month's mean (/v1/reduce resample=${state.dims[0].name}:1M)`
    : `needs CF time labels on ${state.dims[0].name}`;
  drawOverlay(null);
  let body;
  try {
    if (!url) throw new Error("the point is outside the grid");
    body = await json(url);
    if (!Array.isArray(body.data) || body.shape.length !== 1) throw new Error(`a series has one dimension, this answer has shape [${body.shape}]`);
  } catch (e) {
    if (ticket !== series.ticket) return;
    // No plot of something else under this message.
    dropPlot();
    $("series-title").textContent = e.message;
    $("series-csv").hidden = true;
    $("series-edr").hidden = true;
    return;
  }
  if (ticket !== series.ticket) return;
  const labels = xLabels(body, monthly);
  series.shown = { kind: state.series.kind, url, csv: seriesUrl("csv"), labels, values: body.data, monthly };
  window.zarrdSeries = series.shown;
  const title = seriesTitle(body, monthly);
  $("series-title").textContent = title;
  $("series-title").title = title;
  const csv = $("series-csv");
  csv.hidden = false;
  csv.href = state.base + series.shown.csv;
  csv.download = `${state.ds}_${state.path}_${state.series.kind}${monthly ? "_monthly" : ""}.csv`.replace(/[^\w.@-]+/g, "_");
  seriesEdrLink();
  drawOverlay(body);
  plotSeries(labels, body.data);
  saveSoon();
}

// The OGC API – EDR position query of the series shown (docs/edr.md), or null: a clicked
// point's values along the first dimension, the others at their sliders (a time by the
// server's label, a level by its value: `datetime=`, `z=`), where the array is a parameter
// of an EDR collection (state.edr, viewer.js). EDR takes the cell holding the point, whose
// edges are midway between coordinates: the grid point /v1/slice's `~` picks. Monthly
// means have no EDR equivalent.
function edrUrl() {
  const e = state.edr, s = state.series, shown = series.shown;
  if (!e || !s || s.kind !== "point" || !shown || shown.monthly) return null;
  const q = [`coords=${encodeURIComponent(`POINT(${s.lon} ${s.lat})`)}`, `parameter-name=${encodeURIComponent(e.parameter)}`];
  for (let d = 1; d < state.indices.length; d++) {
    const c = state.dims[d].coord, i = state.indices[d];
    if (e.axes[d] === "t") {
      if (!c.server) return null;
      q.push(`datetime=${encodeURIComponent(c.labels[i])}`);
    } else {
      q.push(`z=${encodeURIComponent(c.values[i])}`);
    }
  }
  return `${e.url}/position?${q.join("&")}`;
}

// The panel's "as CoverageJSON (EDR)" link, shown with a series EDR can answer (again when
// the collection is found after the series).
function seriesEdrLink() {
  const a = $("series-edr");
  const url = !$("series").hidden && edrUrl();
  a.hidden = !url;
  if (!url) return;
  a.href = state.base + url;
  a.download = `${state.ds}_${state.path}_point.covjson`.replace(/[^\w.@-]+/g, "_");
}

// The x labels: the server's (`coords`) where the first dimension has a coordinate array
// (always for monthly means: periods only the server knows), else the page's own.
function xLabels(body, monthly) {
  const dim = state.dims[0];
  const server = body.coords && body.coords[dim.name];
  if (Array.isArray(server) && server.length === body.data.length && (monthly || (dim.coord && dim.coord.path))) {
    return server.map((l) => (typeof l === "number" ? formatValue(l) : String(l)));
  }
  return body.data.map((_, i) => (dim.coord ? dim.coord.labels[i] : String(i)));
}

function seriesTitle(body, monthly) {
  const attrs = state.meta.attributes || {};
  const dims = state.dims;
  const [ydim, xdim] = dims.slice(-2);
  const s = state.series;
  const name = `${attrs.long_name || state.path.split("/").pop()}${attrs.units ? " (" + attrs.units + ")" : ""}`;
  const along = `${monthly ? "monthly means" : "values"} along ${dims[0].name}`;
  if (s.kind === "area") {
    const none = body.data.every((v) => v === null) ? " — no value: no grid cell has its centre inside" : "";
    return `${name}: area-weighted mean over the drawn area, ${along}${none}`;
  }
  const p = body.point;
  if (s.kind === "point" && p && state.geo && state.geo.projected && typeof p.lat === "number") {
    const labels = ydim.name in p ? ` ${ydim.name} ${formatValue(p[ydim.name])}, ${xdim.name} ${formatValue(p[xdim.name])}` : "";
    return `${name}, ${along} at the cell${labels} ` +
      `(centre ${formatLat(p.lat)} ${formatLon(p.lon)}), holding ${formatLat(s.lat)} ${formatLon(s.lon)}`;
  }
  if (s.kind === "point" && p && typeof p[ydim.name] === "number" && typeof p[xdim.name] === "number") {
    const [lat, lon] = [p[ydim.name], p[xdim.name]];
    return `${name}, ${along} at the grid point ${ydim.name} ${formatValue(lat)}, ${xdim.name} ${formatValue(lon)} ` +
      `(${formatLat(lat)} ${formatLon(lon)}), nearest to ${formatLat(s.lat)} ${formatLon(s.lon)}`;
  }
  const cell = s.kind === "cell" ? s.cell : geoCell(s.lat, s.lon);
  if (!cell) return `${name}, ${along} at ${formatLat(s.lat)} ${formatLon(s.lon)}`;
  return `${name}, ${along} at ${coordText(cell).split(" · ").slice(0, 2).join(", ")} [${cell.join(",")}]`;
}

function plotSeries(labels, data) {
  const box = $("series-plot");
  if (views.plot) views.plot.destroy();
  const n = labels.length;
  const label = (i) => (Number.isInteger(i) && i >= 0 && i < n ? labels[i] : "");
  const size = () => ({ width: Math.max(200, box.clientWidth), height: Math.max(80, $("series").clientHeight - 28) });
  views.plot = new uPlot({
    ...size(),
    legend: { show: false },
    // Room for the last date label at the right edge.
    padding: [8, 48, 0, 0],
    scales: { x: { time: false } },
    axes: [
      { values: (u, splits) => splits.map(label), space: 90 },
      { values: (u, splits) => splits.map(formatValue), size: 60 },
    ],
    series: [{ value: (u, i) => (i === null ? "" : label(i)) }, { stroke: "#1f6fb2", width: 1.5, spanGaps: false, value: (u, v) => formatValue(v) }],
    hooks: { draw: [drawSeriesMarker] },
    cursor: { drag: { x: false, y: false } },
  }, [labels.map((_, i) => i), data], box);
  window.zarrdPlot = views.plot;
  // A click on the plot moves the first slider to that step (to a month's first step).
  views.plot.over.addEventListener("click", () => {
    const i = views.plot.cursor.idx;
    if (!Number.isInteger(i) || !series.shown) return;
    if (!series.shown.monthly) { setIndex(0, i); return; }
    const c = state.dims[0].coord;
    const first = c && c.server ? c.labels.findIndex((l) => l >= series.shown.labels[i]) : -1;
    if (first >= 0) setIndex(0, first);
  });
  if (!views.resize) {
    views.resize = new ResizeObserver(() => views.plot && views.plot.setSize(size()));
    views.resize.observe($("series"));
  }
}

// Where the first slider's step is on the plot: that step, or for monthly means the month
// holding it (ISO labels compare as text), or null.
function markerPosition() {
  const shown = series.shown;
  if (!shown || !shown.monthly) return state.indices[0];
  const c = state.dims[0].coord;
  if (!c || !c.server) return null;
  const now = c.labels[state.indices[0]];
  let at = null;
  shown.labels.forEach((l, i) => { if (l <= now) at = i; });
  return at;
}

// The current step of the first slider, as a line on the plot.
function drawSeriesMarker(u) {
  const plot = u && u.ctx ? u : views.plot;
  if (!plot) return;
  if (!u || !u.ctx) { plot.redraw(false, false); return; }
  const at = markerPosition();
  if (at === null) return;
  const x = plot.valToPos(at, "x", true);
  const ctx = plot.ctx;
  ctx.save();
  ctx.strokeStyle = "#c00";
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(x, plot.bbox.top);
  ctx.lineTo(x, plot.bbox.top + plot.bbox.height);
  ctx.stroke();
  ctx.restore();
}

// The series as a CSV file: fetched like every other request (behind the capability URL,
// minted again if it expired while the page stayed open) and saved from memory, so the
// link works for a private dataset too. The href stays for "copy link".
async function downloadCsv(ev) {
  ev.preventDefault();
  const a = ev.currentTarget;
  if (!series.shown) return;
  try {
    const r = await request(series.shown.csv);
    if (!r.ok) throw new Error((await r.json().catch(() => ({}))).detail || r.statusText);
    const save = el("a", { href: URL.createObjectURL(await r.blob()), download: a.download });
    document.body.append(save);
    save.click();
    save.remove();
    setTimeout(() => URL.revokeObjectURL(save.href), 60000);
  } catch (e) {
    $("series-title").textContent = `CSV: ${e.message}`;
  }
}

// ---- on the map: the grid point used, the drawn area, the Draw interaction ----

function setupMapSeries(map) {
  series.layer = new ol.layer.Vector({
    source: new ol.source.Vector(),
    style: new ol.style.Style({
      stroke: new ol.style.Stroke({ color: "#c00", width: 2 }),
      fill: new ol.style.Fill({ color: "rgba(255, 255, 255, 0.15)" }),
      image: new ol.style.Circle({ radius: 5, stroke: new ol.style.Stroke({ color: "#c00", width: 2 }) }),
    }),
  });
  map.addLayer(series.layer);
}

// The drawn area, or the grid point the server used (near the clicked longitude, so on the
// world copy that was clicked).
function drawOverlay(body) {
  if (!series.layer || !state.geo) return;
  const source = series.layer.getSource();
  source.clear();
  const s = state.series;
  if (s.kind === "area") {
    source.addFeature(new ol.Feature(new ol.geom.Polygon([s.ring.map((p) => ol.proj.fromLonLat(p))])));
  } else if (s.kind === "point" && body && body.point) {
    const [latName, lonName] = pointNames();
    const lat = body.point[latName], lon = body.point[lonName];
    if (typeof lat !== "number" || typeof lon !== "number") return;
    source.addFeature(new ol.Feature(new ol.geom.Point(ol.proj.fromLonLat([lon + 360 * Math.round((s.lon - lon) / 360), lat]))));
  }
}

// Draws one box or polygon (a second press of the same button, or Escape, gives up).
function armDraw(kind) {
  const again = series.draw && series.draw.get("kind") === kind;
  disarmDraw();
  if (again || !views.map) return;
  const draw = kind === "box"
    ? new ol.interaction.Draw({ type: "Circle", geometryFunction: ol.interaction.Draw.createBox() })
    : new ol.interaction.Draw({ type: "Polygon" });
  draw.set("kind", kind);
  draw.on("drawend", (ev) => {
    // The click that ends a drawing is a map click too (dispatched right after): the
    // drawing mode lasts until it has passed, so it does not also pick a point.
    setTimeout(disarmDraw, 0);
    areaDrawn(ev.feature.getGeometry());
  });
  views.map.addInteraction(draw);
  series.draw = draw;
  $(`draw-${kind}`).setAttribute("aria-pressed", "true");
}

function disarmDraw() {
  if (series.draw && views.map) views.map.removeInteraction(series.draw);
  series.draw = null;
  for (const kind of ["box", "polygon"]) $(`draw-${kind}`).setAttribute("aria-pressed", "false");
}

// A drawn polygon (map coordinates) → its longitude/latitude ring → the area's series.
// Longitudes are not wrapped vertex by vertex (an area across the antimeridian stays one
// piece, 170..190); whole turns are taken off so the first is within ±180. The server
// compares longitudes modulo 360 and joins vertices with straight lines in lon/lat.
function areaDrawn(geometry) {
  const ring = geometry.getCoordinates()[0].map((c) => ol.proj.transform(c, "EPSG:3857", "EPSG:4326"));
  const turns = 360 * Math.round(ring[0][0] / 360);
  const round = (v) => Number(v.toFixed(6));
  showSeries({ kind: "area", ring: closeRing(ring.map(([lon, lat]) => [round(lon - turns), round(lat)])) });
}

// The panel's controls (viewer.js calls this once the page's scripts are all loaded).
function setupSeries() {
  $("series-close").addEventListener("click", () => { closeSeries(); saveState(); });
  $("series-monthly").addEventListener("change", () => {
    state.monthly = $("series-monthly").checked;
    showSeries();
  });
  $("series-csv").addEventListener("click", downloadCsv);
  for (const kind of ["box", "polygon"]) $(`draw-${kind}`).addEventListener("click", () => armDraw(kind));
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape") disarmDraw(); });
}
