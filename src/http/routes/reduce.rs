//! `GET /v1/reduce/{ds}/{*path}?op=…&over=…[&sel=|s=][&weights=area][&within=WKT]
//! [&resample=DIM:FREQ][&coarsen=DIM:N,…]&format=npy|bin|json|csv|png`: statistics of a
//! selection computed next to the data, planned chunk by chunk (`zarrd_core::reduce`).

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use crate::analysis::reduction;
use crate::analysis::reduction::ReduceQuery;
use crate::error::{Error, Result};
use crate::http::conditional::EtagBuilder;
use crate::http::extract::NodePath;
use crate::http::query::{Query, RenderQuery};
use crate::http::render::Render;
use crate::http::revalidation::Revalidation;
use crate::http::routes::labelled::with_selection;
use crate::http::state::AppState;
use crate::http::table::{self, Table};
use zarrd_core::coords::cf::CfValues;
use zarrd_core::read::ArrayReader;

pub async fn reduce(
    State(state): State<AppState>,
    NodePath { ds, path }: NodePath,
    Query(params): Query<ReduceQuery>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response> {
    // Reductions are not drawn with a window or colormap: `format` only.
    let render =
        Render::from_request(&RenderQuery { format: params.format.clone(), ..RenderQuery::default() }, &headers)?;
    let request = reduction::parse(&params)?;
    let dataset = &state.catalog.dataset(&ds).await?;
    // Planned reads merge their own ranges; no window for other requests' (ArrayReader::planned).
    let array = state.catalog.array(dataset, &path).await?.planned();
    if !array.meta.data_type.is_real_number() {
        return Err(Error::BadRequest(format!(
            "reductions take numbers; `{path}` holds {} values",
            array.meta.data_type.name()
        )));
    }
    let labels = state.coords.of(&state.catalog, dataset, &array).await?;
    let grid = || state.grids.of(&state.catalog, dataset, &array);
    let cells = reduction::cells(&params, &array.meta.shape, &labels, grid).await?;
    let grid_digest = cells.grid_digest;
    let zarr_selection = cells.zarr_selection.clone();
    let scalars: Vec<(usize, u64)> =
        cells.scalar.iter().enumerate().filter(|(_, s)| **s).map(|(d, _)| (d, cells.selected[d][0])).collect();
    let limits = &state.config.limits;
    // The grid's own rules for `within` and `weights=area` (not needed otherwise).
    let grid = if request.within.is_some() || request.area_weights {
        state.grids.of(&state.catalog, dataset, &array).await?
    } else {
        None
    };
    let grid_digest = grid_digest.or(grid.as_ref().map(|g| g.digest));
    let checked = reduction::build(
        &request,
        (cells, grid.as_ref().map(|g| &g.grid)),
        &labels,
        limits.max_reduce_cells,
        limits.max_response_bytes,
    )?;
    let working = checked.working_bytes();
    let built = checked.built;
    let cf = CfValues::of(&array.meta);
    let meta = table::typed(&array.meta, reduction::result_type(&request, &cf));
    let table = Table::of_reduction(&render, &built, &scalars, &labels);
    let shape = built.reduction.shape();
    let render_bytes = table.check(&render, &meta, &shape, limits.max_response_bytes)?;
    let mut tag = etag(&ds, &path, &array, query.as_deref(), &render, &labels.digests);
    if let Some((y, x)) = grid_digest {
        tag.digest(y).digest(x);
    }
    let revalidation = Revalidation::new(tag, &state.config, render.varies());
    if let Some(unchanged) = revalidation.before_read(&headers, built.reduction.versions(&array)).await? {
        return Ok(with_selection(unchanged, zarr_selection.as_deref()));
    }
    let held = array.budget.reserve(working + render_bytes).await?;
    let reduced = Arc::new(built.reduction).run(&array).await?;
    let data = reduction::encode(&reduced.values, meta.data_type);
    let body = async {
        let response = table.respond(&render, data, &meta, &shape).await?;
        Ok(with_selection(crate::http::budget_body::holding(response, held), zarr_selection.as_deref()))
    };
    revalidation.respond(&headers, &reduced.object_versions, body).await
}

/// What a reduction depends on besides the stored objects: the array, the request and the
/// versions of its labels (the objects' versions complete the `ETag`).
fn etag(
    ds: &str,
    path: &str,
    array: &ArrayReader,
    query: Option<&str>,
    render: &Render,
    labels: &[u128],
) -> EtagBuilder {
    let mut tag = EtagBuilder::new("reduce");
    tag.text(ds).text(path).digest(array.meta.digest).text(query.unwrap_or(""));
    render.hash_into(&mut tag);
    for digest in labels {
        tag.digest(*digest);
    }
    tag
}
