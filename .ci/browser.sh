#!/usr/bin/env bash
# The viewer in a real browser: Debian's chromium driven by puppeteer-core opens the viewer
# page on the bundled sample, and a bare OpenSeadragon page opens info.json alone
# (.ci/browser.cjs), and an Icechunk repository's versions are picked in the dataset tree;
# the viewer for people (.ci/browser_viewer.cjs): the map of an xarray-written global grid
# (tests/fixtures/maps/global_0360.zarr) and the deep-zoom view of the sample's terrain draw,
# the readout under the cursor, the time slider's dates, the time series of a clicked
# point, the colorbar, the view restored from the URL, nothing overflowing 1280x800; the
# series panel (.ci/browser_series.cjs) on three years of noleap daily data
# (tests/fixtures/analysis/analysis.zarr, else a small store written here): a clicked
# point's series, a drawn polygon's and box's area-weighted mean, monthly means, the CSV
# download, the series restored from the URL, and the CSV of a private dataset; the links
# to an array's OGC API – EDR collection and to a point's EDR position query (also on the
# 4-D tests/fixtures/edr/edr.zarr, a level fixed), absent where /edr has none; the
# viewer for microscopists on OME-Zarr fixtures (.ci/browser_ome_viewer.cjs: channels,
# composite, z slider, scale bar, labels, plate grid; viewer-ome.png);
# then, on a server where the sample is private, the viewer is given an API key and reads
# everything through a capability URL (.ci/browser_auth.cjs). Expected values come from
# zarr-python + NumPy reading the stores directly (the venv .ci/zarr_client.sh caches),
# never from zarrd.
# Usage: .ci/browser.sh path/to/zarrd [screenshot-dir]   (writes viewer-map.png,
# viewer-deepzoom.png and viewer-ome.png there, as in docs/)
# chromium comes from apt when missing; puppeteer-core is installed once into
# ${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci/npm (pinned below).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:?usage: .ci/browser.sh path/to/zarrd [screenshot-dir]}
SHOTS=${2:-}
PUPPETEER_VERSION=24.43.1  # 25.x needs node >= 22.12; Debian 12 has 18 (this machine 20)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci
NPM_DIR=$CACHE/npm
VENV=${ZARR_CLIENT_VENV:-$CACHE/compat-clients-venv}
log() { printf '[browser] %s\n' "$*"; }

