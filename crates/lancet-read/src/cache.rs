//! Byte-weighted caches shared by the subsystems (manifests, BTree pages, tree nodes, ...).
//!
//! Each cache is a moka cache whose capacity is a number of bytes; an entry weighs what its
//! [`Weighted::weight_bytes`] says. Concurrent loads of one missing key run the loader once
//! (moka's `try_get_with`). Hits and misses are counted per cache.

use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Something that knows how many bytes it keeps resident.
pub trait Weighted {
    fn weight_bytes(&self) -> u64;
}

impl<T: Weighted + ?Sized> Weighted for Arc<T> {
    fn weight_bytes(&self) -> u64 {
        (**self).weight_bytes()
    }
}

/// Byte capacities, one per cache. Zero disables a cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheConfig {
    /// Decoded manifests, keyed by dataset URI and version.
    pub manifest_bytes: u64,
    /// Decoded BTree pages.
    pub page_bytes: u64,
    /// Index metadata and lookups (BTree page directories, RowIdIndex, FRI histories).
    pub index_bytes: u64,
    /// Fragment-tree nodes and leaves.
    pub node_bytes: u64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            manifest_bytes: 256 << 20,
            page_bytes: 512 << 20,
            index_bytes: 256 << 20,
            node_bytes: 256 << 20,
        }
    }
}

/// Hit and miss counts of one cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// Sum of the weights of resident entries; moka updates it lazily.
    pub weighted_bytes: u64,
}

/// One byte-weighted cache.
pub struct ByteCache<K, V> {
    inner: moka::future::Cache<K, V>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl<K, V> std::fmt::Debug for ByteCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteCache")
            .field("hits", &self.hits)
            .field("misses", &self.misses)
            .finish()
    }
}

impl<K, V> ByteCache<K, V>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Weighted + Clone + Send + Sync + 'static,
{
    pub fn new(capacity_bytes: u64) -> Self {
        let inner = moka::future::Cache::builder()
            .max_capacity(capacity_bytes)
            .weigher(|_k: &K, v: &V| u32::try_from(v.weight_bytes()).unwrap_or(u32::MAX))
            .build();
        Self {
            inner,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The most bytes the cache holds.
    pub fn capacity_bytes(&self) -> u64 {
        self.inner.policy().max_capacity().unwrap_or(0)
    }

    /// The cached value, or the loader's value (cached on success). Concurrent callers with the
    /// same key share one load.
    pub async fn get_or_try_load<E, F>(&self, key: K, load: F) -> Result<V, Arc<E>>
    where
        F: std::future::Future<Output = Result<V, E>>,
        E: Send + Sync + 'static,
    {
        let loaded = std::sync::atomic::AtomicBool::new(false);
        let result = self
            .inner
            .try_get_with(key, async {
                loaded.store(true, Ordering::Relaxed);
                load.await
            })
            .await;
        let hit = !loaded.load(Ordering::Relaxed);
        if hit {
            self.hits.fetch_add(1, Ordering::Relaxed);
        } else {
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
        tracing::trace!(
            cache = std::any::type_name::<V>(),
            hit,
            ok = result.is_ok(),
            "cache"
        );
        result
    }

    pub async fn get(&self, key: &K) -> Option<V> {
        let v = self.inner.get(key).await;
        let counter = if v.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        v
    }

    pub async fn insert(&self, key: K, value: V) {
        self.inner.insert(key, value).await;
    }

    /// Drops `key` (an object that was deleted).
    pub async fn invalidate(&self, key: &K) {
        self.inner.invalidate(key).await;
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            weighted_bytes: self.inner.weighted_size(),
        }
    }

    /// Applies moka's pending bookkeeping, so [`ByteCache::stats`] counts every entry.
    pub async fn settle(&self) {
        self.inner.run_pending_tasks().await;
    }
}

/// Decoded manifest as cached: the manifest file plus its weight.
#[derive(Debug, Clone)]
pub struct CachedManifest(pub Arc<lancet_paths::ManifestFile>);

impl Weighted for CachedManifest {
    fn weight_bytes(&self) -> u64 {
        // The stored protobuf is a fair proxy of the decoded size.
        self.0.entry.size.max(1)
    }
}

/// What a decoded structure is cached under: each kind names what it depends on. A BTree
/// segment is immutable and shared by every version that lists it, so its directory alone
/// names it; the others belong to one version.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StructureKey {
    /// Every fragment record of a tree version, resolved.
    TreeFragments { uri: String, version: u64 },
    /// A version's Fragment Reuse Index history, opened.
    FriHistory { uri: String, version: u64 },
    /// A stable-row-id version's `RowIdIndex`.
    RowIdIndex { uri: String, version: u64 },
    /// A BTree segment (its lookup), by the display URI of its index directory.
    BTreeSegment { dir: String },
    /// A fragment's deletion vector, by the display URI of its (immutable) deletion file.
    DeletionVector { file: String },
    /// The opened segments of a version's BTree index `name`.
    BTreeSegments {
        uri: String,
        version: u64,
        name: String,
    },
}

/// A decoded structure in the structure cache: one variant per [`StructureKey`] kind.
#[derive(Clone)]
pub enum Structure {
    TreeFragments(Arc<[lancet_proto::table::DataFragment]>),
    FriHistory(Arc<lancet_reuse::History>),
    RowIdIndex(Arc<lancet_rowid::RowIdIndex>),
    BTreeSegment(Arc<lancet_btree::BTreeIndex>),
    DeletionVector(Arc<roaring::RoaringBitmap>),
    BTreeSegments(Arc<Vec<crate::segment::BTreeSegment>>),
}

impl Weighted for Structure {
    fn weight_bytes(&self) -> u64 {
        let bytes = match self {
            Structure::TreeFragments(all) => all
                .iter()
                .map(|f| prost::Message::encoded_len(f) as u64)
                .sum(),
            // a history holds digests and bitmaps; row maps are read on demand
            Structure::FriHistory(_) => 4096,
            Structure::RowIdIndex(index) => index.resident_bytes() as u64,
            Structure::BTreeSegment(index) => (index.lookup().num_pages() as u64 + 1) * 64,
            Structure::DeletionVector(d) => d.serialized_size() as u64,
            // the segments' lookups are weighed under their own keys
            Structure::BTreeSegments(segments) => segments
                .iter()
                .map(|s| s.fragments.serialized_size() as u64 + 256)
                .sum(),
        };
        bytes.max(1)
    }
}

/// The Rust type a [`Structure`] variant holds: the typed way in and out of the cache.
pub trait CachedStructure: Send + Sync + 'static {
    fn wrap(value: Arc<Self>) -> Structure;
    fn unwrap(cached: Structure) -> Option<Arc<Self>>;
}

