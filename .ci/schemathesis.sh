#!/usr/bin/env bash
# Contract test: holds openapi.yaml and the server together by fuzzing a running zarrd
# with schemathesis (property-based requests generated from the spec, every response
# checked against it), plus a few checks of the API's semantics (docs/api.md) that a schema
# cannot express.
#
#   .ci/schemathesis.sh [ZARRD_BINARY]      (default: target/release/zarrd)
#
# Builds nothing: pass the binary. Installs schemathesis (pinned) into a venv under
# ${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci/ when it is missing; starts the server on a free
# loopback port serving tests/fixtures/conformance as `conformance`, data/sample.zarr as
# `sample`, tests/fixtures/extra as `extra`, one conformance array as `rootarray` (a
# dataset whose root is an array), and for /edr the EDR collections of tests/fixtures/edr
# (`edr`), tests/fixtures/analysis (`analysis`) and the versioned Icechunk repository
# tests/fixtures/virtual/icechunk/virtual.icechunk (`ic`, its instances; its virtual chunks
# are copied to /tmp/zarrd-virtual-fixtures/source/, where they say they are, as
# .ci/edr_clients.sh does); runs schemathesis with a fixed seed and a bounded number
# of examples (well under two minutes on 2 cores); stops the server; exits non-zero on any
# failure, printing each with a curl command that reproduces it.
#
# Environment: ST_MAX_EXAMPLES (default 150) cases per operation and phase (a third of
# that for the /edr operations), ST_SEED (default 20250101), ST_WORKERS (default 2),
# ST_EXTRA_ARGS (more schemathesis options, word-split, e.g. "--include-path-regex ^/zarr/"),
# PYTHON (default python3, >= 3.9).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

SCHEMATHESIS_VERSION=4.32.5
BIN=${1:-target/release/zarrd}
MAX_EXAMPLES=${ST_MAX_EXAMPLES:-150}
SEED=${ST_SEED:-20250101}
WORKERS=${ST_WORKERS:-2}
PYTHON=${PYTHON:-python3}

log() { printf '[schemathesis.sh] %s\n' "$*"; }
die() { printf '[schemathesis.sh] ERROR: %s\n' "$*" >&2; exit 1; }

[[ -x $BIN ]] || die "no server binary at $BIN; build it first (cargo build --release) or pass its path"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")

# --- schemathesis, pinned, in its own venv --------------------------------------------
VENV=${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci/schemathesis-$SCHEMATHESIS_VERSION
ST=$VENV/bin/schemathesis
if ! "$ST" --version 2>/dev/null | grep -qF "$SCHEMATHESIS_VERSION"; then
    log "installing schemathesis $SCHEMATHESIS_VERSION into $VENV"
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 9))' || die "$PYTHON is older than 3.9"
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV" || die "cannot create a venv with $PYTHON (on Debian: apt-get install python3-venv)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
"$ST" --version

# --- server ------------------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/zarrd-schemathesis.XXXXXX")
SERVER_PID=
cleanup() {
    local status=$?
    if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    # A panic is a bug even when it was answered 500: schemathesis' inputs must not cause one.
    if grep -q 'zarrd::panic' "$WORK/server.log" 2>/dev/null; then
        log "zarrd logged a panic:"
        grep -A2 'zarrd::panic' "$WORK/server.log" >&2 || true
        status=1
    fi
    if [[ $status -ne 0 && -s $WORK/server.log ]]; then
        log "last server log lines:"
        tail -n 40 "$WORK/server.log" >&2 || true
    fi
    if [[ $status -eq 0 || -n ${CI:-} ]]; then rm -rf "$WORK"; else log "kept $WORK for inspection"; fi
    exit "$status"
}
trap cleanup EXIT

# shellcheck source=.ci/ports.sh
source "$ROOT/.ci/ports.sh"
PORT=$(free_port)
BASE=http://127.0.0.1:$PORT
CONFORMANCE=$ROOT/tests/fixtures/conformance/data.zarr
SAMPLE=$ROOT/data/sample.zarr
EXTRA=$ROOT/tests/fixtures/extra/data.zarr
ROOTARRAY=$CONFORMANCE/regular/f4_zstd_partial
EDR=$ROOT/tests/fixtures/edr/edr.zarr
ANALYSIS=$ROOT/tests/fixtures/analysis/analysis.zarr
ICECHUNK=$ROOT/tests/fixtures/virtual/icechunk/virtual.icechunk
for d in "$CONFORMANCE" "$SAMPLE" "$EXTRA" "$ROOTARRAY" "$EDR" "$ANALYSIS" "$ICECHUNK"; do
    [[ -d $d ]] || die "fixture missing: $d"
