// The viewer for microscopists (src/viewer/ome.js), in Debian's chromium through
// puppeteer-core (see browser.sh), at 1280x800, on OME-Zarr fixtures written by ome-zarr-py
// (tests/fixtures/ome/images): the 5-D image `ozp05` (t, c, z, y, x; OME 0.5) and the plate
// `plate04`. Expected names, colours, scales and units are read here from the fixtures'
// own metadata files (what ome-zarr-py wrote), never from zarrd. Checks: the channel list
// shows the `omero` names and colours, the composite is drawn, hiding a channel changes
// the tiles asked for, the scale bar shows a round length in the axis unit that matches its
// width, the z slider is named by its axis and shows the physical position, the label
// image draws over the composite, the view comes back from its URL, the plate's grid opens
// a field, the readout shows the stored values and label under the cursor, nothing
// overflows 1280x800. Writes viewer-ome.png to SHOTS when given.
// Usage: node browser_ome_viewer.cjs ZARRD_BASE_URL   (prints "N passed, N failed")
"use strict";
const fs = require("node:fs");
const { check, part, main, sleep, readNpy, drawn } = require("./browser_common.cjs");

const base = process.argv[2];
const shots = process.env.SHOTS || "";
const fixtures = "tests/fixtures/ome/images";
const image = JSON.parse(fs.readFileSync(`${fixtures}/ozp05_5d.ome.zarr/zarr.json`, "utf8")).attributes.ome;
const plate = JSON.parse(fs.readFileSync(`${fixtures}/plate04.ome.zarr/.zattrs`, "utf8")).plate;



// Pixels of the main canvas that are a mix with yellow (labels' colour 1 is FFFF00).
function yellowish(page) {
  return page.evaluate(() => {
    const c = document.querySelector("#ome-stage canvas");
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] > 60 && d[i + 1] > 60 && d[i + 2] < d[i] - 40) n++;
    return n;
  });
}

function fits(page) {
  return page.evaluate(() => {
    const s = document.scrollingElement;
    const out = [];
    for (const e of document.querySelectorAll("main > section, #stage > *, aside, #ome-panel, .ome-channel")) {
      if (e.hidden || e.offsetParent === null) continue;
      const r = e.getBoundingClientRect();
      if (r.left < 0 || r.top < 0 || r.right > innerWidth + 0.5 || r.bottom > innerHeight + 0.5) out.push(`${e.id || e.className || e.tagName} ${JSON.stringify(r)}`);
    }
    return { width: s.scrollWidth, height: s.scrollHeight, out };
  });
}

