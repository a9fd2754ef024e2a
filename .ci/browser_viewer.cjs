// The viewer for people, in Debian's chromium through puppeteer-core (see browser.sh), at
// 1280x800: the map of a climate grid (tests/fixtures/maps/global_0360.zarr, served as
// `climate`), an HRRR-like Lambert conformal grid (`hrrr`: the cell under the cursor is the
// one pyproj finds), a curvilinear one (`coastal`: the one a brute-force oracle finds) and
// the deep-zoom view of the sample's terrain. All draw (non-blank canvas);
// the readout under the cursor names the cell under it and shows its stored value (equal to
// zarr-python's and to /v1/slice's); the colorbar shows the window, long_name and units; the
// time slider shows the CF dates NumPy decodes; a click plots the values along time
// (zarr-python's); the view comes back from its URL; nothing overflows the window.
// Prints "N passed, N failed" and exits non-zero on any failure.
"use strict";
const { check, part, main, sleep, drawn, screenPoint, fits } = require("./browser_common.cjs");

const base = process.argv[2];
const map = JSON.parse(process.env.EXPECTED_MAP);
const shots = process.env.SHOTS || "";
const f32 = (v) => (v === null ? null : Math.fround(v));



function watch(page) {
  const errors = [], requests = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("error", (e) => { console.log(`the page crashed: ${e}`); errors.push(`crashed: ${e}`); });
  page.on("requestfailed", (r) => errors.push(`request failed: ${r.url()}`));
  page.on("response", (r) => { if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`); });
  page.on("request", (r) => requests.push(r.url()));
  return { errors, requests };
}

async function mapIdle(page) {
  await page.waitForFunction(() => window.zarrdMap && window.zarrdMap.getLayers().getLength() > 0, { timeout: 20000 });
  await page.evaluate(() => new Promise((r) => {
    const m = window.zarrdMap;
    // rendercomplete fires once every tile and feature in view is drawn.
    m.once("rendercomplete", () => r(true));
    m.render();
  }));
}

async function readout(page, prefix) {
  await page.waitForFunction((p) => document.getElementById("value").textContent.startsWith(p), { timeout: 10000 }, prefix);
  return page.evaluate(() => ({
    text: document.getElementById("value").textContent,
    raw: JSON.parse(document.getElementById("value").dataset.raw),
    coords: document.getElementById("coords").textContent,
  }));
}

main(async (browser) => {
  // Each view on its own: a failure in one still runs the other.
  await part("the deep-zoom view", () => deepZoom(browser));
  await part("the map", () => mapView(browser));
  await part("the map of a projected grid", () => gridMap(browser, PROJECTED));
  await part("the map of a curvilinear grid", () => gridMap(browser, CURVILINEAR));
  if (process.env.LANDING) await part("the landing page of `zarrd serve`", () => landing(browser, process.env.LANDING));
});

// `zarrd serve` with nothing configured (browser.sh's LANDING server): the sample alone, and
// its landing page opens the sample's first map, climate/t2m, drawn, not an empty pane.
async function landing(browser, at) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800, deviceScaleFactor: 1 });
  const { errors } = watch(page);
  const { datasets } = await (await fetch(`${at}/v1/datasets`)).json();
  check(datasets.length === 1 && datasets[0].name === "sample", `the default serves the sample alone (${datasets.map((d) => d.name)})`);
  await page.goto(`${at}/`, { waitUntil: "networkidle0" });
  await mapIdle(page);
  const path = await page.evaluate(() => location.pathname);
  check(path === "/view/sample/climate/t2m", `the landing page opens the sample's first map (${path})`);
  const m = await drawn(page, "#map");
  check(m.opaque > 0.5 * m.total && m.colours > 30, `that map is drawn (${m.opaque}/${m.total} opaque pixels, ${m.colours} colours)`);
  const title = await page.$eval("#info h2", (e) => e.textContent);
  check(title === "sample/climate/t2m", `the info names it (${title})`);
  const day = await page.$eval("#slider-0-label", (e) => e.textContent);
  check(day === "2025-01-01", `its first step is dated by the time coordinate (${day})`);
  check(errors.length === 0, `no console errors or failed requests ${errors.length ? JSON.stringify(errors) : ""}`);
}

async function mapView(browser) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800, deviceScaleFactor: 1 });
  const { errors, requests } = watch(page);
  const at = `${base}/view/${map.dataset}/${map.path}`;
  await page.goto(at, { waitUntil: "networkidle0" });
  await mapIdle(page);
  check(await page.$eval("#map", (e) => !e.hidden) && await page.$eval("#osd", (e) => e.hidden), "a lat/lon array opens as a map");
  const tiles = requests.filter((u) => new URL(u).pathname.startsWith(`/maps/${map.dataset}%2F${map.path}%5B0%5D/`));
  check(tiles.some((u) => /\/\d+\/\d+\/\d+\.png\?vmin=[-\d.e]+&vmax=[-\d.e]+&colormap=viridis$/.test(u)),
    `the map asks for /maps/ tiles with the colorbar's window and colormap (${tiles.length} requests)`);
  check(requests.some((u) => u.endsWith("/viewer/countries-110m.json")), "the map loads the Natural Earth outline shipped with the page");
  const m = await drawn(page, "#map");
  check(m.opaque > 0.5 * m.total && m.colours > 30, `the map canvas is drawn (${m.opaque}/${m.total} opaque pixels, ${m.colours} colours)`);

  // The colorbar: the server's window, long_name and units.
  const win = await (await fetch(`${base}/viewer/window/${encodeURIComponent(`${map.dataset}/${map.path}[0]`)}`)).json();
  const legend = await page.evaluate(() => ({
    title: document.getElementById("legend-title").textContent,
    min: document.getElementById("legend-min").textContent,
    max: document.getElementById("legend-max").textContent,
    hidden: document.getElementById("legend").hidden,
  }));
  check(!legend.hidden && legend.title === `${map.long_name} (${map.units})`, `the colorbar names the variable and its units (${legend.title})`);
  check(Math.abs(Number(legend.min) - win.vmin) <= 1e-5 * Math.abs(win.vmin) && Math.abs(Number(legend.max) - win.vmax) <= 1e-5 * Math.abs(win.vmax),
    `the colorbar shows the window ${legend.min}..${legend.max} (server: ${win.vmin}..${win.vmax})`);

  // The time slider: dates as NumPy decodes the CF time coordinate.
  check(await page.$eval("#slider-0-label", (e) => e.textContent) === map.dates[0], `the time slider shows the first date ${map.dates[0]}`);
  await page.focus("#slider-0");
  for (let i = 0; i < map.k; i++) await page.keyboard.press("ArrowRight");
  const label = await page.$eval("#slider-0-label", (e) => e.textContent);
  check(/^\d{4}-\d\d-\d\d/.test(label) && label === map.dates[map.k], `moving the time slider shows ${label} (NumPy: ${map.dates[map.k]})`);
  await page.waitForFunction((k) => new URLSearchParams(location.search).get("idx") === String(k), { timeout: 10000 }, map.k);
  await mapIdle(page);

  // CF calendars, as the page decodes them (cf.js), against NumPy and the definitions.
  const decoded = await page.evaluate((cases) => cases.map((c) => timeLabels(c.values, c.units, c.calendar)), map.calendars);
  map.calendars.forEach((c, i) => check(JSON.stringify(decoded[i]) === JSON.stringify(c.dates),
    `${c.calendar} "${c.units}" ${c.values.join(",")} → ${decoded[i].join(", ")}${JSON.stringify(decoded[i]) === JSON.stringify(c.dates) ? "" : " (expected " + c.dates.join(", ") + ")"}`));

  // The value under the cursor: the cell that holds the point, its stored value.
  const point = await page.evaluate(({ lat, lon }) => {
    const px = window.zarrdMap.getPixelFromCoordinate(ol.proj.fromLonLat([lon, lat]));
    const r = window.zarrdMap.getViewport().getBoundingClientRect();
    return { x: r.left + px[0], y: r.top + px[1] };
  }, map);
  await page.mouse.move(point.x, point.y);
  const index = [map.k, ...map.cell].join(",");
  const got = await readout(page, `[${index}] = `);
  const slice = await (await fetch(`${base}/v1/slice/${map.dataset}/${map.path}?s=${index}&format=json`)).json();
  check(f32(got.raw) === f32(map.value) && f32(got.raw) === f32(slice.data),
    `the readout at ${map.lat.toFixed(2)}, ${map.lon.toFixed(2)} is cell [${index}] = ${got.raw} (zarr-python ${map.value}, /v1/slice ${slice.data})`);
  check(got.text.endsWith(` ${map.units}`) && got.coords.includes(map.dates[map.k]) && /lat .*°[NS]/.test(got.coords) && /lon .*°[EW]/.test(got.coords),
    `the readout has units, coordinates and the date (${got.text} · ${got.coords})`);

  // A click: the values of that cell along time.
  await page.mouse.click(point.x, point.y);
  await page.waitForFunction(() => !document.getElementById("series").hidden && document.querySelector("#series-plot canvas"), { timeout: 10000 });
  await sleep(300);
  const plotted = await page.evaluate(() => Array.from(window.zarrdPlot.data[1]));
  check(plotted.length === map.series.length && plotted.every((v, i) => f32(v) === f32(map.series[i])),
    `a click plots the cell's ${plotted.length} values along time as zarr-python reads them`);
  // Asked by label (the server's nearest grid point), whose coordinates the title shows.
  await page.waitForFunction(() => window.zarrdSeries, { timeout: 10000 });
  const asked = await page.evaluate(() => ({ url: window.zarrdSeries.url, title: document.getElementById("series-title").textContent }));
  const [clat, clon] = map.cell_coords;
  check(asked.url.startsWith(`/v1/slice/${map.dataset}/${map.path}?sel=`) && asked.title.includes(`at the grid point lat ${clat}, lon ${clon} (`),
    `the click asks /v1/slice by label and the title names grid point ${clat}, ${clon} (${asked.title})`);
  const p = await drawn(page, "#series-plot");
  check(p.opaque > 0 || (await page.evaluate(() => {
    const c = document.querySelector("#series-plot canvas");
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    return d.some((v, i) => i % 4 === 3 && v > 0);
  })), "the time-series plot is drawn");
  // uPlot draws its axes on the canvas: ask the time axis for the labels it drew.
  const plotLabels = await page.evaluate(() => window.zarrdPlot.axes[0]._values || []);
  check(plotLabels.some((l) => /^\d{4}-\d\d-\d\d/.test(l)) && plotLabels.every((l) => l === "" || map.dates.includes(l)),
    `the plot's time axis shows the dates (${plotLabels.filter(Boolean).join(", ")})`);

  let f = await fits(page);
  check(f.width <= 1280 && f.height <= 800 && f.out.length === 0, `the map view fits 1280x800 (${f.width}x${f.height}${f.out.length ? " " + f.out.join("; ") : ""})`);

  // The sample's year of daily temperatures: its CF time coordinate dates the steps.
  await page.goto(`${base}/view/sample/climate/t2m?idx=200&cmap=turbo&pt=22,60`, { waitUntil: "networkidle0" });
  await mapIdle(page);
  await page.waitForFunction(() => !document.getElementById("series").hidden && window.zarrdPlot, { timeout: 10000 });
  const day = await page.$eval("#slider-0-label", (e) => e.textContent);
  check(map.sample_units === "days since 2025-01-01" && day === map.sample_day, `the sample's step 200 is ${day} (NumPy: ${map.sample_day})`);
  check((await page.evaluate(() => window.zarrdPlot.data[1].length)) === 365, "its time series has the 365 days");
  f = await fits(page);
  check(f.width <= 1280 && f.height <= 800 && f.out.length === 0, `the sample's map fits 1280x800 (${f.width}x${f.height})`);
  if (shots) {
    await page.mouse.move(700, 300);
    await sleep(500);
    await page.screenshot({ path: `${shots}/viewer-map.png` });
  }
  await page.goBack({ waitUntil: "networkidle0" });
  await mapIdle(page);

  // The view from its URL: same date, colormap, window, place and clicked point.
  await page.select("#colormap", "magma");
  await page.waitForFunction(() => new URLSearchParams(location.search).get("cmap") === "magma", { timeout: 10000 });
  await sleep(500);
  const shared = page.url();
  const other = await browser.newPage();
  await other.setViewport({ width: 1280, height: 800, deviceScaleFactor: 1 });
  const otherWatch = watch(other);
  await other.goto(shared, { waitUntil: "networkidle0" });
  await mapIdle(other);
  const restored = await other.evaluate(() => ({
    label: document.getElementById("slider-0-label").textContent,
    cmap: document.getElementById("colormap").value,
    series: !document.getElementById("series").hidden,
    center: ol.proj.toLonLat(window.zarrdMap.getView().getCenter()).map((v) => v.toFixed(2)),
    zoom: window.zarrdMap.getView().getZoom().toFixed(2),
  }));
  const q = new URL(shared).searchParams;
  check(restored.label === map.dates[map.k] && restored.cmap === "magma" && restored.series
    && restored.zoom === Number(q.get("z")).toFixed(2) && restored.center[1] === Number(q.get("lat")).toFixed(2),
    `a shared URL restores the view (${new URL(shared).search})`);
  check(otherWatch.errors.length === 0, `the shared view has no errors ${otherWatch.errors.length ? JSON.stringify(otherWatch.errors) : ""}`);
  check(errors.length === 0, `the map has no console errors or failed requests ${errors.length ? JSON.stringify(errors) : ""}`);
}

