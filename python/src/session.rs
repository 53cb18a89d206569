//! pylance's `Session`: the caches handles share. A handle opened with a session reads
//! through its caches (manifests, index structures, BTree pages, fragment-tree nodes); every
//! handle opened without one gets caches of its own, as in pylance.

use std::sync::Arc;

use lancet::{CacheConfig, Caches};
use pyo3::prelude::*;

/// The caches of a session. pylance sizes two caches; lancet has four: the index size is
/// split evenly between index structures and BTree pages, the metadata size between
/// manifests and fragment-tree nodes.
#[pyclass(module = "lancet._lancet", name = "_Session", frozen)]
pub struct PySession {
    pub(crate) caches: Arc<Caches>,
}

#[pymethods]
impl PySession {
    #[new]
    #[pyo3(signature = (index_cache_size_bytes=None, metadata_cache_size_bytes=None))]
    fn new(index_cache_size_bytes: Option<u64>, metadata_cache_size_bytes: Option<u64>) -> Self {
        let mut config = CacheConfig::default();
        if let Some(bytes) = index_cache_size_bytes {
            (config.index_bytes, config.page_bytes) = (bytes / 2, bytes - bytes / 2);
        }
        if let Some(bytes) = metadata_cache_size_bytes {
            (config.manifest_bytes, config.node_bytes) = (bytes / 2, bytes - bytes / 2);
        }
        PySession {
            caches: Caches::new(config),
        }
    }

    /// Bytes the session's caches hold.
    fn size_bytes(&self, py: Python<'_>) -> u64 {
        self.index_cache_size_bytes(py) + self.metadata_cache_size_bytes(py)
    }

    /// Bytes of index structures and BTree pages held.
    fn index_cache_size_bytes(&self, py: Python<'_>) -> u64 {
        let c = self.settled(py);
        c.index_stats().weighted_bytes + c.page_stats().weighted_bytes
    }

    /// Bytes of manifests and fragment-tree nodes held.
    fn metadata_cache_size_bytes(&self, py: Python<'_>) -> u64 {
        let c = self.settled(py);
        c.manifest_stats().weighted_bytes
            + c.tree_node_stats().weighted_bytes
            + c.tree_outline_stats().weighted_bytes
    }

    /// Whether `other` is this session (the same caches).
    fn is_same_as(&self, other: &PySession) -> bool {
        Arc::ptr_eq(&self.caches, &other.caches)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Session(index_cache_size_bytes={}, metadata_cache_size_bytes={})",
            self.index_cache_size_bytes(py),
            self.metadata_cache_size_bytes(py)
        )
    }
}

impl PySession {
    /// The caches, their pending bookkeeping applied (moka counts sizes lazily).
    fn settled(&self, py: Python<'_>) -> &Arc<Caches> {
        let caches = self.caches.clone();
        crate::runtime::block_on(py, async move {
            caches.settle().await;
            Ok::<_, lancet::Error>(())
        })
        .ok();
        &self.caches
    }
}