function watch(page) {
  const errors = [], requests = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("requestfailed", (r) => errors.push(`request failed: ${r.url()}`));
  page.on("response", (r) => { if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`); });
  page.on("request", (r) => requests.push(r.url()));
  return { errors, requests };
}

async function loaded(page, items) {
  await page.waitForFunction((n) => {
    const v = window.zarrdOmeViewer;
    if (!v || v.world.getItemCount() < n) return false;
    for (let i = 0; i < v.world.getItemCount(); i++) if (!v.world.getItemAt(i).getFullyLoaded()) return false;
    return true;
  }, { timeout: 30000 }, items);
  await sleep(400);
}

main(async (browser) => {
  await part("the image", () => imageView(browser));
  await part("the plate", () => plateView(browser));
});

async function imageView(browser) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800, deviceScaleFactor: 1 });
  const { errors, requests } = watch(page);
  await page.goto(`${base}/`, { waitUntil: "networkidle0" });
  // The tree lists the image; a click opens it.
  const entry = await page.$('a.ome-entry[data-key="ozp05/"]');
  check(!!entry, "the dataset tree lists the OME-Zarr image");
  await entry.click();
  await loaded(page, 1);
  const ms = image.multiscales[0];
  const channels = image.omero.channels;
  const shown = await page.$$eval(".ome-channel", (rows) => rows.map((r) => ({
    name: r.querySelector(".ome-name").textContent,
    color: r.querySelector("input[type=color]").value,
    on: r.querySelector("input[type=checkbox]").checked,
    lo: r.querySelectorAll("input[type=number]")[0].value,
    hi: r.querySelectorAll("input[type=number]")[1].value,
  })));
  check(JSON.stringify(shown.map((c) => c.name)) === JSON.stringify(channels.map((c) => c.label)),
    `the channel list shows the omero names (${shown.map((c) => c.name).join(", ")})`);
  check(shown.every((c, i) => c.color === `#${channels[i].color.toLowerCase()}` && c.on === channels[i].active
    && Number(c.lo) === channels[i].window.start && Number(c.hi) === channels[i].window.end),
    "each channel shows its omero colour, visibility and window");
  const d = await drawn(page, "#ome-stage");
  check(d.opaque > 0.2 * d.total && d.lit > 0.1 * d.total && d.colours > 20, `the composite is drawn (${d.opaque}/${d.total} opaque, ${d.lit} lit, ${d.colours} colours)`);
  const tiles = () => requests.filter((u) => u.includes("/iiif/3/ozp05%2F%5B") && /\.png\?/.test(u));
  const first = tiles();
  check(first.length > 0 && first.every((u) => /channels=0%2C1&windows=200%3A2500%2C300%3A3000&colors=0000FF%2C00FF00/.test(u)),
    `composite tiles carry the visible channels, windows and colours (${first[0]})`);

  // The z slider: named by its axis, showing scale x index + translation in its unit.
  const zAxis = ms.axes.findIndex((a) => a.name === "z");
  const zScale = ms.datasets[0].coordinateTransformations.find((t) => t.type === "scale").scale[zAxis];
  const zShift = (ms.datasets[0].coordinateTransformations.find((t) => t.type === "translation") || { translation: [0, 0, 0, 0, 0] }).translation[zAxis];
  const zLabel = () => page.$eval("#ome-z", (e) => e.parentElement.textContent.trim());
  await page.focus("#ome-z");
  await page.keyboard.press("ArrowRight");
  await loaded(page, 1);
  const zText = await zLabel();
  check(zText.startsWith("z ") && zText.includes(`${zScale * 1 + zShift} µm`), `the z slider is named by its axis and shows the physical position (${zText}; ${zScale} µm per step)`);
  check(tiles().some((u) => u.includes("z%3D1")), "moving z asks for the plane z=1");

  // Hiding GFP: the tiles asked for change to DAPI alone.
  const before = tiles().length;
  await page.click('.ome-channel[data-channel="1"] input[type=checkbox]');
  await loaded(page, 1);
  const after = tiles().slice(before);
  check(after.length > 0 && after.every((u) => /channels=0&windows=200%3A2500&colors=0000FF(&|$)/.test(u)), `hiding a channel changes the tile requests (${after[0]})`);
  const blue = await page.evaluate(() => {
    const c = document.querySelector("#ome-stage canvas");
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let green = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 1] > 0 && d[i + 3] === 255) green++;
    return green;
  });
  check(blue === 0, `with GFP hidden no pixel has green (${blue})`);
  await page.click('.ome-channel[data-channel="1"] input[type=checkbox]');
  await loaded(page, 1);

  // The scale bar: a round length in the x axis' unit, as wide as it says.
  const xAxis = ms.axes.length - 1;
  const xScale = ms.datasets[0].coordinateTransformations.find((t) => t.type === "scale").scale[xAxis];
  const bar = await page.evaluate(() => {
    const v = window.zarrdOmeViewer;
    return {
      text: document.getElementById("ome-scalebar-text").textContent,
      width: document.getElementById("ome-scalebar-line").getBoundingClientRect().width,
      zoom: v.world.getItemAt(0).viewportToImageZoom(v.viewport.getZoom(true)),
    };
  });
  const m = bar.text.match(/^([\d.]+) µm$/);
  const expectWidth = m ? Number(m[1]) / xScale * bar.zoom : NaN;
  check(!!m && /^[125]0*(\.0*)?$|^0\.0*[125]$/.test(m[1]) && Math.abs(bar.width - expectWidth) < 2.5 && bar.width > 20 && bar.width <= 130,
    `the scale bar shows ${bar.text}, ${bar.width.toFixed(1)} px wide (${expectWidth.toFixed(1)} px at ${xScale} µm per pixel)`);

  // The label image over the composite, at its opacity.
  const yellowBefore = await yellowish(page);
  await page.select("#ome-labels", "cells");
  await loaded(page, 2);
  const yellowAfter = await yellowish(page);
  check(requests.some((u) => u.includes("/iiif/3/ozp05%2Flabels%2Fcells%5B") && u.endsWith(".png")) && yellowAfter > yellowBefore + 100,
    `the label overlay draws (${yellowBefore} -> ${yellowAfter} yellowish pixels)`);
  // Under the cursor: each channel's stored value (zarr-python's, the fixtures' .npy), the
  // label id and the physical position.
  const [px, py] = [30, 40];
  const s0 = readNpy("tests/fixtures/ome/expected/ozp05_5d.ome.zarr/s0.npy");
  const want = channels.map((c, k) => `${c.label} ${s0.values[(((0 * 3 + k) * 2 + 1) * 64 + py) * 64 + px]}`).join(" · ");
  const spot = await page.evaluate(({ px, py }) => {
    const v = window.zarrdOmeViewer;
    const p = v.world.getItemAt(0).imageToViewerElementCoordinates(new OpenSeadragon.Point(px + 0.5, py + 0.5));
    const r = v.container.getBoundingClientRect();
    return { x: r.left + p.x, y: r.top + p.y };
  }, { px, py });
  await page.mouse.move(spot.x, spot.y);
  await page.waitForFunction(() => document.getElementById("ome-readout").textContent.includes("cells"), { timeout: 10000 }).catch(() => {});
  const read = await page.$eval("#ome-readout", (e) => e.textContent);
  check(read.startsWith(`${want} · cells 2 · x ${px * xScale} µm, y ${py * xScale} µm`), `the readout shows the channels' values, the label and the position (${read}; expected ${want}, label 2)`);
  const opacity = await page.evaluate(() => window.zarrdOmeViewer.world.getItemAt(1).getOpacity());
  check(opacity === 0.5, `labels are drawn at the opacity slider's value (${opacity})`);

  const f = await fits(page);
  check(f.width <= 1280 && f.height <= 800 && f.out.length === 0, `the image view fits 1280x800 (${f.width}x${f.height}${f.out.length ? " " + f.out.join("; ") : ""})`);
  if (shots) await page.screenshot({ path: `${shots}/viewer-ome.png` });

  // The view from its URL.
  await sleep(500);
  const shared = page.url();
  const other = await browser.newPage();
  await other.setViewport({ width: 1280, height: 800, deviceScaleFactor: 1 });
  const ow = watch(other);
  await other.goto(shared, { waitUntil: "networkidle0" });
  await loaded(other, 2);
  const restored = await other.evaluate(() => ({
    z: document.getElementById("ome-z").value,
    labels: document.getElementById("ome-labels").value,
    on: Array.from(document.querySelectorAll(".ome-channel input[type=checkbox]")).map((b) => b.checked),
  }));
  check(restored.z === "1" && restored.labels === "cells" && JSON.stringify(restored.on) === "[true,true,false]",
    `a shared URL restores the view (${new URL(shared).search})`);
  check(ow.errors.length === 0, `the shared view has no errors ${ow.errors.length ? JSON.stringify(ow.errors) : ""}`);
  check(errors.length === 0, `the image view has no console errors or failed requests ${errors.length ? JSON.stringify(errors) : ""}`);
  await other.close();
  await page.close();
}