if ! command -v chromium >/dev/null 2>&1; then
    log "installing Debian chromium"
    SUDO=(); [[ $EUID -ne 0 ]] && SUDO=(sudo)
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium \
        || { "${SUDO[@]}" apt-get update && "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; }
fi
if [[ ! -f $NPM_DIR/node_modules/puppeteer-core/package.json ]] \
    || ! grep -q "\"version\": \"$PUPPETEER_VERSION\"" "$NPM_DIR/node_modules/puppeteer-core/package.json"; then
    log "installing puppeteer-core $PUPPETEER_VERSION into $NPM_DIR"
    mkdir -p "$NPM_DIR"
    npm install --prefix "$NPM_DIR" --no-audit --no-fund --no-save "puppeteer-core@$PUPPETEER_VERSION" >/dev/null
fi
[[ -x $VENV/bin/python ]] || { log "no client venv at $VENV: run .ci/zarr_client.sh first (.ci/fixture_zarrd.sh)"; exit 1; }

# Expected gray levels at known spots of terrain/elevation, from the store itself.
EXPECTED=$("$VENV/bin/python" - <<'PY'
import json, math
import numpy as np, zarr
a = zarr.open_array("data/sample.zarr/terrain/elevation", mode="r")[:].astype("f8")
valid = a[a != 0]  # fill_value 0 is "no value", as the viewer shows it
lo, hi = float(valid.min()), float(valid.max())
spots = [(700, 300), (701, 300), (700, 303), (512, 512), (100, 900)]
print(json.dumps({"lo": lo, "hi": hi, "spots": [{"x": x, "y": y, "level": math.floor((a[y, x] - lo) * 255 / (hi - lo) + 0.5)} for y, x in spots]}))
PY
)

# The map fixture as zarr-python reads it: coordinates, a cell off its centre, its values
# along time, and the CF dates decoded by NumPy.
MAPS=tests/fixtures/maps/global_0360.zarr
EXPECTED_MAP=$("$VENV/bin/python" - "$MAPS" <<'PY'
import json, sys
import numpy as np, zarr
g = zarr.open_group(sys.argv[1], mode="r")
lat, lon, t = g["lat"][:], g["lon"][:], g["time"]
t2m = g["t2m"]
units = t.attrs["units"]
assert units.startswith("days since ") and t.attrs.get("calendar", "standard") in ("standard", "gregorian", "proleptic_gregorian")
dates = [str(np.datetime64(units[len("days since "):], "D") + np.timedelta64(int(v), "D")) for v in t[:]]
iy, ix, k = 30, 100, 1  # lat[30] = 30 N, lon[100] = 200 E = 160 W
# A point inside the cell, 0.3 of the way to the next coordinate (cell edges are midway).
plat = float(lat[iy] + 0.3 * (lat[iy + 1] - lat[iy]))
plon = float(lon[ix] + 0.3 * (lon[ix + 1] - lon[ix]))
plon = (plon + 180) % 360 - 180
series = [None if np.isnan(v) else float(v) for v in t2m[:, iy, ix]]
def calendars():
    """CF dates the viewer must print: the standard calendar by NumPy's datetime64, the
    fixed-year calendars from their definition (months of 31/28/.. days, or of 30)."""
    cases = []
    def std(units, values, calendar="standard"):
        unit, since = units.split(" since ")
        step = {"days": "D", "hours": "h", "minutes": "m", "seconds": "s"}[unit]
        ref = np.datetime64(since.replace(" ", "T"), "s")
        dates = [ref + np.timedelta64(int(v), step) for v in values]
        timed = any(str(d)[11:] != "00:00:00" for d in dates)
        text = [str(d)[:16].replace("T", " ") if timed else str(d)[:10] for d in dates]
        cases.append({"units": units, "calendar": calendar, "values": values, "dates": text})
    std("days since 1850-01-01", [0, 59, 60, 365, 45000, 73048])
    std("hours since 1999-12-31 18:00:00", [0, 6, 30, 8790])
    std("seconds since 1970-01-01 00:00:00", [0, 86400, 951782400])
    # NumPy's calendar is the proleptic Gregorian (CF's standard is Julian before 1582-10-15).
    std("days since 0001-01-01", [0, 577737], "proleptic_gregorian")
    def fixed(calendar, months, values):
        out = []
        for v in values:
            y, d = 2001 + v // sum(months), v % sum(months)
            m = 0
            while d >= months[m]:
                d -= months[m]; m += 1
            out.append(f"{y:04d}-{m + 1:02d}-{d + 1:02d}")
        cases.append({"units": "days since 2001-01-01", "calendar": calendar, "values": values, "dates": out})
    fixed("noleap", [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], [0, 58, 59, 364, 365, 1460])
    fixed("360_day", [30] * 12, [0, 29, 30, 359, 360, 725])
    fixed("all_leap", [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], [0, 59, 365, 366])
    return cases

print(json.dumps({"dataset": "climate", "path": "t2m", "lat": plat, "lon": plon, "cell": [iy, ix], "k": k,
                  "cell_coords": [float(lat[iy]), float(lon[ix])],
                  "value": float(t2m[k, iy, ix]), "dates": dates, "series": series,
                  "units": t2m.attrs["units"], "long_name": t2m.attrs["long_name"],
                  # The sample's days: its CF time coordinate (int days since the epoch).
                  "sample_day": str(np.datetime64("2025-01-01", "D") + np.timedelta64(200, "D")),
                  "sample_units": json.load(open("data/sample.zarr/climate/time/zarr.json"))["attributes"]["units"],
                  "calendars": calendars()}))
PY
)

# The series panel's data: the analysis fixture's noleap daily `daily/tas` (written by
# another script with xarray), or where it is missing a store like it (a year of daily
# noleap steps on the same 2.5 degree grid, lat descending, lon 0..357.5) written here by
# zarr-python. Expected series from first principles with NumPy: the nearest grid point of
# the clicked place; area weights R^2 dlon (sin phi2 - sin phi1) from edges midway between
# the coordinates of the whole grid (outer cells as wide as their neighbour, lat clipped to
# +-90); cells whose centre is inside the polygon (even-odd, longitudes modulo 360); NaN
# skipped; months of the noleap calendar, each month's steps and cells together.
SERIES_DIR=$(mktemp -d "${TMPDIR:-/tmp}/zarrd-browser-series.XXXXXX")
trap 'rm -rf "$SERIES_DIR"' EXIT
ANALYSIS=tests/fixtures/analysis/analysis.zarr
[[ -f $ANALYSIS/daily/tas/zarr.json ]] || ANALYSIS=$SERIES_DIR/analysis.zarr
"$VENV/bin/python" - "$ANALYSIS" "$SERIES_DIR/expected.json" <<'PY'
import json, math, os, sys
import numpy as np, zarr
store, out = sys.argv[1], sys.argv[2]
MONTHS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
if not os.path.exists(os.path.join(store, "daily", "tas", "zarr.json")):
    # The fallback store: smooth, quantized to 1/8 K (so it compresses and prints exactly),
    # with NaN holes (a block, and one point's days) that the means must skip.
    n = 365
    lat = 88.75 - 2.5 * np.arange(72)
    lon = 2.5 * np.arange(144)
    t = np.arange(n)
    la, lo = np.meshgrid(np.deg2rad(lat), np.deg2rad(lon), indexing="ij")
    base = 288 - 40 * np.sin(la) ** 2 + 3 * np.cos(7 * lo) * np.cos(la)
    seas = 12 * np.sin(la)[None] * -np.cos(2 * np.pi * (t[:, None, None] - 15) / 365)
    tas = np.round((base[None] + seas + 0.01 * t[:, None, None] * np.cos(3 * lo)[None]) * 8) / 8
    tas = tas.astype("f4")
    tas[100:160, 20:26, 100:110] = np.nan
    tas[40:50, 17, 114] = np.nan
    root = zarr.open_group(store, mode="w", zarr_format=3)
    g = root.create_group("daily")
    def coord(name, values, dtype, attrs):
        a = g.create_array(name, shape=values.shape, dtype=dtype, chunks=values.shape, dimension_names=[name], fill_value=0)
        a[:] = values
        a.attrs.update(attrs)
    coord("time", t, "int64", {"units": "days since 2001-01-01", "calendar": "noleap"})
    coord("lat", lat, "float64", {"units": "degrees_north", "standard_name": "latitude"})
    coord("lon", lon, "float64", {"units": "degrees_east", "standard_name": "longitude"})
    a = g.create_array("tas", shape=tas.shape, dtype="float32", chunks=(73, 24, 36), fill_value=float("nan"),
                       dimension_names=["time", "lat", "lon"])
    a[:] = tas
    a.attrs.update({"units": "K", "long_name": "near-surface air temperature"})

g = zarr.open_group(os.path.join(store, "daily"), mode="r")
lat, lon, time = g["lat"][:].astype("f8"), g["lon"][:].astype("f8"), g["time"]
assert time.attrs["units"] == "days since 2001-01-01" and time.attrs["calendar"] in ("noleap", "365_day")
tas = g["tas"][:].astype("f8")
fill = g["tas"].attrs.get("_FillValue")
if isinstance(fill, (int, float)):
    tas[tas == fill] = np.nan
def noleap(day):
    y, d = 2001 + day // 365, day % 365
    m = 0
    while d >= MONTHS[m]:
        d -= MONTHS[m]; m += 1
    return y, m + 1, d + 1
days = [int(v) for v in time[:]]
dates = ["%04d-%02d-%02d" % noleap(d) for d in days]
month_of = [s[:7] + "-01" for s in dates]
months = sorted(set(month_of))
steps = {m: [i for i, s in enumerate(month_of) if s == m] for m in months}
clean = lambda xs: [None if x is None or not math.isfinite(x) else float(x) for x in xs]

# The clicked place and its nearest grid point (longitudes modulo 360, ties the lower index).
click = {"lat": 45.3, "lon": -75.2}
iy = int(np.argmin(np.abs(lat - click["lat"])))
ix = int(np.argmin(np.abs((lon - click["lon"] + 180) % 360 - 180)))
point = tas[:, iy, ix]
def nanmean(v):
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else None

# Area weights from the whole grid's cell edges.
def edges(c):
    e = np.empty(len(c) + 1)
    e[1:-1] = (c[:-1] + c[1:]) / 2
    e[0], e[-1] = c[0] - (c[1] - c[0]) / 2, c[-1] + (c[-1] - c[-2]) / 2
    return e
R = 6371008.8
phi = np.deg2rad(np.clip(edges(lat), -90, 90))
dlam = np.deg2rad(np.abs(np.diff(edges(lon))))
w = R * R * np.abs(np.diff(np.sin(phi)))[:, None] * dlam[None, :]

def inside(ring):
    """Cells whose centre is inside (even-odd), the centres' longitudes moved next to the ring."""
    xs, ys = np.array([p[0] for p in ring]), np.array([p[1] for p in ring])
    cx = ((lon - xs.min()) % 360 + xs.min())[None, :] * np.ones((len(lat), 1))
    cy = lat[:, None] * np.ones((1, len(lon)))
    mask = np.zeros(cx.shape, bool)
    near = np.inf
    for (x1, y1), (x2, y2) in zip(ring[:-1], ring[1:]):
        cross = (y1 > cy) != (y2 > cy)
        xat = x1 + (cy - y1) * (x2 - x1) / ((y2 - y1) if y2 != y1 else 1)
        mask ^= cross & (cx < xat)
        # How near a centre comes to an edge: the drawing's pixels must not matter.
        dx, dy = x2 - x1, y2 - y1
        tt = np.clip(((cx - x1) * dx + (cy - y1) * dy) / (dx * dx + dy * dy), 0, 1)
        near = min(near, float(np.hypot(cx - x1 - tt * dx, cy - y1 - tt * dy).min()))
    assert near > 0.3, f"a cell centre is {near} degrees from an edge of {ring}"
    return mask

def area_series(ring):
    m = inside(ring)
    assert m.sum() > 5, ring
    daily, monthly = [], []
    for t in range(tas.shape[0]):
        v = tas[t]
        ok = m & np.isfinite(v)
        daily.append(float((w * v)[ok].sum() / w[ok].sum()) if ok.any() else None)
    for mo in months:
        v = tas[steps[mo]]
        ok = m[None] & np.isfinite(v)
        ww = np.broadcast_to(w, v.shape)
        monthly.append(float((ww * v)[ok].sum() / ww[ok].sum()) if ok.any() else None)
    return {"ring": ring, "cells": int(m.sum()), "series": daily, "monthly": monthly}

# Edges level, upright or at 45 degrees, placed midway between cell centres (lat 1.25 mod
# 2.5, lon 0 mod 2.5): no centre within 0.88 degrees of an edge.
polygon = [[-101.25, 30.0], [-80.0, 30.0], [-65.0, 45.0], [-75.0, 55.0], [-90.0, 55.0], [-101.25, 43.75], [-101.25, 30.0]]
# A box is drawn corner to corner: its edges midway between grid coordinates.
box = [[-93.75, 35.0], [-78.75, 35.0], [-78.75, 50.0], [-93.75, 50.0], [-93.75, 35.0]]

# The sample (private on the auth server): the grid point nearest 45 N 75 W (its t2m has a
# rectilinear chunk grid, which this zarr-python does not read).
s = zarr.open_group("data/sample.zarr/climate", mode="r")
slat, slon = s["lat"][:].astype("f8"), s["lon"][:].astype("f8")
sy = int(np.argmin(np.abs(slat - 45.0)))
sx = int(np.argmin(np.abs((slon + 75.0 + 180) % 360 - 180)))
def edr_point():
    """The EDR fixture's 4-D `ua` (time, plev, lat, lon) at 850 hPa, at the grid point
    nearest 50 N 80 W (NaN on three steps there): a series with a level fixed."""
    path = "tests/fixtures/edr/edr.zarr"
    if not os.path.exists(os.path.join(path, "ua", "zarr.json")):
        return None
    e = zarr.open_group(path, mode="r")
    plev, elat, elon = e["plev"][:], e["lat"][:].astype("f8"), e["lon"][:].astype("f8")
    iz = int(np.argmin(np.abs(plev - 850)))
    ey, ex = int(np.argmin(np.abs(elat - 50))), int(np.argmin(np.abs((elon + 80 + 180) % 360 - 180)))
    ua = e["ua"][:, iz, ey, ex].astype("f8")
    return {"dataset": "edr", "path": "ua", "level": iz, "plev": float(plev[iz]), "lat": 50.0, "lon": -80.0,
            "series": clean(ua)}

json.dump({
    "dataset": "analysis", "path": "daily/tas", "store": store,
    "units": g["tas"].attrs["units"], "long_name": g["tas"].attrs["long_name"],
    "dates": dates, "months": months,
    "click": click, "point": {"lat": float(lat[iy]), "lon": float(lon[ix]), "cell": [iy, ix],
              "series": clean(point), "monthly": [nanmean(point[steps[m]]) for m in months]},
    "polygon": area_series(polygon), "box": area_series(box),
    "sample": {"lat": float(slat[sy]), "lon": float(slon[sx]), "steps": 365,
               "dates": [str(np.datetime64("2025-01-01", "D") + np.timedelta64(int(d), "D")) for d in s["time"][:]]},
    "edr": edr_point(),
}, open(out, "w"))
PY

[[ -z $SHOTS ]] || mkdir -p "$SHOTS"
# shellcheck source=.ci/ports.sh
source .ci/ports.sh
PORT=$(free_port)
"$BIN" serve --listen "127.0.0.1:$PORT" --dataset sample=data/sample.zarr \
    --dataset ic=tests/fixtures/virtual/icechunk/native.icechunk --dataset climate="$MAPS" \
    --dataset conf=tests/fixtures/conformance/data.zarr --dataset analysis="$ANALYSIS" \
    --dataset edr=tests/fixtures/edr/edr.zarr --dataset hrrr=tests/fixtures/grids/hrrr_lcc.zarr --dataset coastal=tests/fixtures/curvilinear/coastal.zarr \
    >"${TMPDIR:-/tmp}/zarrd-browser.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$SERIES_DIR"' EXIT
up "$PORT" "${TMPDIR:-/tmp}/zarrd-browser.log"

NODE_PATH=$NPM_DIR/node_modules EXPECTED=$EXPECTED \
    timeout 150 node .ci/browser.cjs "http://127.0.0.1:$PORT"
# `zarrd serve` with nothing configured: the embedded default's sample alone, whose landing
# page browser_viewer.cjs opens (LANDING).
LANDING_PORT=$(free_port)
LANDING_LOG="${TMPDIR:-/tmp}/zarrd-browser-landing.log"
"$BIN" serve --listen "127.0.0.1:$LANDING_PORT" >"$LANDING_LOG" 2>&1 &
LANDING_SERVER=$!
trap 'kill "$SERVER" "$LANDING_SERVER" 2>/dev/null || true; rm -rf "$SERIES_DIR"' EXIT
up "$LANDING_PORT" "$LANDING_LOG"
NODE_PATH=$NPM_DIR/node_modules EXPECTED_MAP=$EXPECTED_MAP SHOTS=$SHOTS LANDING="http://127.0.0.1:$LANDING_PORT" \
    timeout 150 node .ci/browser_viewer.cjs "http://127.0.0.1:$PORT"
kill "$LANDING_SERVER" 2>/dev/null || true
NODE_PATH=$NPM_DIR/node_modules EXPECTED_SERIES=$SERIES_DIR/expected.json SHOTS=$SHOTS \
    timeout 200 node .ci/browser_series.cjs "http://127.0.0.1:$PORT"
# A panic is a bug even when it was answered 500 or cut a body.
if grep -q 'zarrd::panic' "${TMPDIR:-/tmp}/zarrd-browser.log"; then
    grep -m1 -A2 'zarrd::panic' "${TMPDIR:-/tmp}/zarrd-browser.log" >&2
    echo "browser.sh: zarrd logged a panic" >&2
    exit 1
fi

# The viewer for microscopists (.ci/browser_ome_viewer.cjs): an OME-Zarr 0.5 image (t, c,
# z, y, x with omero channels and labels) and an HCS plate written by ome-zarr-py; expected
# names, colours, scales and units come from the fixtures' own metadata files.
OME_PORT=$(free_port)
OME_LOG="${TMPDIR:-/tmp}/zarrd-browser-ome-viewer.log"
"$BIN" serve --listen "127.0.0.1:$OME_PORT" --dataset ozp05=tests/fixtures/ome/images/ozp05_5d.ome.zarr \
    --dataset plate04=tests/fixtures/ome/images/plate04.ome.zarr >"$OME_LOG" 2>&1 &
OME_SERVER=$!
trap 'kill "$SERVER" "$OME_SERVER" 2>/dev/null || true; rm -rf "$SERIES_DIR"' EXIT
up "$OME_PORT" "$OME_LOG"
NODE_PATH=$NPM_DIR/node_modules SHOTS=$SHOTS timeout 150 node .ci/browser_ome_viewer.cjs "http://127.0.0.1:$OME_PORT"
kill "$OME_SERVER" 2>/dev/null || true
if grep -q 'zarrd::panic' "$OME_LOG"; then
    grep -m1 -A2 'zarrd::panic' "$OME_LOG" >&2
    echo "browser.sh: zarrd (OME-Zarr) logged a panic" >&2
    exit 1
fi

# The sample as a private dataset, read by the holder of one API key.
AUTH_PORT=$(free_port)
AUTH_DIR=$(mktemp -d "${TMPDIR:-/tmp}/zarrd-browser-auth.XXXXXX")
API_KEY=browser-test-key
cat >"$AUTH_DIR/zarrd.toml" <<EOF
listen = "127.0.0.1:$AUTH_PORT"
[[auth.api_keys]]
name = "viewer"
sha256 = "$(printf %s "$API_KEY" | sha256sum | cut -d' ' -f1)"
[datasets.sample]
url = "$PWD/data/sample.zarr"
read = ["viewer"]
EOF
ZARRD_SIGNING_KEY=browser-test-signing-key-of-32-bytes-or-more \
    "$BIN" serve --config "$AUTH_DIR/zarrd.toml" >"$AUTH_DIR/zarrd.log" 2>&1 &
AUTH_SERVER=$!
trap 'kill "$SERVER" "$AUTH_SERVER" 2>/dev/null || true; rm -rf "$AUTH_DIR" "$SERIES_DIR"' EXIT
up "$AUTH_PORT" "$AUTH_DIR/zarrd.log"
NODE_PATH=$NPM_DIR/node_modules API_KEY=$API_KEY timeout 120 node .ci/browser_auth.cjs "http://127.0.0.1:$AUTH_PORT"
NODE_PATH=$NPM_DIR/node_modules API_KEY=$API_KEY EXPECTED_SERIES=$SERIES_DIR/expected.json \
    timeout 120 node .ci/browser_series.cjs "http://127.0.0.1:$AUTH_PORT" private
if grep -q 'zarrd::panic' "$AUTH_DIR/zarrd.log"; then
    grep -m1 -A2 'zarrd::panic' "$AUTH_DIR/zarrd.log" >&2
    echo "browser.sh: zarrd (private sample) logged a panic" >&2
    exit 1
fi
