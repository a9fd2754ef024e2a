//! `GET /v1/datasets`, `GET /v1/datasets/{ds}` and `GET /v1/datasets/{ds}/versions`.

use axum::Extension;
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;

use crate::auth::Identity;
use crate::catalog::health::{DatasetHealth, Status};
use crate::error::Result;
use crate::http::encode::json_response;
use crate::http::extract::Params;
use crate::http::schema::{DatasetList, DatasetSummary, DatasetTree, Health};
use crate::http::state::AppState;

/// Names, titles and the last background health check: never a URL, credential or option.
/// Private datasets the caller may not read are left out.
pub async fn list(
    State(state): State<AppState>,
    identity: Option<Extension<Identity>>,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    Params::parse(query.as_deref(), &[])?;
    let caller = identity.and_then(|Extension(Identity(caller))| caller);
    let health = state.health.datasets(&state.catalog).await;
    let datasets: Vec<_> = state
        .catalog
        .datasets()
        .filter(|d| state.auth.may_read(caller.as_ref(), &d.name))
        .map(|d| DatasetSummary {
            name: d.name.as_ref(),
            title: d.title.as_deref(),
            health: health_of(health.get(d.name.as_ref())),
            versioned: d.repo.is_some(),
        })
        .collect();
    Ok(json_response(&DatasetList { datasets }, &state.config.http.cache_control))
}

/// The node tree of one dataset.
pub async fn show(
    State(state): State<AppState>,
    Path(ds): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    Params::parse(query.as_deref(), &[])?;
    let dataset = &state.catalog.dataset(&ds).await?;
    let nodes = state.catalog.tree(dataset).await?;
    let tree = DatasetTree { name: &ds, title: dataset.title.as_deref(), nodes: &nodes };
    Ok(json_response(&tree, &state.config.http.cache_control))
}

/// The branches and tags of a versioned (Icechunk) dataset, each with its snapshot id.
pub async fn versions(
    State(state): State<AppState>,
    Path(ds): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    Params::parse(query.as_deref(), &[])?;
    let versions = state.catalog.versions(&ds).await?;
    // Branch heads move: revalidate every time.
    Ok(json_response(&versions, "no-cache"))
}

/// `{"status": "ok"|"failing"|"unknown", "checked_at": RFC 3339 or null, "detail"?}`.
fn health_of(health: Option<&DatasetHealth>) -> Health {
    let Some(h) = health else {
        return Health { status: Status::Unknown.label(), checked_at: None, detail: None };
    };
    Health {
        status: h.status.label(),
        checked_at: h.checked_at.map(|t| chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339()),
        detail: match &h.status {
            Status::Failing(detail) => Some(detail.clone()),
            _ => None,
        },
    }
}
