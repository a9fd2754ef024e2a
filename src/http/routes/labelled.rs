//! `GET /v1/slice/{ds}/{*path}?sel=…`: a region chosen by labels, its values CF-decoded,
//! with `Zarr-Selection` (the index selection it resolved to) and, in JSON and CSV, the
//! labels of the result.

use std::borrow::Cow;

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::analysis::coordinates::ArrayLabels;
use crate::analysis::select::Resolved;
use crate::catalog::Dataset;
use crate::error::{Error, Result};
use crate::http::budget_body;
use crate::http::conditional::{EtagBuilder, Validators, cache_control};
use crate::http::encode::Format;
use crate::http::render::Render;
use crate::http::state::AppState;
use crate::http::table;
use zarrd_core::coords::cf::CfValues;
use zarrd_core::read::{ArrayReader, ObjectVersion};
use zarrd_core::zarr::metadata::ArrayMetadata;

/// One label-selection request.
pub struct Labelled<'a> {
    pub state: &'a AppState,
    pub ds: &'a str,
    pub dataset: &'a Dataset,
    pub array: &'a ArrayReader,
    pub render: Render,
}

impl Labelled<'_> {
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
        let resolved = Resolved::new(sel, &array.meta.shape, &labels)?;
        let cf = CfValues::of(&array.meta);
        // Rendered as the decoded type: the stored one unless packing or masks widen it.
        let decoded = if cf.decoded == array.meta.data_type {
            Cow::Borrowed(array.meta.as_ref())
        } else {
            Cow::Owned(ArrayMetadata { data_type: cf.decoded, ..ArrayMetadata::clone(&array.meta) })
        };
        // Labels as text only for the bodies that carry them (a year of dates is a
        // thousand strings: most of a binary answer's time).
        let labelled = matches!(self.render.format, Format::Csv | Format::Json);
        let (kept, points) = if labelled { table::columns(&labels, &resolved.picked) } else { Default::default() };
        let limit = self.state.config.limits.max_response_bytes;
        let render_bytes = if self.render.format == Format::Csv {
            let size = table::csv_bytes(resolved.len(), cf.decoded, &kept);
            if size > u128::from(limit) {
                return Err(Error::TooLarge { what: "CSV (the longest text of each row)", size, limit });
            }
            size as u64
        } else {
            self.render.check(&decoded, &resolved.shape, limit)?
        };
        if headers.contains_key(header::IF_NONE_MATCH) {
            let validators = self.validators(&resolved, &labels, &resolved.validation_versions(array).await?);
            if validators.current(headers) {
                return Ok(with_selection(validators.unchanged(), resolved.zarr_selection.as_deref()));
            }
        }
        let mut held = array.budget.reserve(render_bytes + resolved.len() * cf.decoded.size() as u64).await?;
        let (stored, versions, reservation) = resolved.read(array).await?;
        held.merge(reservation);
        let body = async {
            let data = cf.decode(stored);
            let shape = &resolved.shape;
            let response = match self.render.format {
                Format::Csv => self.render.with_data_headers(
                    table::csv(&data, cf.decoded, &kept).into_response(),
                    cf.decoded,
                    shape,
                )?,
                Format::Json => self.render.with_data_headers(
                    table::json(&data, cf.decoded, shape, &kept, &points).into_response(),
                    cf.decoded,
                    shape,
                )?,
                _ => self.render.respond(data, 0, &decoded, shape)?,
            };
            Ok(with_selection(budget_body::holding(response, held), resolved.zarr_selection.as_deref()))
        };
        self.validators(&resolved, &labels, &versions).respond(headers, body).await
    }

    /// A strong `ETag` from the array's metadata, the labels' versions, the request as
    /// resolved and the version of every stored object read.
    fn validators(
        &self,
        resolved: &Resolved,
        labels: &ArrayLabels,
        versions: &[(String, ObjectVersion)],
    ) -> Validators {
        let mut tag = EtagBuilder::new("sel");
        tag.text(self.ds).text(&self.array.path).digest(self.array.meta.digest);
        self.render.hash_into(&mut tag);
        for digest in &labels.digests {
            tag.digest(*digest);
        }
        for part in &resolved.parts {
            for d in &part.selection {
                tag.number(d.start).number(d.count);
            }
        }
        for p in &resolved.picked {
            tag.number(u64::from(matches!(p, zarrd_core::coords::sel::Picked::Index(_))));
        }
        for (key, version) in versions {
            tag.text(key).text(version.as_str());
        }
        let missing = versions.iter().any(|(_, v)| v.is_missing());
        Validators::new(tag.finish(), cache_control(&self.state.config, missing)).varying(self.render.varies())
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
