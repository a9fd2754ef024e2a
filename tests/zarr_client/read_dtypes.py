"""Reads every array of tests/fixtures/dtypes through a running zarrd (/zarr, /compat/v3,
/compat/v2) with zarr-python and compares it with the expected values (zarr-python's own
direct read, saved by tests/fixtures/make_dtype_fixtures.py). Each view of an array is copied
to a local directory through its JSON directory listings (a missing text chunk is a 404 and
is left out, so it reads as the fill value), then opened with LocalStore.

Not wired into CI: CI's zarr-python 3.1 predates some of these data types. Run it by hand
with zarr-python 3.4.2 (the chroot of /work/shared/tools/setup_py313.sh), zarrd serving the
set as dataset `d`:

    zarrd serve --config CONFIG   # [datasets.d] url = ".../tests/fixtures/dtypes/data.zarr"
    python read_dtypes.py http://127.0.0.1:PORT tests/fixtures/dtypes

Prints one line per route and array and `bad N`; exits 1 when anything differs.
"""
import base64
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request
import warnings

import numpy as np
import zarr

warnings.simplefilter("ignore")  # zarr-python warns that some of these types are not in the spec yet


def mirror(url, dest):
    """Copies the store below `url` (JSON directory listings) into the directory `dest`."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    for entry in json.load(urllib.request.urlopen(request))["entries"]:
        name = entry["name"]
        if entry["kind"] == "directory":
            os.makedirs(f"{dest}/{name}", exist_ok=True)
            mirror(f"{url}{name}/", f"{dest}/{name}")
            continue
        try:
            with urllib.request.urlopen(url + name) as reply:
                body = reply.read()
        except urllib.error.HTTPError as err:
            if err.code == 404:
                continue
            raise
        with open(f"{dest}/{name}", "wb") as f:
            f.write(body)


def matches(entry, got, fixtures):
    if "base64" in entry:
        return [base64.b64encode(bytes(x)).decode() for x in np.asarray(got, dtype=object).ravel()] == entry["base64"]
    if "texts" in entry:
        return [str(x) for x in np.asarray(got, dtype=object).ravel()] == entry["texts"]
    want = np.load(f"{fixtures}/expected/{entry['path']}.npy")
    little = np.ascontiguousarray(got.astype(got.dtype.newbyteorder("<")))
    return little.dtype == want.dtype and little.tobytes() == want.tobytes()


def main(base, fixtures):
    manifest = json.load(open(f"{fixtures}/manifest.json"))
    work = tempfile.mkdtemp(prefix="zarrd-dtypes-")
    bad = 0
    for route in ["zarr", "compat/v3", "compat/v2"]:
        for entry in manifest["arrays"]:
            path = entry["path"]
            dest = f"{work}/{route}/{path}"
            os.makedirs(dest)
            try:
                mirror(f"{base}/{route}/d/{path}/", dest)
                array = zarr.open_array(zarr.storage.LocalStore(dest), mode="r")
                ok = matches(entry, array[...], fixtures)
                print(route, path, "OK" if ok else "DIFF", array.dtype)
            except Exception as e:  # noqa: BLE001 - every failure is reported and counted
                ok = False
                print(route, path, "ERR", type(e).__name__, str(e)[:200])
            bad += not ok
    print("bad", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1].rstrip("/"), sys.argv[2]))
