# shellcheck shell=bash
# The logging every CI and benchmark script shares (sourced, not run): `log` and `die`.
#
#   LOG_TAG=fleet                          # the tag in brackets (default: the script's name)
#   LOG_TO=stderr                          # optional: log on stderr (benches/lib.sh sets it)
#   DIE_STATUS=2                           # optional: die's exit status (default 1)
#   # shellcheck source=.ci/lib.sh
#   source "$REPO_ROOT/.ci/lib.sh"
#
# log MESSAGE...   "[TAG] MESSAGE" on stdout, or on stderr when LOG_TO=stderr
# die MESSAGE...   "[TAG] ERROR: MESSAGE" on stderr, then exit DIE_STATUS
#
# The variables are read at each call, so a script may set them before or after sourcing
# this file. Scripts sourced by others (.ci/fixture_zarrd.sh, benches/lib.sh) source it for
# their callers, which set LOG_TAG first.

log() {
    if [[ ${LOG_TO:-stdout} == stderr ]]; then
        printf '[%s] %s\n' "${LOG_TAG:-${0##*/}}" "$*" >&2
    else
        printf '[%s] %s\n' "${LOG_TAG:-${0##*/}}" "$*"
    fi
}

die() {
    printf '[%s] ERROR: %s\n' "${LOG_TAG:-${0##*/}}" "$*" >&2
    exit "${DIE_STATUS:-1}"
}
