# Sourced by the checks that serve the virtual Icechunk repository (.ci/edr_clients.sh,
# .ci/schemathesis.sh): its virtual chunks live in NetCDF files at the absolute place its
# container names, /tmp/zarrd-virtual-fixtures/source (as tests/it/icechunk.rs puts them).

# place_virtual_sources REPO_ROOT: copies the NetCDF sources there (each written whole under
# another name, then renamed, so a concurrent reader never sees half a file); sets SOURCES.
place_virtual_sources() {
    SOURCES=/tmp/zarrd-virtual-fixtures/source
    mkdir -p "$SOURCES"
    local name
    for name in air.nc air2.nc; do
        if ! cmp -s "$1/tests/fixtures/virtual/source/$name" "$SOURCES/$name"; then
            cp "$1/tests/fixtures/virtual/source/$name" "$SOURCES/$name.$$"
            mv -f "$SOURCES/$name.$$" "$SOURCES/$name"
        fi
    done
}
