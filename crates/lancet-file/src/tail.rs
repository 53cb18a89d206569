//! The tails of the Lance files a [`crate::FileStore`] opened, kept so that a file's footer,
//! offset tables and metadata are fetched in one request and each later read within the
//! tail (lance-file's own metadata reads, and every page of a small file) is served from
//! memory.
//!
//! The cache is an [`ObjectStore`] wrapped around the store's own handle: lance-io and
//! lancet's page reads both go through it. Lance files are immutable (every data and index
//! file has a fresh name), so a tail never goes stale. Tails are kept up to a byte budget and
//! evicted oldest first.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// Bytes fetched from the end of a file when it is opened: lance-io's block size on object
/// stores, which holds the footer, both offset tables and the metadata of most files (and
/// the whole of a small one).
pub const TAIL_BYTES: u64 = 64 * 1024;

/// Bytes of tails kept at once.
const BUDGET: usize = 32 * 1024 * 1024;

/// The last bytes of one object, from `start` to its end.
#[derive(Debug)]
pub(crate) struct Tail {
    pub start: u64,
    pub bytes: Bytes,
    pub meta: ObjectMeta,
}

impl Tail {
    /// The object's size.
    pub fn size(&self) -> u64 {
        self.meta.size
    }

    /// `range` of the object, when the tail holds all of it.
    pub fn slice(&self, range: &Range<u64>) -> Option<Bytes> {
        if range.start < self.start || range.end > self.meta.size || range.start > range.end {
            return None;
        }
        let from = usize::try_from(range.start - self.start).ok()?;
        let to = usize::try_from(range.end - self.start).ok()?;
        (to <= self.bytes.len()).then(|| self.bytes.slice(from..to))
    }
}

#[derive(Debug, Default)]
struct Tails {
    map: HashMap<Path, Arc<Tail>>,
    order: VecDeque<Path>,
    bytes: usize,
}

/// An object store that keeps the tails of the files opened through it.
pub(crate) struct TailCache {
    inner: Arc<dyn ObjectStore>,
    tails: Mutex<Tails>,
}

impl fmt::Debug for TailCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TailCache({})", self.inner)
    }
}

impl fmt::Display for TailCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TailCache({})", self.inner)
    }
}

impl TailCache {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self {
            inner,
            tails: Mutex::default(),
        }
    }

    fn cached(&self, path: &Path) -> Option<Arc<Tail>> {
        self.tails.lock().ok()?.map.get(path).cloned()
    }

    /// The tail of `path` (its last [`TAIL_BYTES`], or all of it), fetched in one request
    /// unless kept already. Without `size`, a suffix request learns it.
    pub async fn tail(&self, path: &Path, size: Option<u64>) -> Result<Arc<Tail>> {
        if let Some(t) = self.cached(path) {
            return Ok(t);
        }
        let range = match size {
            Some(size) => GetRange::Bounded(size.saturating_sub(TAIL_BYTES)..size),
            None => GetRange::Suffix(TAIL_BYTES),
        };
        let got = self
            .inner
            .get_opts(
                path,
                GetOptions {
                    range: Some(range),
                    ..Default::default()
                },
            )
            .await?;
        let meta = got.meta.clone();
        let start = got.range.start;
        let bytes = got.bytes().await?;
        let tail = Arc::new(Tail { start, bytes, meta });
        if let Ok(mut tails) = self.tails.lock() {
            if tails.map.insert(path.clone(), tail.clone()).is_none() {
                tails.order.push_back(path.clone());
                tails.bytes += tail.bytes.len();
            }
            while tails.bytes > BUDGET {
                let Some(old) = tails.order.pop_front() else {
                    break;
                };
                if let Some(t) = tails.map.remove(&old) {
                    tails.bytes -= t.bytes.len();
                }
            }
        }
        Ok(tail)
    }
}

/// The range a plain read (no condition, not a HEAD) asks for, with `size` the object's:
/// only such a read may be answered from a tail. A read without a range asks for all of it.
fn plain_range(o: &GetOptions, size: u64) -> Option<Range<u64>> {
    let plain = o.if_match.is_none()
        && o.if_none_match.is_none()
        && o.if_modified_since.is_none()
        && o.if_unmodified_since.is_none()
        && o.version.is_none()
        && !o.head;
    match (&o.range, plain) {
        (Some(GetRange::Bounded(r)), true) => Some(r.clone()),
        (None, true) => Some(0..size),
        _ => None,
    }
}

#[async_trait]
impl ObjectStore for TailCache {
    async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
        self.inner.put_opts(l, p, o).await
    }

    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(l, o).await
    }

    async fn get_opts(&self, l: &Path, o: GetOptions) -> Result<GetResult> {
        if let Some(tail) = self.cached(l) {
            if let Some(range) = plain_range(&o, tail.size()) {
                if let Some(bytes) = tail.slice(&range) {
                    return Ok(GetResult {
                        payload: GetResultPayload::Stream(
                            futures::stream::once(async move { Ok(bytes) }).boxed(),
                        ),
                        meta: tail.meta.clone(),
                        range,
                        attributes: Default::default(),
                        extensions: Default::default(),
                    });
                }
            }
        }
        self.inner.get_opts(l, o).await
    }

    async fn get_ranges(&self, l: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let tail = self.cached(l);
        let mut out: Vec<Option<Bytes>> = ranges
            .iter()
            .map(|r| tail.as_ref().and_then(|t| t.slice(r)))
            .collect();
        let missing: Vec<Range<u64>> = ranges
            .iter()
            .zip(&out)
            .filter(|(_, got)| got.is_none())
            .map(|(r, _)| r.clone())
            .collect();
        if !missing.is_empty() {
            let mut fetched = self.inner.get_ranges(l, &missing).await?.into_iter();
            for slot in out.iter_mut().filter(|s| s.is_none()) {
                *slot = fetched.next();
            }
        }
        out.into_iter()
            .map(|b| {
                b.ok_or_else(|| object_store::Error::Generic {
                    store: "TailCache",
                    source: format!("{l}: the store returned fewer ranges than asked").into(),
                })
            })
            .collect()
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
