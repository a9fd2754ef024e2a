// The views of viewer.js: the map (OpenLayers over /maps/ tiles and the Natural Earth
// outline), the deep-zoom view (OpenSeadragon over IIIF), and what both share: the
// colorbar and the readout of the value and coordinates under the cursor. A click picks
// the point of the series panel (series.js), which also draws on the map.
"use strict";

const views = { map: null, data: null, osd: null, plot: null, hover: 0, tracker: null };

function hideViews() {
  $("map").hidden = true;
  $("tools").hidden = true;
  disarmDraw();
  $("osd").hidden = true;
  $("legend").hidden = true;
  $("readout").hidden = true;
  if (views.osd) views.osd.close();
}

// Where the person is looking, for the URL: map centre and zoom, or the deep-zoom centre
// (image pixels) and zoom (screen pixels per image pixel).
function viewPosition() {
  const round = (v, digits) => String(Number(v.toFixed(digits)));
  if (state.geo && views.map) {
    const view = views.map.getView();
    const center = view.getCenter();
    if (!center) return {};
    const [lon, lat] = ol.proj.toLonLat(center);
    return { z: round(view.getZoom(), 2), lat: round(lat, 4), lon: round(lon, 4) };
  }
  if (views.osd && views.osd.world.getItemCount()) {
    const vp = views.osd.viewport;
    const c = vp.viewportToImageCoordinates(vp.getCenter(true));
    return { x: round(c.x, 1), y: round(c.y, 1), zoom: round(vp.viewportToImageZoom(vp.getZoom(true)), 4) };
  }
  return {};
}

let saving = 0;
function saveSoon() {
  clearTimeout(saving);
  saving = setTimeout(saveState, 300);
}

// ---- the map ----

// Natural Earth's countries drawn under the data (land, where the data has no value) and
// over it (borders and coasts).
function outlineLayers() {
  const source = new ol.source.Vector({ loader: () => loadOutline(source) });
  const land = new ol.layer.Vector({
    source, style: new ol.style.Style({ fill: new ol.style.Fill({ color: "#e8e4da" }) }),
  });
  const lines = new ol.layer.Vector({
    source, style: new ol.style.Style({ stroke: new ol.style.Stroke({ color: "rgba(20, 20, 20, 0.75)", width: 0.8 }) }),
  });
  return [land, lines];
}

// world-atlas is made for spherical projections: a ring that crosses the antimeridian
// (Russia, Fiji) jumps from +180 to -180, which on a flat map is a line across the world.
// Such rings are unwrapped (longitudes kept within 180 of the previous point), so they
// continue past 180 into the next copy of the world, where they belong; rings that go
// round a pole (no way back without the jump) are left as they are.
async function loadOutline(source) {
  const topo = await (await fetch("/viewer/countries-110m.json")).json();
  const features = new ol.format.TopoJSON({ layers: ["countries"] }).readFeatures(topo);
  const unwrap = (ring) => {
    let shift = 0;
    const out = ring.map((p, i) => {
      if (i > 0) {
        const d = p[0] + shift - (ring[i - 1][0] + shiftAt[i - 1]);
        if (d > 180) shift -= 360; else if (d < -180) shift += 360;
      }
      shiftAt[i] = shift;
      return [p[0] + shift, p[1]];
    });
    return shift === 0 ? out : ring;
  };
  let shiftAt = [];
  for (const f of features) {
    const g = f.getGeometry();
    const polygons = g.getType() === "Polygon" ? [g.getCoordinates()] : g.getCoordinates();
    const fixed = polygons.map((rings) => rings.map((ring) => { shiftAt = []; return unwrap(ring); }));
    f.setGeometry(new ol.geom.MultiPolygon(fixed).transform("EPSG:4326", "EPSG:3857"));
  }
  source.addFeatures(features);
}

function tileUrl() {
  return `${state.base}/maps/${identifier()}/{z}/{x}/{y}.png?${styleQuery()}`;
}

