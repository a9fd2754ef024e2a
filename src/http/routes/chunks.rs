//! `GET /v1/chunks/{ds}/{*path}` (chunk listing) and `GET /v1/chunk/{ds}/{*path}` (one
//! chunk of the read grid, raw or decoded).

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::error::{Error, Result};
use crate::http::conditional::{EtagBuilder, Varies, cache_control, not_modified, unchanged, with_varying_validators};
use crate::http::encode::json_response;
use crate::http::extract::{NodePath, Params};
use crate::http::middleware::NoCompress;
use crate::http::routes::slice::Render;
use crate::http::state::AppState;
use zarrd_core::ops::budget::Reservation;
use zarrd_core::read::listing::ChunkState;
use zarrd_core::read::locate::Located;
use zarrd_core::read::selection::Selection;
use zarrd_core::read::strings;
use zarrd_core::read::{ArrayReader, ReadError};
use zarrd_core::zarr::copy::{Region, copy_region};

pub const DEFAULT_LIMIT: u64 = 1000;
pub const MAX_LIMIT: u64 = 10_000;

pub async fn list(
    State(state): State<AppState>,
    NodePath { ds, path }: NodePath,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    let params = Params::parse(query.as_deref(), &["s", "inner", "limit", "cursor"])?;
    let inner = params.flag("inner")?;
    let limit =
        match params.get("limit") {
            None => DEFAULT_LIMIT,
            Some(v) => v.parse::<u64>().ok().filter(|l| (1..=MAX_LIMIT).contains(l)).ok_or_else(|| {
                Error::BadRequest(format!("`limit` must be an integer from 1 to {MAX_LIMIT}, got `{v}`"))
            })?,
        };
    let dataset = &state.catalog.dataset(&ds).await?;
    let array = state.catalog.array(dataset, &path).await?;
    let s = params.get("s").unwrap_or("");
    let selection = Selection::parse(s)?.resolve(&array.meta.shape)?;
    // A cursor is bound to the listing it came from, so a stale or foreign one is refused.
    let mut sig = EtagBuilder::new("cursor");
    sig.text(&ds).text(&path).text(s).number(u64::from(inner));
    let sig = sig.finish();
    let sig = &sig[1..9];
    let offset = match params.get("cursor") {
        None => 0,
        Some(c) => c
            .split_once('.')
            .filter(|(_, tag)| *tag == sig)
            .and_then(|(pos, _)| u64::from_str_radix(pos, 16).ok())
            .ok_or_else(|| Error::BadRequest(format!("`cursor` `{c}` does not belong to this listing; use the `next` value of the previous page with the same s and inner")))?,
    };
    let page = array.list_chunks(&selection, offset, limit, inner).await?;
    let body = json!({
        "grid": array.meta.chunk_grid.kind.name(),
        "chunks": &page.chunks,
        "next": page.next.map(|n| format!("{n:x}.{sig}")),
    });
    let any_missing = page.chunks.iter().any(|c| c.state == ChunkState::Missing);
    Ok(json_response(&body, &cache_control(&state.config, any_missing)))
}

