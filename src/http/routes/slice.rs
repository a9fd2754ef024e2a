//! `GET /v1/slice/{ds}/{*path}?s=SELECTION&format=FORMAT`: a region of an array,
//! decoded server-side; with `sel=` instead of `s=`, chosen by labels
//! ([`super::labelled`]).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use crate::error::{Error, Result};
use crate::http::budget_body;
use crate::http::conditional::EtagBuilder;
use crate::http::extract::NodePath;
use crate::http::query::{Query, SliceQuery};
use crate::http::render::Render;
use crate::http::revalidation::Revalidation;
use crate::http::routes::download::Download;
use crate::http::routes::labelled::Labelled;
use crate::http::state::AppState;
use zarrd_core::read::selection::{DimSelection, Selection, result_shape};
use zarrd_core::read::{ArrayReader, Decoded};
use zarrd_core::zarr::metadata::ArrayMetadata;

pub async fn slice(
    State(state): State<AppState>,
    NodePath { ds, path }: NodePath,
    Query(query): Query<SliceQuery>,
    headers: HeaderMap,
) -> Result<Response> {
    // A download is a file of its own (`format=nc`, `format=tif`), not a rendering of
    // the values.
    let file = matches!(query.format.as_deref(), Some("nc" | "tif"));
    let render = if file { None } else { Some(Render::from_request(&query.render(), &headers)?) };
    let dataset = &state.catalog.dataset(&ds).await?;
    let array = state.catalog.array(dataset, &path).await?;
    let Some(render) = render else {
        let download = Download { state: &state, ds: &ds, dataset, array: &array };
        return if query.format.as_deref() == Some("tif") {
            download.geotiff(&query, &headers).await
        } else {
            download.respond(&query, &headers).await
        };
    };
    if let Some(sel) = query.sel.as_deref() {
        if query.s.is_some() {
            return Err(Error::BadRequest("give either s= (indices) or sel= (labels), not both".into()));
        }
        return Labelled { state: &state, ds: &ds, dataset, array: &array, render }.respond(sel, &headers).await;
    }
    let selection = Selection::parse(query.s.as_deref().unwrap_or(""))?.resolve(&array.meta.shape)?;
    let slice = Slice { state: &state, ds: &ds, path: &path, array: &array, selection, render };
    if array.meta.data_type.is_variable() { slice.text(&headers).await } else { slice.numbers(&headers).await }
}

/// One slice request, resolved.
struct Slice<'a> {
    state: &'a AppState,
    ds: &'a str,
    path: &'a str,
    array: &'a ArrayReader,
    selection: Vec<DimSelection>,
    render: Render,
}

impl<'a> Slice<'a> {
    /// The validators of the slice (a revalidation is answered before any chunk is fetched
    /// or decoded: from cached versions with no storage request, else from shard indexes
    /// or HEADs).
    fn revalidation(&self) -> Revalidation<'a> {
        let tag = etag(self.ds, self.path, &self.array.meta, &self.selection, &self.render);
        Revalidation::new(tag, &self.state.config, self.render.varies())
    }

    /// A slice of fixed-size elements: whole, a chunk's elements as they are, or streamed
    /// band by band.
    async fn numbers(&self, headers: &HeaderMap) -> Result<Response> {
        let (array, render) = (self.array, self.render);
        let shape = result_shape(&self.selection);
        let render_bytes = render.check(&array.meta, &shape, self.state.config.limits.max_response_bytes)?;
        let revalidation = self.revalidation();
        if let Some(unchanged) =
            revalidation.before_read(headers, array.validation_object_versions(&self.selection)).await?
        {
            return Ok(unchanged);
        }
        // JSON and PNG bodies are built beside the decoded data: their memory is reserved
        // first, and held (with the read's) until the body is sent.
        let mut held = array.budget.reserve(render_bytes).await?;
        let header_room = render.header_room(array.meta.data_type, &shape);
        let output = array.read(&self.selection, header_room, render.streams()).await?;
        held.merge(output.reservation);
        let body = async {
            let response = match output.data {
                Decoded::Whole(data) => render.respond(data, header_room, &array.meta, &shape).await?,
                Decoded::Elements(data) => render.respond_elements(data, &array.meta, &shape).await?,
                Decoded::Bands(bands) => render.respond_bands(bands, array.meta.data_type, &shape)?,
            };
            Ok(budget_body::holding(response, held))
        };
        revalidation.respond(headers, &output.object_versions, body).await
    }

    /// A slice of a `string` array: read whole (text sizes are known only once read), then
    /// checked against the response limit and the budget before the body is built.
    async fn text(&self, headers: &HeaderMap) -> Result<Response> {
        self.render.check_text(self.array.meta.data_type)?;
        let revalidation = self.revalidation();
        if let Some(unchanged) =
            revalidation.before_read(headers, self.array.validation_object_versions(&self.selection)).await?
        {
            return Ok(unchanged);
        }
        let limit = self.state.config.limits.max_response_bytes;
        let output = self.array.read_strings(&self.selection, limit).await?;
        let body = async {
            let mut held = output.reservation;
            let shape = result_shape(&self.selection);
            let response = self.render.respond_text(&output.elements, &shape, limit, self.array, &mut held).await?;
            Ok(budget_body::holding(response, held))
        };
        revalidation.respond(headers, &output.object_versions, body).await
    }
}

/// What a slice depends on besides the stored objects: the array's metadata and the
/// request (the objects' versions complete the `ETag`: `Validators::of_objects`).
fn etag(ds: &str, path: &str, meta: &ArrayMetadata, selection: &[DimSelection], render: &Render) -> EtagBuilder {
    let mut tag = EtagBuilder::new("slice");
    tag.text(ds).text(path).digest(meta.digest);
    render.hash_into(&mut tag);
    for d in selection {
        tag.number(d.start).number(d.step).number(d.count).number(u64::from(d.drop));
    }
    tag
}
