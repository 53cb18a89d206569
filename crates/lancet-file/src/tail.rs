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
    /// Shared with the multipart uploads in flight, which keep their object's tail.
    tails: Arc<Mutex<Tails>>,
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
            tails: Arc::default(),
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
        keep(&self.tails, path, tail.clone());
        Ok(tail)
    }
}

/// Keeps `tail` as `path`'s, within the budget (oldest evicted first).
fn keep(tails: &Mutex<Tails>, path: &Path, tail: Arc<Tail>) {
    if let Ok(mut tails) = tails.lock() {
        if let Some(old) = tails.map.insert(path.clone(), tail.clone()) {
            tails.bytes -= old.bytes.len();
        } else {
            tails.order.push_back(path.clone());
        }
        tails.bytes += tail.bytes.len();
        while tails.bytes > BUDGET {
            let Some(old) = tails.order.pop_front() else {
                break;
            };
            if let Some(t) = tails.map.remove(&old) {
                tails.bytes -= t.bytes.len();
            }
        }
    }
}

/// Keeps the tail of an object just written through the store, whose last bytes are `last`
/// and whose size is `size`: a file is read back (a commit judging the data files it adds)
/// without a request.
fn keep_written(tails: &Mutex<Tails>, path: &Path, size: u64, last: Bytes, result: &PutResult) {
    let Some(start) = size.checked_sub(last.len() as u64) else {
        return;
    };
    {
        let meta = ObjectMeta {
            location: path.clone(),
            // the store's own time is not known here; nothing reads it from a tail
            last_modified: Default::default(),
            size,
            e_tag: result.e_tag.clone(),
            version: result.version.clone(),
        };
        keep(
            tails,
            path,
            Arc::new(Tail {
                start,
                bytes: last,
                meta,
            }),
        );
    }
}

/// The last [`TAIL_BYTES`] of `parts` written in order, as one buffer.
fn last_bytes(parts: &[&Bytes]) -> Bytes {
    let mut kept: Vec<&Bytes> = Vec::new();
    let mut len = 0u64;
    for part in parts.iter().rev() {
        if len >= TAIL_BYTES {
            break;
        }
        kept.push(part);
        len += part.len() as u64;
    }
    let skip = usize::try_from(len.saturating_sub(TAIL_BYTES)).unwrap_or(0);
    let mut out = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_sub(skip));
    for (i, part) in kept.iter().rev().enumerate() {
        match i {
            0 => out.extend_from_slice(part.get(skip..).unwrap_or_default()),
            _ => out.extend_from_slice(part),
        }
    }
    Bytes::from(out)
}

/// A multipart upload through a [`TailCache`]: the last bytes of its parts are kept, and
/// become the object's tail when the upload completes.
#[derive(Debug)]
struct KeepingUpload {
    inner: Box<dyn MultipartUpload>,
    tails: Arc<Mutex<Tails>>,
    path: Path,
    size: u64,
    last: VecDeque<Bytes>,
    last_len: u64,
}

#[async_trait]
impl MultipartUpload for KeepingUpload {
    fn put_part(&mut self, data: PutPayload) -> object_store::UploadPart {
        self.size += data.content_length() as u64;
        for chunk in data.iter() {
            // a large part is not held whole until the upload completes: its last bytes are
            // copied out
            let keep = match chunk.len() as u64 > TAIL_BYTES {
                true => Bytes::copy_from_slice(
                    chunk
                        .get(chunk.len() - TAIL_BYTES as usize..)
                        .unwrap_or_default(),
                ),
                false => chunk.clone(),
            };
            self.last_len += keep.len() as u64;
            self.last.push_back(keep);
        }
        while self
            .last
            .front()
            .is_some_and(|f| self.last_len - f.len() as u64 >= TAIL_BYTES)
        {
            if let Some(f) = self.last.pop_front() {
                self.last_len -= f.len() as u64;
            }
        }
        self.inner.put_part(data)
    }

