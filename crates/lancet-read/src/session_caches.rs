//! The caches of one lancet session ([`Caches`]): manifests and decoded structures in the
//! byte-weighted caches of [`crate::cache`], BTree pages and fragment-tree nodes in the caches
//! the subsystems read through ([`crate::subsystem_caches`]).

use std::sync::Arc;

use crate::cache::{
    ByteCache, CacheConfig, CacheStats, CachedManifest, CachedStructure, Structure, StructureKey,
};
use crate::subsystem_caches::{MokaPageCache, TreeNodeCache};

/// The caches of one lancet session, shared by every dataset opened with it.
#[derive(Debug)]
pub struct Caches {
    config: CacheConfig,
    pub manifests: ByteCache<(String, u64), CachedManifest>,
    pub indexes: ByteCache<StructureKey, Structure>,
    pub pages: Arc<MokaPageCache>,
    pub tree_nodes: Arc<TreeNodeCache>,
}

impl Caches {
    /// The structure under `key`, or `load`'s (cached on success; concurrent callers share
    /// one load). A key of one kind always holds its own variant; finding another is a bug.
    /// `load` comes boxed: loads hold lance-file's large futures, which held inline would be
    /// copied through the stack (beyond a 2 MiB thread stack in debug builds).
    pub async fn structure<T>(
        &self,
        key: StructureKey,
        load: futures::future::BoxFuture<'_, crate::error::Result<Arc<T>>>,
    ) -> crate::error::Result<Arc<T>>
    where
        T: CachedStructure + ?Sized,
    {
        let what = format!("{key:?}");
        let cached = self
            .indexes
            .get_or_try_load(key, async { load.await.map(T::wrap) })
            .await
            .map_err(crate::error::unshare)?;
        T::unwrap(cached).ok_or_else(|| {
            crate::error::Error::Internal(format!("the cache holds another kind under {what}"))
        })
    }

    /// The structure under `key` if it is cached (no load).
    pub async fn cached_structure<T>(&self, key: &StructureKey) -> Option<Arc<T>>
    where
        T: CachedStructure + ?Sized,
    {
        T::unwrap(self.indexes.get(key).await?)
    }

    pub fn new(config: CacheConfig) -> Arc<Self> {
        Arc::new(Self::with_config(config))
    }

    fn with_config(config: CacheConfig) -> Self {
        Self {
            config,
            manifests: ByteCache::new(config.manifest_bytes),
            indexes: ByteCache::new(config.index_bytes),
            pages: Arc::new(MokaPageCache::new(config.page_bytes)),
            tree_nodes: Arc::new(TreeNodeCache::new(config.node_bytes)),
        }
    }

    pub fn config(&self) -> &CacheConfig {
        &self.config
    }

    /// Hits and misses of the fragment tree's node cache.
    pub fn tree_node_stats(&self) -> CacheStats {
        self.tree_nodes.stats()
    }

    /// The kept leaf outlines' statistics (see [`TreeNodeCache`]).
    pub fn tree_outline_stats(&self) -> CacheStats {
        self.tree_nodes.outline_stats()
    }

    /// Applies every cache's pending bookkeeping, so the stats below count every entry
    /// (moka updates its sizes lazily).
    pub async fn settle(&self) {
        self.manifests.settle().await;
        self.indexes.settle().await;
        self.pages.settle();
        self.tree_nodes.settle().await;
    }

    pub fn manifest_stats(&self) -> CacheStats {
        self.manifests.stats()
    }

    /// Stats of the BTree page cache.
    pub fn page_stats(&self) -> CacheStats {
        self.pages.stats()
    }

    /// Stats of the cache of per-version index structures (RowIdIndex, ...).
    pub fn index_stats(&self) -> CacheStats {
        self.indexes.stats()
    }
}

impl Default for Caches {
    fn default() -> Self {
        Self::with_config(CacheConfig::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lancet_proto::table::DataFragment;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[tokio::test]
    async fn structures_are_typed_loaded_once_and_counted() {
        let caches = Caches::new(CacheConfig::default());
        let key = StructureKey::TreeFragments {
            uri: "memory://t".into(),
            version: 3,
        };
        let loads = AtomicU64::new(0);
        let load = || async {
            loads.fetch_add(1, Ordering::SeqCst);
            let all: Vec<DataFragment> = (0..3)
                .map(|id| DataFragment {
                    id,
                    ..Default::default()
                })
                .collect();
            Ok(Arc::<[DataFragment]>::from(all))
        };
        let first = caches
            .structure(key.clone(), Box::pin(load()))
            .await
            .unwrap();
        let again = caches
            .structure(key.clone(), Box::pin(load()))
            .await
            .unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        let stats = caches.index_stats();
        assert_eq!((stats.hits, stats.misses), (1, 1));
        // the key's kind decides the type: asking for another type under it is a typed bug
        // report, never a wrong value
        assert!(caches
            .cached_structure::<lancet_rowid::RowIdIndex>(&key)
            .await
            .is_none());
        let wrong = caches
            .structure::<lancet_rowid::RowIdIndex>(
                key,
                Box::pin(async { panic!("a cached key is not loaded again") }),
            )
            .await;
        assert_eq!(
            wrong.err().map(|e| e.kind()),
            Some(crate::error::ErrorKind::Internal)
        );
        // BTree segments are keyed by directory alone: no version in the key
        let segment = StructureKey::BTreeSegment {
            dir: "memory://t/_indices/u".into(),
        };
        assert!(caches
            .cached_structure::<lancet_btree::BTreeIndex>(&segment)
            .await
            .is_none());
    }
}
