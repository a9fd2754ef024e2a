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
[[ -d $CONFORMANCE && -d $SAMPLE ]] || die "fixtures missing: $CONFORMANCE, $SAMPLE"

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

# --- the spec, narrowed to the served data ----------------------------------------------
# openapi.yaml describes any deployment: `ds`, `path` and `key` are free strings. Random
# strings would only ever reach 404s, so the copy tested here turns them into enums of
# what this server really serves (derived from the stores, so new fixtures are picked up).
# Everything else, in particular every response, is tested as written.
"$VENV/bin/python" - "$ROOT/openapi.yaml" "$WORK/openapi.yaml" "conformance=$CONFORMANCE" "sample=$SAMPLE" <<'EOF'
import os, sys, yaml

src, dst, *datasets = sys.argv[1:]
spec = yaml.safe_load(open(src))
names, paths, keys = [], set(), set()
for item in datasets:
    name, root = item.split("=", 1)
    names.append(name)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel = "" if rel == "." else rel
        if "zarr.json" in filenames:
            if rel:
                paths.add(rel)
            keys.add(f"{rel}/zarr.json" if rel else "zarr.json")
        # A few stored chunk objects per array: their chunk directories hold no zarr.json.
        chunks = sorted(f for f in filenames if f != "zarr.json")
        keys.update(f"{rel}/{f}" if rel else f for f in chunks[:2])
params = spec["components"]["parameters"]
params["ds"]["schema"] = {"type": "string", "enum": names}
params["path"]["schema"] = {"type": "string", "enum": sorted(paths)}
params["key"]["schema"] = {"type": "string", "enum": sorted(keys)}
yaml.safe_dump(spec, open(dst, "w"), sort_keys=False)
print(f"narrowed the spec to {len(names)} datasets, {len(paths)} node paths, {len(keys)} store keys")
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
set +e
# shellcheck disable=SC2086
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
