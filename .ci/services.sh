#!/usr/bin/env bash
# Starts/stops real storage servers on loopback for the integration tests:
#   - Garage (S3) single node, bucket `zarrd-test`, key `zarrd-test-key`
#   - nginx serving tests/fixtures (every fixture set) as static files (ranges, ETag, If-Match)
#
# Usage: .ci/services.sh start|stop
#
# `start` writes $SERVICES_DIR/env with `export ZARRD_TEST_...=...` lines for tests to
# `source`. Every start begins from a fresh Garage cluster; `stop` is safe to repeat.
#
# Environment overrides:
#   SERVICES_DIR         state dir (default: <repo>/target/ci-services)
#   SERVICES_S3_PORT     Garage S3 API port    (default 3900)
#   SERVICES_RPC_PORT    Garage RPC port       (default 3901)
#   SERVICES_ADMIN_PORT  Garage admin API port (default 3903)
#   SERVICES_HTTP_PORT   nginx port            (default 3980)
# An explicitly set port must be free; a default port that is taken is replaced by the
# next free one above it.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
STATE_DIR=${SERVICES_DIR:-$REPO_ROOT/target/ci-services}
FIXTURES=$REPO_ROOT/tests/fixtures

BUCKET=zarrd-test
KEY_NAME=zarrd-test-key
S3_REGION=garage
STARTUP_TIMEOUT=30 # seconds

# Garage reads these from the environment and they would override our config.
unset GARAGE_CONFIG_FILE GARAGE_RPC_HOST GARAGE_RPC_SECRET GARAGE_RPC_SECRET_FILE \
    GARAGE_ADMIN_TOKEN GARAGE_ADMIN_TOKEN_FILE GARAGE_METRICS_TOKEN GARAGE_METRICS_TOKEN_FILE

LOG_TAG=services
# shellcheck source=.ci/lib.sh
source "$REPO_ROOT/.ci/lib.sh"

# die with the tail of a log file.
die_log() {
    local msg=$1 file=$2
    printf '[services] ERROR: %s\n' "$msg" >&2
    if [[ -f $file ]]; then
        printf '[services] --- last lines of %s ---\n' "$file" >&2
        tail -n 40 "$file" >&2 || true
        printf '[services] --- end of %s ---\n' "$file" >&2
    fi
    exit 1
}

# --- paths to the state ------------------------------------------------------------------
resolve_state_dir() {
    mkdir -p "$STATE_DIR"
    STATE_DIR=$(cd "$STATE_DIR" && pwd -P)
    GARAGE_DIR=$STATE_DIR/garage
    GARAGE_TOML=$GARAGE_DIR/garage.toml
    GARAGE_LOG=$STATE_DIR/garage.log
    GARAGE_PID=$STATE_DIR/garage.pid
    NGINX_DIR=$STATE_DIR/nginx
    NGINX_CONF=$NGINX_DIR/nginx.conf
    NGINX_LOG=$STATE_DIR/nginx-error.log
    NGINX_ACCESS_LOG=$STATE_DIR/nginx-access.log
    NGINX_PID=$STATE_DIR/nginx.pid
    ENV_FILE=$STATE_DIR/env
}

# --- tools -------------------------------------------------------------------------------
find_tools() {
    if ! command -v garage >/dev/null 2>&1; then
        local d
        for d in "${CARGO_HOME:-$HOME/.cargo}/bin" "$HOME/.cargo/bin"; do
            if [[ -x $d/garage ]]; then
                PATH=$d:$PATH
                break
            fi
        done
    fi
    GARAGE_BIN=$(command -v garage 2>/dev/null) ||
        die "garage not found on PATH or in ~/.cargo/bin (run .ci/install-tools.sh)"
    NGINX_BIN=$(command -v nginx 2>/dev/null || true)
    [[ -z $NGINX_BIN && -x /usr/sbin/nginx ]] && NGINX_BIN=/usr/sbin/nginx
    [[ -n $NGINX_BIN ]] || die "nginx not found on PATH or at /usr/sbin/nginx (run .ci/install-tools.sh)"
}

garage_cli() { "$GARAGE_BIN" -c "$GARAGE_TOML" "$@"; }

# --- ports -------------------------------------------------------------------------------
# True when something accepts TCP connections on 127.0.0.1:$1.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

