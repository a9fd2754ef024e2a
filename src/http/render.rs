//! How decoded data becomes a response body, for the routes that serve array data (slices
//! and decoded chunks): the format negotiated from `format` or `Accept`, the display window
//! of PNG, the checks made before any data is read, and the data headers.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::error::{Error, Result};
use crate::http::budget_body;
use crate::http::conditional::{EtagBuilder, Varies};
use crate::http::encode::{self, Format};
use crate::http::query::RenderQuery;
use crate::images::render::Colormap;
use zarrd_core::zarr::data_type::DataType;
use zarrd_core::zarr::metadata::ArrayMetadata;

/// Bodies made (JSON, PNG) from more decoded bytes than this are made in the CPU pool; a
/// smaller one costs less to make than the hop there.
const RENDER_ASIDE: usize = 64 * 1024;

/// How decoded data becomes a response body.
#[derive(Debug, Clone, Copy)]
pub struct Render {
    pub format: Format,
    pub vmin: Option<f64>,
    pub vmax: Option<f64>,
    /// PNG in colour through this colormap instead of gray.
    pub colormap: Option<Colormap>,
    /// The format was chosen from `Accept` (no `format` parameter).
    pub negotiated: bool,
}

impl Render {
    /// `format` (or `Accept`), the window and the colormap of a request.
    pub fn from_request(query: &RenderQuery, headers: &HeaderMap) -> Result<Self> {
        let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
        // The same window rule as IIIF and map tiles.
        let (vmin, vmax) = query.window.checked()?;
        Ok(Self {
            format: Format::negotiate(query.format.as_deref(), accept)?,
            vmin,
            vmax,
            colormap: query.colormap,
            negotiated: query.format.is_none(),
        })
    }

    /// Raw bytes as stored: one representation whatever the client accepts.
    pub fn raw() -> Self {
        Self { format: Format::Bin, vmin: None, vmax: None, colormap: None, negotiated: false }
    }

    /// What the response varies on: `Accept` when it chose the media type; the encoding
    /// unless it is a PNG (images are never compressed).
    pub fn varies(&self) -> Varies {
        Varies { accept: self.negotiated, encoding: self.format != Format::Png }
    }

    pub fn hash_into(&self, tag: &mut EtagBuilder) {
        tag.text(self.format.name());
        for v in [self.vmin, self.vmax] {
            tag.number(v.map_or(u64::MAX, f64::to_bits));
        }
        tag.text(self.colormap.map_or("", Colormap::name));
    }

    /// Whether the body may be streamed as it is assembled (raw elements only; JSON and
    /// PNG are encoded from the whole result).
    pub fn streams(&self) -> bool {
        matches!(self.format, Format::Npy | Format::Bin)
    }

