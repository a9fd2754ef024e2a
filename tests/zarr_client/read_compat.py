"""Real clients reading zarrd's compatibility views, bit for bit.

Usage: python read_compat.py BASE_URL        (run by .ci/compat_clients.sh)

zarrd serves the fixture sets as datasets `conf`, `extra`, `v2`, `v2extra`, `fanout`,
`fanoutextra`, `strings` and the bundled sample as `sample`. For every array of every
fixture manifest:

- zarr-python 3.1 (no rectilinear support at all) opens it through /compat/v3 (zarr_format=3)
  and /compat/v2 (zarr_format=2) over fsspec's HTTP filesystem, reads it whole and a corner
  of it, and compares with the expected .npy (written by the fixture writers);
- TensorStore reads it whole through /compat/v3 (driver zarr3) and /compat/v2 (driver zarr).
  TensorStore has no text data type (no v3 `string`, no v2 `|O`): for the `strings` set a
  failure is recorded as a client limitation once the same array read from the fixture
  directory fails too.

Then xarray opens groups with consolidated metadata (default) and with consolidated=False
(which finds members by listing directory URLs) through both views: the `extra` set's
group `groups/a/b` (values compared with its expected .npy) and the sample's `climate` and
`terrain` groups (variables and sizes; `terrain/elevation` compared with zarr-python reading
data/sample.zarr from disk). zarr-python's `members()` over /zarr (listing, no consolidated
metadata) must see the sample's tree. The HTTP requests each way of opening the sample makes
are counted (aiohttp trace hooks) and printed for docs/performance.md ("Compatibility views:
requests to open and to read").

Prints "compat-clients: N passed, N failed" and exits 1 on any failure.
"""

from __future__ import annotations

import json
from importlib.metadata import version
import sys
import traceback
import urllib.request
from pathlib import Path

import aiohttp
import numpy as np
import tensorstore as ts
import xarray as xr
import zarr
from zarr.storage import FsspecStore

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
DATASETS = {
    "conf": "conformance",
    "extra": "extra",
    "v2": "zarr-v2",
    "v2extra": "zarr-v2-extra",
    "fanout": "fanout",
    "fanoutextra": "fanout-extra",
    "strings": "strings",
    "codecs": "codecs",
    "codecsv2": "codecs-v2",
}


class Counter:
    """Counts the HTTP requests of one aiohttp session."""

    def __init__(self) -> None:
        self.n = 0

    def trace(self) -> aiohttp.TraceConfig:
        tc = aiohttp.TraceConfig()

        async def on_end(session, ctx, params) -> None:
            self.n += 1

        tc.on_request_end.append(on_end)
        return tc

    def options(self) -> dict:
        return {"client_kwargs": {"trace_configs": [self.trace()]}}


def same(got, want) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype.kind == "U":
        # Text: zarr-python gives numpy StringDType (v3 and v2 |O), the fixtures store `U`.
        return got.shape == want.shape and [str(x) for x in got.ravel().tolist()] == want.ravel().tolist()
    if got.dtype.newbyteorder("=") != want.dtype.newbyteorder("=") or got.shape != want.shape:
        return False
    # Bit for bit: compare the little-endian bytes (NaN payloads included).
    return got.astype(got.dtype.newbyteorder("<")).tobytes() == want.astype(want.dtype.newbyteorder("<")).tobytes()


