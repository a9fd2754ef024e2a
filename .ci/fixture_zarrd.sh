# Sourced by the client checks (.ci/zarr_client.sh, .ci/compat_clients.sh, .ci/edr_clients.sh,
# .ci/browser_zarrita.sh): one pinned Python venv for every Python client, zarrita (and
# covjson-reader) from npm, and a zarrd serving the committed fixture sets on a free
# loopback port.
#
# The caller sets REPO_ROOT and LOG_TAG (the tag of the log and die of .ci/lib.sh, which
# this file sources) before sourcing. Installs are cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci: the venv (compat-clients-venv, rebuilt when the
# pins change) and the npm install (compat-node/<package-lock.json hash>, `npm ci`).
#
# Environment overrides:
#   ZARR_CLIENT_PYTHON   the Python 3.11 interpreter to build the venv with (default python3.11)
#   ZARR_CLIENT_VENV     venv directory (default: the cache path above)

CI_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci
VENV=${ZARR_CLIENT_VENV:-$CI_CACHE/compat-clients-venv}
STARTUP_TIMEOUT=30 # seconds
# shellcheck source=.ci/lib.sh
source "$REPO_ROOT/.ci/lib.sh"
# shellcheck source=.ci/ports.sh
source "$REPO_ROOT/.ci/ports.sh"

# zarr 3.1.6 (the newest 3.1, no rectilinear grid; needs Python >= 3.11) with fsspec +
# aiohttp (its HTTP path), TensorStore and xarray; the EDR clients OWSLib, edr-pydantic and
# covjson-pydantic (.ci/edr_clients.sh); the NetCDF readers netCDF4 and scipy, pyproj, and
# the GeoTIFF readers rasterio and rio-cogeo (.ci/downloads.sh); and what they resolved to, pinned so runs are
# reproducible.
PINS=(
    zarr==3.1.6
    numpy==2.4.6
    numcodecs==0.16.6
    donfig==0.8.1.post1
    google-crc32c==1.9.0
    packaging==26.3
    typing_extensions==4.16.0
    PyYAML==6.0.3
    fsspec==2026.9.0
    aiohttp==3.14.5
    aiohappyeyeballs==2.7.1
    aiosignal==1.4.0
    attrs==26.1.0
    frozenlist==1.8.0
    multidict==7.2.1
    propcache==0.5.4
    yarl==1.25.1
    requests==2.34.2
    certifi==2026.10.18
    charset-normalizer==3.5.2
    idna==3.20
    urllib3==2.8.0
    tensorstore==0.1.86
    ml_dtypes==0.6.0
    xarray==2026.9.0
    pandas==3.1.1
    python-dateutil==4.0.0
    tzdata==2026.6
    OWSLib==0.35.0
    lxml==6.1.3
    edr-pydantic==0.7.0
    covjson-pydantic==0.8.0
    pydantic==2.14.4
    pydantic_core==2.50.5
    annotated-types==0.8.0
    typing-inspection==0.4.5
    netCDF4==1.7.5.1.post1
    cftime==1.6.6.1
    scipy==1.17.1
    pyproj==3.7.2
    rasterio==1.4.4
    rio-cogeo==7.0.4
    affine==3.0.1
    click==8.5.1
    click-plugins==1.1.1.2
    cligj==0.7.2
    morecantile==7.1.0
    pyparsing==3.3.3
)

# use_zarrd [PATH]: ZARRD, the absolute path of the binary to test (default: the release build).
use_zarrd() {
    ZARRD=${1:-$REPO_ROOT/target/release/zarrd}
    [[ -x $ZARRD ]] || die "no zarrd binary at $ZARRD (build it with: cargo build --release)"
    ZARRD=$(cd "$(dirname "$ZARRD")" && pwd -P)/$(basename "$ZARRD")
}

# ensure_venv: $VENV with exactly PINS, created or reused.
ensure_venv() {
    local python=${ZARR_CLIENT_PYTHON:-python3.11} stamp=$VENV/.zarrd-pins want
    want=$(printf '%s\n' "${PINS[@]}")
    if [[ -x $VENV/bin/python && -f $stamp && $(cat "$stamp") == "$want" ]]; then
        log "using cached venv $VENV"
        return
    fi
    command -v "$python" >/dev/null 2>&1 || die "$python not found (zarr 3.1 needs Python >= 3.11)"
    log "creating venv $VENV"
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    "$python" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${PINS[@]}"
    printf '%s\n' "$want" >"$stamp"
}

# ensure_zarrita: zarrita (tests/zarr_client/js) installed with `npm ci`; sets NODE_DIR.
ensure_zarrita() {
    local js=$REPO_ROOT/tests/zarr_client/js
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        log "installing node and npm from Debian"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    fi
    NODE_DIR=$CI_CACHE/compat-node/$(sha256sum "$js/package-lock.json" | cut -c1-16)
    if [[ -d $NODE_DIR/node_modules/zarrita ]]; then
        log "using cached node_modules $NODE_DIR"
        return
    fi
    log "npm ci into $NODE_DIR"
    rm -rf "$CI_CACHE/compat-node"
    mkdir -p "$NODE_DIR"
    cp "$js/package.json" "$js/package-lock.json" "$NODE_DIR/"
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error)
}

