//! The one application error type and its one mapping to HTTP: an RFC 9457
//! `application/problem+json` document whose `detail` says what was wrong and what is
//! allowed. Internal failures are logged with their source chain and answered without
//! leaking internals. The core crate's errors become problems in [`core`]; the server's
//! own modules say how beside their errors (`impl From<…> for Error`).

mod core;

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub const PROBLEM_JSON: &str = "application/problem+json";

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    /// A missing, invalid, expired or unknown credential (answered with
    /// `WWW-Authenticate: Bearer`; `invalid_token` when one was sent).
    #[error("{detail}")]
    Unauthorized { detail: String, invalid_token: bool },
    #[error("{0}")]
    NotAcceptable(String),
    #[error(
        "the result would need up to {size} bytes as {what}, more than the limit of {limit} bytes (limits.max_response_bytes); select a smaller region"
    )]
    TooLarge { what: &'static str, size: u128, limit: u64 },
    #[error("{0}")]
    TooManyChunks(String),
    /// Work beyond another configured limit (a reduction's cells, values it would hold):
    /// the detail gives the size, the limit and what to narrow.
    #[error("{0}")]
    OverLimit(String),
    #[error("byte range not satisfiable: {0}")]
    RangeNotSatisfiable(String, u64),
    #[error("{0}")]
    PreconditionFailed(String),
    #[error("{0}")]
    Unsupported(String),
    /// A failure of the server itself: `detail` and the `source` chain go to the log,
    /// never to the client.
    #[error("internal error")]
    Internal {
        detail: String,
        #[source]
        source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    },
    #[error("{0}")]
    Storage(String),
    #[error("{0}")]
    Corrupt(String),
    #[error("{detail}")]
    Unavailable { detail: String, retry_after: u64 },
    #[error("storage did not answer within {0} s")]
    Timeout(u64),
    /// An error status produced outside the handlers (e.g. by axum's extractors).
    #[error("{1}")]
    Status(StatusCode, String),
}

impl Error {
    /// An internal failure described by `detail`.
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::Internal { detail: detail.into(), source: None }
    }

    /// An internal failure: `context` failed with `source`, kept for the log.
    pub fn internal_from(context: &str, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Internal { detail: context.to_owned(), source: Some(Arc::new(source)) }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            Self::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            Self::TooLarge { .. } | Self::TooManyChunks(_) | Self::OverLimit(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::RangeNotSatisfiable(..) => StatusCode::RANGE_NOT_SATISFIABLE,
            Self::PreconditionFailed(_) => StatusCode::PRECONDITION_FAILED,
            Self::Unsupported(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Internal { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Storage(_) | Self::Corrupt(_) => StatusCode::BAD_GATEWAY,
            Self::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            Self::Status(status, _) => *status,
        }
    }

    /// A stable slug for the problem `type` URI.
    fn slug(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "bad-request",
            Self::Forbidden(_) => "forbidden",
            Self::NotFound(_) => "not-found",
            Self::Unauthorized { .. } => "unauthorized",
            Self::NotAcceptable(_) => "not-acceptable",
            Self::TooLarge { .. } | Self::TooManyChunks(_) | Self::OverLimit(_) => "too-large",
            Self::RangeNotSatisfiable(..) => "range-not-satisfiable",
            Self::PreconditionFailed(_) => "precondition-failed",
            Self::Unsupported(_) => "unsupported-feature",
            Self::Internal { .. } => "internal",
            Self::Storage(_) => "storage-failure",
            Self::Corrupt(_) => "corrupt-data",
            Self::Unavailable { .. } => "unavailable",
            Self::Timeout(_) => "storage-timeout",
            Self::Status(..) => "http-error",
        }
    }
}

impl Error {
    /// The RFC 9457 problem document of this error.
    pub fn problem(&self) -> String {
        let status = self.status();
        let problem = Problem {
            kind: format!("https://zarrd.dev/problems/{}", self.slug()),
            title: status.canonical_reason().unwrap_or("Error"),
            status: status.as_u16(),
            detail: self.to_string(),
        };
        // Strings and a number: serializing cannot fail.
        serde_json::to_string(&problem).unwrap_or_default()
    }
}

/// An RFC 9457 problem document (`application/problem+json`).
#[derive(Debug, serde::Serialize)]
struct Problem<'a> {
    #[serde(rename = "type")]
    kind: String,
    title: &'a str,
    status: u16,
    /// What was wrong and what is allowed.
    detail: String,
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        if let Self::Internal { detail, source } = &self {
            // The whole chain, outermost first: what failed and why, for the log only.
            let mut causes = Vec::new();
            let mut next: Option<&(dyn std::error::Error + 'static)> = source.as_deref().map(|e| e as _);
            while let Some(cause) = next {
                causes.push(cause.to_string());
                next = cause.source();
            }
            tracing::error!(%detail, causes = %causes.join(": "), "internal error");
        }
        let mut response = (status, self.problem()).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        // An error is never cached.
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        match self {
            Self::Unavailable { retry_after, .. } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
            }
            Self::Unauthorized { invalid_token, .. } => {
                let challenge = if invalid_token {
                    r#"Bearer realm="zarrd", error="invalid_token""#
                } else {
                    r#"Bearer realm="zarrd""#
                };
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
            }
            Self::RangeNotSatisfiable(_, size) => {
                if let Ok(v) = HeaderValue::from_str(&format!("bytes */{size}")) {
                    headers.insert(header::CONTENT_RANGE, v);
                }
            }
            _ => {}
        }
        response
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