def corner(shape: tuple[int, ...]) -> tuple:
    return tuple(slice(0, min(n, 3)) for n in shape)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    base = sys.argv[1].rstrip("/")
    print(f"zarr-python {zarr.__version__}, tensorstore {version('tensorstore')}, xarray {xr.__version__}")
    passed: list[str] = []
    failures: list[str] = []

    def check(name: str, fn) -> None:
        try:
            problem = fn()
        except Exception:
            problem = traceback.format_exc(limit=3)
        if problem:
            failures.append(f"{name}: {problem}")
            print(f"FAIL {name}: {problem}")
        else:
            passed.append(name)

    # Per client: reads passed, failed, and not possible in that client from any store.
    per_client = {"zarr-python": [0, 0, 0], "tensorstore": [0, 0, 0]}
    limitations: list[str] = []
    for ds, fixture_set in DATASETS.items():
        fdir = FIXTURES / fixture_set
        manifest = json.loads((fdir / "manifest.json").read_text())
        for flavor, zarr_format, driver in [("v3", 3, "zarr3"), ("v2", 2, "zarr")]:
            store = FsspecStore.from_url(f"{base}/compat/{flavor}/{ds}", read_only=True)
            for entry in manifest["arrays"]:
                path = entry["path"]
                want = np.load(fdir / "expected" / (path.replace("/", "__") + ".npy"))

                def by_zarr_python(path=path, want=want, store=store, zarr_format=zarr_format):
                    arr = zarr.open_array(store=store, path=path, mode="r", zarr_format=zarr_format)
                    if not same(arr[...], want):
                        return f"whole array differs: got {arr.dtype}{arr.shape}, want {want.dtype}{want.shape}"
                    sel = corner(want.shape)
                    if not same(arr[sel], want[sel]):
                        return "corner differs"
                    return None

                def by_tensorstore(path=path, want=want, flavor=flavor, driver=driver, entry=entry):
                    spec = {"driver": driver, "kvstore": f"{base}/compat/{flavor}/{ds}/{path}/"}
                    try:
                        got = ts.open(spec, read=True).result().read().result()
                    except ValueError as view_error:
                        if entry["dtype"] != "string":
                            raise
                        # TensorStore has no `string` data type (zarr3) and no `|O` dtype
                        # (zarr): confirm it fails on the fixture itself, then record it.
                        direct_driver = "zarr3" if entry["zarr_format"] == 3 else "zarr"
                        direct = {"driver": direct_driver, "kvstore": (fdir / "data.zarr" / path).as_uri() + "/"}
                        try:
                            ts.open(direct, read=True).result()
                        except ValueError:
                            reason = str(view_error)
                            reason = reason[reason.find("Error parsing object member") :].split(" [")[0]
                            limitations.append(f"tensorstore /compat/{flavor}/{ds}/{path}: no text data type "
                                               f"(fails on the fixture itself too): {reason}")
                            return None
                        return f"fails through the view but reads the fixture: {view_error}"
                    return None if same(got, want) else f"differs: got {got.dtype}{got.shape}"

                for client, fn in [("zarr-python", by_zarr_python), ("tensorstore", by_tensorstore)]:
                    before, noted = len(failures), len(limitations)
                    check(f"{client} /compat/{flavor}/{ds}/{path}", fn)
                    slot = 1 if len(failures) > before else 2 if len(limitations) > noted else 0
                    per_client[client][slot] += 1

    # xarray on a fixture group: values from the fixture's expected .npy.
    want = np.load(FIXTURES / "extra" / "expected" / "groups__a__b__f8_attrs.npy")
    for flavor in ["v3", "v2"]:
        for consolidated in [None, False]:

            def xarray_extra(flavor=flavor, consolidated=consolidated):
                url = f"{base}/compat/{flavor}/extra"
                d = xr.open_zarr(url, group="groups/a/b", consolidated=consolidated, mask_and_scale=False)
                got = d["f8_attrs"].values
                return None if same(got, want) else "groups/a/b/f8_attrs differs"

            check(f"xarray /compat/{flavor}/extra group=groups/a/b consolidated={consolidated}", xarray_extra)

    # xarray on the sample, counting the requests it takes to open both groups.
    local = zarr.open_group(ROOT / "data" / "sample.zarr", mode="r")
    elevation = local["terrain/elevation"][...]
    counts: dict[str, int] = {}
    for flavor in ["v3", "v2"]:
        for consolidated in [None, False]:
            label = f"xarray.open_zarr /compat/{flavor}/sample consolidated={consolidated}"

            def xarray_sample(flavor=flavor, consolidated=consolidated, label=label):
                counter = Counter()
                url = f"{base}/compat/{flavor}/sample"
                opts = counter.options()
                # mask_and_scale=False: xarray would turn v2 fill values (0 here) into NaN.
                kw = {"consolidated": consolidated, "storage_options": opts, "mask_and_scale": False}
                climate = xr.open_zarr(url, group="climate", **kw)
                terrain = xr.open_zarr(url, group="terrain", **kw)
                counts[label] = counter.n
                if dict(climate.sizes) != {"time": 365, "lat": 72, "lon": 144} or "t2m" not in climate:
                    return f"climate: {dict(climate.sizes)} {list(climate.data_vars)}"
                if not same(terrain["elevation"].values, elevation):
                    return "terrain/elevation differs from zarr-python's read of data/sample.zarr"
                return None

            check(label, xarray_sample)

    def members(url: str, label: str, use_consolidated) -> str | None:
        counter = Counter()
        store = FsspecStore.from_url(url, read_only=True, storage_options=counter.options())
        group = zarr.open_group(store=store, mode="r", use_consolidated=use_consolidated)
        found = sorted(k for k, _ in group.members(max_depth=None))
        counts[label] = counter.n
        want_tree = ["climate", "climate/lat", "climate/lon", "climate/t2m", "climate/time", "terrain", "terrain/elevation"]
        return None if found == want_tree else f"members {found}"

    check(
        "zarr-python members() /compat/v3/sample consolidated",
        lambda: members(f"{base}/compat/v3/sample", "zarr.open_group(...).members() /compat/v3/sample consolidated", None),
    )
    check(
        "zarr-python members() /compat/v3/sample listing",
        lambda: members(f"{base}/compat/v3/sample", "zarr.open_group(...).members() /compat/v3/sample use_consolidated=False", False),
    )

    def zarr_listing() -> str | None:
        # /zarr has no consolidated metadata: the tree is found by listing. zarr-python 3.1
        # cannot open the rectilinear t2m, so only the group members are compared.
        counter = Counter()
        store = FsspecStore.from_url(f"{base}/zarr/sample", read_only=True, storage_options=counter.options())
        # fsspec keeps the trailing slash of directory links (how it tells directories from
        # files); zarr-python's members() handles both forms.
        found = sorted(key.rstrip("/") for key in _list_dir(store, ""))
        counts["FsspecStore.list_dir('') /zarr/sample"] = counter.n
        return None if found == ["climate", "terrain", "zarr.json"] else f"listing {found}"

    check("zarr-python list_dir /zarr/sample", zarr_listing)

    request_counts(base, check)

    print("\nHTTP requests to open the sample tree:")
    for label, n in counts.items():
        print(f"  {n:4d}  {label}")
    for note in limitations:
        print(f"client limitation: {note}")
    for client, (ok, bad, impossible) in per_client.items():
        print(f"{client}: {ok} array reads passed, {bad} failed, {impossible} client limitations")
    print(f"compat-clients: {len(passed)} passed, {len(failures)} failed")
    return 1 if failures else 0