done
# The Icechunk repository's virtual chunks, where its container says they are.
# shellcheck source=.ci/virtual_sources.sh
source "$ROOT/.ci/virtual_sources.sh"
place_virtual_sources "$ROOT"

# A small response limit so that whole-array requests exercise 413 and JSON bodies stay
# quick to validate; everything else is the default configuration.
cat >"$WORK/zarrd.toml" <<EOF
listen = "127.0.0.1:$PORT"

[limits]
max_response_bytes = 2097152
request_timeout_secs = 30

[log]
format = "text"
level = "warn"

[datasets.conformance]
url = "$CONFORMANCE"
title = "conformance fixtures"

[datasets.sample]
url = "$SAMPLE"
title = "zarrd sample dataset"

[datasets.extra]
url = "$EXTRA"
title = "more fixtures: every data type, 0-length and 4-d arrays, more codecs and key encodings"

# A dataset whose root is an array, so the root operations (/v1/arrays/{ds}, ...) reach data.
[datasets.rootarray]
url = "$ROOTARRAY"

# A versioned (Icechunk) dataset, so GET /v1/datasets/{ds}/versions reaches one.
[datasets.versioned]
url = "$ROOT/tests/fixtures/virtual/icechunk/native.icechunk"

# EDR collections (/edr only: the /v1 operations are not narrowed to these).
[datasets.edr]
url = "$EDR"

[datasets.analysis]
url = "$ANALYSIS"

# A versioned dataset with an EDR collection, so the instance routes reach one.
[datasets.ic]
url = "$ICECHUNK"
virtual_refs = ["file://$SOURCES/"]
EOF

log "starting $BIN on $BASE"
# A signing key, so `POST /v1/tokens` answers as configured (no API keys or JWTs: every
# caller is anonymous, and minting is a documented 401).
ZARRD_SIGNING_KEY=schemathesis-signing-key-of-at-least-32-bytes \
    "$BIN" serve --config "$WORK/zarrd.toml" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
    if "$PYTHON" -c "import urllib.request, sys; sys.exit(urllib.request.urlopen('$BASE/healthz', timeout=1).status != 200)" 2>/dev/null; then
        break
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || die "the server exited during startup"
    sleep 0.1
done
"$PYTHON" -c "import urllib.request; urllib.request.urlopen('$BASE/readyz', timeout=5)" || die "the server did not become ready"

# --- the spec, narrowed to the served data, and generation hooks -------------------------
# openapi.yaml describes any deployment: `ds`, `path`, `key`, `collectionId` and
# `instanceId` are free strings. Random strings would only ever reach 404s, so the copy
# tested here turns them into enums of what this server really serves (derived from the
# stores, so new fixtures are picked up; the EDR collections listed below).
# Everything else, in particular every response, is tested as written in openapi.yaml.
"$VENV/bin/python" - "$ROOT/openapi.yaml" "$WORK" \
    "conformance=$CONFORMANCE" "sample=$SAMPLE" "extra=$EXTRA" "rootarray=$ROOTARRAY" <<'EOF'
import json, os, sys, yaml

