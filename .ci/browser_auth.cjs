// The viewer on a private dataset in a real browser (see browser.sh): the page lists nothing
// to an anonymous visitor; given an API key it mints a capability URL and shows the image,
// and a lat/lon array's map, with every request behind it; the key stays in sessionStorage
// only; a deep link without a credential is a 404. Prints "N passed, N failed" and exits
// non-zero on any failure.
"use strict";
const { check, main } = require("./browser_common.cjs");

const base = process.argv[2];
const key = process.env.API_KEY;

main(async (browser) => {
  const page = await browser.newPage();
  await page.setViewport({ width: 800, height: 600, deviceScaleFactor: 1 });
  const errors = [], requests = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("response", (r) => { if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`); });
  page.on("request", (r) => requests.push(r.url()));

  await page.goto(`${base}/`, { waitUntil: "networkidle0" });
  const anonymous = await page.$eval("#datasets", (e) => e.textContent);
  check(!anonymous.includes("sample"), `an anonymous visitor sees no private dataset (${JSON.stringify(anonymous)})`);

  await page.type("#secret", key);
  await page.click("#use");
  await page.waitForSelector('a[data-key="sample/terrain/elevation"]', { timeout: 20000 });
  check(true, "with the key, the private dataset is listed");
  await page.click('a[data-key="sample/terrain/elevation"]');
  await page.waitForFunction(() => {
    const v = window.zarrdViewer;
    return v && v.world.getItemCount() > 0 && v.world.getItemAt(0).getFullyLoaded();
  }, { timeout: 30000 });
  const iiif = requests.filter((u) => u.includes("/iiif/3/"));
  check(iiif.length > 0 && iiif.every((u) => new URL(u).pathname.startsWith("/t/")),
    `every IIIF request goes through a capability URL (${iiif.length} requests)`);
  check(new URL(page.url()).pathname.match(/^\/t\/[^/]+\/view\/sample\/terrain\/elevation$/) !== null,
    `the page's own URL is behind the capability URL (${new URL(page.url()).pathname.slice(0, 12)}...)`);
  const stored = await page.evaluate(() => ({
    session: sessionStorage.getItem("zarrd.credential"), local: localStorage.length, cookie: document.cookie,
  }));
  check(stored.session === key && stored.local === 0 && stored.cookie === "",
    "the key is in sessionStorage only (not localStorage, not a cookie)");
  check(!requests.some((u) => u.includes(key)), "the key never appears in a URL");
  // A lat/lon array of the private dataset: a map whose tiles go through the capability URL.
  await page.click('a[data-key="sample/climate/t2m"]');
  await page.waitForFunction(() => window.zarrdMap && !document.getElementById("map").hidden, { timeout: 20000 });
  await page.evaluate(() => new Promise((r) => { window.zarrdMap.once("rendercomplete", () => r(true)); window.zarrdMap.render(); }));
  const maps = requests.filter((u) => u.includes("/maps/"));
  check(maps.length > 0 && maps.every((u) => new URL(u).pathname.startsWith("/t/")),
    `every map request goes through the capability URL (${maps.length} requests)`);
  check(errors.length === 0, `no errors or failed requests ${errors.length ? JSON.stringify(errors) : ""}`);

  // Another visitor (a fresh context: no sessionStorage) following the plain deep link.
  const other = await browser.createBrowserContext();
  const stranger = await other.newPage();
  const response = await stranger.goto(`${base}/view/sample/terrain/elevation`);
  check(response.status() === 404, `a deep link to a private dataset is a 404 without a credential (${response.status()})`);
  await other.close();
});
