"""Read every fixture array through zarrd's /zarr store with a real Zarr client.

Usage: python read_through_zarrd.py BASE_URL      (e.g. http://127.0.0.1:8080)
Run by .ci/zarr_client.sh, which builds the venv (zarr-python 3.1, fsspec, aiohttp) and
starts zarrd with the datasets `conf` (tests/fixtures/conformance), `extra`
(tests/fixtures/extra), `v2` (tests/fixtures/zarr-v2) and `v2extra` (tests/fixtures/zarr-v2-extra).
The fanout sets are not read: zarr-python has no fanout chunk key encoding.

For each array of both fixture manifests, zarr-python opens it read-only over HTTP
(FsspecStore -> fsspec HTTPFileSystem -> aiohttp) at BASE_URL/zarr/<ds>/<path>, reads `[...]`
and three partial selections, and compares them (values, dtype, shape) with NumPy indexing
of the expected .npy. Partial reads of sharded arrays make zarr-python fetch the shard index
and single inner chunks with HTTP Range requests; every HTTP exchange is recorded through an
aiohttp trace hook, and the script checks that such reads really happened (206 responses)
and that every ranged response is consistent with what was asked for.

Arrays zarr-python 3.1 cannot open (chunk_grid "rectilinear" is not implemented there) are
skipped, with the reason printed. Exits 1 on any mismatch or error.
"""

from __future__ import annotations

import json
import re
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import numpy as np
import requests
import zarr
from zarr.storage import FsspecStore

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# dataset name in zarrd's config -> fixture set directory
DATASETS = {"conf": "conformance", "extra": "extra", "v2": "zarr-v2", "v2extra": "zarr-v2-extra"}
# chunk grids zarr-python 3.1 cannot open
UNSUPPORTED_GRIDS = {"rectilinear": "zarr-python 3.1 implements only the 'regular' chunk grid"}


@dataclass
class Exchange:
    method: str
    url: str
    range: str | None
    status: int
    content_range: str | None
    content_length: str | None


@dataclass
class Recorder:
    exchanges: list[Exchange] = field(default_factory=list)

    def trace_config(self) -> aiohttp.TraceConfig:
        tc = aiohttp.TraceConfig()

        async def on_end(session, ctx, params: aiohttp.TraceRequestEndParams) -> None:
            h = params.response.headers
            self.exchanges.append(
                Exchange(
                    method=params.method,
                    url=str(params.url),
                    range=params.headers.get("Range"),
                    status=params.response.status,
                    content_range=h.get("Content-Range"),
                    content_length=h.get("Content-Length"),
                )
            )

        tc.on_request_end.append(on_end)
        return tc


def range_problem(ex: Exchange) -> str | None:
    """Why a response to a Range request is wrong, or None (RFC 9110 section 14)."""
    if ex.range is None:
        return None
    if ex.status == 404:
        return None  # a missing key (e.g. an entirely missing shard) is 404, ranged or not
    if ex.status == 416:
        return None  # judged by the caller (zarr never asks past the end of a stored object)
    if ex.status != 206:
        # fsspec's HTTPFileSystem takes the body as the requested bytes whatever the
        # status, so a 200 with the full object would be decoded as garbage
        return f"status {ex.status} for a Range request (expected 206)"
    m = re.fullmatch(r"bytes=(\d*)-(\d*)", ex.range)
    cr = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", ex.content_range or "")
    if not m or not cr:
        return f"unparseable Range {ex.range!r} / Content-Range {ex.content_range!r}"
    first, last, total = (int(x) for x in cr.groups())
    a, b = m.groups()
    if a == "":  # suffix: last b bytes
        want_first, want_last = max(total - int(b), 0), total - 1
    else:
        want_first = int(a)
        want_last = min(int(b), total - 1) if b else total - 1
    if (first, last) != (want_first, want_last):
        return f"Content-Range {ex.content_range!r} does not answer Range {ex.range!r}"
    if ex.content_length is not None and int(ex.content_length) != last - first + 1:
        return f"Content-Length {ex.content_length} != {last - first + 1} for {ex.content_range!r}"
    return None