    async fn complete(&mut self) -> Result<PutResult> {
        let result = self.inner.complete().await?;
        let last = last_bytes(&self.last.iter().collect::<Vec<_>>());
        keep_written(&self.tails, &self.path, self.size, last, &result);
        Ok(result)
    }

    async fn abort(&mut self) -> Result<()> {
        self.inner.abort().await
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
        let size = p.content_length() as u64;
        let last = last_bytes(&p.iter().collect::<Vec<_>>());
        let result = self.inner.put_opts(l, p, o).await?;
        keep_written(&self.tails, l, size, last, &result);
        Ok(result)
    }

    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let inner = self.inner.put_multipart_opts(l, o).await?;
        Ok(Box::new(KeepingUpload {
            inner,
            tails: self.tails.clone(),
            path: l.clone(),
            size: 0,
            last: VecDeque::new(),
            last_len: 0,
        }))
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    fn bytes(n: usize, seed: u8) -> Bytes {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect::<Vec<u8>>()
            .into()
    }

    /// Reads `range` of `path` through `cache` after the object is gone from `inner`: only a
    /// tail kept in memory can answer.
    async fn read_kept(
        cache: &TailCache,
        inner: &InMemory,
        path: &Path,
        range: Range<u64>,
    ) -> Bytes {
        inner.delete(path).await.unwrap();
        let got = cache
            .get_opts(
                path,
                GetOptions {
                    range: Some(GetRange::Bounded(range)),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        got.bytes().await.unwrap()
    }

    #[tokio::test]
    async fn a_file_written_through_the_cache_is_read_back_without_a_request() {
        let inner = Arc::new(InMemory::new());
        let cache = TailCache::new(inner.clone());
        // one put: its last 64 KiB are kept
        let path = Path::from("data/a.lance");
        let data = bytes(100_000, 1);
        cache.put(&path, data.clone().into()).await.unwrap();
        let tail = cache.tail(&path, None).await.unwrap();
        assert_eq!(tail.size(), 100_000);
        assert_eq!(tail.bytes.len() as u64, TAIL_BYTES);
        let got = read_kept(&cache, &inner, &path, 99_000..100_000).await;
        assert_eq!(got, data.slice(99_000..100_000));

        // a multipart upload of small and large parts: the last 64 KiB across them
        let path = Path::from("data/b.lance");
        let parts = [
            bytes(40_000, 2),
            bytes(10_000, 3),
            bytes(200_000, 4),
            bytes(30_000, 5),
        ];
        let mut upload = cache.put_multipart(&path).await.unwrap();
        for p in &parts {
            upload.put_part(p.clone().into()).await.unwrap();
        }
        upload.complete().await.unwrap();
        let whole: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        let size = whole.len() as u64;
        let tail = cache.tail(&path, Some(size)).await.unwrap();
        assert_eq!((tail.size(), tail.start), (size, size - TAIL_BYTES));
        let got = read_kept(&cache, &inner, &path, size - TAIL_BYTES..size).await;
        assert_eq!(&got[..], &whole[whole.len() - TAIL_BYTES as usize..]);

        // a small file is kept whole
        let path = Path::from("data/c.lance");
        let data = bytes(1_000, 6);
        cache.put(&path, data.clone().into()).await.unwrap();
        assert_eq!(read_kept(&cache, &inner, &path, 0..1_000).await, data);
    }

    #[tokio::test]
    async fn a_failed_put_keeps_no_tail() {
        let inner = Arc::new(InMemory::new());
        let cache = TailCache::new(inner.clone());
        let path = Path::from("data/a.lance");
        cache.put(&path, bytes(10, 1).into()).await.unwrap();
        // a create over an existing object fails: the first object's tail stays
        let refused = cache
            .put_opts(
                &path,
                bytes(20, 2).into(),
                PutOptions {
                    mode: object_store::PutMode::Create,
                    ..Default::default()
                },
            )
            .await;
        assert!(refused.is_err());
        assert_eq!(read_kept(&cache, &inner, &path, 0..10).await, bytes(10, 1));
    }
}
