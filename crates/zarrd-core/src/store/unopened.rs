//! The store of a dataset that could not be opened at startup (a path that is a file or
//! missing, a URL `object_store` refuses): every request fails, saying so. The server starts
//! anyway and serves its other datasets; this one shows as failing in `/v1/datasets`, in
//! `zarrd_dataset_up` and in the log, instead of one bad entry taking the whole server down.

use async_trait::async_trait;
use futures::stream::{self, BoxStream, StreamExt as _};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions,
    PutOptions, PutPayload, PutResult, Result,
};

/// The `store` name of the errors it returns, which [`super::StoreError::public_detail`]
/// recognises.
pub const STORE: &str = "unopened dataset";

#[derive(Debug)]
pub struct Unopened {
    /// Why opening failed (for the log; clients are told only that it failed).
    pub reason: String,
}

impl std::fmt::Display for Unopened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Unopened({})", self.reason)
    }
}

impl Unopened {
    fn error(&self) -> object_store::Error {
        object_store::Error::Generic { store: STORE, source: self.reason.clone().into() }
    }
}

#[async_trait]
impl ObjectStore for Unopened {
    async fn put_opts(&self, _: &Path, _: PutPayload, _: PutOptions) -> Result<PutResult> {
        Err(self.error())
    }

    async fn put_multipart_opts(&self, _: &Path, _: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        Err(self.error())
    }

    async fn get_opts(&self, _: &Path, _: GetOptions) -> Result<GetResult> {
        Err(self.error())
    }

    fn delete_stream(&self, _: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        stream::once(std::future::ready(Err(self.error()))).boxed()
    }

    fn list(&self, _: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        stream::once(std::future::ready(Err(self.error()))).boxed()
    }

    async fn list_with_delimiter(&self, _: Option<&Path>) -> Result<ListResult> {
        Err(self.error())
    }

    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> Result<()> {
        Err(self.error())
    }
}