# node_clients: the venv and zarrita's install (ensure_venv, ensure_zarrita), the install
# linked beside the node scripts in tests/zarr_client/js (node resolves ESM imports from a
# script's directory upwards); sets JS to that directory.
node_clients() {
    ensure_venv
    ensure_zarrita
    JS=$REPO_ROOT/tests/zarr_client/js
    ln -sfn "$NODE_DIR/node_modules" "$JS/node_modules"
}

# start_zarrd ZARRD WORK: zarrd on a free loopback port serving every fixture set
# (conf, extra, v2, v2extra, fanout, fanoutextra, strings, codecs, codecsv2, analysis, edr)
# and the sample, its log in WORK/zarrd.log; waits for /healthz. ZARRD_EXTRA_TOML, when set,
# is appended to the configuration (more datasets). Sets SERVER_PID and BASE; stop_zarrd
# stops it.
start_zarrd() {
    local zarrd=$1 work=$2 f=$REPO_ROOT/tests/fixtures port deadline
    port=$(PYTHON=$VENV/bin/python free_port)
    cat >"$work/zarrd.toml" <<TOML
listen = "127.0.0.1:$port"
[datasets.conf]
url = "$f/conformance/data.zarr"
[datasets.extra]
url = "$f/extra/data.zarr"
[datasets.v2]
url = "$f/zarr-v2/data.zarr"
[datasets.v2extra]
url = "$f/zarr-v2-extra/data.zarr"
[datasets.fanout]
url = "$f/fanout/data.zarr"
[datasets.fanoutextra]
url = "$f/fanout-extra/data.zarr"
[datasets.strings]
url = "$f/strings/data.zarr"
[datasets.codecs]
url = "$f/codecs/data.zarr"
[datasets.codecsv2]
url = "$f/codecs-v2/data.zarr"
[datasets.sample]
url = "$REPO_ROOT/data/sample.zarr"
[datasets.analysis]
url = "$f/analysis/analysis.zarr"
[datasets.edr]
url = "$f/edr/edr.zarr"
${ZARRD_EXTRA_TOML:-}
TOML
    log "starting $zarrd on 127.0.0.1:$port"
    RUST_LOG=${RUST_LOG:-info} "$zarrd" serve --config "$work/zarrd.toml" >"$work/zarrd.log" 2>&1 &
    SERVER_PID=$!
    BASE=http://127.0.0.1:$port
    deadline=$((SECONDS + STARTUP_TIMEOUT))
    until "$VENV/bin/python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$BASE/healthz" 2>/dev/null; do
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$work/zarrd.log" >&2; die "zarrd exited during startup"; }
        ((SECONDS < deadline)) || { tail -n 40 "$work/zarrd.log" >&2; die "zarrd did not answer $BASE/healthz within ${STARTUP_TIMEOUT}s"; }
        sleep 0.2
    done
    log "zarrd is up"
}

# stop_zarrd: SIGTERM, then SIGKILL after 5 s.
stop_zarrd() {
    [[ -n ${SERVER_PID:-} ]] && kill -0 "$SERVER_PID" 2>/dev/null || return 0
    kill "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
}

# make_work NAME: WORK, a temporary directory; on exit (or INT/TERM) the client running
# under run_client and zarrd are stopped and WORK removed, keeping the exit status.
make_work() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/zarrd-$1.XXXXXX")
    CLIENT_PID=
    STATUS=0
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
    local status=$?
    [[ -z ${CLIENT_PID:-} ]] || { kill "$CLIENT_PID" 2>/dev/null || true; wait "$CLIENT_PID" 2>/dev/null || true; }
    stop_zarrd
    # A panic is a bug even when it was answered 500 or cut a body: the clients' run fails.
    if grep -q 'zarrd::panic' "$WORK/zarrd.log" 2>/dev/null; then
        log "zarrd logged a panic:"
        grep -A2 'zarrd::panic' "$WORK/zarrd.log" >&2 || true
        status=1
    fi
    rm -rf "$WORK"
    exit "$status"
}

# run_client CMD...: in the background and waited for, so that a signal to the script is
# handled at once; STATUS keeps the last failure.
run_client() {
    "$@" &
    CLIENT_PID=$!
    wait "$CLIENT_PID" || STATUS=$?
    CLIENT_PID=
}

# zarrd_log_tail: the last lines of the zarrd log, without colour codes, on stderr.
zarrd_log_tail() {
    tail -n "${1:-40}" "$WORK/zarrd.log" | sed 's/\x1b\[[0-9;]*m//g' >&2 || true
}
