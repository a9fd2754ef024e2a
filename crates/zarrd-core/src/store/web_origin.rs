//! Plain web servers as stores: they may not list (no `WebDAV` `PROPFIND`) and may ignore
//! `Range`.
//!
//! Listing: a refused listing (a status, not a failed connection or a timeout) is
//! remembered as [`WebOrigin::cannot_list`], so the server can serve what a key leads to
//! instead of a tree, and later listings are refused at once (`object_store` retries a
//! 501, as Python's `http.server` answers `PROPFIND`, for seconds); a transport failure is
//! a storage failure like any other, never read as "cannot list".
//!
//! Ranges: Python's `http.server` (the way many tutorials serve a
//! local store) and some static hosts answer a ranged GET with the whole object and a 200,
//! which `object_store` refuses (`NotSupported`, having read none of the body). Over such
//! an origin this wrapper reads the object whole and keeps only the requested bytes as
//! they stream past, so memory holds the ranges asked for, never the object. The first
//! refusal is remembered: later ranged reads of that origin go straight to a plain GET.
//! Whole-object reads (`Range` absent) are passed through untouched.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::stream::{BoxStream, StreamExt as _};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// The `store` of this wrapper's own errors.
const STORE: &str = "web origin";

/// An HTTP store whose origin may neither list nor honour `Range`.
#[derive(Debug)]
pub struct WebOrigin {
    inner: Arc<dyn ObjectStore>,
    /// Set once the origin answered a ranged read with the whole object.
    ignores_ranges: AtomicBool,
    /// Set once the origin refused a listing.
    cannot_list: AtomicBool,
}

impl WebOrigin {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self { inner, ignores_ranges: AtomicBool::new(false), cannot_list: AtomicBool::new(false) }
    }

    /// Whether this origin refused a listing (it answered, but not with one).
    pub fn cannot_list(&self) -> bool {
        self.cannot_list.load(Ordering::Relaxed)
    }

    /// Remembers a listing the origin refused: any failure that is not the transport's
    /// (no connection, a timeout, a broken body), which `object_store` has retried already.
    fn listed<T>(&self, answer: Result<T>) -> Result<T> {
        if let Err(e) = &answer
            && !transport_failure(e)
            && !self.cannot_list.swap(true, Ordering::Relaxed)
        {
            tracing::warn!(origin = %self.inner, error = %e, "the HTTP origin cannot list: trees come from consolidated metadata or the keys asked for");
        }
        answer
    }

    /// Whether this origin was found to ignore `Range`.
    pub fn ignores_ranges(&self) -> bool {
        self.ignores_ranges.load(Ordering::Relaxed)
    }

    /// Whether `error` (of a ranged read) says the origin sent the whole object: then it is
    /// remembered, and the read is made again whole.
    fn refused(&self, location: &Path, error: &object_store::Error) -> bool {
        if !matches!(error, object_store::Error::NotSupported { .. }) {
            return false;
        }
        if !self.ignores_ranges.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                origin = %self.inner,
                object = %location,
                "the HTTP origin ignores Range requests: ranged reads of it now read whole objects \
                 and keep the requested bytes (serve the store with a server that honours Range, \
                 e.g. nginx, to read less)"
            );
        }
        true
    }

    /// The object at `location` read whole (with the other `options`), and the ranges
    /// `wanted` names once the object's size is known kept as its bytes pass.
    async fn whole(
        &self,
        location: &Path,
        mut options: GetOptions,
        wanted: impl FnOnce(u64) -> Result<Vec<Range<u64>>>,
    ) -> Result<(ObjectMeta, Vec<Bytes>)> {
        options.range = None;
        let result = self.inner.get_opts(location, options).await?;
        let size = result.meta.size;
        let meta = result.meta.clone();
        let ranges = wanted(size)?;
        if let Some(bad) = ranges.iter().find(|r| r.start > r.end || r.end > size) {
            return Err(error(format!(
                "bytes {}..{} of `{location}` asked, the object has {size}",
                bad.start, bad.end
            )));
        }
        let mut kept: Vec<BytesMut> =
            ranges.iter().map(|r| BytesMut::with_capacity((r.end - r.start) as usize)).collect();
        let mut stream = result.into_stream();
        let mut offset = 0u64;
        while let Some(part) = stream.next().await {
            let part = part?;
            let end = offset + part.len() as u64;
            for (range, out) in ranges.iter().zip(kept.iter_mut()) {
                let (from, to) = (range.start.max(offset), range.end.min(end));
                if from < to {
                    out.extend_from_slice(&part[(from - offset) as usize..(to - offset) as usize]);
                }
            }
            offset = end;
        }
        if offset != size {
            return Err(error(format!("`{location}` ended after {offset} of its {size} bytes")));
        }
        Ok((meta, kept.into_iter().map(BytesMut::freeze).collect()))
    }
}