def selections(shape: tuple[int, ...]) -> list[tuple[str, tuple]]:
    """Three partial selections: a corner, a middle box, the last element (negative ints)."""
    if len(shape) == 0:
        return [("()", ()), ("...", (Ellipsis,)), ("()", ())]
    corner = tuple(slice(0, min(n, 2)) for n in shape)
    middle = tuple(slice(n // 3, max(n // 3 + 1, (2 * n) // 3)) for n in shape)
    last = tuple(-1 if n > 0 else slice(None) for n in shape)
    return [(fmt(corner), corner), (fmt(middle), middle), (fmt(last), last)]


def fmt(sel: tuple) -> str:
    def one(s):
        if isinstance(s, slice):
            return f"{'' if s.start is None else s.start}:{'' if s.stop is None else s.stop}"
        return str(s)

    return "[" + ",".join(one(s) for s in sel) + "]"


def same(got: np.ndarray, want: np.ndarray) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    # Byte order aside: indexing a big-endian array down to a scalar gives a native one.
    if got.dtype.newbyteorder("=") != want.dtype.newbyteorder("=") or got.shape != want.shape:
        return False
    if want.dtype.kind in "fc":
        return bool(np.array_equal(got, want, equal_nan=True))
    return bool(np.array_equal(got, want))


def describe(got, want) -> str:
    got, want = np.asarray(got), np.asarray(want)
    s = f"got dtype={got.dtype} shape={got.shape}, want dtype={want.dtype} shape={want.shape}"
    if got.shape == want.shape and got.size:
        bad = np.argwhere(~((got == want) | ((got != got) & (want != want))))
        if len(bad):
            i = tuple(bad[0])
            s += f"; {len(bad)} elements differ, first at {i}: got {got[i]!r} want {want[i]!r}"
    return s


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    base = sys.argv[1].rstrip("/")
    print(f"zarr-python {zarr.__version__}, numpy {np.__version__}, aiohttp {aiohttp.__version__}")
    print(f"zarrd at {base}")

    recorder = Recorder()
    read_ok: list[str] = []
    sharded_read: list[str] = []
    skipped: list[tuple[str, str]] = []
    failures: list[str] = []
    checks = 0
    manifest_count = 0

    for ds, fixture_set in DATASETS.items():
        fdir = FIXTURES / fixture_set
        manifest = json.loads((fdir / "manifest.json").read_text())
        root = f"{base}/zarr/{ds}"
        store = FsspecStore.from_url(
            root,
            read_only=True,
            storage_options={"client_kwargs": {"trace_configs": [recorder.trace_config()]}},
        )
        for entry in manifest["arrays"]:
            manifest_count += 1
            path = entry["path"]
            name = f"{ds}/{path}"
            try:
                r = requests.get(f"{root}/{path}/zarr.json", timeout=30)
                if r.status_code == 404:
                    # A Zarr v2 array: its .zarray, seen as a regular grid and its numcodecs chain.
                    r = requests.get(f"{root}/{path}/.zarray", timeout=30)
                    if r.status_code == 200:
                        v2 = r.json()
                        chain = (v2.get("filters") or []) + ([v2["compressor"]] if v2.get("compressor") else [])
                        meta = {"chunk_grid": {"name": "regular"}, "codecs": [{"name": c["id"]} for c in chain]}
                if r.status_code != 200:
                    failures.append(f"{name}: GET zarr.json / .zarray -> {r.status_code}: {r.text[:200]}")
                    continue
                if r.url.endswith("zarr.json"):
                    meta = r.json()
                grid = meta["chunk_grid"]["name"]
                if grid in UNSUPPORTED_GRIDS:
                    try:
                        zarr.open_array(store=store, path=path, mode="r")
                        why = "opened anyway"
                    except Exception as e:  # what zarr-python says, for the record
                        why = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
                    skipped.append((name, f"chunk_grid {grid!r}: {UNSUPPORTED_GRIDS[grid]} ({why})"))
                    continue
                codecs = [c["name"] for c in meta["codecs"]]
                is_sharded = "sharding_indexed" in codecs

                want = np.load(fdir / "expected" / (path.replace("/", "__") + ".npy"))
                before = len(recorder.exchanges)
                arr = zarr.open_array(store=store, path=path, mode="r")
                ok = True
                if np.dtype(arr.dtype) != want.dtype or tuple(arr.shape) != want.shape:
                    failures.append(
                        f"{name}: metadata dtype={arr.dtype} shape={arr.shape}, "
                        f"want dtype={want.dtype} shape={want.shape}"
                    )
                    ok = False
                for label, sel in [("[...]", (Ellipsis,))] + selections(want.shape):
                    checks += 1
                    got = arr[sel]
                    exp = want[sel]
                    if not same(got, exp):
                        failures.append(f"{name}{label}: {describe(got, exp)}")
                        ok = False
                mine = [
                    ex for ex in recorder.exchanges[before:] if ex.url.startswith(f"{root}/{path}/")
                ]
                ranged = [ex for ex in mine if ex.range is not None]
                n206 = sum(1 for ex in ranged if ex.status == 206)
                for ex in mine:
                    problem = range_problem(ex)
                    if problem is None and ex.status >= 400 and ex.status != 404:
                        problem = "error status"
                    if problem:
                        failures.append(
                            f"{name}: {ex.method} {ex.url} Range: {ex.range} -> {ex.status} "
                            f"Content-Range: {ex.content_range} "
                            f"Content-Length: {ex.content_length}: {problem}"
                        )
                        ok = False
                note = f"{len(mine)} requests, {len(ranged)} ranged ({n206}x 206)"
                if is_sharded:
                    sharded_read.append(f"{name} [{', '.join(codecs)}]: {note}")
                if ok:
                    read_ok.append(f"{name} {want.dtype}{list(want.shape)}: {note}")
            except Exception:
                failures.append(f"{name}: {traceback.format_exc()}")

    total = len(recorder.exchanges)
    ranged = [ex for ex in recorder.exchanges if ex.range is not None]
    n206 = sum(1 for ex in ranged if ex.status == 206)
    kinds = {
        "bytes=a-b": sum(1 for ex in ranged if re.fullmatch(r"bytes=\d+-\d+", ex.range)),
        "bytes=a-": sum(1 for ex in ranged if re.fullmatch(r"bytes=\d+-", ex.range)),
        "bytes=-n": sum(1 for ex in ranged if re.fullmatch(r"bytes=-\d+", ex.range)),
    }
    if not sharded_read:
        failures.append("no sharded array was read")
    if n206 == 0:
        failures.append("zarr-python made no Range request that got a 206")

    print(f"\nread and matched ({len(read_ok)} arrays):")
    for line in read_ok:
        print(f"  {line}")
    print(f"\nsharded arrays read ({len(sharded_read)}):")
    for line in sharded_read:
        print(f"  {line}")
    print(f"\nskipped ({len(skipped)}):")
    for name, why in skipped:
        print(f"  {name}: {why}")
    print(
        f"\nHTTP: {total} requests, {len(ranged)} with Range ({n206} answered 206); "
        + ", ".join(f"{k}: {v}" for k, v in kinds.items())
    )
    if failures:
        print(f"\nFAILURES ({len(failures)}):")
        for f in failures:
            print(f"  {f}")
    failed_arrays = manifest_count - len(read_ok) - len(skipped)
    if failures and not failed_arrays:
        failed_arrays = 1  # a failure not tied to one array still fails the run
    print(f"\n{checks} selections compared")
    print(f"zarr-client: {len(read_ok)} passed, {failed_arrays} failed, {len(skipped)} skipped")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
