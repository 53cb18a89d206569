use std::sync::Arc;

use lance_io::object_store::ObjectStore as LanceStore;
use lance_io::scheduler::{ScanScheduler, SchedulerConfig};

use crate::error::{FileError, Result};

/// An object store as lance-file needs it: lance-io's wrapper plus one scan scheduler, built
/// from a plain `object_store` handle so that lancet and lance-file share one store.
#[derive(Debug, Clone)]
pub struct FileStore {
    pub(crate) store: Arc<LanceStore>,
    pub(crate) scheduler: Arc<ScanScheduler>,
    /// The plain handle, for lancet's own footer checks (through `tails`).
    pub(crate) raw: Arc<dyn object_store::ObjectStore>,
    /// The tails of the files opened through this store: every read passes through it.
    pub(crate) tails: Arc<crate::tail::TailCache>,
    /// Whether each read costs a round trip to an object store (not a local disk or memory).
    remote: bool,
}

impl FileStore {
    /// Wraps `store`. Must be called within a Tokio runtime: lance-io starts its I/O scheduler
    /// task here. `uri` names its location (`file:///`, `memory:///`, `s3://bucket`); only
    /// its scheme and authority are used, to pick lance-io's block size and I/O parallelism.
    /// With `file:///` lance-io opens and writes local files itself; `file-object-store:///`
    /// sends every local read and write through `store` (a store that checks where objects
    /// really lie needs that).
    pub fn new(store: Arc<dyn object_store::ObjectStore>, uri: &str) -> Result<Self> {
        let url = url::Url::parse(uri).map_err(|e| FileError::InvalidUri {
            uri: uri.to_string(),
            reason: e.to_string(),
        })?;
        // `file-object-store`: a local disk reached through `store` (lance-io's `file` scheme
        // opens and writes files itself, around the store); sized as lance-io sizes `file`
        let local = matches!(url.scheme(), "file" | "file-object-store");
        let url_is_memory = url.scheme() == "memory";
        let parallelism = if local || url_is_memory { 8 } else { 64 };
        let block_size = local.then_some(4 * 1024);
        let tails = Arc::new(crate::tail::TailCache::new(store));
        let raw: Arc<dyn object_store::ObjectStore> = tails.clone();
        let store = Arc::new(LanceStore::new(
            raw.clone(),
            url,
            block_size,
            None,
            false,
            true,
            parallelism,
            3,
            None,
        ));
        let scheduler = ScanScheduler::new(store.clone(), SchedulerConfig::max_bandwidth(&store));
        Ok(Self {
            store,
            scheduler,
            raw,
            tails,
            remote: !(local || url_is_memory),
        })
    }

    /// Whether each read costs a round trip to an object store: readers then fetch what they
    /// will need together rather than one after the other.
    pub fn is_remote(&self) -> bool {
        self.remote
    }
}

/// Read requests and bytes read through Lance's I/O scheduler in this process so far, over
/// every [`FileStore`] (the data files and Lance files lancet reads with it): lance-io's
/// process-wide counters, the ones pylance's `iops_counter` and `bytes_read_counter` report.
pub fn io_counters() -> (u64, u64) {
    (lance_io::iops_counter(), lance_io::bytes_read_counter())
}
