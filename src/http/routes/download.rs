//! `GET /v1/slice/{ds}/{*path}?s=|sel=…&format=nc`: a region as a NetCDF classic file
//! ([`crate::downloads`]), its coordinates read first and its data variable streamed band
//! by band from the planned read, big-endian as NetCDF stores it. `format=tif` (a Cloud
//! Optimized GeoTIFF) is [`super::geotiff`]'s, on the same selection and read.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use crate::analysis::coordinates::ArrayLabels;
use crate::analysis::grids::Found;
use crate::analysis::select::Resolved;
use crate::catalog::Dataset;
use crate::downloads::attributes;
use crate::downloads::cf_file::{self, Described, Region};
use crate::downloads::netcdf::{self, Layout};
use crate::error::{Error, Result};
use crate::http::body;
use crate::http::budget_body;
use crate::http::conditional::{EtagBuilder, Varies};
use crate::http::query::SliceQuery;
use crate::http::revalidation::Revalidation;
use crate::http::routes::labelled::with_selection;
use crate::http::state::AppState;
use zarrd_core::ops::budget::Reservation;
use zarrd_core::read::selection::{DimSelection, Selection};
use zarrd_core::read::strings::TextOutput;
use zarrd_core::read::{ArrayReader, Decoded, ObjectVersion, ReadError};
use zarrd_core::zarr::data_type::DataType;

use crate::downloads::netcdf::MEDIA_TYPE;

/// What the data variable is read by.
pub(super) enum Read {
    Indices(Vec<DimSelection>),
    Labels(Box<Resolved>),
}

impl Read {
    /// The `Zarr-Selection` of a label selection that is one index box.
    pub(super) fn zarr_selection(&self) -> Option<String> {
        match self {
            Self::Labels(resolved) => resolved.zarr_selection.clone(),
            Self::Indices(_) => None,
        }
    }

    /// The versions of the objects the read would take, for a 304 before reading them.
    pub(super) async fn validation_versions(&self, array: &ArrayReader) -> Result<Vec<(String, ObjectVersion)>> {
        Ok(match self {
            Self::Indices(selection) => array.validation_object_versions(selection).await?,
            Self::Labels(resolved) => resolved.validation_versions(array).await?,
        })
    }
}

/// One NetCDF download.
pub struct Download<'a> {
    pub state: &'a AppState,
    pub ds: &'a str,
    pub dataset: &'a Dataset,
    pub array: &'a ArrayReader,
}

