#!/usr/bin/env bash
# Validates deploy/kubernetes offline:
#   1. every core manifest against the Kubernetes 1.37 OpenAPI schemas with
#      kubernetes-validate --strict (an unknown or misspelt field fails), from PyPI, installed
#      once into a cached virtualenv;
#   2. what a schema cannot say (.ci/k8s_checks.py): the grace period covers
#      http.drain_secs + http.shutdown_timeout_secs of the ConfigMap's config, probes on
#      /healthz and /readyz, non-root and read-only root filesystem, no credential in the
#      ConfigMap, kustomization.yaml lists files that exist, the ServiceMonitor (a CRD the
#      schemas do not have) has the fields the Prometheus Operator needs.
# The ConfigMap's config.toml is also loaded by zarrd itself in .ci/docker.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=1.37.0
VENV="${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci/kubernetes-validate-${VERSION}"

if [[ ! -x $VENV/bin/kubernetes-validate ]]; then
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    python3 -m venv "$VENV"
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install --quiet "kubernetes-validate==${VERSION}"
fi

# Everything but the Kustomization and the CRD example, which no Kubernetes schema covers:
# a missing schema would only warn, so these must all be core kinds that pass.
mapfile -t manifests < <(find deploy/kubernetes -name '*.yaml' ! -name kustomization.yaml ! -name servicemonitor.yaml | sort)
out=$("$VENV/bin/kubernetes-validate" --strict -k "$VERSION" "${manifests[@]}" 2>&1) || {
    printf '%s\n' "$out"
    echo "k8s-validate: kubernetes-validate --strict failed" >&2
    exit 1
}
printf '%s\n' "$out"
if grep -q "Couldn't find schema" <<<"$out"; then
    echo "k8s-validate: a manifest has a kind with no schema" >&2
    exit 1
fi
"$VENV/bin/python" .ci/k8s_checks.py deploy/kubernetes
