//! The caches lancet-btree and lancet-tree read through: the seams they define
//! (`lancet_btree::PageCache`, `lancet_tree::NodeCache`) over moka, sized and counted like
//! the session's other caches.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::cache::{ByteCache, CacheStats, Weighted};

/// The BTree page cache: moka's synchronous cache, weighted by decoded page bytes, with hit
/// and miss counters. lancet-btree serializes cold loads itself, so a page loads once.
///
/// Why not a [`ByteCache`] like the others: lancet-btree's `PageCache` seam is synchronous,
/// and a search reads all of its missing pages in one coalesced request set, so the
/// per-key single-flight loader [`ByteCache::get_or_try_load`] gives would split that read
/// into one request per page.
pub struct MokaPageCache {
    inner: moka::sync::Cache<lancet_btree::PageKey, Arc<lancet_btree::Page>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl std::fmt::Debug for MokaPageCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MokaPageCache").finish()
    }
}

impl MokaPageCache {
    pub fn new(capacity_bytes: u64) -> Self {
        Self {
            inner: moka::sync::Cache::builder()
                .max_capacity(capacity_bytes)
                .weigher(|_k, v: &Arc<lancet_btree::Page>| {
                    u32::try_from(v.size_bytes()).unwrap_or(u32::MAX)
                })
                .build(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            weighted_bytes: self.inner.weighted_size(),
        }
    }

    /// Applies moka's pending bookkeeping, so [`MokaPageCache::stats`] counts every entry.
    pub fn settle(&self) {
        self.inner.run_pending_tasks();
    }
}

impl lancet_btree::PageCache for MokaPageCache {
    fn get(&self, key: &lancet_btree::PageKey) -> Option<Arc<lancet_btree::Page>> {
        let v = self.inner.get(key);
        let counter = if v.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        tracing::trace!(
            cache = "btree_page",
            page = key.page,
            hit = v.is_some(),
            "cache"
        );
        v
    }

    fn insert(&self, key: lancet_btree::PageKey, page: Arc<lancet_btree::Page>) {
        self.inner.insert(key, page);
    }

    fn recheck(&self, key: &lancet_btree::PageKey) -> Option<Arc<lancet_btree::Page>> {
        let v = self.inner.get(key);
        if v.is_some() {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        v
    }
}

/// The fragment tree's node cache: decoded roots, interiors and leaves, keyed by resolved
/// location and size, weighed by their stored size. Concurrent misses of one object load once.
///
/// Beside them, the outlines of leaves point-read cold (their decoded file metadata, see
/// [`lancet_tree::NodeCache::outline`]), in a cache of their own an eighth of the node
/// budget (at least 4 MiB): a leaf's outline is ~4% of its size, so a tree whose leaves are
/// several times the node budget still has every leaf's outline kept.
#[derive(Debug)]
pub struct TreeNodeCache {
    objects: ByteCache<lancet_tree::ObjectKey, Arc<lancet_tree::TreeObject>>,
    outlines: ByteCache<lancet_tree::ObjectKey, lancet_file::FileOutline>,
    /// External roots' bytes (within the outlines' budget: a root is a few KB to a few MB).
    roots: ByteCache<lancet_tree::ObjectKey, RootBytes>,
}

/// An external root's bytes, as kept.
#[derive(Debug, Clone)]
struct RootBytes(bytes::Bytes);

impl Weighted for RootBytes {
    fn weight_bytes(&self) -> u64 {
        (self.0.len() as u64).max(1)
    }
}

impl Weighted for lancet_file::FileOutline {
    fn weight_bytes(&self) -> u64 {
        self.size_bytes().max(1)
    }
}

impl Weighted for lancet_tree::TreeObject {
    fn weight_bytes(&self) -> u64 {
        lancet_tree::TreeObject::weight_bytes(self).max(1)
    }
}

impl TreeNodeCache {
    pub fn new(capacity_bytes: u64) -> Self {
        // At least 4 MiB of outlines (hundreds of leaves) unless the cache is disabled.
        let outlines = match capacity_bytes {
            0 => 0,
            n => (n / 8).max(4 << 20),
        };
        Self {
            objects: ByteCache::new(capacity_bytes),
            outlines: ByteCache::new(outlines),
            roots: ByteCache::new(outlines),
        }
    }

    /// Applies moka's pending bookkeeping of the three caches.
    pub async fn settle(&self) {
        self.objects.settle().await;
        self.outlines.settle().await;
        self.roots.settle().await;
    }

    /// The decoded objects' cache statistics.
    pub fn stats(&self) -> CacheStats {
        self.objects.stats()
    }

    /// The leaf outlines' cache statistics.
    pub fn outline_stats(&self) -> CacheStats {
        self.outlines.stats()
    }
}

impl lancet_tree::NodeCache for TreeNodeCache {
    fn get_or_load<'a>(
        &'a self,
        key: lancet_tree::ObjectKey,
        load: futures::future::BoxFuture<'a, lancet_tree::Result<Arc<lancet_tree::TreeObject>>>,
    ) -> futures::future::BoxFuture<'a, lancet_tree::Result<Arc<lancet_tree::TreeObject>>> {
        Box::pin(async move {
            self.objects
                .get_or_try_load(key, load)
                .await
                .map_err(|shared| (*shared).clone())
        })
    }

    fn peek<'a>(
        &'a self,
        key: &'a lancet_tree::ObjectKey,
    ) -> futures::future::BoxFuture<'a, Option<Arc<lancet_tree::TreeObject>>> {
        Box::pin(async move { self.objects.get(key).await })
    }

    fn outline<'a>(
        &'a self,
        key: &'a lancet_tree::ObjectKey,
    ) -> futures::future::BoxFuture<'a, Option<lancet_file::FileOutline>> {
        Box::pin(async move { self.outlines.get(key).await })
    }

    fn keep_outline<'a>(
        &'a self,
        key: lancet_tree::ObjectKey,
        outline: lancet_file::FileOutline,
    ) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(async move { self.outlines.insert(key, outline).await })
    }

    fn root<'a>(
        &'a self,
        key: &'a lancet_tree::ObjectKey,
    ) -> futures::future::BoxFuture<'a, Option<bytes::Bytes>> {
        Box::pin(async move { self.roots.get(key).await.map(|r| r.0) })
    }

    fn keep_root<'a>(
        &'a self,
        key: lancet_tree::ObjectKey,
        bytes: bytes::Bytes,
    ) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(async move { self.roots.insert(key, RootBytes(bytes)).await })
    }

    fn capacity_bytes(&self) -> u64 {
        self.objects.capacity_bytes()
    }
}
