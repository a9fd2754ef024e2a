#!/usr/bin/env bash
# Contract test: holds openapi.yaml and the server together by fuzzing a running zarrd
# with schemathesis (property-based requests generated from the spec, every response
# checked against it).
#
#   .ci/schemathesis.sh [ZARRD_BINARY]      (default: target/release/zarrd)
#
# Builds nothing: pass the binary. Installs schemathesis (pinned) into a venv under
# ${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci/ when it is missing, starts the server on a free
# loopback port serving the conformance fixtures as `conformance` and the bundled sample as
# `sample`, runs schemathesis with a fixed seed and a bounded number of examples (a few
# minutes on 2 cores), stops the server, and exits non-zero on any failure.
#
# Environment: ST_MAX_EXAMPLES (default 40) cases per operation and phase, ST_SEED
# (default 20250101), ST_WORKERS (default 2), ST_EXTRA_ARGS (more schemathesis options,
# word-split), PYTHON (default python3, >= 3.9).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

SCHEMATHESIS_VERSION=4.32.5
BIN=${1:-target/release/zarrd}
MAX_EXAMPLES=${ST_MAX_EXAMPLES:-40}
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
    if [[ $status -ne 0 && -s $WORK/server.log ]]; then
        log "last server log lines:"
        tail -n 40 "$WORK/server.log" >&2 || true
    fi
    if [[ $status -eq 0 || -n ${CI:-} ]]; then rm -rf "$WORK"; else log "kept $WORK for inspection"; fi
    exit "$status"
}
trap cleanup EXIT

PORT=$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BASE=http://127.0.0.1:$PORT
CONFORMANCE=$ROOT/tests/fixtures/conformance/data.zarr
SAMPLE=$ROOT/data/sample.zarr
EXTRA=$ROOT/tests/fixtures/extra/data.zarr
ROOTARRAY=$CONFORMANCE/regular/f4_zstd_partial
for d in "$CONFORMANCE" "$SAMPLE" "$EXTRA" "$ROOTARRAY"; do [[ -d $d ]] || die "fixture missing: $d"; done

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
EOF

log "starting $BIN on $BASE"
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
# openapi.yaml describes any deployment: `ds`, `path` and `key` are free strings. Random
# strings would only ever reach 404s, so the copy tested here turns them into enums of
# what this server really serves (derived from the stores, so new fixtures are picked up).
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
# a random tag) are usually dropped; `Range` is usually a random byte range.
cat >"$WORK/zarrd_hooks.py" <<'EOF'
import json
import os
import urllib.parse
import urllib.request

import schemathesis
from hypothesis import strategies as st

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
    return st.one_of(
        st.builds(lambda a, b: f"bytes={a}-{a + b}", st.integers(0, 400), st.integers(0, 400)),
        st.integers(0, 400).map(lambda a: f"bytes={a}-"),
        st.integers(0, 400).map(lambda n: f"bytes=-{n}"),
    )


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
        if route.startswith("/v1/chunks/") and draw(usually):
            query["cursor"] = None
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
EOF

# --- run ---------------------------------------------------------------------------------
# Checks: all of them, except
#   positive_data_acceptance: it expects 2xx for every schema-valid request, but validity
#     here depends on the array addressed (an index beyond a dimension, more selection
#     items than dimensions, `c` outside the read grid, png of 3-D data, vmin without png,
#     a cursor from another listing, a result above the size limit are 400/406/413 by
#     API.md), which OpenAPI cannot express per array;
#   use_after_free, ensure_resource_availability: need operations that create or delete
#     resources (the API is read-only);
#   ignored_auth, object_level_authorization: the API has no authentication;
#   missing_required_header: no operation has a required header.
# The phases are examples (the spec's examples), coverage (boundary and invalid values of
# every parameter, undocumented methods) and fuzzing; stateful needs links, which a
# read-only API does not have.
# Run from the temp dir: schemathesis keeps a crash database in ./.schemathesis/ and reads
# ./schemathesis.toml, neither of which belongs in (or may leak from) the work tree.
cd "$WORK"
set +e
# shellcheck disable=SC2086
ZARRD_BASE=$BASE PYTHONPATH=$WORK${PYTHONPATH:+:$PYTHONPATH} SCHEMATHESIS_HOOKS=zarrd_hooks \
"$ST" run "$WORK/openapi.yaml" \
    --url "$BASE" \
    --checks all \
    --exclude-checks positive_data_acceptance,use_after_free,ensure_resource_availability,ignored_auth,object_level_authorization,missing_required_header \
    --phases examples,coverage,fuzzing \
    --max-examples "$MAX_EXAMPLES" \
    --seed "$SEED" \
    --generation-database none \
    --workers "$WORKERS" \
    --request-timeout 60 \
    --max-response-time 30 \
    --no-color \
    --report junit --report-dir "$WORK/report" \
    ${ST_EXTRA_ARGS:-}
status=$?
set -e
if [[ $status -ne 0 ]]; then
    log "schemathesis found failures (exit $status)"
    exit "$status"
fi
kill -0 "$SERVER_PID" 2>/dev/null || die "the server died during the run"
log "passed"
