#!/usr/bin/env bash
# Three zarrd replicas behind deploy/nginx's config on loopback, under 64 connections of a
# realistic mix (tiles, slices, PNG, /zarr byte ranges, listings: .ci/fleet_mix.py) for
# FLEET_DURATION seconds, while one replica is SIGTERMed (it must drain and exit 0) and
# another SIGKILLed and restarted. Passes when no request failed (no socket error, no
# status other than 200/206) and every response with a known-correct body (fetched from
# one replica directly before the run) matched it byte for byte.
#
#   .ci/fleet.sh [ZARRD_BINARY]          (default target/release/zarrd)
#
# Environment (benchmarks use them; CI uses the defaults):
#   FLEET_BALANCE   hash (the recipe: hash $request_uri consistent), path (hash $uri, the
#                   path without the query) or rr (round robin)       default hash
#   FLEET_RETRIES   1: the recipe's proxy_next_upstream; 0: proxy_next_upstream off
#   FLEET_KILL      1: SIGTERM replica 1 at 8 s, SIGKILL replica 2 at 15 s and restart it
#                   2 s later; 0: no failures (cache and distribution measurements)
#   FLEET_DURATION  seconds of load (30); FLEET_CONNECTIONS (64)
#   FLEET_CHUNK_CACHE  each replica's cache.chunk_bytes (64 MiB: the 256 MiB test array
#                   is then 4x one replica's cache, as a 1 GiB store is for the default)
#   FLEET_EXPECT_FAILURES  1: do not fail on failed requests (to measure them)
#   FLEET_KINDS     only these kinds of request, e.g. tile,slice,png (see .ci/fleet_mix.py)
# Everything listens on 127.0.0.1; every process started is stopped by its PID on exit.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
ZARRD=$(realpath "${1:-$REPO_ROOT/target/release/zarrd}")
BALANCE=${FLEET_BALANCE:-hash}
RETRIES=${FLEET_RETRIES:-1}
KILL=${FLEET_KILL:-1}
DURATION=${FLEET_DURATION:-30}
CONNS=${FLEET_CONNECTIONS:-64}
CHUNK_CACHE=${FLEET_CHUNK_CACHE:-67108864}
EXPECT_FAILURES=${FLEET_EXPECT_FAILURES:-0}
PYTHON=${FLEET_PYTHON:-${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci/compat-clients-venv/bin/python}
DATA=$REPO_ROOT/target/fleet-data
STATE=$REPO_ROOT/target/fleet
DRAIN_SECS=2
SHUTDOWN_SECS=20

LOG_TAG=fleet
# shellcheck source=.ci/lib.sh
source "$REPO_ROOT/.ci/lib.sh"

[[ -x $ZARRD ]] || die "no zarrd binary at $ZARRD"
command -v wrk >/dev/null || die "wrk is missing (apt-get install wrk; .ci/install-tools.sh installs it)"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || die "nginx is missing"
[[ -x $PYTHON ]] || die "no Python with zarr at $PYTHON (run .ci/zarr_client.sh first, or set FLEET_PYTHON)"

rm -rf "$STATE"
mkdir -p "$STATE/nginx/tmp"
# Every curl here is bounded in time.
echo 'max-time = 30' >"$STATE/.curlrc"
export CURL_HOME=$STATE

# ---------------------------------------------------------------- processes
declare -a PID=("" "" "" "")
NGINX_STARTED=0
cleanup() {
    local i
    if [[ $NGINX_STARTED -eq 1 && -f $STATE/nginx/nginx.pid ]]; then
        kill -QUIT "$(cat "$STATE/nginx/nginx.pid")" 2>/dev/null || true
    fi
    [[ -n ${WRK_PID:-} ]] && kill "$WRK_PID" 2>/dev/null || true
    for i in 1 2 3; do
        [[ -n ${PID[$i]} ]] && kill -KILL "${PID[$i]}" 2>/dev/null || true
    done
    wait 2>/dev/null || true
}
trap cleanup EXIT

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { # free_port FROM
    local p
    for ((p = $1; p < $1 + 500; p++)); do
        if ! port_open "$p" && [[ " ${USED_PORTS:-} " != *" $p "* ]]; then
            USED_PORTS="${USED_PORTS:-} $p"
            echo "$p"
            return
        fi
    done
    die "no free port above $1"
}

# ---------------------------------------------------------------- data
if [[ ! -f $DATA/COMPLETE ]]; then
    log "writing the test store (8192x8192 float32, sharded) into $DATA"
    rm -rf "$DATA"
    mkdir -p "$DATA"
    "$PYTHON" "$REPO_ROOT/.ci/fleet_data.py" "$DATA"
fi

# ---------------------------------------------------------------- replicas
USED_PORTS=""
NPORT=$(free_port 18380)
declare -a PORT=("" "$(free_port 18381)" "$(free_port 18382)" "$(free_port 18383)")
for i in 1 2 3; do
    cat >"$STATE/zarrd-$i.toml" <<TOML
listen = "127.0.0.1:${PORT[$i]}"
[cache]
chunk_bytes = $CHUNK_CACHE
[http]
drain_secs = $DRAIN_SECS
shutdown_timeout_secs = $SHUTDOWN_SECS
[log]
format = "text"
level = "warn"
[datasets.bench]
url = "$DATA/bench.zarr"
[datasets.sample]
url = "$REPO_ROOT/data/sample.zarr"
TOML
done

start_replica() { # start_replica I
    local i=$1 deadline=$((SECONDS + 30))
    "$ZARRD" serve --config "$STATE/zarrd-$i.toml" </dev/null >>"$STATE/zarrd-$i.log" 2>&1 &
    PID[$i]=$!
    until curl -fsS -o /dev/null "http://127.0.0.1:${PORT[$i]}/readyz" 2>/dev/null; do
        kill -0 "${PID[$i]}" 2>/dev/null || { tail -20 "$STATE/zarrd-$i.log" >&2; die "replica $i exited at start"; }
        ((SECONDS < deadline)) || die "replica $i not ready within 30 s"
        sleep 0.1
    done
    log "replica $i ready: pid ${PID[$i]}, 127.0.0.1:${PORT[$i]}"
}
for i in 1 2 3; do start_replica "$i"; done

# ---------------------------------------------------------------- nginx with the recipe
# The recipe's two files, with only the addresses (and, to measure the alternatives, the
# balancing or retry line) changed; each substitution must hit.
subst() { # subst FILE FROM TO
    grep -qF -- "$2" "$1" || die "$1 has no line '$2' to change"
    FROM=$2 TO=$3 perl -0pi -e 's/\Q$ENV{FROM}\E/$ENV{TO}/g' "$1"
}
cp "$REPO_ROOT/deploy/nginx/upstream.conf" "$STATE/nginx/upstream.conf"
cp "$REPO_ROOT/deploy/nginx/zarrd.conf" "$STATE/nginx/zarrd.conf"
for i in 1 2 3; do subst "$STATE/nginx/upstream.conf" "127.0.0.1:808$i" "127.0.0.1:${PORT[$i]}"; done
case $BALANCE in
hash) ;;
path) subst "$STATE/nginx/upstream.conf" 'hash $request_uri consistent;' 'hash $uri consistent;' ;;
rr) subst "$STATE/nginx/upstream.conf" 'hash $request_uri consistent;' '# round robin' ;;
*) die "FLEET_BALANCE must be hash, path or rr" ;;
esac
[[ $RETRIES == 1 ]] || subst "$STATE/nginx/zarrd.conf" 'proxy_next_upstream error timeout http_503;' 'proxy_next_upstream off;'
subst "$STATE/nginx/zarrd.conf" 'listen 8080;' "listen 127.0.0.1:$NPORT;"
user_line=''
[[ $EUID -eq 0 ]] && user_line="user $(id -un) $(id -gn);"
cat >"$STATE/nginx/nginx.conf" <<CONF
$user_line
worker_processes 1;
pid "$STATE/nginx/nginx.pid";
error_log "$STATE/nginx/error.log" warn;
events { worker_connections 2048; }
http {
    access_log "$STATE/nginx/access.log" combined buffer=256k;
    client_body_temp_path "$STATE/nginx/tmp/body";
    proxy_temp_path "$STATE/nginx/tmp/proxy";
    fastcgi_temp_path "$STATE/nginx/tmp/fastcgi";
    uwsgi_temp_path "$STATE/nginx/tmp/uwsgi";
    scgi_temp_path "$STATE/nginx/tmp/scgi";
    keepalive_requests 1000000;
    include "$STATE/nginx/upstream.conf";
    include "$STATE/nginx/zarrd.conf";
}
CONF
"$NGINX" -t -q -p "$STATE/nginx/" -e "$STATE/nginx/error.log" -c "$STATE/nginx/nginx.conf" ||
    die "nginx rejected the recipe: $(tail -5 "$STATE/nginx/error.log")"
