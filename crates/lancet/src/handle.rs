//! The public handle's type. Its methods, every one a delegation to the module that holds
//! the operation, are in `dataset.rs`; the operations take the [`Snapshot`] it wraps.

use lancet_read::snapshot::Snapshot;

/// One version of a Lance table: a cheap handle (clones share the store and caches).
///
/// Its 35 methods, by what a user does:
/// - **Open and read**: [`Dataset::open`], [`Dataset::open_ref`] (a version, tag or
///   branch), [`Dataset::open_with`] (a store and shared caches), [`Dataset::checkout`],
///   [`Dataset::with_clock`], [`Dataset::uri`], [`Dataset::version`], [`Dataset::schema`],
///   [`Dataset::fragments`], [`Dataset::num_rows`], [`Dataset::scan`], [`Dataset::take`],
///   [`Dataset::search`].
/// - **Write** (each returns [`crate::Committed`]): [`Dataset::create`],
///   [`Dataset::append`], [`Dataset::append_with`], [`Dataset::overwrite`],
///   [`Dataset::commit`] (any Lance operation), [`Dataset::delete`], [`Dataset::update`],
///   [`Dataset::merge_insert`], [`Dataset::add_column`], [`Dataset::drop_columns`],
///   [`Dataset::alter_columns`], [`Dataset::restore`].
/// - **Maintain**: [`Dataset::optimize`] (compaction in one call or distributed, index
///   optimization), [`Dataset::build_btree`], [`Dataset::cleanup`],
///   [`Dataset::cleanup_with_progress`], [`Dataset::shallow_clone`].
/// - **Inspect**: [`Dataset::changes`] (what changed between versions), [`Dataset::verify`],
///   [`Dataset::tags`] (Lance's tags: list, create, move, delete, open by tag),
///   [`Dataset::branches`] (Lance's branches: list, create, open), and
///   [`Dataset::storage`]: the version as stored and the expert writes below the table API
///   (objects, row ids, deletion vectors, BTree segments, the Fragment Reuse Index; staged
///   data files and index segments of a distributed write, backfills, layout conversions,
///   storage actions and rewrites).
///
/// A distributed create is [`crate::write_new_fragments`] on each worker, then
/// [`crate::create_from_fragments`] once.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub(crate) snap: Snapshot,
}

impl From<Snapshot> for Dataset {
    fn from(snap: Snapshot) -> Self {
        Self { snap }
    }
}
