//! A storage decorator that counts (and can fail) the requests reaching its backend.

use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;

/// An `ObjectStore` decorator that counts the requests reaching the backend, so tests can
/// pin how many storage round-trips a read costs.
#[derive(Debug)]
pub struct CountingStore {
    inner: Arc<dyn object_store::ObjectStore>,
    pub gets: std::sync::atomic::AtomicU64,
    pub heads: std::sync::atomic::AtomicU64,
    pub range_calls: std::sync::atomic::AtomicU64,
    pub lists: std::sync::atomic::AtomicU64,
    /// Added to every GET, to simulate slow storage.
    pub delay: std::time::Duration,
    /// Fault injection: the next `n` GETs or HEADs of paths ending in the given suffix
    /// answer "not found" although the object exists (a transient 404 from storage).
    pub vanish: std::sync::Mutex<Option<(String, u32)>>,
    /// The paths of every GET and HEAD, in order.
    pub got: std::sync::Mutex<Vec<String>>,
    /// When set, listing fails, as on a plain HTTP server.
    pub no_listing: std::sync::atomic::AtomicBool,
}

impl CountingStore {
    pub fn new(inner: Arc<dyn object_store::ObjectStore>) -> Arc<Self> {
        Self::slow(inner, std::time::Duration::ZERO)
    }

    pub fn slow(inner: Arc<dyn object_store::ObjectStore>, delay: std::time::Duration) -> Arc<Self> {
        Arc::new(Self {
            inner,
            gets: 0.into(),
            heads: 0.into(),
            range_calls: 0.into(),
            lists: 0.into(),
            delay,
            vanish: std::sync::Mutex::new(None),
            got: std::sync::Mutex::new(Vec::new()),
            no_listing: false.into(),
        })
    }

    /// Makes the next `n` GETs or HEADs of paths ending in `suffix` answer "not found".
    pub fn vanish(&self, suffix: &str, n: u32) {
        *self.vanish.lock().unwrap() = Some((suffix.to_owned(), n));
    }

    fn vanishes(&self, location: &ObjectPath) -> bool {
        let mut vanish = self.vanish.lock().unwrap();
        match vanish.as_mut() {
            Some((suffix, n)) if *n > 0 && location.as_ref().ends_with(suffix.as_str()) => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }

    /// (GETs, HEADs, `get_ranges` calls, listings) so far.
    pub fn counts(&self) -> (u64, u64, u64, u64) {
        use std::sync::atomic::Ordering::SeqCst;
        (self.gets.load(SeqCst), self.heads.load(SeqCst), self.range_calls.load(SeqCst), self.lists.load(SeqCst))
    }

    pub fn total(&self) -> u64 {
        let (a, b, c, d) = self.counts();
        a + b + c + d
    }
}

impl std::fmt::Display for CountingStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

#[async_trait::async_trait]
impl object_store::ObjectStore for CountingStore {
    async fn put_opts(
        &self,
        location: &ObjectPath,
        payload: object_store::PutPayload,
        opts: object_store::PutOptions,
    ) -> object_store::Result<object_store::PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &ObjectPath,
        opts: object_store::PutMultipartOptions,
    ) -> object_store::Result<Box<dyn object_store::MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &ObjectPath,
        options: object_store::GetOptions,
    ) -> object_store::Result<object_store::GetResult> {
        let counter = if options.head { &self.heads } else { &self.gets };
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.got.lock().unwrap().push(location.to_string());
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        if self.vanishes(location) {
            return Err(object_store::Error::NotFound { path: location.to_string(), source: "injected fault".into() });
        }
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &ObjectPath,
        ranges: &[std::ops::Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        self.range_calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: futures::stream::BoxStream<'static, object_store::Result<ObjectPath>>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<ObjectPath>> {
        self.inner.delete_stream(locations)
    }

    fn list(
        &self,
        prefix: Option<&ObjectPath>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::ObjectMeta>> {
        self.lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&ObjectPath>,
        offset: &ObjectPath,
    ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::ObjectMeta>> {
        self.lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&ObjectPath>) -> object_store::Result<object_store::ListResult> {
        self.lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.no_listing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(object_store::Error::NotSupported { source: "this store cannot list".into() });
        }
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &ObjectPath,
        to: &ObjectPath,
        options: object_store::CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
