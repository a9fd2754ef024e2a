# Sourced by the CI scripts that start their own zarrd on loopback (browser.sh,
# browser_ome.sh, fixture_zarrd.sh, schemathesis.sh).

# free_port: a free loopback port, from the kernel (a fixed or random one can be a live
# client's, and bind fails). PYTHON, when set, is the interpreter to ask (else python3).
free_port() {
    "${PYTHON:-python3}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# up PORT LOG: waits up to 10 s for zarrd's /healthz on PORT, else shows LOG and fails.
up() {
    for _ in $(seq 50); do curl -fs "http://127.0.0.1:$1/healthz" >/dev/null && return; sleep 0.2; done
    cat "$2" >&2
    echo "${0##*/}: zarrd did not start on port $1" >&2
    exit 1
}
