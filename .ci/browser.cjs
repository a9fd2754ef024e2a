// Drives Debian's chromium with puppeteer-core against a running zarrd (see browser.sh).
// Prints "N passed, N failed" and exits non-zero on any failure.
"use strict";
const { check, main, screenPoint } = require("./browser_common.cjs");

const base = process.argv[2];
const { spots: expected, lo, hi } = JSON.parse(process.env.EXPECTED);

const frames = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

async function fullyLoaded(page) {
  // A view change is picked up on the next frames; until then the old state says "loaded".
  await frames(page);
  await new Promise((r) => setTimeout(r, 300));
  await page.waitForFunction(() => {
    const v = window.zarrdViewer || window.bareViewer;
    return v && v.world.getItemCount() > 0 && v.world.getItemAt(0).getFullyLoaded();
  }, { timeout: 30000 });
  // One more frame so the last tiles are drawn.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

// RGBA of the canvas at the centre of image pixel (x, y).
function canvasPixels(page, spots, viewerName) {
  return page.evaluate((spots, viewerName) => {
    const v = window[viewerName];
    const canvas = v.drawer.canvas;
    const ctx = canvas.getContext("2d");
    const scale = canvas.width / canvas.clientWidth;
    return spots.map(({ x, y }) => {
      const p = v.viewport.imageToViewerElementCoordinates(new OpenSeadragon.Point(x + 0.5, y + 0.5));
      return Array.from(ctx.getImageData(Math.floor(p.x * scale), Math.floor(p.y * scale), 1, 1).data);
    });
  }, spots, viewerName);
}

main(async (browser) => {
  const page = await browser.newPage();
  // Small enough that the home view shows a reduced level, so zooming in needs new tiles.
  await page.setViewport({ width: 560, height: 520, deviceScaleFactor: 1 });
  const errors = [];
  const iiif = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("requestfailed", (r) => errors.push(`request failed: ${r.url()}`));
  page.on("response", (r) => { if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`); });
  page.on("request", (r) => { if (r.url().includes("/iiif/3/")) iiif.push(r.url()); });

  await page.goto(`${base}/view/sample/terrain/elevation`, { waitUntil: "networkidle0" });
  const before = iiif.length;
  await page.select("#colormap", "gray");
  await fullyLoaded(page);
  const tiles = (urls) => urls.filter((u) => !u.includes("/info.json"));
  const tree = await page.$$eval("#datasets a", (as) => as.map((a) => a.textContent));
  check(tree.some((t) => t.includes("terrain/elevation")) && tree.some((t) => t.includes("climate/t2m")), "the dataset tree lists the arrays");
  check((await page.$eval("#info", (e) => e.textContent)).includes("uint16"), "the array's info is shown");
  const home = iiif.length;
  const grayTiles = tiles(iiif.slice(before));
  check(grayTiles.length > 0 && grayTiles.every((u) => u.includes("colormap=gray")),
    `tiles come from the IIIF service with the chosen colormap (${grayTiles.length} requests)`);
  // The window the colorbar shows is the one every tile is asked for.
  check(grayTiles.every((u) => u.includes(`vmin=${lo}&vmax=${hi}&`)), `tiles carry the colorbar's window vmin=${lo} vmax=${hi}`);

  // Zoom to 4 screen pixels per image pixel around the first spot: full-resolution tiles.
  await page.evaluate(({ x, y }) => {
    const v = window.zarrdViewer;
    const center = v.viewport.imageToViewportCoordinates(new OpenSeadragon.Point(x, y));
    v.viewport.zoomTo(v.viewport.imageToViewportZoom(4), null, true);
    v.viewport.panTo(center, true);
  }, expected[0]);
  await fullyLoaded(page);
  const zoomed = tiles(iiif.slice(home));
  check(zoomed.some((u) => /\/iiif\/3\/sample%2Fterrain%2Felevation\/\d+,\d+,256,256\/256,256\/0\/default\.png\?vmin=[\d.]+&vmax=[\d.]+&colormap=gray$/.test(u)),
    `zooming in issues full-resolution IIIF tile requests (${zoomed.length} more)`);
  const near = expected.slice(0, 3);
  const got = await canvasPixels(page, near, "zarrdViewer");
  near.forEach((s, i) => check(got[i][0] === s.level && got[i][1] === s.level && got[i][3] === 255,
    `canvas at image pixel (${s.x}, ${s.y}) is gray ${s.level} (got ${got[i]})`));

  // The value under the cursor comes from /v1/slice.
  const { x, y } = expected[0];
  const at = await screenPoint(page, x, y);
  await page.mouse.move(at.x, at.y);
  await page.waitForFunction((s) => document.getElementById("value").textContent.startsWith(s), { timeout: 10000 }, `[${y},${x}] = `);
  check(true, "the pixel value under the cursor is shown");
  check(errors.length === 0, `no console errors or failed requests ${errors.length ? JSON.stringify(errors) : ""}`);

  // An Icechunk dataset: its branches and tags in a picker; a version's arrays open as `ic@REF`.
  const versioned = await browser.newPage();
  await versioned.setViewport({ width: 1280, height: 800, deviceScaleFactor: 1 });
  const versionErrors = [];
  versioned.on("pageerror", (e) => versionErrors.push(String(e)));
  versioned.on("response", (r) => { if (r.status() >= 400) versionErrors.push(`${r.status()} ${r.url()}`); });
  await versioned.goto(`${base}/`, { waitUntil: "networkidle0" });
  const options = await versioned.$$eval("select.versions option", (os) => os.map((o) => o.textContent));
  check(["branch dev", "branch main", "tag v1"].every((o) => options.includes(o)), `the version picker lists branches and tags (${options})`);
  const arrays = () => versioned.$$eval("#datasets a", (as) => as.map((a) => a.getAttribute("href")));
  check((await arrays()).includes("/view/ic/added"), "the default version (main) lists its arrays");
  await versioned.select("select.versions", "dev");
  await versioned.waitForFunction(() => [...document.querySelectorAll("#datasets a")].some((a) => a.getAttribute("href").startsWith("/view/ic%40dev/")), { timeout: 10000 });
  const dev = await arrays();
  check(!dev.some((h) => h.includes("added")) && dev.includes("/view/ic%40dev/sharded"), "branch dev lists its own arrays");
  await versioned.click('a[href="/view/ic%40dev/sharded"]');
  await versioned.waitForFunction(() => document.getElementById("info").textContent.includes("ic@dev/sharded"), { timeout: 10000 });
  await fullyLoaded(versioned);
  check(versionErrors.length === 0, `picking a version has no errors ${versionErrors.length ? JSON.stringify(versionErrors) : ""}`);

  // OpenSeadragon pointed at info.json alone, on a page that is not zarrd's.
  const bare = await browser.newPage();
  await bare.setViewport({ width: 600, height: 600, deviceScaleFactor: 1 });
  const bareErrors = [];
  bare.on("pageerror", (e) => bareErrors.push(String(e)));
  bare.on("console", (m) => { if (m.type() === "error") bareErrors.push(m.text()); });
  await bare.setContent(`<!doctype html><div id="v" style="width:512px;height:512px"></div>
    <script src="${base}/viewer/openseadragon.min.js"></script>
    <script>window.bareViewer = OpenSeadragon({ id: "v", drawer: "canvas", crossOriginPolicy: "Anonymous",
      showNavigationControl: false, tileSources: "${base}/iiif/3/sample%2Fterrain%2Felevation/info.json" });</script>`);
  await fullyLoaded(bare);
  const shown = await bare.evaluate(() => {
    const c = window.bareViewer.drawer.canvas;
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let opaque = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] === 255) opaque++;
    return opaque / (d.length / 4);
  });
  check(shown > 0.5, `a bare OpenSeadragon shows the image from info.json alone (${(shown * 100).toFixed(0)}% of the canvas)`);
  check(bareErrors.length === 0, `the bare page has no errors ${bareErrors.length ? JSON.stringify(bareErrors) : ""}`);
});
