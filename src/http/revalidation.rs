//! One validator sequence for the data handlers: the `ETag` is what an answer depends on
//! besides its stored objects (the handler's tag) with the versions of the objects its
//! plan reads; a revalidation (`If-None-Match`) is answered from those versions before any
//! chunk is read, and the answer is made only when the client's copy is not current.

use std::future::Future;

use axum::http::{HeaderMap, header};
use axum::response::Response;
use zarrd_core::read::ObjectVersion;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::http::conditional::{EtagBuilder, Validators, Varies};

/// The validators of one data answer, before and after its read.
pub struct Revalidation<'a> {
    tag: EtagBuilder,
    config: &'a Config,
    varies: Varies,
}

impl<'a> Revalidation<'a> {
    /// `tag`: what the answer depends on besides the objects read; `varies`: what its 200
    /// varies on (which its 304 repeats).
    pub fn new(tag: EtagBuilder, config: &'a Config, varies: Varies) -> Self {
        Self { tag, config, varies }
    }

    /// The validators of the answer made from objects of `versions`.
    pub fn validators(&self, versions: &[(String, ObjectVersion)]) -> Validators {
        Validators::of_objects(self.tag.clone(), versions, self.config).varying(self.varies)
    }

    /// The 304 for a request whose copy is current, before the read: `versions` (the
    /// versions of the objects the plan will read: cached, or from shard indexes and HEADs,
    /// never a chunk) is awaited only when the request names tags.
    pub async fn before_read<E>(
        &self,
        headers: &HeaderMap,
        versions: impl Future<Output = std::result::Result<Vec<(String, ObjectVersion)>, E>>,
    ) -> Result<Option<Response>>
    where
        Error: From<E>,
    {
        if !headers.contains_key(header::IF_NONE_MATCH) {
            return Ok(None);
        }
        let validators = self.validators(&versions.await?);
        Ok(validators.current(headers).then(|| validators.unchanged()))
    }

    /// The answer read from objects of `versions`: a 304 when the client's copy is current,
    /// else what `build` makes, stamped with the validators.
    pub async fn respond(
        &self,
        headers: &HeaderMap,
        versions: &[(String, ObjectVersion)],
        build: impl Future<Output = Result<Response>>,
    ) -> Result<Response> {
        self.validators(versions).respond(headers, build).await
    }
}
