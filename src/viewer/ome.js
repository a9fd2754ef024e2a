// The viewer for microscopists: OME-Zarr images (0.4 and 0.5) opened as images, not as
// arrays. viewer.js calls two hooks: omeListEntries (the dataset tree lists image groups
// and plates) and omeOpen (an image group, one of its levels, a plate or a well opens here).
//
// An image: its channels (the `omero` names, colours, visibility and per-channel window,
// each editable), the composite of the visible ones drawn by zarrd (the IIIF identifier of
// the image group with its axes fixed by name, `[t=1,z=0]`, and the viewer's choice as
// `channels`, `windows` and `colors`), a slider per other leading axis named by the axis
// and showing its physical position (scale × index + translation, in the axis unit), a
// scale bar from the x axis' pixel size and unit (a round length that fits), and a label
// image drawn over it with an opacity slider. A plate: a grid of its wells; a click opens
// the well's first field. The metadata comes normalised as OME 0.5 from /compat/v3, so
// 0.4 and 0.5 images read the same. The view (channels, windows, colours, axes, labels,
// opacity, position) is kept in the URL's query, like the rest of the viewer.
"use strict";

const ome = { osd: null, image: null, plate: null, labelsItem: null, saving: 0 };
const UNITS = {
  angstrom: "Å", picometer: "pm", nanometer: "nm", micrometer: "µm", millimeter: "mm", centimeter: "cm",
  meter: "m", kilometer: "km", second: "s", millisecond: "ms", microsecond: "µs", minute: "min", hour: "h",
};

function omeUnit(u) { return u ? (UNITS[u] || u) : ""; }
function omeJoin(...parts) { return parts.filter((p) => p !== "" && p !== undefined).join("/"); }

// The href of a node of the tree: /view/DS for the dataset root, else /view/DS/PATH.
function omeHref(ds, path) {
  return `${state.base}/view/${encodeURIComponent(ds)}${path ? "/" + enc(path) : ""}`;
}

// The tree's entries for OME-Zarr images and plates (arrays are listed by viewer.js).
function omeListEntries(ds, nodes, list) {
  for (const n of nodes.filter((x) => x.ome && ["image", "plate"].includes(x.ome.kind))) {
    const o = n.ome;
    const what = o.kind === "plate"
      ? `plate ${o.name || ""} (${o.rows.length}×${o.columns.length}, ${o.wells.length} wells)`
      : `image ${(o.axes || []).map((a) => a.name).join("")}${o.channels && o.channels.length ? " · " + o.channels.join(", ") : ""}`;
    const a = el("a", { href: omeHref(ds, n.path), textContent: `${n.path || "/"} ${what}`, className: "ome-entry" });
    a.dataset.key = `${ds}/${n.path}`;
    a.addEventListener("click", (ev) => {
      ev.preventDefault();
      history.pushState(null, "", a.href);
      openFromLocation();
    });
    list.append(el("li", {}, a));
  }
}

// Opens `path` when it is an OME-Zarr image group, a level of one, a plate or a well;
// false (after closing any OME view) when it is none of these.
async function omeOpen(ds, path, query, ticket) {
  const nodes = await nodesOf(ds).catch(() => []);
  const node = nodes.find((n) => n.path === path && n.ome);
  let target = null;
  if (node && ["image", "plate", "well"].includes(node.ome.kind)) {
    target = node;
  } else {
    // A level array of an image: the image group whose levels hold it.
    target = nodes.find((n) => n.ome && n.ome.kind === "image" && (n.ome.levels || []).some((l) => omeJoin(n.path, l) === path)) || null;
  }
  if (!target) { omeClose(); return false; }
  if (target.ome.kind === "well") {
    const field = target.ome.fields[0];
    history.replaceState(null, "", omeHref(ds, omeJoin(target.path, field)));
    return omeOpen(ds, omeJoin(target.path, field), query, ticket);
  }
  state.meta = null;
  hideViews();
  closeSeries();
  $("controls").hidden = false;
  $("controls").classList.add("ome");
  if (target.ome.kind === "plate") await omePlate(ds, target, nodes, ticket);
  else await omeImage(ds, target, nodes, query, ticket);
  return true;
}