"$NGINX" -p "$STATE/nginx/" -e "$STATE/nginx/error.log" -c "$STATE/nginx/nginx.conf"
NGINX_STARTED=1
for _ in $(seq 100); do port_open "$NPORT" && break; sleep 0.1; done
port_open "$NPORT" || die "nginx did not come up"
log "nginx (pid $(cat "$STATE/nginx/nginx.pid")) on 127.0.0.1:$NPORT: balance=$BALANCE retries=$RETRIES"

# ---------------------------------------------------------------- the mix
log "building the request mix and its known-correct bodies from replica 1 directly"
"$PYTHON" "$REPO_ROOT/.ci/fleet_mix.py" "http://127.0.0.1:${PORT[1]}" "$STATE/mix"
# Those fetches warmed replica 1 only; start every replica's counters from here.
storage_requests() { # storage_requests I -> the replica's zarrd_storage_requests_total
    curl -fsS "http://127.0.0.1:${PORT[$1]}/metrics" | awk '$1 == "zarrd_storage_requests_total" {print $2; f=1} END {if (!f) print 0}'
}
data_requests() {
    curl -fsS "http://127.0.0.1:${PORT[$1]}/metrics" |
        awk '/^zarrd_http_requests_total/ && !/route="\/(metrics|readyz|healthz)"/ {s += $2} END {printf "%d\n", s}'
}
declare -a SR0 HR0
for i in 1 2 3; do SR0[$i]=$(storage_requests "$i"); HR0[$i]=$(data_requests "$i"); done

