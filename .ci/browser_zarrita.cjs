// zarrita.js in a real browser (see browser_zarrita.sh): Debian's chromium, driven by
// puppeteer-core, opens a page on a second loopback origin that imports zarrita's ESM build
// (the npm package, served from MODULES through an import map: no bundler, no CDN) and
// reads arrays from zarrd cross-origin, so CORS, preflights and Range requests are the
// browser's own. Expected values come from the fixtures' .npy files (EXPECTED_JSON).
// Usage: node browser_zarrita.cjs ZARRD_BASE_URL
// Prints one line per array and "zarrita in chromium: N passed, N failed"; exits 1 on any
// failure.
"use strict";
const fs = require("node:fs");
const { check, main, ZARRITA_IMPORTS, pageOrigin } = require("./browser_common.cjs");

const zarrd = process.argv[2].replace(/\/$/, "");
const expected = fs.readFileSync(process.env.EXPECTED_JSON);
const importMap = { imports: ZARRITA_IMPORTS };

// The page: reads every expected array with zarrita and compares in the browser.
const page = `<!doctype html><meta charset="utf-8"><title>zarrita in chromium</title>
<script type="importmap">${JSON.stringify(importMap)}</script>
<script type="module">
import * as zarr from "zarrita";
const fromB64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
function bytesOf(data, item) {
  if (data instanceof zarr.BoolArray) return Uint8Array.from({ length: data.length }, (_, i) => (data.get(i) ? 1 : 0));
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new Error("unexpected result " + Object.prototype.toString.call(data));
}
// At most 6 chunk requests at once, as a browser's own per-host limit would queue them:
// zarrita starts every request of a selection together, which exhausts chromium's request
// slots (net::ERR_INSUFFICIENT_RESOURCES) on arrays of thousands of chunks.
function limitedQueue(n) {
  const waiting = [], results = [];
  let active = 0;
  const next = () => {
    if (active >= n || waiting.length === 0) return;
    active++;
    const { fn, resolve, reject } = waiting.shift();
    fn().then(resolve, reject).finally(() => { active--; next(); });
  };
  return {
    add(fn) { results.push(new Promise((resolve, reject) => { waiting.push({ fn, resolve, reject }); next(); })); },
    onIdle: () => Promise.all(results),
  };
}
window.runAll = async (zarrd) => {
  const expected = await (await fetch("/expected.json")).json();
  const results = [];
  for (const want of expected) {
    try {
      // suffix: shard indexes by suffix range (\`bytes=-N\`, not CORS-safelisted, so the
      // browser sends a preflight first) instead of HEAD + bounded range.
      const store = new zarr.FetchStore(zarrd + want.store, { useSuffixRequest: !!want.suffix });
      const arr = await zarr.open(zarr.root(store).resolve(want.path), { kind: "array" });
      if (JSON.stringify(arr.shape) !== JSON.stringify(want.shape)) throw new Error("shape " + arr.shape);
      const got = await zarr.get(arr, null, { createQueue: () => limitedQueue(6) });
      if (want.texts) {
        const texts = arr.shape.length === 0 ? [got] : Array.from(got.data);
        if (JSON.stringify(texts) !== JSON.stringify(want.texts)) throw new Error("text differs");
      } else {
        const bytes = bytesOf(got.data, want.item);
        const ref = fromB64(want.b64);
        if (bytes.length !== ref.length) throw new Error(bytes.length + " bytes, want " + ref.length);
        const at = bytes.findIndex((b, i) => b !== ref[i]);
        if (at >= 0) throw new Error("first difference at byte " + at);
      }
      results.push({ name: want.name, ok: true, dtype: arr.dtype });
    } catch (e) {
      results.push({ name: want.name, ok: false, error: String(e && e.message || e) });
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
    const errors = [];
    const toZarrd = { total: 0, ranged: 0, suffix: 0, heads: 0, corsChecked: 0 };
    tab.on("pageerror", (e) => errors.push(String(e)));
    tab.on("requestfailed", (r) => {
      // Chromium reports a HEAD request as aborted once its answer is in (there is no body
      // to load); one that got its response is not a failure.
      const answer = r.response();
      if (r.method() === "HEAD" && answer && answer.ok()) return;
      errors.push(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`);
    });
    tab.on("request", (r) => {
      if (!r.url().startsWith(zarrd)) return;
      toZarrd.total++;
      if (r.headers().range) toZarrd.ranged++;
      if (/^bytes=-/.test(r.headers().range || "")) toZarrd.suffix++;
      if (r.method() === "HEAD") toZarrd.heads++;
    });
    tab.on("response", (r) => {
      if (r.url().startsWith(zarrd) && r.headers()["access-control-allow-origin"]) toZarrd.corsChecked++;
    });
    await tab.goto(origin + "/", { waitUntil: "load" });
    await tab.waitForFunction(() => window.ready === true, { timeout: 20000 });
    const results = await tab.evaluate((z) => window.runAll(z), zarrd);
    for (const r of results) {
      check(r.ok, r.ok ? `${r.name} ${r.dtype}` : `${r.name}: ${r.error}`);
    }
    // Failed requests are expected only as 404s of missing chunks, which the browser does
    // not report as failed: any failure here (a CORS block, a reset) is an error.
    for (const e of errors) check(false, `page: ${e}`);
    // The sharded /zarr reads must have gone through ranges of both kinds.
    check(toZarrd.ranged > 0 && toZarrd.suffix > 0 && toZarrd.heads > 0,
      `the sharded /zarr reads made bounded and suffix Range requests and HEAD requests: ${JSON.stringify(toZarrd)}`);
    console.log(`requests to zarrd (cross-origin from ${origin}): ${toZarrd.total}, ${toZarrd.ranged} with Range ` +
      `(${toZarrd.suffix} suffix), ${toZarrd.heads} HEAD, ${toZarrd.corsChecked} answers with Access-Control-Allow-Origin`);
  } finally {
    server.close();
  }
}, "zarrita in chromium: ");
