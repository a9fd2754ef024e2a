// The viewer's series panel in Debian's chromium through puppeteer-core (see browser.sh), at
// 1280x800, on three years (or, with the fallback store, one year) of noleap daily `tas`
// (served as `analysis`, array daily/tas). Expected values come from zarr-python + NumPy
// reading the store (browser.sh writes them to $EXPECTED_SERIES), never from zarrd:
// - the time slider shows the server's CF dates (noleap);
// - a click on the map plots the series of the nearest grid point, asked by label
//   (/v1/slice sel=lat:~..,lon:~..), with that grid point's coordinates in the title and
//   the dates on the x axis;
// - "monthly means" re-asks /v1/reduce with resample=time:1M and plots the monthly means;
// - a polygon drawn with the mouse (OpenLayers' Draw) plots the area-weighted mean over it
//   (/v1/reduce weights=area within=POLYGON) to 1e-6 relative, daily and monthly; a box too;
//   the clicks that draw do not also pick points;
// - the CSV link downloads (a real download) the rows the plot shows;
// - a shared URL brings back the area and the monthly means;
// - an array of an OGC API – EDR collection links to the collection's document (its href
//   fetched: the collection's id, the array among its parameters), a clicked point's series
//   to its EDR position query (its CoverageJSON's values the series'; on the 4-D EDR fixture
//   with a level fixed too; the sample's t2m too); no link,
//   and no /edr request, for an array not on a lat/lon grid;
// - nothing overflows the window, no console errors.
// With "private" after the URL, on the server where the sample is private: given an API key,
// a click's series and its CSV download go through the capability URL, and the EDR link is
// there exactly when /edr has the sample's collection for the holder of the key.
// Prints "N passed, N failed" and exits non-zero on any failure.
"use strict";
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { check, part, main, sleep, fits } = require("./browser_common.cjs");

const base = process.argv[2];
const mode = process.argv[3] || "public";
const exp = JSON.parse(fs.readFileSync(process.env.EXPECTED_SERIES, "utf8"));
const f32 = (v) => (v === null ? null : Math.fround(v));
const near = (a, b) => (a === null || b === null ? a === b : Math.abs(a - b) <= 1e-6 * Math.abs(b));
const sameF32 = (got, want) => got.length === want.length && got.every((v, i) => f32(v) === f32(want[i]));
const sameNear = (got, want) => got.length === want.length && got.every((v, i) => near(v, want[i]));
const worst = (got, want) => Math.max(0, ...got.map((v, i) => (v === null || want[i] === null ? (v === want[i] ? 0 : Infinity) : Math.abs(v - want[i]) / Math.abs(want[i]))));

