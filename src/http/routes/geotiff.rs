//! `GET /v1/slice/{ds}/{*path}?s=|sel=…&format=tif`: a region as a Cloud Optimized
//! GeoTIFF ([`crate::downloads::tiff`]): the selection's last two dimensions the array's
//! grid, one more (if any) the bands; placed by the grid model, read whole (bounded by
//! `limits.max_response_bytes`), then tiled, overviewed and compressed on the CPU pool.

use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use crate::analysis::coordinates::ArrayLabels;
use crate::downloads::attributes::fill_value;
use crate::downloads::cf_file::Region;
use crate::downloads::geotiff::{self, Metadata, Placement};
use crate::downloads::tiff::{self, MEDIA_TYPE, Raster};
use crate::downloads::tiles::{self, Sample};
use crate::error::{Error, Result};
use crate::http::body;
use crate::http::budget_body;
use crate::http::conditional::{EtagBuilder, Varies};
use crate::http::query::SliceQuery;
use crate::http::revalidation::Revalidation;
use crate::http::routes::download::{Download, Fetched, attachment, described_as_data, no_rendering, read_data};
use crate::http::routes::labelled::with_selection;
use zarrd_core::ops::cpu;
use zarrd_core::zarr::data_type::element_f64;

/// A GeoTIFF is an image: never compressed on the way, one media type.
const VARIES: Varies = Varies { accept: false, encoding: false };

impl Download<'_> {
    pub async fn geotiff(&self, query: &SliceQuery, headers: &HeaderMap) -> Result<Response> {
        no_rendering(query)?;
        let array = self.array;
        let meta = &array.meta;
        let refuse =
            |why: String| Error::Unsupported(format!("`{}` cannot be written as a GeoTIFF: {why}", array.path));
        let sample = Sample::of(meta.data_type).ok_or_else(|| {
            refuse(format!(
                "it holds {}; a GeoTIFF holds integers and floats (format=nc holds more)",
                meta.data_type.name()
            ))
        })?;
        let (catalog, config) = (&self.state.catalog, &self.state.config);
        let labels = self.state.coords.of(catalog, self.dataset, array).await?;
        let grid =
            match self.state.grids.of(catalog, self.dataset, array).await {
                Ok(Some(grid)) => grid,
                Ok(None) => return Err(refuse(
                    "it has no grid (coordinate arrays, a grid mapping or a GeoZarr CRS place its cells on the Earth)"
                        .into(),
                )),
                Err(Error::Unsupported(why) | Error::OverLimit(why)) => return Err(refuse(why)),
                Err(e) => return Err(e),
            };
        let (region, read, request) = self.selection(query, &labels, Some(grid.clone())).await?;
        let shape = region.shape();
        // The dimensions are checked by the placement; until then, a size to check.
        let (bands, rows, cols) = match shape.as_slice() {
            [b, r, c] => (*b, *r, *c),
            [r, c] => (1, *r, *c),
            _ => (shape.iter().fold(1u64, |a, &b| a.saturating_mul(b)), 1, 1),
        };
        let limit = config.limits.max_response_bytes;
        let size = u128::from(bands) * u128::from(rows) * u128::from(cols) * sample.bytes() as u128;
        if size > u128::from(limit) {
            return Err(Error::TooLarge { what: "GeoTIFF", size, limit });
        }
        let placement = geotiff::on_grid(&grid.grid, &region).map_err(refuse)?;
        let declared = fill_value(meta);
        let zarr_selection = read.zarr_selection();
        let mut tag = EtagBuilder::new("tif");
        tag.text(self.ds).text(&array.path).digest(meta.digest).text(&request);
        for digest in labels.digests.iter().chain([&grid.digest.0, &grid.digest.1]) {
            tag.digest(*digest);
        }
        let revalidation = Revalidation::new(tag, config, VARIES);
        if let Some(unchanged) = revalidation.before_read(headers, read.validation_versions(array)).await? {
            return Ok(with_selection(unchanged, zarr_selection.as_deref()));
        }
        let metadata = metadata(&labels, &region).xml(&meta.attributes, bands as usize);
        // Whole, not streamed: every tile is made before the first byte.
        let Fetched { data, versions, mut reservation, masked } =
            read_data(array, read, None, (declared.map(|v| sample.encode(v)), false)).await?;
        // The declared fill, else the value cells outside a latitude/longitude box got,
        // else the Zarr fill (what a missing chunk reads as).
        let nodata = declared
            .or_else(|| masked.and_then(|m| element_f64(&m, meta.data_type)))
            .or_else(|| element_f64(&meta.fill_value, meta.data_type));
        let data = data
            .into_bytes()
            .ok_or_else(|| Error::Internal { detail: "a read without streaming gave bands".into(), source: None })?;
        // Flipped in place: a copy only when the bytes are shared (a cached chunk).
        let data: Vec<u8> = data.try_into_mut().map_or_else(|shared| shared.to_vec(), Into::into);
        reservation.merge(array.budget.reserve(tiff::working_bytes(data.len() as u64)).await?);
        let (bands, rows, cols) = (bands as usize, rows as usize, cols as usize);
        let raster = Raster { sample, bands, rows, cols, data, nodata, metadata: Some(metadata) };
        let name = array.path.rsplit('/').next().unwrap_or("data").to_owned();
        let data_type = meta.data_type;
        let build = async move {
            let cog = written(raster, placement).await?;
            let response = described_as_data(respond(cog, &name), &shape, data_type);
            Ok(with_selection(budget_body::holding(response, reservation), zarr_selection.as_deref()))
        };
        revalidation.respond(headers, &versions, build).await
    }
}

/// The COG of `raster` (its rows as stored) turned north-up as `placement` says, made on
/// the CPU pool.
pub(super) async fn written(mut raster: Raster, placement: Placement) -> Result<tiff::Cog> {
    cpu::run(move || {
        let dims = (raster.bands, raster.rows, raster.cols, raster.sample.bytes());
        tiles::flip(&mut raster.data, dims, (placement.flip_rows, placement.flip_cols));
        tiff::cog(raster, &placement.georef)
    })
    .await
    .map_err(|panic| Error::Internal { detail: panic, source: None })?
    .map_err(|e| Error::Unsupported(e.to_string()))
}

/// The bands' labels (the first kept dimension's, when three are kept) and the labels of
/// dimensions selected by one index.
fn metadata(labels: &ArrayLabels, region: &Region) -> Metadata {
    let text =
        |d: usize, i: u64| labels.labels[d].as_ref().and_then(|l| l.text(i as usize)).unwrap_or_else(|| i.to_string());
    let kept: Vec<usize> = (0..region.dims.len()).filter(|&d| !region.dropped[d]).collect();
    let bands = (kept.len() == 3).then(|| {
        let d = kept[0];
        (labels.name(d), region.indices(d).into_iter().map(|i| text(d, i)).collect())
    });
    let items = (0..region.dims.len())
        .filter(|&d| region.dropped[d])
        .filter_map(|d| region.indices(d).first().map(|&i| (labels.name(d), text(d, i))))
        .collect();
    Metadata { bands, items }
}

/// The file's response: the head, then the tiles as they are.
pub(super) fn respond(cog: tiff::Cog, name: &str) -> Response {
    let stream = futures::stream::iter(
        std::iter::once(Bytes::from(cog.head)).chain(cog.tiles).map(Ok::<_, std::convert::Infallible>),
    );
    attachment(body::streamed(stream, cog.length).into_response(), (MEDIA_TYPE, cog.length), name, "tif")
}