async function showMap(fresh) {
  $("osd").hidden = true;
  $("map").hidden = false;
  $("tools").hidden = false;
  $("readout").hidden = false;
  const tj = state.geo.tilejson;
  const source = new ol.source.XYZ({
    url: tileUrl(), crossOrigin: "anonymous", transition: 0, interpolate: false,
    minZoom: tj.minzoom || 0, maxZoom: tj.maxzoom ?? 12,
  });
  if (!views.map) {
    const [land, lines] = outlineLayers();
    views.data = new ol.layer.Tile({ source });
    views.map = new ol.Map({
      target: "map",
      layers: [land, views.data, lines],
      controls: ol.control.defaults.defaults({ attribution: false, rotate: false }),
      view: new ol.View({ center: [0, 0], zoom: 1, maxZoom: 14 }),
    });
    window.zarrdMap = views.map;
    views.map.on("pointermove", (ev) => { if (!ev.dragging) hoverMap(ev.coordinate); });
    views.map.on("click", (ev) => {
      // While an area is being drawn, clicks place its corners.
      if (series.draw || !mapCell(ev.coordinate)) return;
      // The clicked place, not the cell: the server picks the grid point (and says which).
      const [lon, lat] = ol.proj.toLonLat(ev.coordinate).map((v) => Number(v.toFixed(4)));
      showSeries({ kind: "point", lat, lon });
    });
    views.map.on("moveend", saveSoon);
    views.map.getViewport().addEventListener("pointerleave", () => { $("value").textContent = ""; $("coords").textContent = ""; });
    new ResizeObserver(() => views.map.updateSize()).observe($("stage"));
    setupMapSeries(views.map);
  } else {
    views.data.setSource(source);
    views.map.updateSize();
  }
  if (fresh) placeMap(tj);
}

// The restored position from the URL, else the data's bounds.
function placeMap(tj) {
  const view = views.map.getView();
  const q = state.restore;
  const [z, lat, lon] = ["z", "lat", "lon"].map((k) => (q.get(k) === null ? NaN : Number(q.get(k))));
  if ([z, lat, lon].every(Number.isFinite)) {
    view.setCenter(ol.proj.fromLonLat([lon, lat]));
    view.setZoom(z);
    return;
  }
  const b = tj.bounds || [-180, -85.0511, 180, 85.0511];
  view.fit(ol.proj.transformExtent(b, "EPSG:4326", "EPSG:3857"), { size: views.map.getSize(), padding: [8, 8, 8, 8] });
}

// The grid cell [row, column] under a map coordinate, or null outside the grid (on a
// projected grid, which only the server can place, `true` within its bounds).
function mapCell(coordinate) {
  const [lon, lat] = ol.proj.toLonLat(coordinate);
  const g = state.geo;
  if (g.projected) {
    const [w, s, e, n] = g.tilejson.bounds || [-180, -90, 180, 90];
    const l = ((lon + 180) % 360 + 360) % 360 - 180;
    return lat >= s && lat <= n && (w <= e ? l >= w && l <= e : l >= w || l <= e);
  }
  const iy = cellIndex(g.lat.values, g.lat.edges, lat, false);
  const ix = cellIndex(g.lon.values, g.lon.edges, lon, true);
  return iy < 0 || ix < 0 || Math.abs(lat) > 85.0511 ? null : [iy, ix];
}

function hoverMap(coordinate) {
  if (state.geo.projected) return hoverProjected(coordinate);
  const cell = mapCell(coordinate);
  if (!cell) {
    $("value").textContent = "outside the grid";
    $("coords").textContent = "";
    return;
  }
  readValue(cell);
}

// ---- the deep-zoom view ----