impl Download<'_> {
    pub async fn respond(&self, query: &SliceQuery, headers: &HeaderMap) -> Result<Response> {
        no_rendering(query)?;
        let array = self.array;
        let meta = &array.meta;
        let text = cf_file::is_text(meta.data_type);
        if !text && cf_file::nc_type(meta.data_type).is_none() {
            return Err(cf_file::unsupported(array));
        }
        let (catalog, config) = (&self.state.catalog, &self.state.config);
        let labels = self.state.coords.of(catalog, self.dataset, array).await?;
        // A grid the model cannot use (or a curvilinear one too large to index) only leaves
        // its mapping out of the file.
        let grid = match self.state.grids.of(catalog, self.dataset, array).await {
            Ok(grid) => grid,
            Err(Error::Unsupported(_) | Error::OverLimit(_)) => None,
            Err(e) => return Err(e),
        };
        let (region, read, request) = self.selection(query, &labels, grid.clone()).await?;
        let limit = config.limits.max_response_bytes;
        // Text is read first: the file's string dimension is its longest element.
        let strings = match (&read, text) {
            (_, false) => None,
            (Read::Indices(selection), true) => Some(array.read_strings(selection, limit).await?),
            (Read::Labels(_), true) => {
                return Err(Error::BadRequest(format!("sel= selects numbers; `{}` holds text: use s=", array.path)));
            }
        };
        let width = strings.as_ref().map(|t| t.elements.iter().map(|e| e.len()).max().unwrap_or(0).max(1) as u64);
        let source = format!("{}/{}", self.ds, array.path);
        let mut described = cf_file::describe(
            catalog,
            self.dataset,
            array,
            (&labels, grid.as_deref()),
            &region,
            (&source, &request),
            width,
        )
        .await?;
        // Cells outside a latitude/longitude box are missing: an integer variable without a
        // fill declares the value they get, chosen once the data is read (of the same width,
        // so the file's length is known now).
        let declares = matches!(&read, Read::Labels(r) if r.mask.is_some())
            && described.fill.is_none()
            && attributes::default_fill(meta.data_type).is_some();
        if declares {
            described.declare_fill(&meta.fill_value);
        }
        let mut layout = described.file.layout().map_err(|e| Error::Unsupported(e.to_string()))?;
        if layout.length > limit {
            return Err(Error::TooLarge { what: "NetCDF", size: u128::from(layout.length), limit });
        }
        let zarr_selection = read.zarr_selection();
        let revalidation = Revalidation::new(self.tag(&labels, &described, &request), config, VARIES);
        // In the order the 200's validators take them: the data's objects, then the
        // coordinates'.
        let versions = async {
            let mut versions = read.validation_versions(array).await?;
            versions.extend(described.versions.iter().cloned());
            Ok::<_, Error>(versions)
        };
        if let Some(unchanged) = revalidation.before_read(headers, versions).await? {
            return Ok(with_selection(unchanged, zarr_selection.as_deref()));
        }
        let item = meta.data_type.size();
        let Fetched { data, mut versions, mut reservation, masked } =
            read_data(array, read, strings.zip(width), (described.fill.clone(), true)).await?;
        if let Some(value) = masked.filter(|_| declares) {
            described.declare_fill(&value);
            layout = described.file.layout().map_err(|e| Error::Unsupported(e.to_string()))?;
        }
        // The coordinates' memory stays held with the data's until the file is sent.
        if let Some(coordinates) = described.reservation.take() {
            reservation.merge(coordinates);
        }
        versions.extend(described.versions.iter().cloned());
        let name = array.path.rsplit('/').next().unwrap_or("data").to_owned();
        let (shape, data_type) = (region.shape(), meta.data_type);
        let build = async move {
            let response = described_as_data(respond(&layout, described, data, item, &name), &shape, data_type);
            Ok(with_selection(budget_body::holding(response, reservation), zarr_selection.as_deref()))
        };
        revalidation.respond(headers, &versions, build).await
    }

    /// The region `query` selects (by indices or labels), what reads it, and the
    /// selection as the request gave it.
    pub(super) async fn selection(
        &self,
        query: &SliceQuery,
        labels: &ArrayLabels,
        grid: Option<Arc<Found>>,
    ) -> Result<(Region, Read, String)> {
        let meta = &self.array.meta;
        Ok(match (query.s.as_deref(), query.sel.as_deref()) {
            (Some(_), Some(_)) => {
                return Err(Error::BadRequest("give either s= (indices) or sel= (labels), not both".into()));
            }
            (_, Some(sel)) => {
                let resolved = Resolved::new(sel, &meta.shape, labels, || async { Ok(grid) }).await?;
                (Region::of_resolved(&resolved), Read::Labels(Box::new(resolved)), format!("sel={sel}"))
            }
            (s, None) => {
                let selection = Selection::parse(s.unwrap_or(""))?.resolve(&meta.shape)?;
                (Region::of_selection(&selection), Read::Indices(selection), format!("s={}", s.unwrap_or("")))
            }
        })
    }

    /// What the file depends on besides the objects read: the array's metadata, its
    /// coordinates' and grid mapping's, and the request (which `history` names).
    fn tag(&self, labels: &ArrayLabels, described: &Described, request: &str) -> EtagBuilder {
        let mut tag = EtagBuilder::new("nc");
        tag.text(self.ds).text(&self.array.path).digest(self.array.meta.digest).text(request);
        for digest in labels.digests.iter().chain(&described.digests) {
            tag.digest(*digest);
        }
        tag
    }
}

/// A download is a file, not a picture: the png rendering parameters are refused.
pub(super) fn no_rendering(query: &SliceQuery) -> Result<()> {
    if query.vmin.is_some() || query.vmax.is_some() || query.colormap.is_some() {
        return Err(Error::BadRequest("`vmin`, `vmax` and `colormap` apply only to format=png".into()));
    }
    Ok(())
}

/// The data variable's values, what they were read from, the memory they hold, and the
/// value of the cells marked missing (a latitude/longitude box's outside), if any.
pub(super) struct Fetched {
    pub data: Decoded,
    pub versions: Vec<(String, ObjectVersion)>,
    pub reservation: Reservation,
    pub masked: Option<Vec<u8>>,
}

