//! The cache seam: concurrent misses of one key must load once. [`NoCache`] loads every time;
//! the `lancet` facade backs [`NodeCache`] with moka.

use super::*;

/// The cache seam for decoded objects.
pub trait NodeCache: Send + Sync + std::fmt::Debug {
    /// The object under `key`, or the result of `load` (cached on success). Concurrent
    /// callers of one missing key should share one load.
    fn get_or_load<'a>(
        &'a self,
        key: ObjectKey,
        load: BoxFuture<'a, Result<Arc<TreeObject>>>,
    ) -> BoxFuture<'a, Result<Arc<TreeObject>>>;

    /// The object under `key` when it is cached, without loading it. The default caches
    /// nothing.
    fn peek<'a>(&'a self, _key: &'a ObjectKey) -> BoxFuture<'a, Option<Arc<TreeObject>>> {
        Box::pin(async { None })
    }

    /// The [`lancet_file::FileOutline`] kept for the leaf under `key`, if any: a point read
    /// of a cold leaf whose outline is kept opens the leaf's bytes without reading its
    /// footer, metadata and schema again (~0.2 ms of a ~0.5 ms point read). The default
    /// keeps none.
    fn outline<'a>(
        &'a self,
        _key: &'a ObjectKey,
    ) -> BoxFuture<'a, Option<lancet_file::FileOutline>> {
        Box::pin(async { None })
    }

    /// Keeps `outline` for the leaf under `key` (outlines are small: a leaf's metadata
    /// sections, ~11 KB for 4096 records). The default keeps nothing.
    fn keep_outline<'a>(
        &'a self,
        _key: ObjectKey,
        _outline: lancet_file::FileOutline,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// The bytes of the external root under `key` (its `size` 0: a root is opened before its
    /// size is known), when kept: a version opened again, or opened right after the commit
    /// that wrote its root, reads no root. The default keeps none.
    fn root<'a>(&'a self, _key: &'a ObjectKey) -> BoxFuture<'a, Option<bytes::Bytes>> {
        Box::pin(async { None })
    }

    /// Keeps an external root's bytes (roots are small, and immutable under their uuid
    /// names). The default keeps nothing.
    fn keep_root<'a>(&'a self, _key: ObjectKey, _bytes: bytes::Bytes) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// How many bytes (by [`TreeObject::weight_bytes`]) the cache holds at most. A writer
    /// decodes and caches whole leaves while a tree's leaves fit, and point-reads the one
    /// record it needs from a cold leaf when they do not. The default caches nothing.
    fn capacity_bytes(&self) -> u64 {
        0
    }
}

/// No caching: every visit loads.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoCache;

impl NodeCache for NoCache {
    fn get_or_load<'a>(
        &'a self,
        _key: ObjectKey,
        load: BoxFuture<'a, Result<Arc<TreeObject>>>,
    ) -> BoxFuture<'a, Result<Arc<TreeObject>>> {
        load
    }
}