src, work, *datasets = sys.argv[1:]
spec = yaml.safe_load(open(src))
nodes, keys, shapes = {}, {}, {}
for item in datasets:
    name, root = item.split("=", 1)
    nodes[name], keys[name], shapes[name] = [], [], {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel = "" if rel == "." else rel
        if "zarr.json" in filenames:
            if rel:
                nodes[name].append(rel)
            keys[name].append(f"{rel}/zarr.json" if rel else "zarr.json")
            meta = json.load(open(os.path.join(dirpath, "zarr.json")))
            if meta.get("node_type") == "array":
                shapes[name][rel] = meta["shape"]
        # A few stored chunk objects per directory (chunk directories hold no zarr.json).
        chunks = sorted(f for f in filenames if f != "zarr.json")
        keys[name].extend(f"{rel}/{f}" if rel else f for f in chunks[:2])
params = spec["components"]["parameters"]
params["ds"]["schema"] = {"type": "string", "enum": sorted(nodes)}
params["path"]["schema"] = {"type": "string", "enum": sorted({p for v in nodes.values() for p in v})}
params["key"]["schema"] = {"type": "string", "enum": sorted({k for v in keys.values() for k in v})}
# The versions of a versioned dataset: the one Icechunk repository served.
for param in spec["paths"]["/v1/datasets/{ds}/versions"]["get"]["parameters"]:
    if param["name"] == "ds":
        param["schema"] = {"type": "string", "enum": ["versioned"]}
# EDR: collections of every kind (levels; packed values; no time; a 360_day calendar and a
# grid that is not global; descending and irregular latitudes; a 0..360 grid; mixed axes;
# the sample), and on the instance routes the versioned dataset's collection at
# its one branch.
params["collectionId"]["schema"] = {"type": "string", "enum": [
    "edr", "edr:surface", "edr:static", "analysis:daily", "analysis:calendars:c360", "analysis:irregular", "ic",
    "sample:climate"]}
params["instanceId"]["schema"] = {"type": "string", "enum": ["main"]}
versioned = {k: v for k, v in params["collectionId"].items() if k != "example"}
versioned["schema"] = {"type": "string", "enum": ["ic"]}
for route, item in spec["paths"].items():
    if route.startswith("/edr/collections/{collectionId}/instances"):
        op = item["get"]
        op["parameters"] = [versioned if p.get("$ref") == "#/components/parameters/collectionId" else p
                            for p in op["parameters"]]
with open(os.path.join(work, "openapi.yaml"), "w") as f:
    yaml.safe_dump(spec, f, sort_keys=False)
with open(os.path.join(work, "served.json"), "w") as f:
    json.dump({"nodes": nodes, "keys": keys, "shapes": shapes}, f)
print(f"narrowed the spec to {len(nodes)} datasets, {len(params['path']['schema']['enum'])} node paths, "
      f"{len(params['key']['schema']['enum'])} store keys")
EOF

# Hooks that steer generated requests (positive cases of the fuzzing and examples phases
# only; negative cases and the coverage phase are left as generated) towards the data
# actually served, so most requests get past the 404/400 of a mismatched dataset, an
# out-of-range selection or a chunk outside the grid, and the encoders and listings are
# exercised on every fixture: a (ds, path|key) pair moves to the dataset that has it;
# `s` is usually a random valid selection for the array's shape; `c` usually a chunk of
# the read grid (taken from the server's own listing); options that only combine with
# others (vmin/vmax without png, format without decoded, a foreign cursor, If-Match with
# a random tag) are usually dropped; `Range` is usually a random byte range; an EDR query
# usually takes points, polygons, boxes, steps, levels and parameters of the collection
# asked (from its collection document), with a format or an `Accept`. The module also
# registers the zarrd_* checks (see its end).
cat >"$WORK/zarrd_hooks.py" <<'EOF'
import ast
import json
import os
import re
import struct
import threading
import urllib.parse
import urllib.request

import schemathesis
from hypothesis import strategies as st

# CPython before 3.11.8 fails `ast.parse` run by two threads at once (cpython#106905), and
# hypothesis parses the source of lambdas from every worker thread: one parse at a time.
_ast_parse, _ast_lock = ast.parse, threading.Lock()


def _serial_ast_parse(*args, **kwargs):
    with _ast_lock:
        return _ast_parse(*args, **kwargs)


ast.parse = _serial_ast_parse

HERE = os.path.dirname(os.path.abspath(__file__))
SERVED = json.load(open(os.path.join(HERE, "served.json")))
BASE = os.environ["ZARRD_BASE"]
_READ_GRID = {}


def read_grid(ds, path):
    """Coordinates of every chunk of the read grid, from the server's listing."""
    if (ds, path) not in _READ_GRID:
        coords = []
        url = f"{BASE}/v1/chunks/{ds}" + (f"/{urllib.parse.quote(path)}" if path else "") + "?inner=true&limit=10000"
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                for chunk in json.load(r)["chunks"]:
                    inner = chunk.get("inner")
                    coords.extend(i["coords"] for i in inner) if inner else coords.append(chunk["coords"])
        except Exception:
            pass
        _READ_GRID[(ds, path)] = coords
    return _READ_GRID[(ds, path)]


def next_cursor(ds, path, query):
    """The `next` cursor of the first page of a listing, or None."""
    params = {k: str(v).lower() if isinstance(v, bool) else v for k, v in query.items() if v is not None}
    params.pop("cursor", None)
    url = f"{BASE}/v1/chunks/{ds}" + (f"/{urllib.parse.quote(path)}" if path else "")
    try:
        with urllib.request.urlopen(f"{url}?{urllib.parse.urlencode(params)}", timeout=30) as r:
            return json.load(r).get("next")
    except Exception:
        return None


@schemathesis.hook
def map_path_parameters(context, path_parameters):
    if not isinstance(path_parameters, dict):
        return path_parameters
    ds = path_parameters.get("ds")
    for name, table in (("path", SERVED["nodes"]), ("key", SERVED["keys"])):
        value = path_parameters.get(name)
        # Path parameters arrive percent-encoded (`climate%2Ft2m`).
        value = urllib.parse.unquote(value) if isinstance(value, str) else value
        if ds in table and isinstance(value, str) and value not in table[ds]:
            owners = sorted(d for d, values in table.items() if value in values)
            if owners:
                path_parameters["ds"] = owners[0]
    return path_parameters


def bound(n):
    return st.one_of(st.integers(-n - 3, n + 3).map(str), st.just(""))


def dim_item(n):
    items = [st.builds(lambda a, b: f"{a}:{b}", bound(n), bound(n)),
             st.builds(lambda a, b, c: f"{a}:{b}:{c}", bound(n), bound(n), st.integers(1, n + 2).map(str)),
             st.just(":")]
    if n > 0:
        items.append(st.integers(-n, n - 1).map(str))
    return st.one_of(items)


def selection(shape):
    rank = len(shape)

    @st.composite
    def draw(draw):
        items = [draw(dim_item(n)) for n in shape]
        if items and draw(st.integers(0, 5).map(lambda x: x == 5)):
            # An empty result (a zero in the shape) is allowed and easy to get wrong.
            k = draw(st.integers(0, len(items) - 1))
            items[k] = f"{shape[k] // 2}:{shape[k] // 2}"
        items = items[: rank - draw(st.integers(0, rank))]
        if draw(st.booleans()) and items:
            a = draw(st.integers(0, len(items)))
            b = draw(st.integers(a, len(items)))
            items = items[:a] + ["..."] + items[b:]
        return ",".join(items)

    return draw()


ACCEPTS = [
    "*/*", "application/x-npy", "application/octet-stream", "application/json", "image/png",
    "image/*", "application/*", "text/html", "text/html;q=0.9, image/png;q=0.8",
    "application/json;q=0.5, application/octet-stream", "image/png;q=0", "", "*/*;q=0.1, text/csv",
]


def byte_range():
    offset = st.one_of(st.integers(0, 400), st.just(2**64 - 1), st.integers(0, 2**64 - 1))
    return st.one_of(
        st.builds(lambda a, b: f"bytes={a}-{min(a + b, 2**64 - 1)}", st.integers(0, 400), offset),
        offset.map(lambda a: f"bytes={a}-"),
        offset.map(lambda n: f"bytes=-{n}"),
    )


EDR_QUERIES = ("position", "area", "cube", "radius")
EDR_ACCEPTS = [
    "application/prs.coverage+json", "application/vnd.cov+json", "application/geo+json", "text/csv", "*/*",
    "application/json", "", "text/csv;q=0.5, application/geo+json",
]
_EDR = {}


def edr_collection(cid, instance):
    """The collection document of `cid` (at version `instance`), from the server, or None."""
    if (cid, instance) not in _EDR:
        url = f"{BASE}/edr/collections/{urllib.parse.quote(cid, safe=':@')}"
        if instance is not None:
            url += f"/instances/{urllib.parse.quote(instance, safe='')}"
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                _EDR[(cid, instance)] = json.load(r)
        except Exception:
            _EDR[(cid, instance)] = None
    return _EDR[(cid, instance)]


@st.composite
def edr_query(draw, kind, doc):
    """Parameters of an EDR query `kind` that mostly take cells, steps and levels of `doc`."""
    west, south, east, north = doc["extent"]["spatial"]["bbox"][0]
    east += 360 if west > east else 0
    south, north = max(south, -89.0), min(north, 89.0)

    def point():
        x = draw(st.floats(west, east, allow_nan=False))
        y = draw(st.floats(south, north, allow_nan=False))
        return round((x + 180) % 360 - 180, 2), round(y, 2)

    def square(x, y, d):
        s, n = max(y - d, -90), min(y + d, 90)
        return [(x - d, s), (x + d, s), (x + d, n), (x - d, n)]

    query = {"parameter_names": None}
    names = sorted(doc["parameter_names"])
    query["parameter-name"] = ",".join(draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True)))
    d = draw(st.sampled_from([0.5, 3, 8, 20]))
    if kind == "position":
        points = [point() for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3])))]
        text = ",".join(f"({x} {y})" for x, y in points)
        query["coords"] = f"POINT({points[0][0]} {points[0][1]})" if len(points) == 1 else f"MULTIPOINT({text})"
    elif kind == "area":
        ring = square(*point(), d)
        query["coords"] = "POLYGON((" + ",".join(f"{x} {y}" for x, y in ring + ring[:1]) + "))"
    elif kind == "cube":
        (w, s), _, (e, n), _ = square(*point(), d)
        query["bbox"] = f"{w},{s},{e},{n}"
    else:
        query["coords"] = "POINT({} {})".format(*point())
        unit, factor = draw(st.sampled_from([(None, 1), ("km", 1), ("m", 1000), ("mi", 0.621371)]))
        query["within"] = round(draw(st.sampled_from([0, 100, 600, 1500])) * factor, 1)
        query["within-units"] = unit
    times = doc["extent"].get("temporal", {}).get("values", [])
    if not times or draw(st.booleans()):
        query["datetime"] = None
    else:
        i = draw(st.integers(0, len(times) - 1))
        j = draw(st.integers(i, min(i + 3, len(times) - 1)))
        forms = [times[i], times[i][:10], f"{times[i]}/{times[j]}", f"{times[j]}/..", f"../{times[i]}"]
        query["datetime"] = draw(st.sampled_from(forms))
    levels = doc["extent"].get("vertical", {}).get("values", [])
    if not levels or draw(st.booleans()):
        query["z"] = None
    else:
        a, b = draw(st.sampled_from(levels)), draw(st.sampled_from(levels))
        query["z"] = draw(st.sampled_from([a, f"{a}/{b}", f"{a},{b}"]))
    return query


