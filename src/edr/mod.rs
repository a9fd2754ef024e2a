//! OGC API – Environmental Data Retrieval (`docs/edr.md`): groups of arrays on one grid
//! as collections, and position, area, cube and radius queries answered by one plan
//! each on the coordinate module (`zarrd_core::coords`) and the read path — never one read
//! per time step.
//!
//! [`collection`] finds the collections and their parameters (cached per version),
//! [`params`] is a query's parameters typed, [`query`] plans a query before any read ([`places`]: the cells it takes), [`read`] reads it, [`encode`]
//! writes CoverageJSON, GeoJSON or CSV, [`netcdf`] an area or cube as a NetCDF file, [`documents`] the discovery documents
//! ([`schema`]: their types; [`covjson`]: the CoverageJSON objects as types). No axum
//! here: the HTTP edge is `http::routes::edr`.

pub mod collection;
pub mod covjson;
pub mod documents;
pub mod encode;
pub mod geotiff;
pub mod netcdf;
pub mod params;
pub mod places;
pub mod query;
pub mod read;
pub mod schema;

use std::sync::Arc;

use crate::analysis::coordinates::Coordinates;
use crate::catalog::Catalog;
use crate::error::{Error, Result};
use collection::{Collection, Collections, parse_id};

/// The collection `id` names (at version `instance` of a versioned dataset): 404 when
/// there is none.
pub async fn find(
    catalog: &Catalog,
    coords: &Coordinates,
    collections: &Collections,
    id: &str,
    instance: Option<&str>,
) -> Result<Arc<Collection>> {
    let (name, group) = parse_id(id);
    let named = match instance {
        Some(version) if !name.contains('@') => format!("{name}@{version}"),
        Some(_) => return Err(Error::NotFound(format!("`{id}` names a version already; it has no instances"))),
        None => name.to_owned(),
    };
    let dataset = catalog.dataset(&named).await?;
    let absent = || {
        Error::NotFound(format!(
            "there is no collection `{id}`: a collection is a group holding arrays on a latitude/longitude grid; GET /edr/collections lists them"
        ))
    };
    collections.group(catalog, coords, &dataset, name, &group).await?.ok_or_else(absent)
}