macro_rules! cached_structure {
    ($variant:ident, $ty:ty) => {
        impl CachedStructure for $ty {
            fn wrap(value: Arc<Self>) -> Structure {
                Structure::$variant(value)
            }
            fn unwrap(cached: Structure) -> Option<Arc<Self>> {
                match cached {
                    Structure::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}

cached_structure!(TreeFragments, [lancet_proto::table::DataFragment]);
cached_structure!(FriHistory, lancet_reuse::History);
cached_structure!(RowIdIndex, lancet_rowid::RowIdIndex);
cached_structure!(BTreeSegment, lancet_btree::BTreeIndex);
cached_structure!(DeletionVector, roaring::RoaringBitmap);
cached_structure!(BTreeSegments, Vec<crate::segment::BTreeSegment>);

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone)]
    struct Blob(u64);
    impl Weighted for Blob {
        fn weight_bytes(&self) -> u64 {
            self.0
        }
    }

    #[tokio::test]
    async fn counts_hits_and_loads_once() {
        let cache: Arc<ByteCache<u32, Blob>> = Arc::new(ByteCache::new(1 << 20));
        let loads = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let cache = cache.clone();
            let loads = loads.clone();
            tasks.push(tokio::spawn(async move {
                cache
                    .get_or_try_load(1, async {
                        loads.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                        Ok::<_, std::convert::Infallible>(Blob(100))
                    })
                    .await
                    .map(|b| b.0)
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap().unwrap(), 100);
        }
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        let s = cache.stats();
        assert_eq!(s.hits + s.misses, 8);
        assert!(s.misses >= 1);
        assert!(cache.get(&2).await.is_none());
    }

    #[tokio::test]
    async fn capacity_is_in_bytes() {
        let cache: ByteCache<u32, Blob> = ByteCache::new(1000);
        for k in 0..50 {
            cache.insert(k, Blob(100)).await;
        }
        cache.inner.run_pending_tasks().await;
        assert!(cache.inner.weighted_size() <= 1000);
        // an entry larger than the whole cache is not kept
        cache.insert(99, Blob(5000)).await;
        cache.inner.run_pending_tasks().await;
        assert!(cache.inner.get(&99).await.is_none());
    }
}
