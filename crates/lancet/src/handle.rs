//! The public handle's type. Its methods, every one a delegation to the module that holds
//! the operation, are in `dataset.rs`; the operations take the [`Snapshot`] it wraps.

use crate::snapshot::Snapshot;

/// One version of a Lance table: a cheap handle (clones share the store and caches).
///
/// Its methods, by what a user does:
/// - **Open and read**: [`Dataset::open`], [`Dataset::open_version`], [`Dataset::open_with`],
///   [`Dataset::checkout`], [`Dataset::with_clock`], [`Dataset::uri`], [`Dataset::version`],
///   [`Dataset::schema`], [`Dataset::num_rows`], [`Dataset::scan`], [`Dataset::take`],
///   [`Dataset::search`], [`Dataset::search_with`].
/// - **Write** (each returns [`crate::committed::Committed`]): [`Dataset::create`], [`Dataset::append`],
///   [`Dataset::append_with`], [`Dataset::overwrite`], [`Dataset::write_fragments`] (a
///   distributed write's files),
///   [`Dataset::commit`] (any Lance operation), [`Dataset::delete`], [`Dataset::update`],
///   [`Dataset::add_column`], [`Dataset::drop_columns`], [`Dataset::alter_columns`],
///   [`Dataset::restore`].
/// - **Maintain**: [`Dataset::compact`] (or [`Dataset::compaction`]: plan, execute each
///   task on many workers, commit once),
///   [`Dataset::build_btree`], [`Dataset::optimize_indices`], [`Dataset::cleanup`],
///   [`Dataset::cleanup_with_progress`], [`Dataset::convert_to_tree`], [`Dataset::flatten`],
///   [`Dataset::shallow_clone`].
/// - **Inspect**: [`Dataset::manifest`], [`Dataset::indices`], [`Dataset::fragments`],
///   [`Dataset::index_summaries`], [`Dataset::changes`] (what changed between versions),
///   [`Dataset::verify`], [`Dataset::verify_data`],
///   [`Dataset::tags`] (Lance's tags: list, create, move, delete, open by tag),
///   [`Dataset::branches`] (Lance's branches: list, create, open), and
///   [`Dataset::storage`]: the version as stored (objects, row ids, deletion vectors, BTree
///   segments, the Fragment Reuse Index, expert writes of storage actions and rewrites).
#[derive(Debug, Clone)]
pub struct Dataset {
    pub(crate) snap: Snapshot,
}

impl From<Snapshot> for Dataset {
    fn from(snap: Snapshot) -> Self {
        Self { snap }
    }
}
