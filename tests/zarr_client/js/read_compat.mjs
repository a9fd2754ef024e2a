// Reads every fixture array through zarrd's /compat/v3 view (text arrays through /compat/v2
// too) with zarrita.js (FetchStore over HTTP, in node) and compares the values bit for bit
// (text: element for element) with the expected .npy files.
// Usage: node read_compat.mjs BASE_URL     (run by .ci/compat_clients.sh)
// Prints one line per array and a closing "zarrita: N passed, N failed" line; exits 1 on
// any failure.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Float16Array, setFloat16 } from "@petamoriken/float16";

// zarrita reads float16 into the platform's Float16Array, which node gets only from v24 on
// (browsers from 2025); the polyfill stands in for it on older runtimes.
globalThis.Float16Array ??= Float16Array;
const zarr = await import("zarrita");

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "fixtures");
const DATASETS = {
  conf: "conformance",
  extra: "extra",
  v2: "zarr-v2",
  v2extra: "zarr-v2-extra",
  fanout: "fanout",
  fanoutextra: "fanout-extra",
  strings: "strings",
  codecs: "codecs",
  codecsv2: "codecs-v2",
};

/** A .npy file (v1-v3 header, C or Fortran order) as little-endian C-order bytes. */
function readNpy(file) {
  const buf = readFileSync(file);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.subarray(start, start + headerLen).toString("latin1");
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const fortran = /'fortran_order':\s*True/.test(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(",").map((s) => s.trim()).filter(Boolean).map(Number);
  const item = Number(descr.slice(2));
  let data = Buffer.from(buf.subarray(start + headerLen));
  if (descr[1] === "U") {
    // Text: `item` UTF-32 code units per element, trailing NULs are padding.
    const n = shape.reduce((a, b) => a * b, 1);
    const texts = [];
    for (let i = 0; i < n; i++) {
      const units = [];
      for (let k = 0; k < item; k++) {
        const at = 4 * (i * item + k);
        units.push(descr[0] === ">" ? data.readUInt32BE(at) : data.readUInt32LE(at));
      }
      while (units.length && units[units.length - 1] === 0) units.pop();
      texts.push(String.fromCodePoint(...units));
    }
    return { kind: "U", item, shape, texts };
  }
  if (descr[0] === ">") {
    const unit = descr[1] === "c" ? item / 2 : item;
    for (let i = 0; i < data.length; i += unit) data.subarray(i, i + unit).reverse();
  }
  if (fortran && shape.length > 1) data = fortranToC(data, shape, item);
  return { kind: descr[1], item, shape, data };
}

function fortranToC(data, shape, item) {
  const n = shape.reduce((a, b) => a * b, 1);
  const out = Buffer.alloc(data.length);
  const coords = new Array(shape.length);
  for (let flat = 0; flat < n; flat++) {
    let rest = flat;
    for (let d = shape.length - 1; d >= 0; d--) {
      coords[d] = rest % shape[d];
      rest = Math.floor(rest / shape[d]);
    }
    let offset = 0, stride = 1;
    for (let d = 0; d < shape.length; d++) {
      offset += coords[d] * stride;
      stride *= shape[d];
    }
    data.copy(out, flat * item, offset * item, (offset + 1) * item);
  }
  return out;
}

/** The little-endian bytes of what zarrita returned: a typed array, its BoolArray, or a
 * scalar for 0-d arrays. */
function bytesOf(data, kind, item) {
  if (data instanceof zarr.BoolArray) return Buffer.from(Array.from({ length: data.length }, (_, i) => (data.get(i) ? 1 : 0)));
  if (data instanceof Float16Array && !ArrayBuffer.isView(data)) {
    // The polyfill keeps its bits private: write the values back as binary16.
    const out = Buffer.alloc(data.length * 2);
    const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
    for (let i = 0; i < data.length; i++) setFloat16(view, 2 * i, data[i], true);
    return out;
  }
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  // A 0-d array reads as one scalar.
  const out = Buffer.alloc(item);
  if (kind === "b") out[0] = data ? 1 : 0;
  else if (kind === "f" && item === 8) out.writeDoubleLE(data);
  else if (kind === "f" && item === 4) out.writeFloatLE(data);
  else if (kind === "i" || kind === "u") out.writeBigUInt64LE(BigInt.asUintN(64, BigInt(data)), 0);
  else throw new Error(`unexpected scalar ${data} for kind ${kind}${item}`);
  return out.subarray(0, item);
}

/** A queue running at most `n` chunk requests at once, as a browser does per host: zarrita
 * starts every chunk request of a selection together, which a server may answer with 503
 * once its in-flight limit is reached. */
function limitedQueue(n) {
  const waiting = [];
  const results = [];
  let active = 0;
  const next = () => {
    if (active >= n || waiting.length === 0) return;
    active++;
    const { fn, resolve, reject } = waiting.shift();
    fn().then(resolve, reject).finally(() => {
      active--;
      next();
    });
  };
  return {
    add(fn) {
      results.push(new Promise((resolve, reject) => {
        waiting.push({ fn, resolve, reject });
        next();
      }));
    },
    onIdle: () => Promise.all(results),
  };
}

/** Arrays zarrita cannot read from any store, with the reason (checked: it must fail). */
function unsupported(dtype, shape) {
  if (dtype.startsWith("complex") || dtype.startsWith("<c") || dtype.startsWith(">c")) {
    return "zarrita.js has no complex data types";
  }
  if (shape.includes(0)) return "zarrita.js fails on arrays with a zero-length dimension";
  return null;
}

const base = process.argv[2]?.replace(/\/$/, "");
if (!base) {
  console.error("usage: node read_compat.mjs BASE_URL");
  process.exit(2);
}
let passed = 0;
let failed = 0;
let skipped = 0;
for (const [ds, set] of Object.entries(DATASETS)) {
  const manifest = JSON.parse(readFileSync(join(FIXTURES, set, "manifest.json"), "utf8"));
  // Text arrays through both views (zarrita reads v2 `|O` + vlen-utf8 too), the rest v3.
  const flavors = ds === "strings" ? ["v3", "v2"] : ["v3"];
  for (const flavor of flavors) {
    const store = new zarr.FetchStore(`${base}/compat/${flavor}/${ds}`);
    for (const { path, dtype, shape } of manifest.arrays) {
      const name = `${flavor}/${ds}/${path}`;
      const why = unsupported(dtype, shape);
      if (why) {
        // Recorded, and confirmed: reading it must really fail in zarrita.
        let failedToo = false;
        try {
          const arr = await zarr.open(zarr.root(store).resolve(path), { kind: "array" });
          await zarr.get(arr, null, { createQueue: () => limitedQueue(8) });
        } catch {
          failedToo = true;
        }
        if (failedToo) {
          skipped++;
          console.log(`skip ${name}: ${why}`);
          continue;
        }
        console.log(`note ${name}: listed as unsupported (${why}) but read; checking it`);
      }
      try {
        const want = readNpy(join(FIXTURES, set, "expected", `${path.replaceAll("/", "__")}.npy`));
        const arr = await zarr.open(zarr.root(store).resolve(path), { kind: "array" });
        if (JSON.stringify(arr.shape) !== JSON.stringify(want.shape)) {
          throw new Error(`shape ${JSON.stringify(arr.shape)}, want ${JSON.stringify(want.shape)}`);
        }
        const got = await zarr.get(arr, null, { createQueue: () => limitedQueue(8) });
        if (want.kind === "U") {
          // Text: zarrita returns an Array of strings (a string for 0-d).
          const texts = arr.shape.length === 0 ? [got] : Array.from(got.data);
          if (JSON.stringify(texts) !== JSON.stringify(want.texts)) {
            const at = texts.findIndex((t, i) => t !== want.texts[i]);
            throw new Error(`${texts.length} elements (want ${want.texts.length}); first difference at ${at}`);
          }
          passed++;
          console.log(`ok   ${name} ${arr.dtype}[${arr.shape}]`);
          continue;
        }
        const bytes = bytesOf(arr.shape.length === 0 ? got : got.data, want.kind, want.item);
        if (!bytes.equals(want.data)) {
          const at = bytes.findIndex((b, i) => b !== want.data[i]);
          throw new Error(`${bytes.length} bytes (want ${want.data.length}); first difference at byte ${at}`);
        }
        passed++;
        console.log(`ok   ${name} ${arr.dtype}[${arr.shape}]`);
      } catch (e) {
        failed++;
        console.log(`FAIL ${name}: ${e?.message ?? e}`);
      }
    }
  }
}
console.log(`zarrita: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed ? 1 : 0);