# ---------------------------------------------------------------- load, and failures
log "load: wrk, 2 threads, $CONNS connections, ${DURATION}s"
start=$SECONDS
FLEET_MIX=$STATE/mix FLEET_RESULT=$STATE/result.txt \
    timeout $((DURATION + 60)) wrk -t2 -c"$CONNS" -d"${DURATION}s" --timeout 20s -s "$REPO_ROOT/.ci/fleet.lua" \
    "http://127.0.0.1:$NPORT" >"$STATE/wrk.out" 2>&1 &
WRK_PID=$!
at() { local t=$1; while ((SECONDS - start < t)); do sleep 0.2; done; }
term_exit=""
if [[ $KILL == 1 ]]; then
    at $((DURATION * 8 / 30))
    log "t=$((SECONDS - start))s: SIGTERM replica 1 (pid ${PID[1]})"
    kill -TERM "${PID[1]}"
    term_at=$SECONDS
    at $((DURATION / 2))
    log "t=$((SECONDS - start))s: SIGKILL replica 2 (pid ${PID[2]})"
    kill -KILL "${PID[2]}"
    wait "${PID[2]}" 2>/dev/null || true
    PID[2]=""
    at $((DURATION * 17 / 30))
    log "t=$((SECONDS - start))s: restarting replica 2"
    start_replica 2
    # Replica 1 must have drained and exited 0 within drain + shutdown timeout.
    bound=$((term_at + DRAIN_SECS + SHUTDOWN_SECS + 5))
    while kill -0 "${PID[1]}" 2>/dev/null && ((SECONDS < bound)); do sleep 0.2; done
    if kill -0 "${PID[1]}" 2>/dev/null; then
        term_exit="still running $((SECONDS - term_at)) s after SIGTERM"
    else
        set +e; wait "${PID[1]}"; code=$?; set -e
        term_exit="exit $code"
        PID[1]=""
    fi
    log "replica 1 after SIGTERM: $term_exit"
fi
wait "$WRK_PID" || die "wrk failed: $(cat "$STATE/wrk.out")"
WRK_PID=""
cat "$STATE/wrk.out"

# ---------------------------------------------------------------- verdict
# result.txt holds key=value lines (first_bad may hold spaces): read them one by one.
declare -A R
while IFS='=' read -r k v; do R[$k]=$v; done <"$STATE/result.txt"
failed=$((R[bad_status] + R[connect_errors] + R[read_errors] + R[write_errors] + R[timeouts] + R[mismatched]))
total_storage=0
for i in 1 2 3; do
    if [[ -n ${PID[$i]} ]] && kill -0 "${PID[$i]}" 2>/dev/null; then
        s=$(($(storage_requests "$i") - SR0[i]))
        h=$(($(data_requests "$i") - HR0[i]))
        total_storage=$((total_storage + s))
        hwm=$(awk '/^VmHWM/ {printf "%d", $2 / 1024}' "/proc/${PID[$i]}/status")
        log "replica $i: $h requests served, $s storage requests, peak RSS $hwm MiB"
    fi
done
log "requests: ${R[requests]} (p50 ${R[p50_ms]} ms, p99 ${R[p99_ms]} ms); bodies checked: ${R[checked]}, wrong: ${R[mismatched]} (${R[carried]} right but behind a cut-off one, which wrk keeps)"
log "failed: $failed (status ${R[bad_status]}, connect ${R[connect_errors]}, read ${R[read_errors]}, write ${R[write_errors]}, timeout ${R[timeouts]}, wrong body ${R[mismatched]})${R[first_bad]:+; first: ${R[first_bad]}}"
log "storage requests on the replicas alive at the end: $total_storage"
upstream_errors=$(grep -c 'upstream' "$STATE/nginx/error.log" || true)
log "nginx error log: $upstream_errors upstream lines (connections refused or reset by stopped replicas, retried)"

ok=1
((R[checked] > 0)) || { log "no body was checked"; ok=0; }
((R[requests] > 0)) || { log "no request was made"; ok=0; }
if [[ $EXPECT_FAILURES != 1 ]]; then
    ((failed == 0)) || ok=0
fi
# A panic is a bug even when it was answered 500 or cut a body.
for i in 1 2 3; do
    if grep -q 'zarrd::panic' "$STATE/zarrd-$i.log" 2>/dev/null; then
        log "replica $i logged a panic: $(grep -m1 -A2 'zarrd::panic' "$STATE/zarrd-$i.log")"
        ok=0
    fi
done
if [[ $KILL == 1 && $term_exit != "exit 0" ]]; then
    log "the SIGTERMed replica did not drain and exit 0: $term_exit"
    ok=0
fi
[[ $ok == 1 ]] || die "fleet test failed (logs in $STATE)"
log "passed"