/// The data variable's values as read: text padded to the string dimension, a label
/// selection gathered, an index selection streamed when `stream` says so (else whole).
/// The cells of a label selection's index box outside its latitude/longitude box are
/// marked missing with the `declared` fill, else one of the element's type no cell inside
/// holds (NaN; else the Zarr fill or NetCDF's default one, else another free value), which
/// comes back with the data, for the file to declare.
pub(super) async fn read_data(
    array: &ArrayReader,
    read: Read,
    strings: Option<(TextOutput, u64)>,
    (declared, stream): (Option<Vec<u8>>, bool),
) -> Result<Fetched> {
    let meta = &array.meta;
    Ok(match (read, strings) {
        (_, Some((strings, width))) => {
            let width = width as usize;
            let mut chars = Vec::with_capacity(strings.elements.len() * width);
            for element in &strings.elements {
                chars.extend_from_slice(element);
                chars.resize(chars.len() + width - element.len(), 0);
            }
            Fetched {
                data: Decoded::Whole(chars),
                versions: strings.object_versions,
                reservation: strings.reservation,
                masked: None,
            }
        }
        (Read::Indices(selection), None) => {
            let output = array.read(&selection, 0, stream).await?;
            Fetched {
                data: output.data,
                versions: output.object_versions,
                reservation: output.reservation,
                masked: None,
            }
        }
        (Read::Labels(resolved), None) => {
            let (mut stored, versions, reservation) = resolved.read(array).await?;
            let masked = match &resolved.mask {
                Some(mask) => {
                    let preferred = [Some(meta.fill_value.clone()), attributes::default_fill(meta.data_type)];
                    let preferred: Vec<Vec<u8>> = preferred.into_iter().flatten().collect();
                    Some(mask.mark_outside(
                        &mut stored,
                        meta.data_type,
                        &resolved.full_shape,
                        (declared, &preferred),
                    )?)
                }
                None => None,
            };
            Fetched { data: Decoded::Whole(stored), versions, reservation, masked }
        }
    })
}

/// A download is one media type whatever the client accepts, compressed on the way.
const VARIES: Varies = Varies { accept: false, encoding: true };

/// The file: the header and the coordinates, then the data variable as it arrives, made
/// big-endian, then its padding.
fn respond(layout: &Layout, described: Described, data: Decoded, item: usize, name: &str) -> Response {
    let head = [layout.header.clone(), described.leading].concat();
    let padding = vec![0u8; Layout::padding(described.file.data_bytes(described.file.variables.len() - 1) as u64)];
    let swap = move |bytes: Bytes| -> Bytes {
        let mut owned = bytes.try_into_mut().map_or_else(|shared| shared.to_vec(), Into::into);
        netcdf::to_big_endian(&mut owned, item);
        Bytes::from(owned)
    };
    let data: futures::stream::BoxStream<'static, std::result::Result<Bytes, ReadError>> = match data {
        Decoded::Whole(v) => futures::stream::iter([Ok(swap(Bytes::from(v)))]).boxed(),
        Decoded::Elements(b) => futures::stream::iter([Ok(swap(b))]).boxed(),
        Decoded::Bands(mut bands) => {
            futures::stream::poll_fn(move |cx| bands.poll_recv(cx)).map(move |band| band.map(swap)).boxed()
        }
    };
    let stream = futures::stream::iter([Ok(Bytes::from(head))])
        .chain(data)
        .chain(futures::stream::iter((!padding.is_empty()).then(|| Ok(Bytes::from(padding)))));
    attachment(body::streamed(stream, layout.length).into_response(), (MEDIA_TYPE, layout.length), name, "nc")
}

/// As every data response: `Zarr-Shape` and `Zarr-Data-Type`, the result's shape and
/// stored type.
pub(super) fn described_as_data(mut response: Response, shape: &[u64], data_type: DataType) -> Response {
    let shape = shape.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let headers = response.headers_mut();
    headers.insert("zarr-shape", HeaderValue::from_str(&shape).unwrap_or(HeaderValue::from_static("")));
    headers.insert("zarr-data-type", HeaderValue::from_static(data_type.name()));
    response
}

/// A file's response: its media type and length, and `Content-Disposition: attachment`
/// with the file name `name.extension`.
pub(super) fn attachment(
    mut response: Response,
    (media, length): (&'static str, u64),
    name: &str,
    extension: &str,
) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    let file = netcdf::name(name).replace(['"', '\\'], "_");
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{file}.{extension}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}
