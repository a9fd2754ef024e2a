// ome-zarr.js in a real browser (see browser_ome.sh): Debian's chromium, driven by
// puppeteer-core, opens a page on a second loopback origin that imports ome-zarr.js (and
// zarrita) straight from the npm packages through an import map, and opens OME-Zarr 0.4 and
// 0.5 images written by ome-zarr-py and ngff-zarr through zarrd's /zarr, /compat/v2 and
// /compat/v3, cross-origin: the multiscale and its `omero` channels load, the level-0 array
// has its shape, one plane read with zarrita equals zarr-python's values (the fixtures' .npy
// files under EXPECTED_DIR), and
// ome-zarr.js renders its thumbnail. A 0.4 image through /compat/v3 and a 0.5 image through
// /compat/v2 must work too (ome-zarr.js picks the Zarr format from the OME version).
// Usage: node browser_ome.cjs ZARRD_BASE_URL
"use strict";
const path = require("node:path");
const { check, main, readNpy, ZARRITA_IMPORTS, pageOrigin } = require("./browser_common.cjs");

const zarrd = process.argv[2].replace(/\/$/, "");

/// The values of `plane` (an index or null per dimension) of a C-order array.
function planeOf({ shape, values }, plane) {
  const strides = shape.map((_, d) => shape.slice(d + 1).reduce((a, n) => a * n, 1));
  const out = [];
  const walk = (d, offset) => {
    if (d === shape.length) return out.push(values[offset]);
    if (plane[d] !== null) return walk(d + 1, offset + plane[d] * strides[d]);
    for (let i = 0; i < shape[d]; i++) walk(d + 1, offset + i * strides[d]);
  };
  walk(0, 0);
  return out;
}

// (dataset = image, its level-0 path, the plane read, levels, omero channels, stored format)
const expected = JSON.stringify(
  [
    ["ozp04_5d", "s0", [1, 0, 1, null, null], 3, 3, 2],
    ["ozp05_5d", "s0", [1, 2, 1, null, null], 3, 3, 3],
    ["nz05_cyx", "scale0/image", [1, null, null], 3, 2, 3],
  ].map(([ds, level, plane, levels, channels, format]) => {
    const npy = readNpy(path.join(process.env.EXPECTED_DIR, ds + ".ome.zarr", level + ".npy"));
    return {
      ds, shape: npy.shape, plane, levels, channels, stored_format: format,
      values: planeOf(npy, plane), views: ["/zarr", "/compat/v2", "/compat/v3"],
    };
  }),
);

const importMap = { imports: { "ome-zarr.js": "/m/ome-zarr.js/dist/ome-zarr.js", ...ZARRITA_IMPORTS } };

const page = `<!doctype html><meta charset="utf-8"><title>ome-zarr.js in chromium</title>
<script type="importmap">${JSON.stringify(importMap)}</script>
<script type="module">
import * as omezarr from "ome-zarr.js";
import * as zarr from "zarrita";
window.runAll = async (zarrd) => {
  const expected = await (await fetch("/expected.json")).json();
  const results = [];
  for (const want of expected) {
    for (const view of want.views) {
      const url = zarrd + view + "/" + want.ds;
      const name = view + " " + want.ds;
      try {
        const { arr, multiscale, omero, zarr_version } = await omezarr.getMultiscaleWithArray(url, 0);
        const format = view === "/compat/v2" ? 2 : view === "/compat/v3" ? 3 : want.stored_format;
        if (zarr_version !== format) throw new Error("read as Zarr v" + zarr_version + ", want v" + format);
        if (multiscale.datasets.length !== want.levels) throw new Error(multiscale.datasets.length + " levels");
        if ((omero ? omero.channels.length : 0) !== want.channels) throw new Error("omero channels " + JSON.stringify(omero));
        if (JSON.stringify(arr.shape) !== JSON.stringify(want.shape)) throw new Error("shape " + arr.shape);
        const got = await zarr.get(arr, want.plane.map((i) => (i === null ? null : i)));
        const values = Array.from(got.data);
        if (values.length !== want.values.length) throw new Error(values.length + " values");
        const bad = values.findIndex((v, i) => v !== want.values[i]);
        if (bad >= 0) throw new Error("value " + bad + " is " + values[bad] + ", want " + want.values[bad]);
        const thumb = await omezarr.renderThumbnail(url, 64);
        if (typeof thumb !== "string" || !thumb.startsWith("data:image/png")) throw new Error("thumbnail " + String(thumb).slice(0, 40));
        results.push({ name, ok: true });
      } catch (e) {
        results.push({ name, ok: false, error: String(e && e.stack || e) });
      }
    }
  }
  return results;
};
window.ready = true;
</script>`;

main(async (browser) => {
  const { server, origin } = await pageOrigin(page, expected);
  try {
    const tab = await browser.newPage();
    tab.on("pageerror", (e) => console.error("page error:", e.message));
    await tab.goto(origin + "/");
    await tab.waitForFunction("window.ready === true", { timeout: 30000 });
    const results = await tab.evaluate((z) => window.runAll(z), zarrd);
    for (const r of results) check(r.ok, r.ok ? r.name : `${r.name}: ${r.error}`);
    check(results.length > 0, `${results.length} images read`);
  } finally {
    server.close();
  }
}, "ome-zarr.js in chromium: ");