function omeClose() {
  $("controls").classList.remove("ome");
  const panel = $("ome-panel");
  if (panel) panel.remove();
  for (const id of ["ome-stage", "ome-plate"]) if ($(id)) $(id).hidden = true;
  if (ome.osd) ome.osd.close();
  ome.image = null;
  ome.plate = null;
}

function omeStage(id) {
  let box = $(id);
  if (!box) { box = el("div", { id }); $("stage").append(box); }
  for (const other of ["ome-stage", "ome-plate"]) if ($(other)) $(other).hidden = other !== id;
  return box;
}

function omePanel() {
  if ($("ome-panel")) $("ome-panel").remove();
  const panel = el("div", { id: "ome-panel" });
  $("controls").append(panel);
  return panel;
}

// ---- a plate ----

async function omePlate(ds, node, nodes, ticket) {
  const o = node.ome;
  $("info").replaceChildren(el("h2", { textContent: `${ds}/${node.path} · plate ${o.name || ""}` }),
    el("p", { className: "small", textContent: `${o.rows.length} rows × ${o.columns.length} columns, ${o.wells.length} wells; choose a well to open its first field.` }));
  omePanel();
  const grid = omeStage("ome-plate");
  grid.replaceChildren();
  grid.style.gridTemplateColumns = `2em repeat(${o.columns.length}, minmax(2.5em, 6em))`;
  grid.append(el("span"));
  for (const c of o.columns) grid.append(el("span", { className: "ome-head", textContent: c }));
  for (const r of o.rows) {
    grid.append(el("span", { className: "ome-head", textContent: r }));
    for (const c of o.columns) {
      const well = `${r}/${c}`;
      if (!o.wells.includes(well)) { grid.append(el("span", { className: "ome-well empty", title: `${well}: no well` })); continue; }
      const wnode = nodes.find((n) => n.path === omeJoin(node.path, well) && n.ome && n.ome.kind === "well");
      const fields = wnode ? wnode.ome.fields : [];
      const b = el("button", { type: "button", className: "ome-well", textContent: well, title: `${well}: ${fields.length} field(s)` });
      b.dataset.well = well;
      b.disabled = !fields.length;
      b.addEventListener("click", () => {
        history.pushState(null, "", omeHref(ds, omeJoin(node.path, well, fields[0])));
        openFromLocation();
      });
      grid.append(b);
    }
  }
  if (ticket === state.opened) ome.plate = node;
}

// ---- an image ----

// The transformations of level 0 (with the multiscale's own, if any): scale and translation.
function omeTransforms(ms, rank) {
  const scale = Array(rank).fill(1), shift = Array(rank).fill(0);
  const apply = (list) => {
    for (const t of list || []) {
      if (t.type === "scale" && Array.isArray(t.scale)) t.scale.forEach((s, d) => { scale[d] *= s; shift[d] *= s; });
      if (t.type === "translation" && Array.isArray(t.translation)) t.translation.forEach((v, d) => { shift[d] += v; });
    }
  };
  apply(ms.datasets[0].coordinateTransformations);
  apply(ms.coordinateTransformations);
  return { scale, shift };
}

async function omeMeta(ds, path) {
  const doc = await json(`/compat/v3/${encodeURIComponent(ds)}${path ? "/" + enc(path) : ""}/zarr.json`);
  return (doc.attributes || {}).ome || {};
}