    /// CSV rows need labels, which only label selections and reductions have.
    fn refuse_csv(&self) -> Result<()> {
        if self.format == Format::Csv {
            return Err(Error::BadRequest(
                "format=csv needs labels: use it with sel= (label selection) or /v1/reduce; here use npy, bin, json or png"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Rejects, before any data is read, results that cannot be rendered or are too large.
    /// Returns the memory the rendered body takes beside the decoded data (JSON and PNG).
    pub fn check(&self, meta: &ArrayMetadata, shape: &[u64], limit: u64) -> Result<u64> {
        self.refuse_csv()?;
        if self.format == Format::Png {
            if shape.len() != 2 {
                return Err(Error::NotAcceptable(format!(
                    "png needs a 2-D result, this one has {} dimensions; select a 2-D region (integer indices drop dimensions)",
                    shape.len()
                )));
            }
            if !meta.data_type.is_real_number() {
                return Err(Error::NotAcceptable(format!(
                    "png cannot show {} values; use npy, bin or json",
                    meta.data_type.name()
                )));
            }
            if shape.contains(&0) {
                return Err(Error::NotAcceptable(format!(
                    "png cannot show an empty result (shape {shape:?}); use npy, bin or json"
                )));
            }
        } else if self.vmin.is_some() || self.vmax.is_some() || self.colormap.is_some() {
            return Err(Error::BadRequest("`vmin`, `vmax` and `colormap` apply only to format=png".into()));
        }
        let n: u128 = shape.iter().map(|&d| u128::from(d)).product();
        let (what, per_element) = match self.format {
            Format::Json => ("JSON (the longest text of each element)", encode::json_bytes_per_element(meta.data_type)),
            // The PNG encoder holds a scaled value and a pixel per element.
            Format::Png => (
                "PNG (its working memory: a scaled value and a pixel per element)",
                crate::images::render::PNG_BYTES_PER_ELEMENT,
            ),
            _ => ("binary data", meta.data_type.size() as u64),
        };
        let size = n * u128::from(per_element);
        if size > u128::from(limit) {
            return Err(Error::TooLarge { what, size, limit });
        }
        Ok(if self.streams() { 0 } else { size as u64 })
    }

    /// Text can be given as JSON strings or a `NumPy` `U` array (bytes as base64 strings
    /// or an `S` array); `bin` and `png` need fixed-size numbers.
    pub fn check_text(&self, data_type: DataType) -> Result<()> {
        self.refuse_csv()?;
        if matches!(self.format, Format::Bin | Format::Png) {
            let (what, json, npy) = if data_type == DataType::Bytes {
                ("bytes", "base64 strings", "|S")
            } else {
                ("text", "JSON strings", "<U")
            };
            return Err(Error::NotAcceptable(format!(
                "{} cannot hold variable-length {what}: this is a `{}` array; use format=json ({json}) or format=npy (a NumPy `{npy}` array)",
                self.format.name(),
                data_type.name()
            )));
        }
        if self.vmin.is_some() || self.vmax.is_some() || self.colormap.is_some() {
            return Err(Error::BadRequest("`vmin`, `vmax` and `colormap` apply only to format=png".into()));
        }
        Ok(())
    }

    /// The JSON or `.npy` body of text `elements` of `shape`, its size checked against
    /// `limit` and reserved from the array's budget (into `held`) before it is built.
    pub async fn respond_text(
        &self,
        elements: &[Box<[u8]>],
        shape: &[u64],
        limit: u64,
        array: &zarrd_core::read::ArrayReader,
        held: &mut zarrd_core::ops::budget::Reservation,
    ) -> Result<Response> {
        let data_type = array.meta.data_type;
        let body = if self.format == Format::Json {
            let len = encode::json_text_len(elements, shape, data_type);
            if len > limit {
                return Err(Error::TooLarge { what: "JSON", size: u128::from(len), limit });
            }
            held.merge(array.budget.reserve(len).await?);
            encode::json_text(elements, shape, len, data_type)
        } else {
            let (header, size) = encode::npy_text_header(elements, shape, data_type);
            if size > limit {
                return Err(Error::TooLarge {
                    what: "npy (UTF-32 text or padded bytes)",
                    size: u128::from(size),
                    limit,
                });
            }
            held.merge(array.budget.reserve(size).await?);
            encode::npy_text(elements, header, size, data_type)
        };
        self.with_data_headers(body.into_response(), data_type, shape)
    }

    /// The body and data headers for decoded `data` of `shape`.
    /// Room to leave in front of the decoded elements: the `.npy` header's bytes, so the
    /// body is built without copying the data again.
    pub fn header_room(&self, data_type: DataType, shape: &[u64]) -> usize {
        if self.format == Format::Npy { encode::npy_header(data_type, shape).len() } else { 0 }
    }

    /// The body and data headers for `buffer`: `header_room` free bytes, then the decoded
    /// elements of `shape`.
    pub async fn respond(
        &self,
        mut buffer: Vec<u8>,
        header_room: usize,
        meta: &ArrayMetadata,
        shape: &[u64],
    ) -> Result<Response> {
        let data_type = meta.data_type;
        let body = match self.format {
            Format::Npy => {
                let header = encode::npy_header(data_type, shape);
                if header_room == header.len() {
                    buffer[..header_room].copy_from_slice(&header);
                    buffer
                } else {
                    [header.as_slice(), &buffer[header_room..]].concat()
                }
            }
            Format::Bin if header_room == 0 => buffer,
            Format::Bin => buffer[header_room..].to_vec(),
            Format::Json | Format::Png | Format::Csv => {
                buffer.drain(..header_room);
                self.rendered_aside(Bytes::from(buffer), meta, shape).await?
            }
        };
        self.with_data_headers(body.into_response(), data_type, shape)
    }

    /// The body for `data`, the elements of one chunk: sent as they are for `bin` and `npy`
    /// (behind its header), with no copy.
    pub async fn respond_elements(&self, data: Bytes, meta: &ArrayMetadata, shape: &[u64]) -> Result<Response> {
        let body = match self.format {
            Format::Bin => Body::from(data),
            Format::Npy => budget_body::head_and(encode::npy_header(meta.data_type, shape), data),
            Format::Json | Format::Png | Format::Csv => Body::from(self.rendered_aside(data, meta, shape).await?),
        };
        self.with_data_headers(body.into_response(), meta.data_type, shape)
    }

    /// A body streamed from decoded `bands` (`npy` behind its header, or `bin`), its length
    /// known up front.
    pub fn respond_bands(
        &self,
        bands: tokio::sync::mpsc::Receiver<std::result::Result<Bytes, zarrd_core::read::ReadError>>,
        data_type: DataType,
        shape: &[u64],
    ) -> Result<Response> {
        let head = if self.format == Format::Npy { encode::npy_header(data_type, shape) } else { Vec::new() };
        let length = head.len() as u64 + shape.iter().product::<u64>() * data_type.size() as u64;
        let mut response =
            self.with_data_headers(budget_body::head_and_bands(head, bands, length).into_response(), data_type, shape)?;
        response.headers_mut().insert(header::CONTENT_LENGTH, HeaderValue::from(length));
        Ok(response)
    }

    /// JSON or PNG made from `elements`: a large body in the CPU pool, so that making it
    /// does not hold up the other connections of the thread serving this one (with
    /// `http.runtime = "per_core"`, every connection of its core).
    async fn rendered_aside(&self, elements: Bytes, meta: &ArrayMetadata, shape: &[u64]) -> Result<Vec<u8>> {
        if elements.len() < RENDER_ASIDE {
            return self.rendered(&elements, meta, shape);
        }
        let (render, meta, shape) = (*self, meta.clone(), shape.to_vec());
        zarrd_core::ops::cpu::run(move || render.rendered(&elements, &meta, &shape))
            .await
            .map_err(|panic| Error::internal(format!("rendering a body panicked: {panic}")))?
    }

    /// JSON or PNG made from `elements`.
    fn rendered(&self, elements: &[u8], meta: &ArrayMetadata, shape: &[u64]) -> Result<Vec<u8>> {
        match self.format {
            Format::Json => Ok(encode::json(elements, meta.data_type, shape)),
            Format::Csv => Err(Error::internal("CSV is rendered with its labels (analysis::table)")),
            _ => crate::images::render::png(
                elements,
                meta.data_type,
                shape,
                &meta.fill_value,
                self.vmin,
                self.vmax,
                self.colormap,
            ),
        }
    }

    /// `Content-Type`, `Zarr-Shape` and `Zarr-Data-Type`.
    pub fn with_data_headers(&self, mut response: Response, data_type: DataType, shape: &[u64]) -> Result<Response> {
        let shape_header = shape.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(self.format.media_type()));
        headers.insert(
            "zarr-shape",
            HeaderValue::from_str(&shape_header).map_err(|e| Error::internal_from("the Zarr-Shape header", e))?,
        );
        headers.insert("zarr-data-type", HeaderValue::from_static(data_type.name()));
        Ok(response)
    }
}
