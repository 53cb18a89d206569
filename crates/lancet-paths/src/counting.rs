//! Request counting for tests (feature `testing`): an [`ObjectStore`] that records every read
//! request (a `get_opts`, which is also how a size is asked for, or one `get_ranges` call)
//! per object path, and passes everything through. Tests assert a command's reads against a
//! budget per object.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// An object store that counts read requests per path.
#[derive(Debug)]
pub struct CountingStore {
    inner: Arc<dyn ObjectStore>,
    reads: Mutex<BTreeMap<String, u64>>,
    lists: Mutex<BTreeMap<String, u64>>,
    writes: Mutex<std::collections::BTreeSet<String>>,
}

impl CountingStore {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self {
            inner,
            reads: Mutex::default(),
            lists: Mutex::default(),
            writes: Mutex::default(),
        }
    }

    /// Read requests per object path since the last [`CountingStore::reset`].
    pub fn reads(&self) -> BTreeMap<String, u64> {
        self.reads.lock().unwrap().clone()
    }

    /// Listings per prefix since the last reset.
    pub fn lists(&self) -> BTreeMap<String, u64> {
        self.lists.lock().unwrap().clone()
    }

    /// The objects read more often than one command may read them, with their counts: a
    /// Lance data file twice (its tail, then its pages), an index file three times (a lookup
    /// in a page too large to fetch whole: tail, chunk metadata, chunks), anything else once.
    pub fn over_budget(&self) -> Vec<(String, u64)> {
        self.reads()
            .into_iter()
            .filter(|(path, n)| {
                let budget = match path {
                    p if p.contains("/data/") => 2,
                    p if p.contains("/_indices/") => 3,
                    _ => 1,
                };
                *n > budget
            })
            .collect()
    }

    /// The objects written since the last reset that were also read since: what a command
    /// wrote it knows, so it reads none of it back.
    pub fn read_back(&self) -> Vec<String> {
        let reads = self.reads();
        self.writes
            .lock()
            .unwrap()
            .iter()
            .filter(|p| reads.contains_key(*p))
            .cloned()
            .collect()
    }

    /// Forgets every count.
    pub fn reset(&self) {
        self.reads.lock().unwrap().clear();
        self.lists.lock().unwrap().clear();
        self.writes.lock().unwrap().clear();
    }

    fn wrote(&self, path: &Path) {
        self.writes.lock().unwrap().insert(path.to_string());
    }

    fn read(&self, path: &Path) {
        *self
            .reads
            .lock()
            .unwrap()
            .entry(path.to_string())
            .or_default() += 1;
    }

    fn listed(&self, prefix: Option<&Path>) {
        let key = prefix.map(|p| p.to_string()).unwrap_or_default();
        *self.lists.lock().unwrap().entry(key).or_default() += 1;
    }
}

impl fmt::Display for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CountingStore({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for CountingStore {
    async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
        self.wrote(l);
        self.inner.put_opts(l, p, o).await
    }

    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.wrote(l);
        self.inner.put_multipart_opts(l, o).await
    }

    async fn get_opts(&self, l: &Path, o: GetOptions) -> Result<GetResult> {
        self.read(l);
        self.inner.get_opts(l, o).await
    }

    async fn get_ranges(&self, l: &Path, r: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.read(l);
        self.inner.get_ranges(l, r).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.listed(prefix);
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.listed(prefix);
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