async function omeImage(ds, node, nodes, query, ticket) {
  let meta;
  try {
    meta = await omeMeta(ds, node.path);
  } catch (e) {
    $("info").replaceChildren(el("p", { className: "error", textContent: e.message }));
    return;
  }
  if (ticket !== state.opened) return;
  const ms = meta.multiscales[0];
  const level0 = nodes.find((n) => n.path === omeJoin(node.path, ms.datasets[0].path));
  const shape = level0 ? level0.shape : null;
  const axes = ms.axes;
  const rank = axes.length;
  const { scale, shift } = omeTransforms(ms, rank);
  const cAxis = axes.findIndex((a) => a.type === "channel");
  const nc = cAxis >= 0 && shape ? shape[cAxis] : 0;
  const listed = ((meta.omero || {}).channels || []);
  const wins = (query.get("win") || "").split(",");
  const cols = (query.get("col") || "").split(",");
  const on = query.get("ch");
  const onSet = on === null ? null : new Set(on.split(",").filter((s) => s !== "").map(Number));
  const channels = Array.from({ length: nc }, (_, i) => {
    const c = listed.length === nc ? listed[i] : {};
    const w = c.window || {};
    const [lo, hi] = (wins[i] || "").split(":").map(Number);
    return {
      index: i,
      label: c.label || `channel ${i}`,
      color: /^[0-9a-f]{6}$/i.test(cols[i] || "") ? cols[i].toUpperCase() : (c.color || omeDefaultColor(i, nc)).toUpperCase(),
      lo: Number.isFinite(lo) && Number.isFinite(hi) && lo < hi ? lo : w.start,
      hi: Number.isFinite(lo) && Number.isFinite(hi) && lo < hi ? hi : w.end,
      min: w.min, max: w.max,
      on: onSet ? onSet.has(i) : c.active !== false,
    };
  });
  // The leading axes other than the channel: a slider each, restored from `at=t:1,z:0`.
  const at = Object.fromEntries((query.get("at") || "").split(",").map((p) => p.split(":")).filter((p) => p.length === 2));
  const sliders = axes.slice(0, -2).map((a, d) => ({ ...a, d, n: shape ? shape[d] : 1 }))
    .filter((a) => a.d !== cAxis)
    .map((a) => ({ ...a, i: Math.min(Math.max(0, parseInt(at[a.name], 10) || 0), a.n - 1) }));
  const labelsNode = nodes.find((n) => n.path === omeJoin(node.path, "labels") && n.ome && n.ome.kind === "labels");
  const labelNames = labelsNode ? labelsNode.ome.labels.filter((l) => typeof l === "string") : [];
  const opacity = Number(query.get("opacity"));
  ome.image = {
    ds, path: node.path, meta, ms, axes, shape, scale, shift, cAxis, channels, sliders, labelNames,
    label: labelNames.includes(query.get("labels")) ? query.get("labels") : "",
    opacity: Number.isFinite(opacity) && query.get("opacity") !== null ? Math.min(1, Math.max(0, opacity)) : 0.5,
    restore: query,
  };
  const im = ome.image;
  const x = axes[rank - 1], y = axes[rank - 2];
  $("info").replaceChildren(
    el("h2", { textContent: `${omeJoin(ds, node.path)} · OME-Zarr ${meta.version || ""} image ${(meta.omero || {}).name || ms.name || ""}` }),
    el("p", { className: "small", textContent:
      `${axes.map((a, d) => `${a.name} ${shape ? shape[d] : "?"}`).join(" × ")} · pixel ${omeNumber(scale[rank - 1])} × ${omeNumber(scale[rank - 2])} ${omeUnit(x.unit || y.unit)} · ${ms.datasets.length} levels` }),
  );
  omeControls();
  await omeDraw(true);
}

// The server's colours for channels without an `omero` colour (images/composite.rs).
function omeDefaultColor(i, count) {
  if (count === 1) return "FFFFFF";
  if (count === 2) return ["00FF00", "FF00FF"][i % 2];
  return ["FF0000", "00FF00", "0000FF", "00FFFF", "FF00FF", "FFFF00"][i % 6];
}

function omeNumber(v) {
  if (!Number.isFinite(v)) return String(v);
  return String(Number(v.toPrecision(4)));
}

// Physical position of index i on a slider's axis.
function omePosition(a, i) {
  const im = ome.image;
  return `${omeNumber(im.scale[a.d] * i + im.shift[a.d])}${a.unit ? " " + omeUnit(a.unit) : ""}`;
}