// Puts a deep-zoom view where the URL's `x`, `y` (image pixels) and `zoom` say, else shows
// the whole image; the deep-zoom and OME-Zarr views share it.
function restoreViewport(osd, q) {
  const vp = osd.viewport;
  const [x, y, zoom] = ["x", "y", "zoom"].map((k) => (q.get(k) === null ? NaN : Number(q.get(k))));
  if ([x, y, zoom].every(Number.isFinite) && zoom > 0) {
    vp.zoomTo(vp.imageToViewportZoom(zoom), null, true);
    vp.panTo(vp.imageToViewportCoordinates(new OpenSeadragon.Point(x, y)), true);
  } else {
    vp.goHome(true);
  }
}

async function showImage(fresh) {
  $("map").hidden = true;
  $("tools").hidden = true;
  disarmDraw();
  $("osd").hidden = false;
  $("readout").hidden = false;
  let info;
  try {
    info = await json(`/iiif/3/${identifier()}/info.json`);
  } catch (e) {
    $("value").textContent = e.message;
    return;
  }
  // The window and colormap are zarrd query parameters outside IIIF, added to every tile.
  const source = new OpenSeadragon.IIIFTileSource(OpenSeadragon.IIIFTileSource.prototype.configure(info, info.id + "/info.json"));
  const tileUrlOf = source.getTileUrl.bind(source);
  const query = styleQuery();
  source.getTileUrl = (level, x, y) => `${tileUrlOf(level, x, y)}?${query}`;
  if (!views.osd) {
    views.osd = OpenSeadragon({
      id: "osd",
      // The canvas drawer keeps pixels readable (tests, screenshots) and smooths nothing.
      drawer: "canvas",
      showNavigationControl: false,
      imageSmoothingEnabled: false,
      maxZoomPixelRatio: 16,
      crossOriginPolicy: "Anonymous",
      // A click picks the point of the time series; the wheel and a drag zoom and pan.
      gestureSettingsMouse: { clickToZoom: false },
      // A new plane (slider) keeps the place; a new array goes home (below).
      preserveViewport: true,
    });
    window.zarrdViewer = views.osd;
    views.tracker = new OpenSeadragon.MouseTracker({
      element: views.osd.container,
      moveHandler: (ev) => hoverImage(ev.position),
      leaveHandler: () => { $("value").textContent = ""; $("coords").textContent = ""; },
    });
    views.tracker.setTracking(true);
    views.osd.addHandler("canvas-click", (ev) => {
      if (!ev.quick) return;
      const cell = imageCell(ev.position);
      if (cell) showSeries({ kind: "cell", cell });
    });
    views.osd.addHandler("animation-finish", saveSoon);
  }
  if (fresh) {
    const q = state.restore;
    views.osd.addOnceHandler("open", () => {
      restoreViewport(views.osd, q);
    });
  }
  views.osd.open(source);
}

function imageCell(position) {
  const viewer = views.osd;
  if (!viewer || !viewer.world.getItemCount()) return null;
  const p = viewer.viewport.viewerElementToImageCoordinates(position);
  const [h, w] = state.meta.shape.slice(-2);
  const x = Math.floor(p.x), y = Math.floor(p.y);
  return x < 0 || y < 0 || x >= w || y >= h ? null : [y, x];
}

function hoverImage(position) {
  const cell = imageCell(position);
  if (!cell) { $("value").textContent = ""; $("coords").textContent = ""; return; }
  readValue(cell);
}

// ---- shared: readout, colorbar ----

function coordText(cell) {
  const dims = state.dims;
  const parts = [];
  const [ydim, xdim] = dims.slice(-2);
  const show = (dim, i, fmt) => (dim.coord ? `${dim.name} ${fmt && typeof dim.coord.values[i] === "number" ? fmt(dim.coord.values[i]) : dim.coord.labels[i]}` : `${dim.name} ${i}`);
  const geo = !!state.geo;
  parts.push(show(ydim, cell[0], geo ? formatLat : null), show(xdim, cell[1], geo ? formatLon : null));
  dims.slice(0, -2).forEach((dim, d) => parts.push(dim.coord ? `${dim.name} ${dim.coord.labels[state.indices[d]]}` : `${dim.name} ${state.indices[d]}`));
  return parts.filter(Boolean).join(" · ");
}