function watch(page) {
  const errors = [], requests = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("requestfailed", (r) => { if (!r.url().startsWith("blob:")) errors.push(`request failed: ${r.url()}`); });
  page.on("response", (r) => { if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`); });
  page.on("request", (r) => requests.push(r.url()));
  return { errors, requests };
}

// The map shown, the page's requests over (the EDR link, say, which moves the map down a
// line when it comes: a pixel measured before it would be clicked off target) and a frame
// drawn.
async function mapIdle(page) {
  await page.waitForFunction(() => window.zarrdMap && !document.getElementById("map").hidden, { timeout: 20000 });
  await page.waitForNetworkIdle({ idleTime: 250, timeout: 20000 });
  await page.evaluate(() => new Promise((r) => {
    window.zarrdMap.once("rendercomplete", () => r(true));
    window.zarrdMap.render();
  }));
}

// The page point (CSS pixels) of a longitude/latitude on the map.
function pixel(page, lon, lat) {
  return page.evaluate((lon, lat) => {
    const px = window.zarrdMap.getPixelFromCoordinate(ol.proj.fromLonLat([lon, lat]));
    const r = window.zarrdMap.getViewport().getBoundingClientRect();
    return { x: r.left + px[0], y: r.top + px[1] };
  }, lon, lat);
}

// Waits for the panel to show a series of `kind` (monthly or not), and for the URL to keep
// it (saved a moment after), and returns it with the plot's data, the title and the query.
async function shown(page, kind, monthly) {
  const key = { point: "ll", area: "area", cell: "pt" }[kind];
  try {
    await page.waitForFunction((kind, monthly, key) => {
      const s = window.zarrdSeries;
      const q = new URLSearchParams(location.search);
      return s && s.kind === kind && s.monthly === monthly && window.zarrdPlot && q.has(key) && q.has("monthly") === monthly;
    }, { timeout: 20000 }, kind, monthly, key);
  } catch (e) {
    // What the page shows instead: the panel's message, the series it has, and the URL.
    const seen = await page.evaluate(() => ({
      panel: document.getElementById("series").hidden ? "hidden" : document.getElementById("series-title").textContent,
      series: window.zarrdSeries && { kind: window.zarrdSeries.kind, monthly: window.zarrdSeries.monthly, url: window.zarrdSeries.url },
      at: location.pathname + location.search,
    }));
    throw new Error(`no ${monthly ? "monthly " : ""}${kind} series shown: ${e.message}; the page has ${JSON.stringify(seen)}`);
  }
  return page.evaluate(() => ({
    ...window.zarrdSeries,
    plotted: Array.from(window.zarrdPlot.data[1]),
    title: document.getElementById("series-title").textContent,
    query: location.search,
  }));
}


// Downloads go to a folder of our own: a click on the CSV link saves a real file there.
async function downloads(browser) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zarrd-csv-"));
  const cdp = await browser.target().createCDPSession();
  await cdp.send("Browser.setDownloadBehavior", { behavior: "allow", downloadPath: dir });
  return dir;
}

// Clicks the CSV link and reads the file it saves: {name, header, labels, values}.
async function downloadCsv(page, dir) {
  for (const f of fs.readdirSync(dir)) fs.rmSync(path.join(dir, f));
  await page.click("#series-csv");
  let name = null;
  for (let i = 0; i < 100 && !name; i++) {
    await sleep(100);
    name = fs.readdirSync(dir).find((f) => f.endsWith(".csv"));
  }
  if (!name) throw new Error(`the CSV link saved no file (${fs.readdirSync(dir).join(", ")})`);
  const lines = fs.readFileSync(path.join(dir, name), "utf8").trim().split(/\r?\n/);
  const rows = lines.slice(1).map((l) => l.split(","));
  return { name, header: lines[0], labels: rows.map((r) => r[0]), values: rows.map((r) => (r[1] === "" ? null : Number(r[1]))) };
}

// The CSV's rows are the plot's values (and its labels, `labels`: the server's labels are
// the plot's wherever the first dimension has a coordinate array).
function csvMatches(csv, s, labels = true) {
  return csv.header === "time,value" && (!labels || JSON.stringify(csv.labels) === JSON.stringify(s.labels))
    && csv.values.length === s.plotted.length && csv.values.every((v, i) => v === s.plotted[i]);
}

// Clicks the vertices of a ring (closed: the last is the first, which ends the drawing) or
// the two corners of a box, a moment apart (not a double click).
async function drawWithMouse(page, points) {
  for (const [lon, lat] of points) {
    const p = await pixel(page, lon, lat);
    await page.mouse.move(p.x - 3, p.y - 3);
    await page.mouse.move(p.x, p.y, { steps: 3 });
    await page.mouse.click(p.x, p.y);
    await sleep(350);
  }
}

// The ring the viewer keeps in the URL (`area`), against the one drawn.
function ringOf(query) {
  const text = new URLSearchParams(query).get("area") || "";
  return text.split(",").map((p) => p.trim().split(/\s+/).map(Number));
}
// The collection id of an array (docs/edr.md): the dataset for its root group, else
// DATASET:GROUP:PATH.
const collectionId = (dataset, path) => [dataset, ...path.split("/").slice(0, -1)].join(":");

// The info's EDR link: {href (as written), text}, or null.
const edrLink = (page) => page.evaluate(() => {
  const a = document.getElementById("edr-link");
  return a && { href: a.getAttribute("href"), text: a.textContent };
});

// A GET from the page of one of its links (the browser's own request, cookies and all).
const fetchJson = (page, selector) => page.$eval(selector, async (a) => {
  const r = await fetch(a.href);
  return { status: r.status, type: r.headers.get("content-type"), body: await r.json().catch(() => null) };
});

// The series panel's EDR link, once shown: its href and the CoverageJSON it fetches.
async function edrSeries(page) {
  await page.waitForFunction(() => !document.getElementById("series-edr").hidden, { timeout: 20000 });
  return { href: await page.$eval("#series-edr", (a) => a.getAttribute("href")), ...await fetchJson(page, "#series-edr") };
}

const ringNear = (got, want, tol) => got.length === want.length && got.every((p, i) => Math.abs(p[0] - want[i][0]) <= tol && Math.abs(p[1] - want[i][1]) <= tol);

main(async (browser) => {
  const dir = await downloads(browser);
  try {
    if (mode === "private") await part("the series of a private dataset", () => privateSeries(browser, dir));
    else {
      await part("the series panel", () => seriesPanel(browser, dir));
      await part("the EDR links", () => edrLinks(browser));
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, mode === "private" ? "series (private): " : "series: ");

async function seriesPanel(browser, dir) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800, deviceScaleFactor: 1 });
  const { errors, requests } = watch(page);
  await page.goto(`${base}/view/${exp.dataset}/${exp.path}`, { waitUntil: "networkidle0" });
  await mapIdle(page);
  check(await page.$eval("#tools", (e) => !e.hidden), "the map shows the draw-an-area tools");
  const cid = collectionId(exp.dataset, exp.path);
  const link = await edrLink(page);
  check(link && link.text === "OGC EDR collection" && link.href === `/edr/collections/${cid}`,
    `the info links to the array's EDR collection (${JSON.stringify(link)})`);
  const doc = await fetchJson(page, "#edr-link");
  const param = exp.path.split("/").pop();
  check(doc.status === 200 && doc.body && doc.body.id === cid && Object.hasOwn(doc.body.parameter_names || {}, param),
    `the link fetches collection ${cid} with ${param} among its parameters (${doc.status}, id ${doc.body && doc.body.id}, parameters ${doc.body && Object.keys(doc.body.parameter_names || {})})`);

  // The time slider's labels are the server's (a label selection of the coordinate).
  check(requests.some((u) => /\/v1\/slice\/analysis\/daily\/time\?sel=/.test(u)), "the time slider's labels come from the server (/v1/slice sel= on the time coordinate)");
  check(await page.$eval("#slider-0-label", (e) => e.textContent) === exp.dates[0], `the time slider starts at ${exp.dates[0]}`);
  await page.focus("#slider-0");
  await page.keyboard.press("End");
  await page.waitForFunction((n) => new URLSearchParams(location.search).get("idx") === String(n), { timeout: 10000 }, exp.dates.length - 1);
  const last = await page.$eval("#slider-0-label", (e) => e.textContent);
  check(last === exp.dates[exp.dates.length - 1], `its last step is ${last} in the noleap calendar (NumPy: ${exp.dates[exp.dates.length - 1]})`);
  await page.keyboard.press("Home");
  await page.waitForFunction(() => new URLSearchParams(location.search).get("idx") === "0", { timeout: 10000 });
  await mapIdle(page);

  // A click: the nearest grid point's series, asked by label.
  const at = await pixel(page, exp.click.lon, exp.click.lat);
  await page.mouse.click(at.x, at.y);
  let s = await shown(page, "point", false);
  check(s.url.startsWith(`/v1/slice/${exp.dataset}/${exp.path}?sel=`) && s.url.includes("lat%3A~") && s.url.includes("lon%3A~"),
    `a click asks for the series by label (${decodeURIComponent(s.url)})`);
  check(sameF32(s.values, exp.point.series) && sameF32(s.plotted, exp.point.series),
    `a click near ${exp.click.lat}, ${exp.click.lon} plots the ${s.values.length} values of grid point [${exp.point.cell}] as zarr-python reads them (NaN as gaps: ${exp.point.series.filter((v) => v === null).length})`);
  const gp = `lat ${exp.point.lat}, lon ${exp.point.lon}`;
  check(s.title.includes(gp) && s.title.includes("46.25°N 75°W"), `the title names the grid point used (${s.title})`);
  check(JSON.stringify(s.labels) === JSON.stringify(exp.dates), `the x labels are the noleap dates (${s.labels[0]} … ${s.labels[s.labels.length - 1]})`);
  const axis = await page.evaluate(() => window.zarrdPlot.axes[0]._values || []);
  check(axis.filter(Boolean).length > 0 && axis.every((l) => l === "" || exp.dates.includes(l)), `the plot's axis shows dates (${axis.filter(Boolean).join(", ")})`);
  check(new URLSearchParams(s.query).get("ll") !== null, `the clicked place is in the URL (${s.query})`);
  const cov = await edrSeries(page);
  const [, cq] = cov.href.split("?");
  const ask = new URLSearchParams(cq);
  const [plon, plat] = (ask.get("coords") || "").replace(/^POINT\((.*)\)$/, "$1").split(" ").map(Number);
  const [llat, llon] = new URLSearchParams(s.query).get("ll").split(",").map(Number);
  check(cov.href.startsWith(`/edr/collections/${cid}/position?`) && ask.get("parameter-name") === param
    && plat === llat && plon === llon && !ask.has("datetime") && !ask.has("z"),
    `the series panel links to the EDR position query of the place clicked (${decodeURIComponent(cov.href)})`);
  const values = cov.body && cov.body.ranges && cov.body.ranges[param] && cov.body.ranges[param].values;
  check(cov.status === 200 && /coverage\+json/.test(cov.type) && cov.body.domain.domainType === "PointSeries"
    && Array.isArray(values) && sameF32(values, exp.point.series) && sameF32(values, s.values),
    `its CoverageJSON (${cov.type}, ${cov.body && cov.body.domain && cov.body.domain.domainType}) has the series' ${values && values.length} values, as zarr-python reads them`);

  // Monthly means of the point.
  check(await page.$eval("#series-monthly", (e) => !e.disabled), "the monthly toggle is enabled (time has CF labels)");
  await page.click("#series-monthly");
  s = await shown(page, "point", true);
  check(s.url.startsWith(`/v1/reduce/${exp.dataset}/${exp.path}?sel=`) && s.url.includes("resample=time%3A1M") && s.url.includes("op=mean"),
    `monthly means ask /v1/reduce resample=time:1M (${decodeURIComponent(s.url)})`);
  check(JSON.stringify(s.labels) === JSON.stringify(exp.months) && sameNear(s.plotted, exp.point.monthly),
    `the point's ${s.labels.length} monthly means are NumPy's (worst relative difference ${worst(s.plotted, exp.point.monthly).toExponential(1)})`);
  check(new URLSearchParams(s.query).get("monthly") === "1", "monthly means are in the URL");
  check(await page.$eval("#series-edr", (a) => a.hidden), "monthly means have no EDR link (no EDR query is their equivalent)");
  let csv = await downloadCsv(page, dir);
  check(csvMatches(csv, s) && csv.name.endsWith(".csv"), `the CSV link saves ${csv.name}: ${csv.values.length} rows, the plotted labels and values`);

  // A polygon drawn with the mouse, the map zoomed on it (a pixel is then a few hundredths
  // of a degree; no cell centre is within 0.88 degrees of an edge).
  await page.click("#series-monthly");
  await shown(page, "point", false);
  const ring = exp.polygon.ring;
  const xs = ring.map((p) => p[0]), ys = ring.map((p) => p[1]);
  await page.evaluate((b) => window.zarrdMap.getView().fit(ol.proj.transformExtent(b, "EPSG:4326", "EPSG:3857"), { padding: [40, 40, 40, 40] }),
    [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)]);
  await mapIdle(page);
  const before = requests.filter((u) => u.includes("?sel=")).length;
  await page.click("#draw-polygon");
  check(await page.$eval("#draw-polygon", (e) => e.getAttribute("aria-pressed")) === "true", "the polygon button arms the drawing");
  await drawWithMouse(page, ring);
  s = await shown(page, "area", false);
  check(s.url.startsWith(`/v1/reduce/${exp.dataset}/${exp.path}?op=mean&over=lat%2Clon&weights=area&within=POLYGON`),
    `a drawn polygon asks /v1/reduce (${decodeURIComponent(s.url).slice(0, 160)}…)`);
  check(sameNear(s.plotted, exp.polygon.series) && JSON.stringify(s.labels) === JSON.stringify(exp.dates),
    `the polygon's area-weighted mean over its ${exp.polygon.cells} cells is NumPy's, ${s.plotted.length} days (worst relative difference ${worst(s.plotted, exp.polygon.series).toExponential(1)})`);
  check(s.title.includes("area-weighted mean over the drawn area"), `the title says what it is (${s.title})`);
  check(ringNear(ringOf(s.query), ring, 0.1), `the drawn ring is in the URL, within 0.1 degree of the clicks (${new URLSearchParams(s.query).get("area")})`);
  check(requests.filter((u) => u.includes("?sel=")).length === before, "the clicks that drew the polygon picked no point");
  check(await page.$eval("#draw-polygon", (e) => e.getAttribute("aria-pressed")) === "false", "the drawing mode ends with the drawing");
  check(await page.evaluate(() => series.layer.getSource().getFeatures().map((f) => f.getGeometry().getType()).join()) === "Polygon",
    "the drawn area stays on the map");

  await page.click("#series-monthly");
  s = await shown(page, "area", true);
  check(s.url.includes("resample=time%3A1M") && JSON.stringify(s.labels) === JSON.stringify(exp.months) && sameNear(s.plotted, exp.polygon.monthly),
    `the polygon's monthly area-weighted means are NumPy's (each month's days and cells together; worst ${worst(s.plotted, exp.polygon.monthly).toExponential(1)})`);
  csv = await downloadCsv(page, dir);
  check(csvMatches(csv, s), `its CSV (${csv.name}) has the ${csv.values.length} plotted months`);
  let f = await fits(page);
  check(f.width <= 1280 && f.height <= 800 && f.out.length === 0, `the map with its series fits 1280x800 (${f.width}x${f.height}${f.out.length ? " " + f.out.join("; ") : ""})`);

  // The view from its URL: the area and the monthly means come back.
  const shared = page.url();
  const other = await browser.newPage();
  await other.setViewport({ width: 1280, height: 800, deviceScaleFactor: 1 });
  const otherWatch = watch(other);
  await other.goto(shared, { waitUntil: "networkidle0" });
  const again = await shown(other, "area", true);
  check(sameNear(again.plotted, exp.polygon.monthly) && await other.$eval("#series-monthly", (e) => e.checked),
    `a shared URL brings back the area's monthly means (${new URL(shared).search.slice(0, 120)}…)`);
  check(otherWatch.errors.length === 0, `the shared view has no errors ${otherWatch.errors.length ? JSON.stringify(otherWatch.errors) : ""}`);
  await other.close();

  // A box, corner to corner.
  await page.click("#series-monthly");
  await shown(page, "area", false);
  await page.click("#draw-box");
  await drawWithMouse(page, [exp.box.ring[0], exp.box.ring[2]]);
  await page.waitForFunction((n) => window.zarrdSeries && window.zarrdSeries.kind === "area" && !window.zarrdSeries.monthly
    && new URLSearchParams(location.search).get("area").split(",").length === n, { timeout: 20000 }, exp.box.ring.length);
  s = await shown(page, "area", false);
  const boxRing = ringOf(s.query);
  const corners = (r) => [Math.min(...r.map((p) => p[0])), Math.min(...r.map((p) => p[1])), Math.max(...r.map((p) => p[0])), Math.max(...r.map((p) => p[1]))];
  check(corners(boxRing).every((v, i) => Math.abs(v - corners(exp.box.ring)[i]) <= 0.1), `the box is the two corners clicked (${corners(boxRing).join(", ")})`);
  check(sameNear(s.plotted, exp.box.series), `the box's area-weighted mean over its ${exp.box.cells} cells is NumPy's (worst ${worst(s.plotted, exp.box.series).toExponential(1)})`);

  // The point again, from a plain click (the drawing mode is over).
  await page.evaluate(() => window.zarrdMap.getView().setZoom(window.zarrdMap.getView().getZoom() - 1));
  await mapIdle(page);
  const at2 = await pixel(page, exp.click.lon, exp.click.lat);
  await page.mouse.click(at2.x, at2.y);
  s = await shown(page, "point", false);
  check(sameF32(s.plotted, exp.point.series), "after drawing, a click picks a point again");
  check(errors.length === 0, `the series panel has no console errors or failed requests ${errors.length ? JSON.stringify(errors) : ""}`);
}

// The sample behind an API key: the click's series and its CSV through the capability URL.
async function privateSeries(browser, dir) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800, deviceScaleFactor: 1 });
  const { errors, requests } = watch(page);
  await page.goto(`${base}/`, { waitUntil: "networkidle0" });
  await page.type("#secret", process.env.API_KEY);
  await page.click("#use");
  await page.waitForSelector('a[data-key="sample/climate/t2m"]', { timeout: 20000 });
  await page.click('a[data-key="sample/climate/t2m"]');
  await mapIdle(page);
  const at = await pixel(page, -75, 45);
  await page.mouse.click(at.x, at.y);
  const s = await shown(page, "point", false);
  const series = requests.filter((u) => u.includes("/v1/slice/sample/climate/t2m?sel="));
  check(series.length > 0 && series.every((u) => new URL(u).pathname.startsWith("/t/")), `the series is asked through the capability URL (${series.length} requests)`);
  check(s.plotted.length === exp.sample.steps && s.title.includes(`lat ${exp.sample.lat}, lon ${exp.sample.lon}`),
    `a click plots ${s.plotted.length} days at the nearest grid point (${s.title})`);
  check(!(await page.$eval("#series-monthly", (e) => e.disabled)), "monthly means are offered: the sample's days have a CF time coordinate");
  const csv = await downloadCsv(page, dir);
  const fetched = requests.filter((u) => u.includes("format=csv"));
  // The sample's CF time coordinate labels the CSV's rows with the dates NumPy decodes.
  check(csvMatches(csv, s, false) && JSON.stringify(csv.labels) === JSON.stringify(exp.sample.dates),
    `the CSV link saves the plotted ${csv.values.length} rows, dated ${csv.labels[0]}..${csv.labels[csv.labels.length - 1]}, for the holder of the key`);
  check(fetched.length > 0 && fetched.every((u) => new URL(u).pathname.startsWith("/t/")), "the CSV is fetched through the capability URL");
  check(!requests.some((u) => u.includes(process.env.API_KEY)), "the key never appears in a URL");
  // The EDR links exactly where /edr has the sample's collection for the key's holder.
  const cid = "sample:climate";
  const r = await fetch(`${base}/edr/collections/${cid}`, { headers: { Authorization: `Bearer ${process.env.API_KEY}` } });
  const doc = r.ok ? await r.json() : null;
  const expected = !!(doc && Object.hasOwn(doc.parameter_names || {}, "t2m"));
  const link = await edrLink(page);
  check(!!link === expected && (!link || /^(https?:\/\/[^/]+)?\/t\/[^/]+\/edr\/collections\/sample:climate$/.test(link.href)),
    `the EDR collection link is ${expected ? "there, behind the capability URL" : "absent"}: /edr/collections/${cid} answers the key's holder ${r.status} (${JSON.stringify(link)})`);
  check(await page.$eval("#series-edr", (a) => a.hidden) === !expected, `the series' EDR link is ${expected ? "shown" : "absent"} too`);
  check(errors.length === 0, `no errors or failed requests ${errors.length ? JSON.stringify(errors) : ""}`);
}