PICKED_PORTS=" "
# pick_port NAME OVERRIDE_VALUE DEFAULT -> prints the port to use.
pick_port() {
    local name=$1 override=$2 default=$3 port
    if [[ -n $override ]]; then
        [[ $override =~ ^[0-9]+$ ]] || die "$name port '$override' is not a number"
        if port_open "$override" || [[ $PICKED_PORTS == *" $override "* ]]; then
            die "$name port $override (set explicitly) is already in use"
        fi
        echo "$override"
        return
    fi
    for ((port = default; port < default + 200; port++)); do
        if [[ $PICKED_PORTS != *" $port "* ]] && ! port_open "$port"; then
            echo "$port"
            return
        fi
    done
    die "no free port for $name in $default..$((default + 199))"
}

# --- processes ---------------------------------------------------------------------------
# pid_alive PIDFILE NAME: prints the pid if the file names a live process whose command
# line contains NAME (guards against recycled pids).
pid_alive() {
    local file=$1 name=$2 pid
    [[ -f $file ]] || return 1
    pid=$(tr -dc '0-9' <"$file")
    [[ -n $pid ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    if [[ -r /proc/$pid/cmdline ]]; then
        tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$name" || return 1
    fi
    echo "$pid"
}

# stop_one LABEL PIDFILE NAME
stop_one() {
    local label=$1 file=$2 name=$3 pid i
    if pid=$(pid_alive "$file" "$name"); then
        log "stopping $label (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            log "$label did not exit after 10 s; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 0.2
        fi
    else
        log "$label is not running"
    fi
    rm -f "$file"
}

cmd_stop() {
    resolve_state_dir
    stop_one nginx "$NGINX_PID" nginx
    stop_one garage "$GARAGE_PID" garage
    rm -f "$ENV_FILE"
    log "stopped"
}

# --- Garage ------------------------------------------------------------------------------
start_garage() {
    local s3_port=$1 rpc_port=$2 admin_port=$3
    rm -rf "$GARAGE_DIR"
    mkdir -p "$GARAGE_DIR/meta" "$GARAGE_DIR/data"
    local secret
    secret=$(od -An -vtx1 -N32 /dev/urandom | tr -d ' \n')
    [[ $secret =~ ^[0-9a-f]{64}$ ]] || die "could not generate rpc_secret"
    (
        umask 077
        cat >"$GARAGE_TOML" <<EOF
metadata_dir = "$GARAGE_DIR/meta"
data_dir = "$GARAGE_DIR/data"
db_engine = "sqlite"
replication_factor = 1

rpc_bind_addr = "127.0.0.1:$rpc_port"
rpc_public_addr = "127.0.0.1:$rpc_port"
rpc_secret = "$secret"

[s3_api]
s3_region = "$S3_REGION"
api_bind_addr = "127.0.0.1:$s3_port"
root_domain = ".s3.garage.localhost"

[admin]
api_bind_addr = "127.0.0.1:$admin_port"
EOF
    )

    log "starting garage (S3 127.0.0.1:$s3_port, RPC :$rpc_port, admin :$admin_port), log: $GARAGE_LOG"
    (
        cd "$GARAGE_DIR"
        NO_COLOR=1 RUST_LOG=${RUST_LOG:-garage=info} \
            exec setsid "$GARAGE_BIN" -c "$GARAGE_TOML" server </dev/null >"$GARAGE_LOG" 2>&1
    ) &
    echo $! >"$GARAGE_PID"
    STARTED_GARAGE=1

    local deadline=$((SECONDS + STARTUP_TIMEOUT)) status_out=''
    until status_out=$(garage_cli status 2>&1) && port_open "$s3_port"; do
        # Only "is it alive": right after the fork the subshell has not exec'd garage yet,
        # so its command line does not name garage.
        kill -0 "$(tr -dc '0-9' <"$GARAGE_PID")" 2>/dev/null || die_log "garage exited during startup" "$GARAGE_LOG"
        ((SECONDS < deadline)) ||
            die_log "garage did not come up within ${STARTUP_TIMEOUT}s (last 'garage status': $status_out)" "$GARAGE_LOG"
        sleep 0.2
    done

    local node_id
    node_id=$(garage_cli node id -q 2>/dev/null | grep -oE '^[0-9a-f]{64}' | head -n1 || true)
    [[ -n $node_id ]] || die_log "could not read the garage node id ('garage node id -q')" "$GARAGE_LOG"
    log "garage node id: $node_id"

    garage_cli layout assign -z dc1 -c 1G "$node_id" >/dev/null
    garage_cli layout apply --version 1 >/dev/null
    retry garage_cli bucket create "$BUCKET" >/dev/null
    garage_cli key create "$KEY_NAME" >/dev/null
    garage_cli bucket allow --read --write --owner "$BUCKET" --key "$KEY_NAME" >/dev/null

    # `garage key info --show-secret` (2.x) prints, among other lines:
    #   Key ID:              GK5ca54725c1cebc39172e5880
    #   Secret key:          0cba016afa4b46ff62091ea12cfa0d7e3c404addb4080e08931d1e4ffb312637
    local info
    info=$(garage_cli key info --show-secret "$KEY_NAME")
    S3_KEY_ID=$(field "Key ID" <<<"$info")
    S3_SECRET=$(field "Secret key" <<<"$info")
    if ! valid_key "$S3_KEY_ID" "$S3_SECRET"; then
        # Fall back on the single-value forms of the same command.
        S3_KEY_ID=$(garage_cli key info --key-id "$KEY_NAME" | tr -d '[:space:]')
        S3_SECRET=$(garage_cli key info --secret-key "$KEY_NAME" | tr -d '[:space:]')
    fi
    valid_key "$S3_KEY_ID" "$S3_SECRET" ||
        die "could not parse the access key from 'garage key info --show-secret $KEY_NAME':"$'\n'"$info"

    # The key must actually be able to use the bucket.
    local binfo
    binfo=$(garage_cli bucket info "$BUCKET")
    grep -qE "^RWO +$S3_KEY_ID" <<<"$binfo" ||
        die "key $S3_KEY_ID lacks RWO on bucket $BUCKET:"$'\n'"$binfo"
    log "garage ready: bucket $BUCKET, key $S3_KEY_ID"
}

# field LABEL < text: value after "LABEL:" on the first matching line.
field() {
    awk -v label="$1" '
        { line = $0; sub(/^[ \t]+/, "", line) }
        index(line, label ":") == 1 {
            v = substr(line, length(label) + 2); gsub(/[ \t\r]/, "", v); print v; exit
        }'
}

valid_key() { [[ $1 =~ ^GK[0-9a-f]{24}$ && $2 =~ ^[0-9a-f]{64}$ ]]; }

# retry CMD...: a few attempts, for commands that can race the new layout.
retry() {
    local i
    for ((i = 1; i <= 10; i++)); do
        if "$@"; then return 0; fi
        log "retrying: $* (attempt $i failed)"
        sleep 1
    done
    "$@"
}

# --- nginx -------------------------------------------------------------------------------
start_nginx() {
    local port=$1
    rm -rf "$NGINX_DIR"
    mkdir -p "$NGINX_DIR/tmp"

    local user_line='' temp_paths='' mod
    # As root the master would switch workers to `nobody`; keep the current user instead.
    if [[ $EUID -eq 0 ]]; then
        user_line="user $(id -un) $(id -gn);"
    fi
    # Keep every temp path inside the state dir (only for modules compiled in).
    local build
    build=$("$NGINX_BIN" -V 2>&1)
    temp_paths="client_body_temp_path \"$NGINX_DIR/tmp/body\";"
    for mod in proxy fastcgi uwsgi scgi; do
        if [[ $build != *"--without-http_${mod}_module"* ]]; then
            temp_paths+=$'\n'"    ${mod}_temp_path \"$NGINX_DIR/tmp/$mod\";"
        fi
    done

    cat >"$NGINX_CONF" <<EOF
# Generated by .ci/services.sh; static fixtures for zarrd's HTTP store tests.
$user_line
daemon on;
master_process on;
worker_processes 1;
pid "$NGINX_PID";
lock_file "$NGINX_DIR/nginx.lock";
error_log "$NGINX_LOG" notice;

events {
    worker_connections 256;
}

http {
    access_log "$NGINX_ACCESS_LOG";
    $temp_paths

    types {
        application/json json;
    }
    default_type application/octet-stream;
    sendfile on;
    keepalive_timeout 30;
    server_tokens off;

    server {
        listen 127.0.0.1:$port;
        server_name localhost;
        root "$FIXTURES";

        location / {
            # Defaults spelled out: byte ranges (incl. suffix ranges), strong ETags and
            # the conditional filter that answers a failed If-Match with 412.
            etag on;
            max_ranges 16;
            if_modified_since exact;
            autoindex off;
        }
    }
}
EOF

    log "starting nginx on 127.0.0.1:$port serving $FIXTURES, logs: $NGINX_LOG"
    # nginx's own -e error log and its stderr both append to the same file on purpose.
    # shellcheck disable=SC2094
    "$NGINX_BIN" -t -q -p "$NGINX_DIR/" -e "$NGINX_LOG" -c "$NGINX_CONF" >>"$NGINX_LOG" 2>&1 ||
        die_log "nginx rejected its config $NGINX_CONF" "$NGINX_LOG"
    # shellcheck disable=SC2094
    "$NGINX_BIN" -p "$NGINX_DIR/" -e "$NGINX_LOG" -c "$NGINX_CONF" </dev/null >>"$NGINX_LOG" 2>&1 ||
        die_log "nginx failed to start" "$NGINX_LOG"
    STARTED_NGINX=1

    local deadline=$((SECONDS + STARTUP_TIMEOUT))
    until pid_alive "$NGINX_PID" nginx >/dev/null && port_open "$port"; do
        ((SECONDS < deadline)) || die_log "nginx did not come up within ${STARTUP_TIMEOUT}s" "$NGINX_LOG"
        sleep 0.2
    done
    log "nginx ready (pid $(cat "$NGINX_PID"))"
}

# --- start -------------------------------------------------------------------------------
STARTED_GARAGE=0
STARTED_NGINX=0
START_DONE=0
on_start_exit() {
    if [[ $START_DONE -ne 1 && ($STARTED_GARAGE -eq 1 || $STARTED_NGINX -eq 1) ]]; then
        printf '[services] start failed; stopping what was started\n' >&2
        cmd_stop >&2 || true
    fi
}

cmd_start() {
    resolve_state_dir
    find_tools
    [[ -d $FIXTURES ]] || die "fixtures directory $FIXTURES does not exist"

    if pid_alive "$GARAGE_PID" garage >/dev/null || pid_alive "$NGINX_PID" nginx >/dev/null; then
        log "services already running in $STATE_DIR; restarting them"
        cmd_stop
    fi
    rm -f "$ENV_FILE"
    trap on_start_exit EXIT

    local s3_port rpc_port admin_port http_port
    s3_port=$(pick_port "Garage S3" "${SERVICES_S3_PORT:-}" 3900)
    PICKED_PORTS+="$s3_port "
    rpc_port=$(pick_port "Garage RPC" "${SERVICES_RPC_PORT:-}" 3901)
    PICKED_PORTS+="$rpc_port "
    admin_port=$(pick_port "Garage admin" "${SERVICES_ADMIN_PORT:-}" 3903)
    PICKED_PORTS+="$admin_port "
    http_port=$(pick_port "nginx" "${SERVICES_HTTP_PORT:-}" 3980)
    PICKED_PORTS+="$http_port "
    [[ $s3_port == 3900 ]] || log "WARNING: port 3900 is taken; Garage S3 uses $s3_port"

    start_garage "$s3_port" "$rpc_port" "$admin_port"
    start_nginx "$http_port"

    local tmp=$ENV_FILE.tmp
    {
        echo "# Written by .ci/services.sh start; source this file in tests."
        printf 'export %s=%q\n' \
            ZARRD_TEST_S3_ENDPOINT "http://127.0.0.1:$s3_port" \
            ZARRD_TEST_S3_BUCKET "$BUCKET" \
            ZARRD_TEST_S3_KEY_ID "$S3_KEY_ID" \
            ZARRD_TEST_S3_SECRET "$S3_SECRET" \
            ZARRD_TEST_S3_REGION "$S3_REGION" \
            ZARRD_TEST_HTTP_URL "http://127.0.0.1:$http_port"
    } >"$tmp"
    chmod 600 "$tmp"
    mv "$tmp" "$ENV_FILE"
    START_DONE=1

    log "services up; environment for tests: $ENV_FILE"
    echo "$ENV_FILE"
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
*)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
