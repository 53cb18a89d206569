//! A version's optimizations, pylance's `dataset.optimize`: compaction (in one call, or
//! planned here, executed on many workers and committed once) and index optimization.

use crate::committed::Committed;
use crate::compaction::{self, Compaction, CompactionOptions};
use crate::optimize::{self, OptimizeOptions};
use lancet_read::error::Result;
use lancet_read::snapshot::Snapshot;

/// The optimizations of one version ([`crate::Dataset::optimize`]). Cheap to make: a
/// reference.
#[derive(Debug, Clone, Copy)]
pub struct Optimizer<'a> {
    ds: &'a Snapshot,
}

/// The optimizations of `snap`.
pub(crate) fn optimizer(snap: &Snapshot) -> Optimizer<'_> {
    Optimizer { ds: snap }
}

impl<'a> Optimizer<'a> {
    /// Plans, executes every task here, and commits: `compact_files` in one call.
    ///
    /// `CompactionOptions::default()` is pylance's `compact_files()` with no argument:
    /// fragments below 1,048,576 rows are merged with their neighbours into fragments near
    /// that size, and a fragment with more than 10% of its rows deleted is rewritten without
    /// them; every BTree covering a rewritten fragment is rewritten in the same commit
    /// (`defer_index_remap: true` records the moves in the Fragment Reuse Index instead).
    /// A table with nothing to compact publishes nothing ([`Committed::versions`] 0).
    pub async fn compact(&self, options: &CompactionOptions) -> Result<Committed> {
        Box::pin(compaction::compact(self.ds, options)).await
    }

    /// Lance's distributed compaction: the tasks planned on this version, each executed
    /// anywhere, every result committed once.
    pub fn compaction(&self) -> Compaction<'a> {
        compaction::compaction(self.ds)
    }

    /// Extends every BTree index over the fragments it does not cover, and rewrites segments
    /// that hold addresses from before deferred compactions (see the module docs). Returns
    /// a version per index changed, and the trimmed history's (none when nothing needed doing).
    pub async fn optimize_indices(&self, options: &OptimizeOptions) -> Result<Committed> {
        Box::pin(optimize::optimize_indices(self.ds, options)).await
    }
}