// On a projected grid: the value of the cell holding the point under the cursor, found by
// the server (`sel=lat:~φ,lon:~λ` with the leading dimensions at their sliders by label),
// asked once the cursor rests; its `point` names the cell's native labels (none on a
// curvilinear grid) and centre.
function hoverProjected(coordinate) {
  clearTimeout(views.rest);
  const ticket = ++views.hover;
  const [lon, lat] = ol.proj.toLonLat(coordinate).map((v) => Number(v.toFixed(5)));
  const items = state.indices.map((_, d) => labelItem(d));
  if (!items.every(Boolean)) {
    $("value").textContent = "click for the values here";
    return;
  }
  views.rest = setTimeout(async () => {
    const sel = [...items, `lat:~${lat}`, `lon:~${lon}`].join(",");
    const units = (state.meta.attributes || {}).units;
    try {
      const v = await json(`/v1/slice/${encodeURIComponent(state.ds)}/${enc(state.path)}?sel=${encodeURIComponent(sel)}&format=json`);
      if (ticket !== views.hover) return;
      const p = v.point || {};
      const [ydim, xdim] = state.dims.slice(-2);
      const place = typeof p.lat === "number" ? `${formatLat(p.lat)} ${formatLon(p.lon)}` : "";
      // A curvilinear grid's cell has no native labels: its centre names it.
      const labels = ydim.name in p ? `${ydim.name} ${formatValue(p[ydim.name])} · ${xdim.name} ${formatValue(p[xdim.name])}` : "";
      $("coords").textContent = [place, labels].filter(Boolean).join(" · ");
      const shown = v.data === null ? "NaN/Inf" : formatValue(v.data);
      $("value").textContent = `${shown}${units && v.data !== null ? " " + units : ""}`;
      $("value").dataset.raw = JSON.stringify(v.data);
    } catch (e) {
      if (ticket !== views.hover) return;
      $("value").textContent = /outside the grid/.test(e.message) ? "outside the grid" : e.message;
      $("coords").textContent = "";
    }
  }, 120);
}

// The stored value of the cell at the current indices, from /v1/slice.
async function readValue(cell) {
  const ticket = ++views.hover;
  const s = [...state.indices, ...cell].join(",");
  const units = (state.meta.attributes || {}).units;
  $("coords").textContent = coordText(cell);
  try {
    const v = await json(`/v1/slice/${encodeURIComponent(state.ds)}/${enc(state.path)}?s=${s}&format=json`);
    if (ticket !== views.hover) return;
    const shown = v.data === null ? "NaN/Inf" : formatValue(v.data);
    $("value").textContent = `[${s}] = ${shown}${units && v.data !== null ? " " + units : ""}`;
    $("value").dataset.raw = JSON.stringify(v.data);
  } catch (e) {
    if (ticket === views.hover) $("value").textContent = e.message;
  }
}

function drawLegend() {
  const attrs = state.meta.attributes || {};
  const name = attrs.long_name || attrs.standard_name || state.path.split("/").pop();
  $("legend-title").textContent = attrs.units ? `${name} (${attrs.units})` : name;
  const w = windowNow();
  $("legend-min").textContent = formatValue(w.vmin);
  $("legend-mid").textContent = formatValue((w.vmin + w.vmax) / 2);
  $("legend-max").textContent = formatValue(w.vmax);
  const table = state.colormaps && state.colormaps[$("colormap").value];
  const ctx = $("colorbar").getContext("2d");
  for (let i = 0; i < 256; i++) {
    ctx.fillStyle = table ? table[i] : `rgb(${i},${i},${i})`;
    ctx.fillRect(i, 0, 1, 1);
  }
  $("legend").hidden = false;
}