function omeControls() {
  const im = ome.image;
  const panel = omePanel();
  const list = el("div", { id: "ome-channels" });
  for (const c of im.channels) {
    const box = el("input", { type: "checkbox", checked: c.on, title: `show ${c.label}` });
    box.addEventListener("change", () => { c.on = box.checked; omeDraw(false); });
    const swatch = el("input", { type: "color", value: `#${c.color.toLowerCase()}`, title: `colour of ${c.label}` });
    swatch.addEventListener("change", () => { c.color = swatch.value.slice(1).toUpperCase(); omeDraw(false); });
    const num = (v, what) => {
      const input = el("input", { type: "number", step: "any", value: v ?? "", title: `${what} of ${c.label}'s window` });
      input.addEventListener("change", () => {
        const lo = Number(lo_.value), hi = Number(hi_.value);
        if (lo_.value !== "" && hi_.value !== "" && lo < hi) { c.lo = lo; c.hi = hi; omeDraw(false); }
      });
      return input;
    };
    const lo_ = num(c.lo, "start"), hi_ = num(c.hi, "end");
    const row = el("span", { className: "ome-channel" }, el("label", {}, box, swatch, el("span", { className: "ome-name", textContent: c.label })), lo_, "–", hi_);
    row.dataset.channel = String(c.index);
    list.append(row);
  }
  panel.append(list);
  const sliders = el("div", { id: "ome-sliders" });
  for (const a of im.sliders) {
    const out = el("output", { id: `ome-${a.name}-label` });
    const show = (i) => { out.textContent = `${omePosition(a, i)} (${i + 1}/${a.n})`; };
    show(a.i);
    const input = el("input", { type: "range", min: 0, max: a.n - 1, value: a.i, id: `ome-${a.name}` });
    input.addEventListener("input", () => show(Number(input.value)));
    input.addEventListener("change", () => { a.i = Number(input.value); omeDraw(false); });
    sliders.append(el("label", { title: `${a.name}: ${a.type || "axis"}, ${a.n} positions` }, `${a.name} `, input, out));
  }
  if (im.labelNames.length) {
    const pick = el("select", { id: "ome-labels" }, el("option", { value: "", textContent: "no labels" }),
      ...im.labelNames.map((l) => el("option", { value: l, textContent: `labels ${l}` })));
    pick.value = im.label;
    pick.addEventListener("change", () => { im.label = pick.value; omeDraw(false); });
    const opacity = el("input", { type: "range", min: 0, max: 1, step: 0.05, value: im.opacity, id: "ome-opacity", title: "label opacity" });
    opacity.addEventListener("input", () => {
      im.opacity = Number(opacity.value);
      if (ome.labelsItem) ome.labelsItem.setOpacity(im.opacity);
      omeSaveSoon();
    });
    sliders.append(el("label", {}, pick), el("label", {}, "opacity ", opacity));
  }
  panel.append(sliders);
}

// The identifier of the image (or of `sub` below it) with the sliders' axes fixed by name;
// a label image gets only the axes it has.
function omeIdentifier(sub, names) {
  const im = ome.image;
  const fixed = im.sliders.filter((a) => !names || names.includes(a.name)).map((a) => `${a.name}=${a.i}`);
  const path = omeJoin(im.path, sub);
  return encodeURIComponent(`${im.ds}/${path}${fixed.length ? `[${fixed.join(",")}]` : ""}`);
}

function omeChoice() {
  const shown = ome.image.channels.filter((c) => c.on);
  const q = new URLSearchParams();
  q.set("channels", shown.map((c) => c.index).join(","));
  // Channels without a window of their own (no `omero`) leave it to the server: the
  // array's value range.
  const windows = shown.map((c) => (Number.isFinite(c.lo) && Number.isFinite(c.hi) && c.lo < c.hi ? `${c.lo}:${c.hi}` : ""));
  if (windows.some((w) => w)) q.set("windows", windows.join(","));
  q.set("colors", shown.map((c) => c.color).join(","));
  return q.toString();
}