# View chunks are sized for the network (docs/clients.md "View chunks"; zarrd's defaults).
MIN_CHUNK_BYTES = 256 * 1024
CHUNK_BYTES = 1024 * 1024
# Metadata documents a client may read before the chunks (zarr.json, or .zarray, .zattrs,
# .zgroup and a consolidated document).
METADATA_REQUESTS = 4


def compat_requests(base: str) -> dict[str, int]:
    """zarrd's own count of /compat requests so far, by route (from /metrics)."""
    text = urllib.request.urlopen(f"{base}/metrics", timeout=10).read().decode()
    counts = {"/compat/v3": 0, "/compat/v2": 0}
    for line in text.splitlines():
        if line.startswith("zarrd_http_requests_total{"):
            labels, value = line.rsplit(" ", 1)
            for route in counts:
                if f'route="{route}"' in labels:
                    counts[route] += int(float(value))
    return counts


def request_counts(base: str, check) -> None:
    """zarr-python and TensorStore read every numeric array of every fixture set and the
    sample whole through both views; zarrd counts the requests each read made. A read costs
    its metadata documents plus at most about twice ⌈bytes / chunk_bytes⌉ view chunks, or one
    request per stored chunk where those are kept for holding at least min_chunk_bytes."""
    arrays = []
    for ds, fixture_set in DATASETS.items():
        for entry in json.loads((FIXTURES / fixture_set / "manifest.json").read_text())["arrays"]:
            if entry["dtype"] != "string":
                arrays.append((ds, entry["path"]))
    arrays += [("sample", "climate/t2m"), ("sample", "terrain/elevation"), ("sample", "climate/lat")]
    table = []
    for ds, path in arrays:
        for flavor, zarr_format, driver in [("v3", 3, "zarr3"), ("v2", 2, "zarr")]:
            url = f"{base}/compat/{flavor}/{ds}"
            route = f"/compat/{flavor}"
            meta_key = "zarr.json" if flavor == "v3" else ".zarray"
            doc = json.loads(urllib.request.urlopen(f"{url}/{path}/{meta_key}", timeout=10).read())
            shape = doc["shape"]
            chunks = doc["chunk_grid"]["configuration"]["chunk_shape"] if flavor == "v3" else doc["chunks"]
            item = np.dtype(doc["data_type"] if flavor == "v3" else doc["dtype"]).itemsize
            nbytes = int(np.prod(shape, dtype=np.int64)) * item
            grid = int(np.prod([-(-n // max(c, 1)) for n, c in zip(shape, chunks)], dtype=np.int64))
            allowed = max(1, 2 * -(-nbytes // CHUNK_BYTES))
            if int(np.prod(chunks, dtype=np.int64)) * item >= MIN_CHUNK_BYTES:
                allowed = max(allowed, grid)
            for client in ["zarr-python", "tensorstore"]:
                label = f"{client} /compat/{flavor}/{ds}/{path} whole"

                def read(client=client, flavor=flavor, path=path, url=url, route=route, allowed=allowed,
                         grid=grid, nbytes=nbytes, zarr_format=zarr_format, driver=driver, label=label):
                    before = compat_requests(base)[route]
                    if client == "zarr-python":
                        store = FsspecStore.from_url(url, read_only=True)
                        zarr.open_array(store=store, path=path, mode="r", zarr_format=zarr_format)[...]
                    else:
                        ts.open({"driver": driver, "kvstore": f"{url}/{path}/"}, read=True).result().read().result()
                    n = compat_requests(base)[route] - before
                    table.append((n, grid, nbytes, label))
                    if n > METADATA_REQUESTS + allowed:
                        return f"{n} requests for {nbytes} bytes in {grid} view chunks (at most {METADATA_REQUESTS} + {allowed})"
                    return None

                check(label, read)
    print("\nrequests to read an array whole (zarrd's count; view chunks; bytes), the largest:")
    for n, grid, nbytes, label in sorted(table, key=lambda r: -r[2])[:12]:
        print(f"  {n:5d} requests  {grid:5d} chunks  {nbytes:10d} B  {label}")


def _list_dir(store: FsspecStore, prefix: str) -> list[str]:
    # On zarr's own event loop, where the store's HTTP session lives.
    from zarr.core.sync import sync

    async def run() -> list[str]:
        return [k async for k in store.list_dir(prefix)]

    return sync(run())


if __name__ == "__main__":
    sys.exit(main())