def _merged(original, changes):
    merged = original.copy()
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


@schemathesis.hook
def flatmap_case(context, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return st.just(case)
    route = case.operation.path
    original_query, original_headers = dict(case.query), case.headers.copy()
    original_path = dict(case.path_parameters)
    # Hypothesis favours small values, so the usual branch is the one 0 takes.
    usually = st.integers(0, 3).map(lambda x: x < 3)
    sometimes = st.integers(0, 3).map(lambda x: x == 3)
    rarely = st.integers(0, 7).map(lambda x: x == 7)
    root_arrays = sorted(d for d, arrays in SERVED["shapes"].items() if "" in arrays)

    @st.composite
    def steer(draw):
        query, headers, path_parameters = {}, {}, {}
        ds = original_path.get("ds")
        path = urllib.parse.unquote(original_path.get("path", ""))
        if route.startswith("/v1/") and route.endswith("/{ds}") and root_arrays and draw(usually):
            # The root operations: usually a dataset whose root is an array.
            ds = path_parameters["ds"] = draw(st.sampled_from(root_arrays))
        shape = SERVED["shapes"].get(ds, {}).get(path)
        if draw(rarely):
            # Revalidation of whatever is current: 304 (or 412-free for /zarr).
            headers["If-None-Match"] = "*"
        if route.startswith("/edr/collections/{collectionId}/") and route.rsplit("/", 1)[1] in EDR_QUERIES:
            cid = urllib.parse.unquote(original_path.get("collectionId", ""))
            instance = original_path.get("instanceId")
            doc = edr_collection(cid, None if instance is None else urllib.parse.unquote(instance))
            if doc is not None and draw(usually):
                query.update(draw(edr_query(route.rsplit("/", 1)[1], doc)))
            if draw(sometimes):
                # Content negotiation instead of `f`.
                query["f"] = None
                headers["Accept"] = draw(st.sampled_from(EDR_ACCEPTS))
            return query, headers, path_parameters
        if route.startswith("/zarr/"):
            if draw(usually):
                headers.update({"If-Match": None, "If-Unmodified-Since": None})
            if draw(usually):
                headers["Range"] = draw(st.one_of(byte_range(), st.none()))
            return query, headers, path_parameters
        if shape is None:
            return query, headers, path_parameters
        if route.startswith(("/v1/slice/", "/v1/chunks/")) and draw(usually):
            query["s"] = draw(selection(shape))
        if route.startswith("/v1/slice/") and draw(sometimes):
            query["format"] = "png"
        elif route.startswith(("/v1/slice/", "/v1/chunk/")) and draw(sometimes):
            # Content negotiation instead of `format`.
            query["format"] = None
            headers["Accept"] = draw(st.sampled_from(ACCEPTS))
        if route.startswith("/v1/chunks/"):
            query["cursor"] = None if draw(usually) else original_query.get("cursor")
            if draw(sometimes):
                # A later page: the cursor of a real first page of the same listing.
                limit = draw(st.integers(1, 3))
                listing = {**original_query, **query, "limit": limit}
                cursor = next_cursor(ds, path, listing)
                if cursor is not None:
                    query.update({"limit": limit, "cursor": cursor})
        if route.startswith("/v1/chunk/"):
            grid = read_grid(ds, path)
            if grid and draw(usually):
                query["c"] = ",".join(map(str, draw(st.sampled_from(grid))))
            if original_query.get("decoded") in (None, False, "false") and draw(usually):
                query.update({"format": None, "vmin": None, "vmax": None})
        if original_query.get("format") != "png" and draw(usually):
            query.update({"vmin": None, "vmax": None})
        return query, headers, path_parameters

    def apply(changes):
        query, headers, path_parameters = changes
        if path_parameters:
            case.path_parameters = {**original_path, **path_parameters}
        if query:
            case.query = _merged(original_query, query)
        if headers:
            case.headers = _merged(original_headers, headers)
        return case

    return steer().map(apply)


# --- checks of the API's semantics (docs/api.md) that a schema cannot express ------------
NPY_DESCR = {
    "bool": "|b1", "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
    "uint8": "|u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8",
    "float16": "<f2", "float32": "<f4", "float64": "<f8", "complex64": "<c8", "complex128": "<c16",
}


def _header(response, name):
    values = response.headers.get(name.lower())
    return values[0] if values else None


def _decoded(case):
    route = case.operation.path
    return route.startswith("/v1/slice/") or (
        route.startswith("/v1/chunk/") and str(case.query.get("decoded")).lower() in ("true", "1")
    )


def _nested_shape(data, shape):
    for i, n in enumerate(shape):
        if not isinstance(data, list) or len(data) != n:
            return False
        if n == 0:
            return True
        data = data[0]
    return not isinstance(data, list) or len(data) == 2  # a scalar, or [re, im]


@schemathesis.check
def zarrd_body_matches_zarr_headers(ctx, response, case):
    """A decoded data body has the shape and type its Zarr-Shape and Zarr-Data-Type announce."""
    if response.request.method != "GET" or response.status_code != 200 or not _decoded(case):
        return None
    shape_text, data_type = _header(response, "zarr-shape"), _header(response, "zarr-data-type")
    if shape_text is None or data_type not in NPY_DESCR or response.content_size != len(response.content):
        return None  # missing headers are response_headers_conformance's to report
    shape = [int(d) for d in shape_text.split(",")] if shape_text else []
    count = 1
    for d in shape:
        count *= d
    item = int(NPY_DESCR[data_type][2:])
    body = response.content
    media = (_header(response, "content-type") or "").split(";")[0].strip()
    if media == "application/octet-stream":
        assert len(body) == count * item, f"{len(body)} bytes for shape {shape} of {data_type}"
    elif media == "application/x-npy":
        assert body[:8] == b"\x93NUMPY\x01\x00", "not an .npy v1.0 file"
        length = struct.unpack("<H", body[8:10])[0]
        assert (10 + length) % 64 == 0, "the .npy header is not padded to a multiple of 64"
        header = ast.literal_eval(body[10 : 10 + length].decode("latin1"))
        assert header["descr"] == NPY_DESCR[data_type], f"descr {header['descr']} for {data_type}"
        assert header["fortran_order"] is False
        assert list(header["shape"]) == shape, f".npy shape {header['shape']}, Zarr-Shape {shape}"
        assert len(body) - 10 - length == count * item, "the .npy data has the wrong length"
    elif media == "application/json":
        doc = json.loads(body)
        assert doc["shape"] == shape and doc["data_type"] == data_type, "JSON shape/data_type differ from headers"
        assert _nested_shape(doc["data"], shape), f"JSON data is not nested as shape {shape}"
    elif media == "image/png":
        assert body[:8] == b"\x89PNG\r\n\x1a\n" and body[12:16] == b"IHDR", "not a PNG"
        width, height = struct.unpack(">II", body[16:24])
        assert [height, width] == shape, f"PNG {width}x{height} for shape {shape}"
    return None


def _parse_range(value):
    """The server's reading of a Range header (docs/api.md: one byte range; anything else ignored)."""
    value = value.strip()
    if not value.startswith("bytes="):
        return None
    spec = value[len("bytes="):].strip()
    if "," in spec or "-" not in spec:
        return None
    a, b = (s.strip() for s in spec.split("-", 1))

    def num(s):
        return int(s) if re.fullmatch(r"\+?[0-9]+", s) and int(s) < 2**64 else None

    if not a and b:
        return ("suffix", num(b)) if num(b) is not None else None
    if a and not b:
        return ("from", num(a)) if num(a) is not None else None
    if a and b and num(a) is not None and num(b) is not None and num(a) <= num(b):
        return ("bounded", num(a), num(b))
    return None


def _resolve(rng, size):
    if rng[0] == "bounded":
        start, end = rng[1], min(rng[2] + 1, size)
    elif rng[0] == "from":
        start, end = rng[1], size
    else:
        start, end = max(size - rng[1], 0), size
    return (start, end) if start < end else None


@schemathesis.check
def zarrd_byte_ranges(ctx, response, case):
    """/zarr answers a single byte range with exactly that range (206), or 416 when it is
    unsatisfiable; with an If-Range that is not current, the whole object (200)."""
    if not case.operation.path.startswith("/zarr/") or response.request.method not in ("GET", "HEAD"):
        return None
    raw = case.headers.get("Range") if case.headers else None
    rng = _parse_range(raw) if isinstance(raw, str) else None
    if rng is None or response.status_code not in (200, 206, 416):
        return None
    content_range = _header(response, "content-range") or ""
    if response.status_code == 200:
        # RFC 9110 §13.1.5: an If-Range that does not name the current strong ETag (or its
        # Last-Modified date) means "send it all" — the whole object is the right answer.
        if_range = case.headers.get("If-Range") if case.headers else None
        current = (_header(response, "etag"), _header(response, "last-modified"))
        if if_range is not None and if_range.strip() not in current:
            return None
        raise AssertionError(f"`Range: {raw}` was answered 200 with the whole object")
    if response.status_code == 416:
        m = re.fullmatch(r"bytes \*/([0-9]+)", content_range)
        assert m, f"416 with Content-Range `{content_range}`"
        size = int(m.group(1))
        assert _resolve(rng, size) is None, f"`Range: {raw}` is satisfiable for {size} bytes, but got 416"
        return None
    m = re.fullmatch(r"bytes ([0-9]+)-([0-9]+)/([0-9]+)", content_range)
    assert m, f"206 with Content-Range `{content_range}`"
    first, last, size = map(int, m.groups())
    expected = _resolve(rng, size)
    assert expected == (first, last + 1), f"`Range: {raw}` of {size} bytes is {expected}, got `{content_range}`"
    if response.request.method == "GET":
        assert response.content_size == last + 1 - first, f"{response.content_size} bytes for `{content_range}`"
    return None


@schemathesis.check
class zarrd_every_operation_succeeds:
    """Every operation answered 2xx/3xx at least once, so the run did not degrade into 404s
    (a 3xx counts: some routes, like the IIIF base URI, only ever redirect)."""

    def __init__(self):
        self.tested, self.reached = set(), set()

    def after_response(self, ctx, response, case):
        # Reads only (minting needs a credential this server does not have); and a capability
        # URL with a generated token is rightly a 401: only a minted one works.
        read = case.operation.method.upper() in ("GET", "HEAD")
        if read and response.request.method in ("GET", "HEAD") and not case.operation.path.startswith("/t/"):
            self.tested.add(case.operation.label)
            if 200 <= response.status_code < 400:
                self.reached.add(case.operation.label)

    def after_run(self, ctx):
        missing = sorted(self.tested - self.reached)
        if missing:
            raise AssertionError("never answered 2xx or 3xx: " + ", ".join(missing))
EOF

# --- run ---------------------------------------------------------------------------------
# Checks: all of them (the built-in ones and the zarrd_* checks of the hooks module), except
#   positive_data_acceptance: it expects 2xx for every schema-valid request, but validity
#     here depends on the array addressed (an index beyond a dimension, more selection
#     items than dimensions, `c` outside the read grid, png of 3-D data, vmin without png,
#     a cursor from another listing, a result above the size limit are 400/406/413 by
#     docs/api.md), which OpenAPI cannot express per array;
#   use_after_free, ensure_resource_availability: need operations that create or delete
#     resources (the API is read-only);
#   ignored_auth, object_level_authorization: the server under test has no API keys or
#     JWTs configured (access control has its own tests: tests/it/auth*.rs);
#   missing_required_header: no operation has a required header.
# The phases are examples (the spec's examples), coverage (boundary and invalid values of
# every parameter, undocumented methods) and fuzzing; stateful needs links, which a
# read-only API does not have.
# Run from the temp dir: schemathesis keeps a crash database in ./.schemathesis/ and reads
# ./schemathesis.toml, neither of which belongs in (or may leak from) the work tree.
# The number of examples is set there, not with --max-examples (which would override the
# per-operation setting): the 16 /edr operations get a third of it, as their inputs are
# few (the discovery documents take only `f`; the queries are steered to a handful of
# collections, and the instance routes repeat them on one), so that they add about a
# fifth to the run rather than two thirds.
cat >"$WORK/schemathesis.toml" <<EOF
generation.max-examples = $MAX_EXAMPLES

[[operations]]
include-path-regex = "^/edr"
generation.max-examples = $(( MAX_EXAMPLES / 3 > 0 ? MAX_EXAMPLES / 3 : 1 ))
EOF
cd "$WORK"
# CPython 3.11 before 3.11.8 can raise `SystemError: AST constructor recursion depth
# mismatch` inside hypothesis (ast.parse from several worker threads, cpython#106905): a
# crash of the tool, not a finding. The hooks module serializes ast.parse; should a run
# still crash so, with no check failing, it is run once more.
run_st() {
# shellcheck disable=SC2086
    ZARRD_BASE=$BASE PYTHONPATH=$WORK${PYTHONPATH:+:$PYTHONPATH} SCHEMATHESIS_HOOKS=zarrd_hooks \
    "$ST" run "$WORK/openapi.yaml" \
        --url "$BASE" \
        --checks all \
        --exclude-checks positive_data_acceptance,use_after_free,ensure_resource_availability,ignored_auth,object_level_authorization,missing_required_header \
        --phases examples,coverage,fuzzing \
        --continue-on-failure \
        --seed "$SEED" \
        --generation-database none \
        --workers "$WORKERS" \
        --request-timeout 60 \
        --max-response-time 30 \
        --no-color \
        --report junit --report-dir "$WORK/report" \
        ${ST_EXTRA_ARGS:-}
}
set +e
run_st 2>&1 | tee "$WORK/st.log"
status=${PIPESTATUS[0]}
if [[ $status -ne 0 ]] && grep -q 'AST constructor recursion depth mismatch' "$WORK/st.log" \
    && ! grep -q '= FAILURES =' "$WORK/st.log"; then
    log "schemathesis crashed in CPython's ast.parse (cpython#106905), not on a finding: running it again"
    run_st
    status=$?
fi
set -e
if [[ $status -ne 0 ]]; then
    log "schemathesis found failures (exit $status)"
    exit "$status"
fi
kill -0 "$SERVER_PID" 2>/dev/null || die "the server died during the run"
log "passed"
