//! `GET /v1/chunks/{ds}/{*path}` (chunk listing) and `GET /v1/chunk/{ds}/{*path}` (one
//! chunk of the read grid, raw or decoded).

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};

use crate::error::{Error, Result};
use crate::http::budget_body;
use crate::http::conditional::{EtagBuilder, Validators, cache_control};
use crate::http::encode::json_response;
use crate::http::extract::NodePath;
use crate::http::middleware::NoCompress;
use crate::http::query::{ChunkQuery, ListQuery, Query};
use crate::http::render::Render;
use crate::http::schema::ChunkPage;
use crate::http::state::AppState;
use zarrd_core::ops::budget::Reservation;
use zarrd_core::read::ArrayReader;
use zarrd_core::read::chunk::ChunkShapes;
use zarrd_core::read::listing::ChunkState;
use zarrd_core::read::selection::Selection;

pub const DEFAULT_LIMIT: u64 = 1000;
pub const MAX_LIMIT: u64 = 10_000;

pub async fn list(
    State(state): State<AppState>,
    NodePath { ds, path }: NodePath,
    Query(query): Query<ListQuery>,
) -> Result<Response> {
    let inner = query.inner.0;
    let limit =
        match query.limit.as_deref() {
            None => DEFAULT_LIMIT,
            Some(v) => v.parse::<u64>().ok().filter(|l| (1..=MAX_LIMIT).contains(l)).ok_or_else(|| {
                Error::BadRequest(format!("`limit` must be an integer from 1 to {MAX_LIMIT}, got `{v}`"))
            })?,
        };
    let dataset = &state.catalog.dataset(&ds).await?;
    let array = state.catalog.array(dataset, &path).await?;
    let s = query.s.as_deref().unwrap_or("");
    let selection = Selection::parse(s)?.resolve(&array.meta.shape)?;
    // A cursor is bound to the listing it came from, so a stale or foreign one is refused.
    let mut sig = EtagBuilder::new("cursor");
    sig.text(&ds).text(&path).text(s).number(u64::from(inner));
    let sig = sig.finish();
    let sig = &sig[1..9];
    let offset = match query.cursor.as_deref() {
        None => 0,
        Some(c) => c
            .split_once('.')
            .filter(|(_, tag)| *tag == sig)
            .and_then(|(pos, _)| u64::from_str_radix(pos, 16).ok())
            .ok_or_else(|| Error::BadRequest(format!("`cursor` `{c}` does not belong to this listing; use the `next` value of the previous page with the same s and inner")))?,
    };
    let page = array.list_chunks(&selection, offset, limit, inner).await?;
    let body = ChunkPage {
        grid: array.meta.chunk_grid.kind.name(),
        chunks: &page.chunks,
        next: page.next.map(|n| format!("{n:x}.{sig}")),
    };
    let any_missing = page.chunks.iter().any(|c| c.state == ChunkState::Missing);
    Ok(json_response(&body, &cache_control(&state.config, any_missing)))
}