// The EDR links elsewhere: the collection of a dataset's root group, a 4-D parameter with a
// level fixed (its series' EDR position query asks z=), and arrays with no collection.
async function edrLinks(browser) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800, deviceScaleFactor: 1 });
  const { errors, requests } = watch(page);

  // A dataset's root group is the collection named by the dataset.
  await page.goto(`${base}/view/climate/t2m`, { waitUntil: "networkidle0" });
  await mapIdle(page);
  let link = await edrLink(page);
  check(link && link.href === "/edr/collections/climate", `a root group's array links to the collection named by its dataset (${JSON.stringify(link)})`);
  let doc = await fetchJson(page, "#edr-link");
  check(doc.status === 200 && doc.body.id === "climate" && Object.hasOwn(doc.body.parameter_names || {}, "t2m"),
    `that link fetches collection climate with t2m (${doc.status}, id ${doc.body && doc.body.id})`);

  // The sample's t2m, dated by its CF time coordinate: group climate is collection
  // sample:climate.
  await page.goto(`${base}/view/sample/climate/t2m`, { waitUntil: "networkidle0" });
  await mapIdle(page);
  link = await edrLink(page);
  check(link && link.href === "/edr/collections/sample:climate", `the sample's t2m links to collection sample:climate (${JSON.stringify(link)})`);
  doc = await fetchJson(page, "#edr-link");
  check(doc.status === 200 && doc.body.id === "sample:climate" && Object.hasOwn(doc.body.parameter_names || {}, "t2m")
    && doc.body.extent.temporal.interval[0][0] === "2025-01-01T00:00:00Z",
    `that link fetches collection sample:climate with t2m from 2025-01-01 (${doc.status}, id ${doc.body && doc.body.id})`);

  // Not on a lat/lon grid (the deep-zoom view): no collection, no link, no request.
  for (const [path, what] of [["sample/terrain/elevation", "an array not on a lat/lon grid"]]) {
    const before = requests.length;
    await page.goto(`${base}/view/${path}`, { waitUntil: "networkidle0" });
    await page.waitForFunction(() => window.zarrdViewer || window.zarrdMap, { timeout: 20000 });
    await sleep(300);
    const cid = collectionId(...path.split(/\/(.*)/s).slice(0, 2));
    const r = await fetch(`${base}/edr/collections/${cid}`);
    const body = r.ok ? await r.json() : null;
    const listed = !!(body && Object.hasOwn(body.parameter_names || {}, path.split("/").pop()));
    link = await edrLink(page);
    check(!listed && link === null && !requests.slice(before).some((u) => u.includes("/edr/")),
      `${what} (${path}) has no EDR link and asks /edr nothing (/edr/collections/${cid}: ${r.status})`);
  }

  // A 4-D parameter (time, plev, lat, lon) at 850 hPa: the series' EDR query fixes the level.
  const e = exp.edr;
  if (!e) { check(true, "(no EDR fixture: the 4-D case is skipped)"); }
  else {
    await page.goto(`${base}/view/${e.dataset}/${e.path}?idx=0,${e.level}&ll=${e.lat},${e.lon}`, { waitUntil: "networkidle0" });
    const s = await shown(page, "point", false);
    link = await edrLink(page);
    check(link && link.href === `/edr/collections/${e.dataset}`, `the 4-D ${e.path} links to collection ${e.dataset} (${JSON.stringify(link)})`);
    const cov = await edrSeries(page);
    const ask = new URLSearchParams(cov.href.split("?")[1]);
    const values = cov.body && cov.body.ranges && cov.body.ranges[e.path] && cov.body.ranges[e.path].values;
    check(Number(ask.get("z")) === e.plev && ask.get("parameter-name") === e.path && !ask.has("datetime"),
      `its series' EDR link fixes the level: z=${ask.get("z")} (${decodeURIComponent(cov.href)})`);
    check(cov.status === 200 && cov.body.domain.domainType === "PointSeries" && Array.isArray(values)
      && sameF32(values, e.series) && sameF32(s.values, e.series),
      `its CoverageJSON has the series' ${values && values.length} values at ${e.plev} hPa, as zarr-python reads them (missing: ${e.series.filter((v) => v === null).length})`);
  }
  check(errors.length === 0, `the EDR links cost no errors or failed requests ${errors.length ? JSON.stringify(errors) : ""}`);
  await page.close();
}
