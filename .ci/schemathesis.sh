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

LOG_TAG=schemathesis.sh
# shellcheck source=.ci/lib.sh
source "$ROOT/.ci/lib.sh"

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
# stores, so new fixtures are picked up; the EDR collections are listed in
# .ci/schemathesis_narrow_spec.py, which writes it and served.json into WORK).
# Everything else, in particular every response, is tested as written in openapi.yaml.
"$VENV/bin/python" "$ROOT/.ci/schemathesis_narrow_spec.py" "$ROOT/openapi.yaml" "$WORK" \
    "conformance=$CONFORMANCE" "sample=$SAMPLE" "extra=$EXTRA" "rootarray=$ROOTARRAY"

# Hooks that steer generated requests towards the data actually served, and the zarrd_*
# checks (.ci/schemathesis_hooks.py says how): copied into WORK as the module zarrd_hooks,
# beside the served.json it reads.
cp "$ROOT/.ci/schemathesis_hooks.py" "$WORK/zarrd_hooks.py"

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