async function omeSource(identifier, query) {
  const info = await json(`/iiif/3/${identifier}/info.json`);
  const source = new OpenSeadragon.IIIFTileSource(OpenSeadragon.IIIFTileSource.prototype.configure(info, info.id + "/info.json"));
  const tileUrlOf = source.getTileUrl.bind(source);
  source.getTileUrl = (level, x, y) => `${tileUrlOf(level, x, y)}${query ? "?" + query : ""}`;
  return { info, source };
}

// Draws the composite (and the label image over it) at the sliders' positions.
async function omeDraw(fresh) {
  const im = ome.image;
  if (!im) return;
  omeStage("ome-stage");
  if (!ome.osd) {
    ome.osd = OpenSeadragon({
      id: "ome-stage", drawer: "canvas", showNavigationControl: false, imageSmoothingEnabled: false,
      maxZoomPixelRatio: 16, crossOriginPolicy: "Anonymous", preserveViewport: true,
      gestureSettingsMouse: { clickToZoom: false },
    });
    window.zarrdOmeViewer = ome.osd;
    ome.osd.addHandler("animation", omeScaleBar);
    ome.osd.addHandler("resize", omeScaleBar);
    ome.osd.addHandler("animation-finish", omeSaveSoon);
    const tracker = new OpenSeadragon.MouseTracker({
      element: ome.osd.container,
      moveHandler: (ev) => omeHover(ev.position),
      leaveHandler: () => { $("ome-readout").textContent = ""; },
    });
    tracker.setTracking(true);
    $("ome-stage").append(el("div", { id: "ome-readout", "aria-live": "polite" }));
    const bar = el("div", { id: "ome-scalebar" }, el("div", { id: "ome-scalebar-line" }), el("span", { id: "ome-scalebar-text" }));
    $("ome-stage").append(bar);
  }
  let composite, labels = null;
  try {
    composite = await omeSource(omeIdentifier("", null), omeChoice());
    if (im.label) {
      const lmeta = await omeMeta(im.ds, omeJoin(im.path, "labels", im.label));
      const names = lmeta.multiscales[0].axes.map((a) => a.name);
      im.labelAxes = names;
      im.labelLevel = omeJoin(im.path, "labels", im.label, lmeta.multiscales[0].datasets[0].path);
      labels = await omeSource(omeIdentifier(`labels/${im.label}`, names), "");
    }
  } catch (e) {
    $("info").append(el("p", { className: "error", textContent: e.message }));
    return;
  }
  if (im !== ome.image) return;
  im.info = composite.info;
  const osd = ome.osd;
  const q = im.restore;
  osd.addOnceHandler("open", () => {
    if (labels) {
      osd.addTiledImage({
        tileSource: labels.source, opacity: im.opacity,
        success: (ev) => { ome.labelsItem = ev.item; },
      });
    }
    if (fresh) {
      restoreViewport(osd, q);
    }
    omeScaleBar();
  });
  ome.labelsItem = null;
  osd.open(composite.source);
  omeSave();
}

// Under the cursor: the physical position, each channel's stored value (/v1/slice of
// level 0, so values, not colours read back) and the label id.
async function omeHover(position) {
  const im = ome.image;
  const out = $("ome-readout");
  if (!im || !im.shape || !ome.osd.world.getItemCount()) return;
  const p = ome.osd.world.getItemAt(0).viewerElementToImageCoordinates(position);
  const rank = im.axes.length;
  const [h, w] = im.shape.slice(-2);
  const x = Math.floor(p.x), y = Math.floor(p.y);
  if (x < 0 || y < 0 || x >= w || y >= h) { out.textContent = ""; return; }
  const ticket = (ome.hover = (ome.hover || 0) + 1);
  const at = (d, i) => `${im.axes[d].name} ${omeNumber(im.scale[d] * i + im.shift[d])}${im.axes[d].unit ? " " + omeUnit(im.axes[d].unit) : ""}`;
  const where = `${at(rank - 1, x)}, ${at(rank - 2, y)} [${y},${x}]`;
  const index = im.axes.map((a, d) => (d === im.cAxis ? ":" : d >= rank - 2 ? [y, x][d - rank + 2] : im.sliders.find((s) => s.d === d).i));
  const ds = encodeURIComponent(im.ds);
  try {
    const values = (await json(`/v1/slice/${ds}/${enc(omeJoin(im.path, im.ms.datasets[0].path))}?s=${index.join(",")}&format=json`)).data;
    const list = im.cAxis >= 0 ? im.channels.map((c) => `${c.label} ${values[c.index]}`) : [String(values)];
    let label = "";
    if (im.label && im.labelLevel) {
      const li = im.labelAxes.map((n) => (n === im.axes[rank - 1].name ? x : n === im.axes[rank - 2].name ? y : (im.sliders.find((s) => s.name === n) || { i: 0 }).i));
      const v = (await json(`/v1/slice/${ds}/${enc(im.labelLevel)}?s=${li.join(",")}&format=json`)).data;
      label = ` · ${im.label} ${v === 0 ? "none" : v}`;
    }
    if (ticket === ome.hover) out.textContent = `${list.join(" · ")}${label} · ${where}`;
  } catch (e) {
    if (ticket === ome.hover) out.textContent = e.message;
  }
}