// An HRRR-like Lambert conformal grid (tests/fixtures/grids/hrrr_lcc.zarr, served as
// `hrrr`), whose cells pyproj places, and a ROMS-like curvilinear grid (tests/fixtures/
// curvilinear/coastal.zarr, served as `coastal`), whose cells a brute-force oracle places:
// drawn as a map, the value under the cursor is that of the fixture's cell for the point,
// and a click plots that cell's values along time.
const PROJECTED = {
  ds: "hrrr", path: "t2m", what: "a Lambert conformal array", native: true,
  points: "tests/fixtures/grids/expected/hrrr_lcc__t2m__points.json",
  pick: (q) => q.cell && q.centre && q.lon > -110 && q.lon < -85 && q.lat > 30 && q.lat < 45,
};
const CURVILINEAR = {
  ds: "coastal", path: "temp", what: "an array on 2-D latitude/longitude", native: false,
  points: "tests/fixtures/curvilinear/expected/coastal__temp__points.json",
  pick: (q) => q.cell && q.value && q.value[0] !== null,
};
async function gridMap(browser, grid) {
  const points = JSON.parse(require("fs").readFileSync(grid.points, "utf8"));
  const p = points.find(grid.pick);
  const { ds, path } = grid;
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800, deviceScaleFactor: 1 });
  const { errors, requests } = watch(page);
  await page.goto(`${base}/view/${ds}/${path}`, { waitUntil: "networkidle0" });
  await mapIdle(page);
  check(await page.$eval("#map", (e) => !e.hidden), `${grid.what} opens as a map`);
  check(requests.some((u) => new URL(u).pathname.startsWith(`/maps/${ds}%2F${path}%5B0%5D/`)), "its tiles come from /maps/");
  const m = await drawn(page, "#map");
  check(m.opaque > 0.2 * m.total && m.colours > 30, `the map canvas is drawn (${m.opaque}/${m.total} opaque pixels, ${m.colours} colours)`);
  const at = await page.evaluate(({ lat, lon }) => {
    const px = window.zarrdMap.getPixelFromCoordinate(ol.proj.fromLonLat([lon, lat]));
    const r = window.zarrdMap.getViewport().getBoundingClientRect();
    return { x: r.left + px[0], y: r.top + px[1] };
  }, p);
  await page.mouse.move(at.x, at.y);
  await page.waitForFunction(() => document.getElementById("value").dataset.raw !== undefined && /^lat|^\d/.test(document.getElementById("coords").textContent), { timeout: 10000 });
  const got = await page.evaluate(() => ({ raw: JSON.parse(document.getElementById("value").dataset.raw), coords: document.getElementById("coords").textContent }));
  const index = [0, ...p.cell].join(",");
  const slice = await (await fetch(`${base}/v1/slice/${ds}/${path}?s=${index}&format=json`)).json();
  check(f32(got.raw) === f32(slice.data), `the readout at ${p.lat.toFixed(3)}, ${p.lon.toFixed(3)} is the fixture's cell [${index}] = ${got.raw} (/v1/slice ${slice.data})`);
  const named = /y -?[\d.]+/.test(got.coords) && /x -?[\d.]+/.test(got.coords);
  check(named === grid.native, `the readout names the cell's native y and x only where it has them (${got.coords})`);
  await page.mouse.click(at.x, at.y);
  await page.waitForFunction(() => window.zarrdSeries && window.zarrdPlot, { timeout: 10000 });
  const plotted = await page.evaluate(() => Array.from(window.zarrdPlot.data[1]));
  const series = await (await fetch(`${base}/v1/slice/${ds}/${path}?s=:,${p.cell.join(",")}&format=json`)).json();
  check(plotted.length === series.data.length && plotted.every((v, i) => f32(v) === f32(series.data[i])),
    `a click plots that cell's ${plotted.length} values along time`);
  const title = await page.$eval("#series-title", (e) => e.textContent);
  check(title.includes("centre"), `the series names the cell and its centre (${title})`);
  check(errors.length === 0, `no console errors or failed requests ${errors.length ? JSON.stringify(errors) : ""}`);
}