/// Whether `e` is a failure of the transport (found by downcasting its source chain to
/// `object_store`'s `HttpError`) rather than an answer of the origin.
fn transport_failure(e: &object_store::Error) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(error) = current {
        if error.downcast_ref::<object_store::client::HttpError>().is_some() {
            return true;
        }
        current = error.source();
    }
    false
}

fn error(message: String) -> object_store::Error {
    object_store::Error::Generic { store: STORE, source: message.into() }
}

impl std::fmt::Display for WebOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WebOrigin({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for WebOrigin {
    async fn put_opts(&self, location: &Path, payload: PutPayload, options: PutOptions) -> Result<PutResult> {
        self.inner.put_opts(location, payload, options).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        options: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, options).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let Some(range) = options.range.clone() else {
            return self.inner.get_opts(location, options).await;
        };
        if !self.ignores_ranges() {
            match self.inner.get_opts(location, options.clone()).await {
                Err(e) if self.refused(location, &e) => {}
                answer => return answer,
            }
        }
        // A suffix or open range is resolved once the whole object says its size.
        let within = |size| range.as_range(size).map_err(|e| error(format!("`{location}`: {e}")));
        let (meta, mut parts) = self.whole(location, options, |size| Ok(vec![within(size)?])).await?;
        let wanted = within(meta.size)?;
        let bytes = parts.pop().unwrap_or_default();
        let stream: BoxStream<'static, Result<Bytes>> = futures::stream::once(std::future::ready(Ok(bytes))).boxed();
        Ok(GetResult {
            payload: GetResultPayload::Stream(stream),
            meta,
            range: wanted,
            attributes: object_store::Attributes::default(),
            extensions: object_store::Extensions::default(),
        })
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        if !self.ignores_ranges() {
            match self.inner.get_ranges(location, ranges).await {
                Err(e) if self.refused(location, &e) => {}
                answer => return answer,
            }
        }
        Ok(self.whole(location, GetOptions::default(), |_| Ok(ranges.to_vec())).await?.1)
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        if self.cannot_list() {
            return Err(error("this web server cannot list".to_owned()));
        }
        self.listed(self.inner.list_with_delimiter(prefix).await)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use object_store::{GetRange, ObjectStoreExt};

    /// An origin that ignores `Range` as `object_store`'s HTTP client reports it, and whose
    /// listings fail with `list_failure` when set (counted in `lists`).
    #[derive(Debug, Default)]
    struct Ignoring(InMemory, std::sync::atomic::AtomicUsize, Option<fn() -> object_store::Error>);

    impl std::fmt::Display for Ignoring {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Ignoring")
        }
    }

    #[async_trait]
    impl ObjectStore for Ignoring {
        async fn put_opts(&self, location: &Path, payload: PutPayload, options: PutOptions) -> Result<PutResult> {
            self.0.put_opts(location, payload, options).await
        }
        async fn put_multipart_opts(
            &self,
            location: &Path,
            options: PutMultipartOptions,
        ) -> Result<Box<dyn MultipartUpload>> {
            self.0.put_multipart_opts(location, options).await
        }
        async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
            if options.range.is_some() {
                return Err(object_store::Error::NotSupported { source: "Range request not supported".into() });
            }
            self.0.get_opts(location, options).await
        }
        fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
            self.0.delete_stream(locations)
        }
        fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
            self.0.list(prefix)
        }
        async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
            self.1.fetch_add(1, Ordering::Relaxed);
            match self.2 {
                Some(failure) => Err(failure()),
                None => self.0.list_with_delimiter(prefix).await,
            }
        }
        async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
            self.0.copy_opts(from, to, options).await
        }
    }

    #[tokio::test]
    async fn ranges_are_cut_from_the_whole_object_of_an_origin_that_ignores_them() {
        let origin = Ignoring::default();
        let data: Vec<u8> = (0..=255).collect();
        origin.put(&Path::from("x"), data.clone().into()).await.unwrap();
        let store = WebOrigin::new(Arc::new(origin));
        let x = Path::from("x");
        assert!(!store.ignores_ranges());
        let parts = store.get_ranges(&x, &[3..7, 250..256, 5..6, 0..0]).await.unwrap();
        assert!(store.ignores_ranges());
        assert_eq!(parts, [&data[3..7], &data[250..256], &data[5..6], &data[0..0]]);
        for (range, expected) in [
            (GetRange::Bounded(10..20), &data[10..20]),
            (GetRange::Suffix(4), &data[252..]),
            (GetRange::Offset(200), &data[200..]),
        ] {
            let result = store.get_opts(&x, GetOptions { range: Some(range.clone()), ..GetOptions::default() });
            let result = result.await.unwrap();
            assert_eq!(result.meta.size, 256);
            assert_eq!(result.range.end - result.range.start, expected.len() as u64, "{range:?}");
            assert_eq!(result.bytes().await.unwrap().as_ref(), expected, "{range:?}");
        }
        // Whole objects pass through; ranges beyond the object are errors, not panics.
        assert_eq!(store.get(&x).await.unwrap().bytes().await.unwrap().as_ref(), &data[..]);
        assert!(store.get_ranges(&x, &[250..300, 0..1]).await.is_err());
        assert!(store.get_range(&x, 300..310).await.is_err());
    }

    #[tokio::test]
    async fn an_origin_that_honours_ranges_is_read_in_ranges() {
        let origin = InMemory::new();
        origin.put(&Path::from("x"), vec![1u8, 2, 3, 4].into()).await.unwrap();
        let store = WebOrigin::new(Arc::new(origin));
        let parts = store.get_ranges(&Path::from("x"), &[1..3, 0..1]).await.unwrap();
        assert_eq!(parts, [Bytes::from_static(&[2, 3]), Bytes::from_static(&[1])]);
        assert!(!store.ignores_ranges());
    }

    /// A listing the origin answers with a status (`PROPFIND` refused) marks it as one that
    /// cannot list, and later listings are refused without asking; a failed connection is
    /// a storage failure that marks nothing.
    #[tokio::test]
    async fn a_refused_listing_is_remembered_and_a_failed_connection_is_not() {
        let refused =
            || object_store::Error::Generic { store: "HTTP", source: "Unsupported method ('PROPFIND')".into() };
        let unreachable = || object_store::Error::Generic {
            store: "HTTP",
            source: Box::new(object_store::client::HttpError::new(
                object_store::client::HttpErrorKind::Connect,
                std::io::Error::other("connection refused"),
            )),
        };
        let inner = Arc::new(Ignoring(InMemory::new(), 0.into(), Some(unreachable)));
        let store = WebOrigin::new(Arc::clone(&inner) as Arc<dyn ObjectStore>);
        for _ in 0..2 {
            assert!(store.list_with_delimiter(None).await.is_err());
        }
        assert!(!store.cannot_list());
        assert_eq!(inner.1.load(Ordering::Relaxed), 2, "each listing asks the origin again");
        let inner = Arc::new(Ignoring(InMemory::new(), 0.into(), Some(refused)));
        let store = WebOrigin::new(Arc::clone(&inner) as Arc<dyn ObjectStore>);
        for _ in 0..3 {
            assert!(store.list_with_delimiter(None).await.is_err());
        }
        assert!(store.cannot_list());
        assert_eq!(inner.1.load(Ordering::Relaxed), 1, "a refusal is asked for once");
    }
}
