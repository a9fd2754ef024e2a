// What the browser checks (.ci/browser*.cjs) share: chromium launched one way, the
// "ok/FAIL" lines with their "N passed, N failed" summary and exit status, parts that fail
// on their own, reading the fixtures' uint16 .npy files, measuring what a canvas drew, and
// the cross-origin page server with the npm packages' import map.
"use strict";
const fs = require("node:fs");
const http = require("node:http");
const path = require("node:path");
const puppeteer = require("puppeteer-core");

let passed = 0, failed = 0;

/// One check: a line "ok   what" or "FAIL what", counted for the summary.
function check(ok, what) {
  if (ok) { passed++; console.log(`ok   ${what}`); } else { failed++; console.log(`FAIL ${what}`); }
}

/// Runs one part of a script: an exception fails it (with its message) and the next part
/// still runs.
async function part(name, body) {
  try { await body(); } catch (e) { console.error(e); check(false, `${name}: ${e.message}`); }
}

/// Starts Debian's chromium (or $CHROMIUM) headless, runs `body(browser)`, closes it, then
/// prints "<label>N passed, N failed" and exits, 1 on any failure or exception.
function main(body, label = "") {
  (async () => {
    const browser = await puppeteer.launch({
      executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    });
    try { await body(browser); } finally { await browser.close(); }
  })()
    .catch((e) => { console.error(e); failed++; })
    .then(() => {
      console.log(`${label}${passed} passed, ${failed} failed`);
      process.exit(failed ? 1 : 0);
    });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/// A little-endian uint16 C-order .npy as zarr-python wrote it: shape and values.
function readNpy(file) {
  const b = fs.readFileSync(file);
  const headerLen = b.readUInt16LE(8);
  const header = b.subarray(10, 10 + headerLen).toString("latin1");
  if (!header.includes("'descr': '<u2'") || !header.includes("'fortran_order': False")) throw new Error(file + ": " + header);
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(",").filter((s) => s.trim()).map(Number);
  const data = b.subarray(10 + headerLen);
  return { shape, values: Array.from({ length: data.length / 2 }, (_, i) => data.readUInt16LE(2 * i)) };
}

/// Over every canvas under `selector`: pixels in all, opaque ones, lit ones (not near
/// black) and distinct opaque colours (counted up to 1000).
function drawn(page, selector) {
  return page.evaluate((selector) => {
    let opaque = 0, total = 0, lit = 0;
    const colours = new Set();
    for (const c of document.querySelectorAll(`${selector} canvas`)) {
      if (!c.width || !c.height) continue;
      const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      for (let i = 0; i < d.length; i += 4) {
        total++;
        if (d[i + 3] === 255) { opaque++; if (colours.size < 1000) colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]); }
        if (d[i] + d[i + 1] + d[i + 2] > 30) lit++;
      }
    }
    return { opaque, total, lit, colours: colours.size };
  }, selector);
}

/// Bare specifiers zarrita's ESM build imports, resolved as the packages' "exports" say,
/// under the "/m/" of `pageOrigin` (no bundler, no CDN).
const ZARRITA_IMPORTS = {
  zarrita: "/m/zarrita/dist/src/index.js",
  "@zarrita/storage": "/m/@zarrita/storage/dist/src/fetch.js",
  "@zarrita/storage/fetch": "/m/@zarrita/storage/dist/src/fetch.js",
  numcodecs: "/m/numcodecs/dist/index.js",
  "numcodecs/blosc": "/m/numcodecs/dist/blosc.js",
  "numcodecs/gzip": "/m/numcodecs/dist/gzip.js",
  "numcodecs/lz4": "/m/numcodecs/dist/lz4.js",
  "numcodecs/zlib": "/m/numcodecs/dist/zlib.js",
  "numcodecs/zstd": "/m/numcodecs/dist/zstd.js",
  fflate: "/m/fflate/esm/browser.js",
};

/// A second loopback origin for a test page, so that its requests to zarrd are
/// cross-origin: "/" is `page`, "/expected.json" is `expected`, "/m/<file>" a file of the
/// npm packages under $MODULES (nothing outside it). Resolves to { server, origin }.
async function pageOrigin(page, expected) {
  const modules = path.resolve(process.env.MODULES);
  const types = { ".js": "text/javascript", ".json": "application/json", ".mjs": "text/javascript" };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    if (url.pathname === "/") return res.writeHead(200, { "content-type": "text/html" }).end(page);
    if (url.pathname === "/expected.json") return res.writeHead(200, { "content-type": "application/json" }).end(expected);
    if (url.pathname.startsWith("/m/")) {
      const file = path.resolve(modules, decodeURIComponent(url.pathname.slice(3)));
      if (file.startsWith(modules + path.sep) && fs.existsSync(file) && fs.statSync(file).isFile()) {
        res.writeHead(200, { "content-type": types[path.extname(file)] || "application/octet-stream" });
        return fs.createReadStream(file).pipe(res);
      }
    }
    res.writeHead(404).end();
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { server, origin: `http://127.0.0.1:${server.address().port}` };
}

/// Where on the page the centre of image pixel (x, y) of the viewer's OpenSeadragon view is.
function screenPoint(page, x, y) {
  return page.evaluate(({ x, y }) => {
    const v = window.zarrdViewer;
    const p = v.viewport.imageToViewerElementCoordinates(new OpenSeadragon.Point(x + 0.5, y + 0.5));
    const r = v.container.getBoundingClientRect();
    return { x: r.left + p.x, y: r.top + p.y };
  }, { x, y });
}

// The page fits the window: no scrolling, and every visible part inside it.
function fits(page) {
  return page.evaluate(() => {
    const s = document.scrollingElement;
    const out = [];
    for (const e of document.querySelectorAll("main > section, #stage > *, aside")) {
      if (e.hidden || e.offsetParent === null && getComputedStyle(e).position !== "fixed") continue;
      const r = e.getBoundingClientRect();
      if (r.left < 0 || r.top < 0 || r.right > innerWidth + 0.5 || r.bottom > innerHeight + 0.5) out.push(`${e.id || e.tagName} ${JSON.stringify(r)}`);
    }
    return { width: s.scrollWidth, height: s.scrollHeight, out };
  });
}

module.exports = { check, part, main, sleep, readNpy, drawn, screenPoint, ZARRITA_IMPORTS, pageOrigin, fits };
