//! What a write did ([`Committed`]): the one shape every write returns.

use crate::handle::Dataset;
use lancet_read::snapshot::Snapshot;

/// What a write did: the shape every write returns (append, delete, update, add-column, a
/// compaction, an index build or optimization, a restore, a conversion, a commit of an
/// operation). A write that publishes one version reports it; one that commits in steps (a
/// backfill committing every few fragments, an optimization of several indexes) reports the
/// last and the totals; one with nothing to do (a compaction of a compact table) publishes
/// nothing and reports the version it was called on with `versions` 0.
#[derive(Debug, Clone)]
pub struct Committed {
    /// The latest version the write published, or the one it was called on.
    pub dataset: Dataset,
    /// Versions published.
    pub versions: u64,
    /// Objects written: tree objects, index and data files where counted, and manifests.
    pub objects_written: u64,
    /// Their bytes.
    pub bytes_written: u64,
    /// The tree objects among them (relative path, bytes); the rest are manifests and
    /// transaction files.
    pub tree_objects: Vec<(String, u64)>,
    /// Attempts the commits made: 1 each, plus one per race lost and rebased over.
    pub attempts: u32,
    /// Rows the write appended, deleted or updated (matched by its filter); 0 for a write
    /// that changes no row's value (an index build, a compaction, a restore, a conversion).
    pub rows: u64,
    /// Fragments the write removed (a compaction's sources, fragments a delete emptied) and
    /// added (new data).
    pub fragments_removed: usize,
    pub fragments_added: usize,
    /// What a merge_insert did with its rows (`None` for other writes): their sum is
    /// [`Committed::rows`].
    pub merged: Option<MergeStats>,
}

/// The rows a merge_insert inserted, updated and deleted (pylance's `num_inserted_rows`,
/// `num_updated_rows`, `num_deleted_rows`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeStats {
    pub inserted_rows: u64,
    pub updated_rows: u64,
    pub deleted_rows: u64,
}

impl Committed {
    /// A write that published nothing: `dataset` as it is.
    pub(crate) fn nothing(snap: Snapshot) -> Self {
        Committed {
            dataset: snap.into(),
            versions: 0,
            objects_written: 0,
            bytes_written: 0,
            tree_objects: Vec::new(),
            attempts: 0,
            rows: 0,
            fragments_removed: 0,
            fragments_added: 0,
            merged: None,
        }
    }

    /// This write followed by `next` (a later step of the same write): `next`'s version, the
    /// totals of both.
    pub(crate) fn then(mut self, next: Committed) -> Self {
        self.dataset = next.dataset;
        self.versions += next.versions;
        self.objects_written += next.objects_written;
        self.bytes_written += next.bytes_written;
        self.tree_objects.extend(next.tree_objects);
        self.attempts += next.attempts;
        self.rows += next.rows;
        self.fragments_removed += next.fragments_removed;
        self.fragments_added += next.fragments_added;
        self.merged = next.merged.or(self.merged);
        self
    }

    /// With `rows` reported as the rows the write changed.
    pub(crate) fn with_rows(mut self, rows: u64) -> Self {
        self.rows = rows;
        self
    }

    /// The version published (or the one the write was called on).
    pub fn version(&self) -> u64 {
        self.dataset.snap.version()
    }
}
