//! Fault injection for tests (feature `testing`): an [`ObjectStore`] that fails the k-th
//! request of one kind, either before performing it (nothing happened) or after (it
//! happened, but the caller is told it failed: a lost response). Every other request passes
//! through. Deterministic: the k-th matching request, counted from 1, fails exactly once.
#![allow(clippy::unwrap_used)]

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// The kind of request a fault matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// A put that may overwrite.
    Put,
    /// A put-if-absent (`PutMode::Create`): the commit point.
    PutIfAbsent,
    Get,
    List,
    Delete,
}

/// When the failing request fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Fail without performing it.
    Before,
    /// Perform it, then report failure.
    After,
    /// Perform it, then report that the object already exists: what a client that retried a
    /// put-if-absent after a lost response is told (S3's 412), although the object is its own.
    AfterAsTaken,
}

/// See the module doc.
#[derive(Debug)]
pub struct FaultyStore {
    inner: Arc<dyn ObjectStore>,
    request: Request,
    k: u64,
    mode: Mode,
    seen: AtomicU64,
    armed: std::sync::atomic::AtomicBool,
}

impl FaultyStore {
    /// Fails the `k`-th `request` (from 1; `0` never fails, which counts requests) made
    /// after [`FaultyStore::arm`]; until then every request passes.
    pub fn new(inner: Arc<dyn ObjectStore>, request: Request, k: u64, mode: Mode) -> Self {
        Self {
            inner,
            request,
            k,
            mode,
            seen: AtomicU64::new(0),
            armed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Starts counting (e.g. once a dataset is open and the operation under test begins).
    pub fn arm(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// How many matching requests were made.
    pub fn matching(&self) -> u64 {
        self.seen.load(Ordering::SeqCst)
    }

    /// Whether this request is the one to fail.
    fn trips(&self, request: Request) -> bool {
        if request != self.request || !self.armed.load(Ordering::SeqCst) {
            return false;
        }
        let n = self.seen.fetch_add(1, Ordering::SeqCst) + 1;
        n == self.k
    }

    fn injected(path: &Path) -> object_store::Error {
        object_store::Error::Generic {
            store: "FaultyStore",
            source: format!("injected fault at {path}").into(),
        }
    }

    async fn around<T>(
        &self,
        request: Request,
        path: &Path,
        op: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        if !self.trips(request) {
            return op.await;
        }
        match self.mode {
            Mode::Before => Err(Self::injected(path)),
            Mode::After => {
                op.await?;
                Err(Self::injected(path))
            }
            Mode::AfterAsTaken => {
                op.await?;
                Err(object_store::Error::AlreadyExists {
                    path: path.to_string(),
                    source: format!("injected: {path} exists (a retry of a put that landed)")
                        .into(),
                })
            }
        }
    }
}

impl fmt::Display for FaultyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for FaultyStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let request = match opts.mode {
            PutMode::Create => Request::PutIfAbsent,
            _ => Request::Put,
        };
        self.around(
            request,
            location,
            self.inner.put_opts(location, payload, opts),
        )
        .await
    }

    /// A multipart upload counts as one `Put`: failing before, nothing is uploaded; failing
    /// after, the upload completes and `complete` reports failure.
    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let trips = self.trips(Request::Put);
        if trips && self.mode == Mode::Before {
            return Err(Self::injected(location));
        }
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(FaultyUpload {
            inner,
            location: location.clone(),
            fail_after_complete: trips,
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.around(
            Request::Get,
            location,
            self.inner.get_opts(location, options),
        )
        .await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.around(
            Request::Get,
            location,
            self.inner.get_ranges(location, ranges),
        )
        .await
    }

    /// A delete stream counts as one `Delete`: failing before, nothing is deleted; failing
    /// after, every delete happens and the stream then ends with the error.
    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        if !self.trips(Request::Delete) {
            return self.inner.delete_stream(locations);
        }
        let failed = futures::stream::once(async { Err(Self::injected(&Path::from("delete"))) });
        match self.mode {
            Mode::Before => failed.boxed(),
            Mode::After | Mode::AfterAsTaken => {
                self.inner.delete_stream(locations).chain(failed).boxed()
            }
        }
    }

    /// A listing counts as one `List`: failing before, nothing is listed; failing after,
    /// every entry is listed and the stream then ends with the error.
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        if !self.trips(Request::List) {
            return self.inner.list(prefix);
        }
        let p = prefix.cloned().unwrap_or_default();
        let failed = futures::stream::once(async move { Err(Self::injected(&p)) });
        match self.mode {
            Mode::Before => failed.boxed(),
            Mode::After | Mode::AfterAsTaken => self.inner.list(prefix).chain(failed).boxed(),
        }
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let p = prefix.cloned().unwrap_or_default();
        self.around(Request::List, &p, self.inner.list_with_delimiter(prefix))
            .await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// A multipart upload whose completion may be reported as failed after it happened.
#[derive(Debug)]
struct FaultyUpload {
    inner: Box<dyn MultipartUpload>,
    location: Path,
    fail_after_complete: bool,
}

#[async_trait]
impl MultipartUpload for FaultyUpload {
    fn put_part(&mut self, data: PutPayload) -> object_store::UploadPart {
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> Result<PutResult> {
        let done = self.inner.complete().await?;
        if self.fail_after_complete {
            return Err(FaultyStore::injected(&self.location));
        }
        Ok(done)
    }

    async fn abort(&mut self) -> Result<()> {
        self.inner.abort().await
    }
}