pub async fn chunk(
    State(state): State<AppState>,
    NodePath { ds, path }: NodePath,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response> {
    let params = Params::parse(query.as_deref(), &["c", "decoded", "format", "vmin", "vmax"])?;
    let decoded = params.flag("decoded")?;
    if !decoded && ["format", "vmin", "vmax"].iter().any(|p| params.get(p).is_some()) {
        return Err(Error::BadRequest(
            "`format`, `vmin` and `vmax` apply only with decoded=true; raw chunks are the stored bytes".into(),
        ));
    }
    // Raw chunks are the stored bytes whatever the client accepts (one representation,
    // never compressed); formats apply only to decoded chunks.
    let render = if decoded {
        Render::from_request(&params, &headers)?
    } else {
        Render { format: crate::http::encode::Format::Bin, vmin: None, vmax: None, colormap: None, negotiated: false }
    };
    let varies = if decoded { render.varies() } else { Varies::default() };
    let dataset = &state.catalog.dataset(&ds).await?;
    let array = state.catalog.array(dataset, &path).await?;
    let grid = array.read_grid();
    let coords = parse_coords(params.get("c"), &grid.grid_shape())?;
    let data_shape = grid.data_shape(&coords);
    // A decoded chunk needs its full decoded size (and the clipped copy, and the rendered
    // body) in memory: reserved from the budget before anything is read.
    let mut held = Reservation::default();
    let text = array.meta.data_type.is_variable();
    if decoded && text {
        // Text sizes are known only once decoded: checked and reserved then.
        render.check_text(array.meta.data_type)?;
    } else if decoded {
        let render_bytes = render.check(&array.meta, &data_shape, state.config.limits.max_response_bytes)?;
        let item = array.meta.data_type.size() as u64;
        let chunk_bytes = grid.chunk_shape(&coords).iter().product::<u64>() * item;
        let clipped_bytes = data_shape.iter().product::<u64>() * item;
        held = array.budget.reserve(chunk_bytes + clipped_bytes + render_bytes).await?;
    }
    // A shard rewritten between reading its index and its bytes is retried once.
    let found = match fetch_chunk(&array, &coords).await {
        Err(e) if e.is_changed() => fetch_chunk(&array, &coords).await?,
        other => other?,
    };
    let ChunkBytes { key, range, bytes, version, reservation } = found.map_err(Error::NotFound)?;
    held.merge(reservation);
    let mut tag = EtagBuilder::new("chunk");
    tag.text(&ds).text(&path).text(&key).text(&version).number(u64::from(decoded));
    if let Some(r) = &range {
        tag.number(r.start).number(r.end);
    }
    if decoded {
        tag.digest(array.meta.digest);
        render.hash_into(&mut tag);
    }
    let etag = tag.finish();
    let cache_control = &state.config.http.cache_control;
    if not_modified(&headers, &etag) {
        return Ok(unchanged(&etag, cache_control, varies));
    }
    let mut response = if decoded && text {
        decoded_text(&array, &key, bytes, &grid.chunk_shape(&coords), &data_shape, render, &state, &mut held).await?
    } else if decoded {
        let meta = std::sync::Arc::clone(&array.meta);
        let chunk_shape = grid.chunk_shape(&coords);
        let chain = array.read_chain().clone();
        let clipped_shape = data_shape.clone();
        let chunk_key = key.clone();
        let data = zarrd_core::ops::cpu::run(move || -> Result<Vec<u8>> {
            let full = chain
                .decode(&bytes, &chunk_shape, meta.data_type, &meta.fill_value)
                .map_err(|source| Error::from(ReadError::Corrupt { key: chunk_key, source }))?;
            if clipped_shape == chunk_shape {
                return Ok(full);
            }
            let item = meta.data_type.size();
            let mut out = vec![0u8; clipped_shape.iter().product::<u64>() as usize * item];
            let zeros = vec![0; chunk_shape.len()];
            let ones = vec![1; chunk_shape.len()];
            let region = Region {
                src_shape: &chunk_shape,
                src_start: &zeros,
                src_step: &ones,
                dst_shape: &clipped_shape,
                dst_start: &zeros,
                count: &clipped_shape,
            };
            copy_region(&full, &mut out, &region, item);
            Ok(out)
        })
        .await
        .map_err(Error::Internal)??;
        render.respond(data, 0, &array.meta, &data_shape)?
    } else {
        raw(bytes, range.as_ref())?
    };
    response
        .headers_mut()
        .insert("zarr-chunk-key", HeaderValue::from_str(&key).map_err(|e| Error::Internal(e.to_string()))?);
    let body = std::mem::take(response.body_mut());
    *response.body_mut() = crate::http::budget_body::held(body, held);
    Ok(with_varying_validators(response, &etag, cache_control, varies))
}

/// A stored chunk's bytes as they are (never compressed again), with the byte range of a
/// shard they were cut from.
fn raw(bytes: bytes::Bytes, range: Option<&std::ops::Range<u64>>) -> Result<Response> {
    let mut r = bytes.into_response();
    r.headers_mut().insert(axum::http::header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    r.extensions_mut().insert(NoCompress);
    if let Some(range) = range {
        let value = format!("{}-{}", range.start, range.end - 1);
        r.headers_mut()
            .insert("zarr-byte-range", HeaderValue::from_str(&value).map_err(|e| Error::Internal(e.to_string()))?);
    }
    Ok(r)
}

/// A decoded chunk of a `string` array in `render`'s format (json or npy), clipped to the
/// array. The decode buffer is reserved from what the chunk's compressor records, the
/// clipped text and the body before they are built; all are held in `held`.
#[allow(clippy::too_many_arguments)]
async fn decoded_text(
    array: &ArrayReader,
    key: &str,
    bytes: bytes::Bytes,
    chunk_shape: &[u64],
    data_shape: &[u64],
    render: Render,
    state: &AppState,
    held: &mut Reservation,
) -> Result<Response> {
    let limit = state.config.limits.max_response_bytes;
    let chain = array.read_chain().clone();
    let elements = chunk_shape.iter().product::<u64>();
    let cost = strings::decode_cost(&chain, &bytes, elements, limit.min(array.budget.total() / 4));
    let scratch = array.budget.reserve(cost.reserve).await?;
    let (task_key, task_shape) = (key.to_owned(), chunk_shape.to_vec());
    let chunk = zarrd_core::ops::cpu::run(move || {
        strings::decode_chunk(&chain, &bytes, &task_shape, cost, &task_key).map_err(Error::from)
    })
    .await
    .map_err(Error::Internal)??;
    let n = data_shape.iter().product::<u64>();
    let size = strings::clipped_text_bytes(&chunk, chunk_shape, data_shape) + n * strings::ELEMENT_BYTES;
    if size > limit {
        return Err(Error::TooLarge { what: "text", size: u128::from(size), limit });
    }
    held.merge(array.budget.reserve(size).await?);
    let clipped = strings::clip(&chunk, chunk_shape, data_shape);
    drop((chunk, scratch));
    render.respond_text(&clipped, data_shape, limit, array, held).await
}

/// The encoded bytes of a read-grid chunk and where they came from.
struct ChunkBytes {
    key: String,
    /// The byte range within its shard, when cut from one.
    range: Option<std::ops::Range<u64>>,
    bytes: bytes::Bytes,
    version: String,
    /// The memory budget held for `bytes`.
    reservation: Reservation,
}

/// Reads read-grid chunk `coords`; `Ok(Err(detail))` when it is missing or empty.
async fn fetch_chunk(array: &ArrayReader, coords: &[u64]) -> Result<Result<ChunkBytes, String>, ReadError> {
    Ok(match array.locate(coords).await? {
        Located::Object { key } => match array.get_budgeted(&key).await? {
            Some((object, reservation)) => {
                Ok(ChunkBytes { key, range: None, bytes: object.bytes, version: object.version, reservation })
            }
            None => Err(format!("chunk `{key}` is missing (it reads as the fill value)")),
        },
        Located::MissingShard { key } => Err(format!("shard `{key}` is missing (the chunk reads as the fill value)")),
        Located::Empty { key } => {
            Err(format!("the chunk is marked empty in shard `{key}` (it reads as the fill value)"))
        }
        Located::InShard { key, range, e_tag, version } => {
            let reservation = array.budget.reserve(range.end - range.start).await?;
            let mut parts = array.read_ranges(&key, e_tag.as_deref(), std::slice::from_ref(&range)).await?;
            let bytes = parts.pop().unwrap_or_default();
            Ok(ChunkBytes { key, range: Some(range), bytes, version, reservation })
        }
    })
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