pub async fn chunk(
    State(state): State<AppState>,
    NodePath { ds, path }: NodePath,
    Query(query): Query<ChunkQuery>,
    headers: HeaderMap,
) -> Result<Response> {
    let decoded = query.decoded.0;
    if !decoded && (query.format.is_some() || query.window().given()) {
        return Err(Error::BadRequest(
            "`format`, `vmin` and `vmax` apply only with decoded=true; raw chunks are the stored bytes".into(),
        ));
    }
    // Raw chunks are the stored bytes whatever the client accepts (one representation,
    // never compressed); formats apply only to decoded chunks.
    let render = if decoded { Some(Render::from_request(&query.render(), &headers)?) } else { None };
    let dataset = &state.catalog.dataset(&ds).await?;
    let array = state.catalog.array(dataset, &path).await?;
    let grid = array.read_grid();
    let coords = parse_coords(query.c.as_deref(), &grid.grid_shape())?;
    let shapes = ChunkShapes::of(&grid, &coords);
    let limit = state.config.limits.max_response_bytes;
    let mut held = match &render {
        Some(render) => reserve_decoded(&array, render, &shapes, limit).await?,
        None => Reservation::default(),
    };
    let mut chunk = array.stored_chunk(&coords).await?.map_err(|absent| Error::NotFound(absent.to_string()))?;
    held.merge(std::mem::take(&mut chunk.reservation));
    let mut tag = EtagBuilder::new("chunk");
    tag.text(&ds).text(&path).text(&chunk.key).text(&chunk.version).number(u64::from(decoded));
    if let Some(r) = &chunk.range {
        tag.number(r.start).number(r.end);
    }
    if let Some(render) = &render {
        tag.digest(array.meta.digest);
        render.hash_into(&mut tag);
    }
    let varies = render.as_ref().map(Render::varies).unwrap_or_default();
    let validators = Validators::new(tag.finish(), state.config.http.cache_control.as_str()).varying(varies);
    let body = async {
        let mut response = match render {
            None => raw(chunk.bytes.clone(), chunk.range.as_ref())?,
            Some(render) if array.meta.data_type.is_variable() => {
                let elements = array.decode_text_chunk(&chunk, &shapes, limit, &mut held).await?;
                render.respond_text(&elements, &shapes.data, limit, &array, &mut held).await?
            }
            Some(render) => {
                render.respond(array.decode_chunk(&chunk, &shapes).await?, 0, &array.meta, &shapes.data).await?
            }
        };
        let key =
            HeaderValue::from_str(&chunk.key).map_err(|e| Error::internal_from("the Zarr-Chunk-Key header", e))?;
        response.headers_mut().insert("zarr-chunk-key", key);
        Ok(budget_body::holding(response, held))
    };
    validators.respond(&headers, body).await
}

/// Checks, before anything is read, that a chunk of `shapes` can be rendered, and reserves
/// what decoding it takes: the chunk decoded whole, its clipped copy and the rendered body
/// (text sizes are known only once decoded: checked and reserved then).
async fn reserve_decoded(
    array: &ArrayReader,
    render: &Render,
    shapes: &ChunkShapes,
    limit: u64,
) -> Result<Reservation> {
    if array.meta.data_type.is_variable() {
        render.check_text(array.meta.data_type)?;
        return Ok(Reservation::default());
    }
    let render_bytes = render.check(&array.meta, &shapes.data, limit)?;
    Ok(array.budget.reserve(array.decoded_chunk_bytes(shapes) + render_bytes).await?)
}

/// A stored chunk's bytes as they are (never compressed again), with the byte range of a
/// shard they were cut from.
fn raw(bytes: bytes::Bytes, range: Option<&std::ops::Range<u64>>) -> Result<Response> {
    let mut r = bytes.into_response();
    r.headers_mut().insert(axum::http::header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    r.extensions_mut().insert(NoCompress);
    if let Some(range) = range {
        let value = format!("{}-{}", range.start, range.end - 1);
        r.headers_mut().insert(
            "zarr-byte-range",
            HeaderValue::from_str(&value).map_err(|e| Error::internal_from("the Zarr-Byte-Range header", e))?,
        );
    }
    Ok(r)
}

/// `c=I,J,…`: one index per dimension inside the read grid (empty for a 0-d array).
fn parse_coords(raw: Option<&str>, grid_shape: &[u64]) -> Result<Vec<u64>> {
    let raw = raw.unwrap_or("").trim();
    let allowed = || {
        if grid_shape.is_empty() {
            "this 0-d array has one chunk: leave `c` empty".to_owned()
        } else {
            format!(
                "the read grid has shape [{}], so each index must be below its entry",
                grid_shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
            )
        }
    };
    let coords: Vec<u64> = if raw.is_empty() {
        Vec::new()
    } else {
        raw.split(',').map(|p| p.trim().parse::<u64>()).collect::<Result<_, _>>().map_err(|_| {
            Error::BadRequest(format!("`c` must be comma-separated non-negative integers, got `{raw}`; {}", allowed()))
        })?
    };
    if coords.len() != grid_shape.len() || coords.iter().zip(grid_shape).any(|(c, n)| c >= n) {
        return Err(Error::BadRequest(format!("chunk `{raw}` is not in the read grid; {}", allowed())));
    }
    Ok(coords)
}
