#!/usr/bin/env bash
# Region downloads opened by real readers: every `format=nc` case
# (tests/zarr_client/read_downloads.py) read by xarray with the netCDF4 engine (and scipy's
# for CDF-2 files), `ncdump -h`, GDAL's netCDF driver (`gdalinfo`) for the CRS and transform
# of projected grids and pyproj for a GeoZarr grid's CRS; every `format=tif` case
# (tests/zarr_client/read_geotiffs.py) checked by `rio cogeo validate`, read by rasterio and
# `gdalinfo`; both compared with xarray's and zarr-python's own reads of the fixture stores.
#
# Usage: .ci/downloads.sh [ZARRD_BINARY]     (default: target/release/zarrd)
#
# The venv and the fixture server are .ci/fixture_zarrd.sh's; ncdump and gdalinfo come from
# Debian (netcdf-bin, gdal-bin: .ci/install-tools.sh). Besides the usual fixture sets zarrd
# serves here the analysis store as Zarr v2 and five grids of tests/fixtures.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
LOG_TAG=downloads
# shellcheck source=.ci/fixture_zarrd.sh
source "$REPO_ROOT/.ci/fixture_zarrd.sh"
use_zarrd "${1:-}"
ensure_venv
command -v ncdump >/dev/null && command -v gdalinfo >/dev/null || die "ncdump and gdalinfo are needed (apt-get install netcdf-bin gdal-bin)"

F=$REPO_ROOT/tests/fixtures
export ZARRD_EXTRA_TOML="[datasets.anav2]
url = \"$F/analysis/variants/v2.zarr\"
[datasets.hrrr]
url = \"$F/grids/hrrr_lcc.zarr\"
[datasets.seaice]
url = \"$F/grids/seaice_3413.zarr\"
[datasets.s2]
url = \"$F/grids/s2_utm.zarr\"
[datasets.cordex]
url = \"$F/grids/cordex_rotated.zarr\"
[datasets.coastal]
url = \"$F/curvilinear/coastal.zarr\"
[datasets.proj]
url = \"$F/downloads/projections.zarr\""

make_work downloads
start_zarrd "$ZARRD" "$WORK"
log "xarray (netCDF4, scipy), ncdump $(ncdump 2>&1 | grep -o 'netcdf library version [0-9.]*' || true), $(gdalinfo --version)"
run_client "$VENV/bin/python" -W ignore "$REPO_ROOT/tests/zarr_client/read_downloads.py" "$BASE" "$F"
run_client "$VENV/bin/python" -W ignore "$REPO_ROOT/tests/zarr_client/read_geotiffs.py" "$BASE" "$F"
if [[ $STATUS -ne 0 ]]; then
    log "a reader failed; last lines of the zarrd log:"
    zarrd_log_tail
fi
exit "$STATUS"
