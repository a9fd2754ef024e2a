//! Questions asked near the data: label selection (`sel=` on `/v1/slice`) and reductions
//! (`/v1/reduce`), on the coordinate module of the core (`zarrd_core::coords`).
//!
//! [`coordinates`] finds and caches each dimension's labels, [`select`] turns a label
//! selection into reads, [`reduction`] a `/v1/reduce` request into a planned reduction.
//! No axum here: the HTTP edge is `http::routes::labelled` and `http::routes::reduce`, and
//! labelled results become JSON and CSV in `http::table`.

pub mod coordinates;
pub mod grids;
pub mod reduction;
pub mod select;
