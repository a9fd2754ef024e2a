//! `GET /v1/slice/{ds}/{*path}?sel=…`: a region chosen by labels, its values CF-decoded,
//! with `Zarr-Selection` (the index selection it resolved to) and, in JSON and CSV, the
//! labels of the result.

use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;

use crate::analysis::coordinates::ArrayLabels;
use crate::analysis::select::Resolved;
use crate::catalog::Dataset;
use crate::error::{Error, Result};
use crate::http::budget_body;
use crate::http::conditional::EtagBuilder;
use crate::http::render::Render;
use crate::http::revalidation::Revalidation;
use crate::http::state::AppState;
use crate::http::table::{self, Table};
use zarrd_core::coords::cf::CfValues;
use zarrd_core::read::ArrayReader;

/// One label-selection request.
pub struct Labelled<'a> {
    pub state: &'a AppState,
    pub ds: &'a str,
    pub dataset: &'a Dataset,
    pub array: &'a ArrayReader,
    pub render: Render,
}

impl<'a> Labelled<'a> {
    pub async fn respond(&self, sel: &str, headers: &HeaderMap) -> Result<Response> {
        let array = &self.array.planned();
        if !array.meta.data_type.is_real_number() {
            return Err(Error::BadRequest(format!(
                "sel= selects numbers by their labels; `{}` holds {} values: use s=",
                array.path,
                array.meta.data_type.name()
            )));
        }
        let labels = self.state.coords.of(&self.state.catalog, self.dataset, array).await?;
        let grid = || self.state.grids.of(&self.state.catalog, self.dataset, array);
        let resolved = Resolved::new(sel, &array.meta.shape, &labels, grid).await?;
        let cf = CfValues::of(&array.meta);
        // A latitude/longitude box on a grid leaves cells of its index box out: NaN.
        let cf = if resolved.mask.is_some() { cf.floating() } else { cf };
        let decoded = table::typed(&array.meta, cf.decoded);
        let table = Table::of_selection(&self.render, &labels, &resolved);
        let render_bytes =
            table.check(&self.render, &decoded, &resolved.shape, self.state.config.limits.max_response_bytes)?;
        let revalidation = self.revalidation(&resolved, &labels);
        if let Some(unchanged) = revalidation.before_read(headers, resolved.validation_versions(array)).await? {
            return Ok(with_selection(unchanged, resolved.zarr_selection.as_deref()));
        }
        let mut held = array.budget.reserve(render_bytes + resolved.len() * cf.decoded.size() as u64).await?;
        let (stored, versions, reservation) = resolved.read(array).await?;
        held.merge(reservation);
        let body = async {
            let mut data = cf.decode(stored);
            if let Some(mask) = &resolved.mask {
                mask.blank(&mut data, cf.decoded, &resolved.full_shape);
            }
            let response = table.respond(&self.render, data, &decoded, &resolved.shape).await?;
            Ok(with_selection(budget_body::holding(response, held), resolved.zarr_selection.as_deref()))
        };
        revalidation.respond(headers, &versions, body).await
    }

    /// A strong `ETag` from the array's metadata, the labels' versions, the request as
    /// resolved and the version of every stored object read.
    fn revalidation(&self, resolved: &Resolved, labels: &ArrayLabels) -> Revalidation<'a> {
        let mut tag = EtagBuilder::new("sel");
        tag.text(self.ds).text(&self.array.path).digest(self.array.meta.digest);
        self.render.hash_into(&mut tag);
        for digest in &labels.digests {
            tag.digest(*digest);
        }
        if let Some((y, x)) = resolved.grid_digest {
            tag.digest(y).digest(x);
        }
        for p in &resolved.picked {
            tag.number(u64::from(matches!(p, zarrd_core::coords::sel::Picked::Index(_))));
            for run in p.runs() {
                tag.number(run.start).number(run.count);
            }
        }
        Revalidation::new(tag, &self.state.config, self.render.varies())
    }
}

/// Adds `Zarr-Selection`, when the selection is one index selection (not two reads across
/// a longitude seam).
pub fn with_selection(mut response: Response, selection: Option<&str>) -> Response {
    if let Some(text) = selection.and_then(|t| HeaderValue::from_str(t).ok()) {
        response.headers_mut().insert("zarr-selection", text);
    }
    response
}