// The deep-zoom view of an array without coordinates.
async function deepZoom(browser) {
  const dz = await browser.newPage();
  await dz.setViewport({ width: 1280, height: 800, deviceScaleFactor: 1 });
  const dzWatch = watch(dz);
  await dz.goto(`${base}/view/sample/terrain/elevation`, { waitUntil: "networkidle0" });
  await dz.waitForFunction(() => {
    const v = window.zarrdViewer;
    return v && v.world.getItemCount() > 0 && v.world.getItemAt(0).getFullyLoaded();
  }, { timeout: 30000 });
  await sleep(300);
  check(await dz.$eval("#map", (e) => e.hidden), "an array without lat/lon coordinates opens in the deep-zoom view");
  const d = await drawn(dz, "#osd");
  check(d.opaque > 0.3 * d.total && d.colours > 30, `the deep-zoom canvas is drawn (${d.opaque}/${d.total} opaque pixels, ${d.colours} colours)`);
  const [px, py] = [300, 700];
  const spot = await screenPoint(dz, px, py);
  await dz.mouse.move(spot.x, spot.y);
  const dv = await readout(dz, `[${py},${px}] = `);
  const dslice = await (await fetch(`${base}/v1/slice/sample/terrain/elevation?s=${py},${px}&format=json`)).json();
  check(dv.raw === dslice.data && dv.text.endsWith(" m"), `the deep-zoom readout is /v1/slice's value with units (${dv.text}; /v1/slice ${dslice.data})`);
  const dlegend = await dz.$eval("#legend-title", (e) => e.textContent);
  check(dlegend === "elevation (m)", `the deep-zoom colorbar names the array and its units (${dlegend})`);
  let f = await fits(dz);
  check(f.width <= 1280 && f.height <= 800 && f.out.length === 0, `the deep-zoom view fits 1280x800 (${f.width}x${f.height}${f.out.length ? " " + f.out.join("; ") : ""})`);
  if (shots) await dz.screenshot({ path: `${shots}/viewer-deepzoom.png` });
  // A small window: still no page scrolling.
  await dz.setViewport({ width: 800, height: 500, deviceScaleFactor: 1 });
  await sleep(300);
  f = await fits(dz);
  check(f.width <= 800 && f.height <= 500, `the deep-zoom view fits 800x500 too (${f.width}x${f.height})`);

  // A 3-D array without coordinates: a slider, and a click plots the values along it.
  await dz.setViewport({ width: 1280, height: 800, deviceScaleFactor: 1 });
  await dz.goto(`${base}/view/conf/rectilinear/u1_months_3d`, { waitUntil: "networkidle0" });
  await dz.waitForFunction(() => {
    const v = window.zarrdViewer;
    return v && v.world.getItemCount() > 0 && v.world.getItemAt(0).getFullyLoaded();
  }, { timeout: 30000 });
  const box = await dz.$eval("#osd", (e) => { const r = e.getBoundingClientRect(); return { x: r.left + r.width / 2, y: r.top + r.height / 2 }; });
  await dz.mouse.click(box.x, box.y);
  await dz.waitForFunction(() => !document.getElementById("series").hidden && window.zarrdPlot, { timeout: 10000 });
  await dz.waitForFunction(() => new URLSearchParams(location.search).get("pt"), { timeout: 10000 });
  const cell = await dz.evaluate(() => new URLSearchParams(location.search).get("pt"));
  const along = await (await fetch(`${base}/v1/slice/conf/rectilinear/u1_months_3d?s=:,${cell}&format=json`)).json();
  const series = await dz.evaluate(() => Array.from(window.zarrdPlot.data[1]));
  check(cell && series.length === 1095 && series.every((v, i) => v === along.data[i]),
    `a click on a 3-D array's deep-zoom view plots cell [${cell}] along its first dimension (${series.length} values, as /v1/slice)`);
  f = await fits(dz);
  check(f.width <= 1280 && f.height <= 800 && f.out.length === 0, `a 3-D array's deep-zoom view with its series fits 1280x800 (${f.width}x${f.height}${f.out.length ? " " + f.out.join("; ") : ""})`);
  check(dzWatch.errors.length === 0, `the deep-zoom view has no errors ${dzWatch.errors.length ? JSON.stringify(dzWatch.errors) : ""}`);
  await dz.close();
}