// Pixel size along x and its unit: the x axis' scale and unit, else the IIIF Physical
// Dimensions service (millimetres).
function omePixelSize() {
  const im = ome.image;
  const x = im.axes[im.axes.length - 1];
  if (x.unit) return { size: im.scale[im.axes.length - 1], unit: omeUnit(x.unit) };
  const svc = ((im.info || {}).service || []).find((s) => s.physicalScale);
  return svc ? { size: svc.physicalScale, unit: svc.physicalUnits } : null;
}

// A round length (1, 2 or 5 × 10^k) of at most ~120 screen pixels.
function omeScaleBar() {
  const bar = $("ome-scalebar");
  const im = ome.image;
  if (!bar || !im || !ome.osd || !ome.osd.world.getItemCount()) return;
  const px = omePixelSize();
  if (!px) { bar.hidden = true; return; }
  const item = ome.osd.world.getItemAt(0);
  const zoom = item.viewportToImageZoom(ome.osd.viewport.getZoom(true));
  const perScreenPx = px.size / zoom;
  const target = perScreenPx * 120;
  const p = 10 ** Math.floor(Math.log10(target));
  const length = [5, 2, 1].map((m) => m * p).find((l) => l <= target) || p;
  bar.hidden = false;
  $("ome-scalebar-line").style.width = `${(length / perScreenPx).toFixed(1)}px`;
  $("ome-scalebar-text").textContent = `${omeNumber(length)} ${px.unit}`;
}

function omeSaveSoon() {
  clearTimeout(ome.saving);
  ome.saving = setTimeout(omeSave, 300);
}

// The view in the URL's query: channels shown, windows, colours, axes, labels, position.
function omeSave() {
  const im = ome.image;
  if (!im) return;
  const q = new URLSearchParams();
  q.set("ch", im.channels.filter((c) => c.on).map((c) => c.index).join(","));
  q.set("win", im.channels.map((c) => (Number.isFinite(c.lo) && Number.isFinite(c.hi) ? `${c.lo}:${c.hi}` : "")).join(","));
  q.set("col", im.channels.map((c) => c.color).join(","));
  if (im.sliders.length) q.set("at", im.sliders.map((a) => `${a.name}:${a.i}`).join(","));
  if (im.label) { q.set("labels", im.label); q.set("opacity", String(im.opacity)); }
  if (ome.osd && ome.osd.world.getItemCount()) {
    const item = ome.osd.world.getItemAt(0);
    const vp = ome.osd.viewport;
    const c = item.viewportToImageCoordinates(vp.getCenter(true));
    const round = (v, digits) => String(Number(v.toFixed(digits)));
    q.set("x", round(c.x, 1));
    q.set("y", round(c.y, 1));
    q.set("zoom", round(item.viewportToImageZoom(vp.getZoom(true)), 4));
  }
  const url = `${location.pathname}?${q}`;
  if (url !== location.pathname + location.search) history.replaceState(null, "", url);
}