async function plateView(browser) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800, deviceScaleFactor: 1 });
  const { errors } = watch(page);
  await page.goto(`${base}/view/plate04`, { waitUntil: "networkidle0" });
  await page.waitForSelector("#ome-plate .ome-well", { timeout: 10000 });
  const wells = await page.$$eval("#ome-plate button.ome-well", (bs) => bs.map((b) => b.dataset.well));
  const want = plate.wells.map((w) => w.path);
  check(JSON.stringify([...wells].sort()) === JSON.stringify([...want].sort()), `the plate shows its wells as a grid (${wells.join(", ")})`);
  const empty = await page.$$eval("#ome-plate .ome-well.empty", (e) => e.length);
  check(empty === plate.rows.length * plate.columns.length - want.length, `grid positions without a well are marked (${empty})`);
  let f = await fits(page);
  check(f.width <= 1280 && f.height <= 800 && f.out.length === 0, `the plate view fits 1280x800 (${f.width}x${f.height})`);
  await page.click('#ome-plate button[data-well="A/2"]');
  await loaded(page, 1);
  check(new URL(page.url()).pathname === "/view/plate04/A/2/0", `a well opens its first field (${new URL(page.url()).pathname})`);
  const d = await drawn(page, "#ome-stage");
  check(d.opaque > 0.1 * d.total && d.colours > 5, `the field is drawn (${d.opaque}/${d.total} opaque, ${d.colours} colours)`);
  check(errors.length === 0, `the plate has no console errors or failed requests ${errors.length ? JSON.stringify(errors) : ""}`);
  await page.close();
}
