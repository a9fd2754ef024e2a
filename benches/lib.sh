# Shared by benches/run.sh, profile.sh and virtual.sh (sourced, not run): the servers'
# configurations, so that every script measures the same zarrd and the same nginx, and the
# small arithmetic helpers they all use.

# log and die from .ci/lib.sh, on stderr as every benchmark logs; the sourcing script sets
# LOG_TAG first.
LOG_TO=stderr
# shellcheck source=.ci/lib.sh
source "$ROOT/.ci/lib.sh"

# What every script takes from the environment (benches/run.sh's header says what each is),
# with ROOT set by the sourcing script: the build's target directory, the data set, seconds
# a load runs, paired rounds, timed large-slice reads. profile.sh sets its own DUR after.
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
DATA=${BENCH_DATA:-$TARGET/bench-data}
DUR=${BENCH_DURATION:-5}
ROUNDS=${BENCH_ROUNDS:-3}
LARGE_REPS=${LARGE_REPS:-3}

# zarrd_conf FILE PORT CACHE_BYTES DATA: config/default.toml's values for the benchmark
# dataset `bench` (DATA/data.zarr) on 127.0.0.1:PORT; CACHE_BYTES for the decoded-chunk
# cache, and the 64 MiB response cache unless it is 0 (both off then, so every read decodes).
zarrd_conf() {
  cat >"$1" <<CONF
listen = "127.0.0.1:$2"
[limits]
max_response_bytes = 268435456
max_chunks_per_request = 100000
request_timeout_secs = 30
max_in_flight = 512
[cache]
shard_index_bytes = 67108864
shard_index_ttl_secs = 300
chunk_bytes = $3
response_bytes = $(($3 > 0 ? 67108864 : 0))
metadata_ttl_secs = 60
[log]
format = "text"
level = "info"
[datasets.bench]
url = "$4/data.zarr"
title = "zarrd benchmark data (benches/datagen)"
CONF
}

# nginx_conf FILE PREFIX PORT: Debian's nginx serving PREFIX/www statically on
# 127.0.0.1:PORT, configured the usual way for static files (sendfile, keep-alive without
# a request limit, an access log as zarrd writes one), its files under PREFIX.
nginx_conf() {
  cat >"$1" <<CONF
daemon off;
worker_processes auto;
pid $2/nginx.pid;
error_log $2/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log $2/nginx-access.log;
  client_body_temp_path $2/nginx-body;
  proxy_temp_path $2/nginx-proxy;
  fastcgi_temp_path $2/nginx-fastcgi;
  uwsgi_temp_path $2/nginx-uwsgi;
  scgi_temp_path $2/nginx-scgi;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$3;
    root $2/www;
  }
}
CONF
}

# wait_http URL: until it answers 2xx, up to 15 s.
wait_http() {
  for _ in $(seq 150); do
    curl -fs -o /dev/null "$1" && return 0
    sleep 0.1
  done
  return 1
}

calc() { awk "BEGIN { printf \"$1\", $2 }"; }
med() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
max() { printf '%s\n' "$@" | sort -g | tail -1; }
sum() { printf '%s\n' "$@" | awk '{ s += $1 } END { printf "%.0f", s }'; }
# kv LINE KEY: the value of KEY=VALUE in a line of space-separated pairs.
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }
