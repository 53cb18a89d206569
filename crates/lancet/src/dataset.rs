//! The methods of the public handle, [`Dataset`], in four groups: open and read, write,
//! maintain, inspect. Every one is a delegation: the operation lives in the module named in
//! its body, as a function over the [`Snapshot`] the handle wraps, so each module's
//! dependencies are its imports.
//!
//! Each asynchronous delegation boxes the operation's future: the future an embedder's own
//! async block holds stays one pointer deep, however many layers the operation composes, so
//! a block calling several writes stays far inside rustc's type-layout depth limit.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::Stream;
use lancet_paths::clock::Clock;
use lancet_paths::DatasetStore;
use lancet_proto::table::DataFragment;

use crate::backfill::AddColumnOptions;
use crate::branches::Branches;
use crate::cleanup::{CleanupPolicy, CleanupProgress, CleanupReport};
use crate::committed::Committed;
use crate::convert;
use crate::create::{self, CreateOptions};
use crate::handle::Dataset;
use crate::index_build;
use crate::merge::MergeInsert;
use crate::optimizer::{self, Optimizer};
use crate::schema_change::ColumnAlteration;
use crate::storage::Storage;
use crate::tags::Tags;
use crate::write::AppendOptions;
use crate::{
    backfill, branches, cleanup, clone, merge, mutate, operations, schema_change, storage, tags,
    write,
};
use futures::stream::BoxStream;
use lancet_filter::exprs::{Assignment, ValueExpr};
use lancet_filter::Filter;
use lancet_read::changes::Changes;
use lancet_read::error::Result;
use lancet_read::rows;
use lancet_read::scan::ScanOptions;
use lancet_read::search::SearchResult;
use lancet_read::session_caches::Caches;
use lancet_read::snapshot::Snapshot;
use lancet_read::take;
use lancet_read::verify::VerifyReport;
use lancet_read::version_ref::VersionRef;
use lancet_read::{changes, count, scan, search, verify};
use lancet_txn::build::Change;

/// Open and read.
impl Dataset {
    /// Opens the latest version of the table at `uri` with default caches.
    pub async fn open(uri: &str) -> Result<Self> {
        // no reference to resolve: nothing read before the version itself
        Self::open_ref(uri, &VersionRef::default()).await
    }

    /// Opens the version `at` names of the table at `uri`: a version number, a tag (of the
    /// main line or of a branch), or a branch's latest version or `version` of it, as
    /// pylance's `dataset(uri, version=..)` and `checkout_version((branch, version))` open
    /// them. A tag or branch no reference names is `ErrorKind::NotFound`; a tag together
    /// with a version, or with a branch other than its own, is `ErrorKind::InvalidInput`.
    pub async fn open_ref(uri: &str, at: &VersionRef) -> Result<Self> {
        let (root, version) = at.resolve(uri).await?;
        let caches = Caches::new(Default::default());
        Self::open_with(DatasetStore::open(&root)?, version, caches).await
    }

    /// Opens `version` (latest when `None`) of the table in `store`, sharing `caches`.
    pub async fn open_with(
        store: DatasetStore,
        version: Option<u64>,
        caches: Arc<Caches>,
    ) -> Result<Self> {
        Snapshot::open(store, version, caches).await.map(Self::from)
    }

    /// Another version of the same table, sharing this handle's store, caches and clock.
    pub async fn checkout(&self, version: u64) -> Result<Self> {
        self.snap.open_sibling(Some(version)).await.map(Self::from)
    }

    /// This handle with `clock` as the time its commits stamp and its age rules (cleanup,
    /// `fri unreferenced`) judge by; the system clock otherwise.
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        self.snap.with_clock(clock).into()
    }

    pub fn uri(&self) -> &str {
        self.snap.uri()
    }

    pub fn version(&self) -> u64 {
        self.snap.version()
    }

    /// Every fragment of the version, in id order: the manifest's flat list, or every record
    /// of the fragment tree resolved through its buffered mutations (the whole tree is read
    /// and checked; the result is kept in the index cache for this version).
    pub async fn fragments(&self) -> Result<Arc<[DataFragment]>> {
        self.snap.fragments().await
    }

    /// Visible rows of the version, when every fragment's counts are known (always on a
    /// tree, whose counts are derived from the root without reading further).
    pub fn num_rows(&self) -> Option<u64> {
        self.snap.num_rows()
    }

    /// The table's Arrow schema (top-level fields in manifest order).
    pub fn schema(&self) -> Result<SchemaRef> {
        rows::schema(&self.snap)
    }

    /// The rows of this version (deleted rows left out) as a stream of batches; see
    /// [`ScanOptions`]. A filter is answered before any projected column is read.
    pub async fn scan(
        &self,
        options: ScanOptions,
    ) -> Result<BoxStream<'static, Result<RecordBatch>>> {
        Box::pin(scan::scan(&self.snap, options)).await
    }

    /// The rows with stable row ids (row addresses on a table without stable row ids)
    /// `row_ids`, in the order asked; an id that is not live is an error naming it.
    pub async fn take(&self, row_ids: &[u64], columns: Option<&[String]>) -> Result<RecordBatch> {
        Box::pin(take::take(&self.snap, row_ids, columns)).await
    }

    /// The rows of this version where `filter` is TRUE, and where it is NULL.
    pub async fn search(&self, filter: &Filter) -> Result<SearchResult> {
        Box::pin(search::search(&self.snap, filter)).await
    }

    /// Rows `filter` matches, or every visible row (from the recorded counts, nothing else
    /// read), as pylance's `count_rows`.
    pub async fn count_rows(&self, filter: Option<&Filter>) -> Result<u64> {
        Box::pin(count::count_rows(&self.snap, filter)).await
    }
}

/// Write.
impl Dataset {
    /// Creates a table at `uri` (which must hold none) from `batches` of `schema`, as its
    /// version 1: Lance's Overwrite, with fragments numbered from 0 and, with stable row ids,
    /// row ids from 0. Memory stays bounded (see `lancet_file::write_fragments`).
    pub async fn create<S>(
        uri: &str,
        schema: SchemaRef,
        batches: S,
        options: CreateOptions,
    ) -> Result<Committed>
    where
        S: Stream<Item = Result<RecordBatch>> + Send,
    {
        Box::pin(create::create(uri, schema, batches, options)).await
    }

    /// Replaces every row with `batches` of `schema` in one Overwrite, as pylance's
    /// `write_dataset(mode="overwrite")`: the schema's field ids from 0 as the table's new
    /// columns, data files in the table's file version, new fragments numbered after
    /// `max_fragment_id` and, with stable row ids, row ids from `next_row_id` (no id is handed
    /// out twice); the indexes go, as Lance leaves them. No rows is an empty table (a
    /// truncation). The table's layout stays (a tree holds the new fragments).
    /// [`Committed::rows`]: the rows written.
    pub async fn overwrite<S>(
        &self,
        schema: SchemaRef,
        batches: S,
        options: &AppendOptions,
    ) -> Result<Committed>
    where
        S: Stream<Item = Result<RecordBatch>> + Send,
    {
        Box::pin(write::overwrite(&self.snap, schema, batches, options)).await
    }

    /// Appends `batches` (the table's schema) as new fragments in one Append. No rows at all
    /// is refused with nothing published, as Lance 14.0.2's writer refuses it ("No data to
    /// write").
    pub async fn append<S>(&self, batches: S) -> Result<Committed>
    where
        S: Stream<Item = Result<RecordBatch>> + Send,
    {
        Box::pin(write::append(&self.snap, batches)).await
    }

    /// [`Dataset::append`] with how the new data files are cut (`options`).
    pub async fn append_with<S>(&self, batches: S, options: &AppendOptions) -> Result<Committed>
    where
        S: Stream<Item = Result<RecordBatch>> + Send,
    {
        Box::pin(write::append_with(&self.snap, batches, options)).await
    }

    /// Commits `operation` as the next version: Append, Delete, Update, Overwrite, Merge,
    /// DataReplacement, CreateIndex, ReserveFragments, UpdateBases and UpdateConfig, and a
    /// Restore (as [`Dataset::restore`]); a Rewrite through [`crate::storage::Storage::commit_rewrite`] or
    /// [`Optimizer::compact`](crate::Optimizer::compact), which write what it needs beside it. New fragments at id
    /// 0 are numbered; on a stable-row-id table they get row ids from `next_row_id` and
    /// version sequences. The candidate is judged by the invariants, with the footers of the
    /// data files it adds read; a lost race is rebased (the operation planned again on the
    /// latest version) or fails typed. A [`Change`] with properties records them in the
    /// transaction (pylance's `commit_message` and `transaction_properties`).
    pub async fn commit(&self, change: impl Into<Change>) -> Result<Committed> {
        Box::pin(operations::commit(&self.snap, change)).await
    }

    /// Deletes the live rows where `filter` is TRUE, as one Delete recording the filter. A
    /// fragment left with no live row is removed. A filter no row matches still commits (an
    /// empty Delete), as Lance does. [`Committed::rows`]: the rows deleted.
    pub async fn delete(&self, filter: &Filter) -> Result<Committed> {
        Box::pin(mutate::delete(&self.snap, filter)).await
    }

    /// Sets the columns of `assignments` (`"x = x + 1"` as SQL text, or a column and its
    /// value: [`Assignment`]) on the live rows where
    /// `filter` is TRUE, as one Update: the rows are written again as new fragments with the
    /// new values (cast to each column's type; a value that does not fit is an error) and
    /// their old copies deleted. A filter no row matches commits an empty Update.
    /// [`Committed::rows`]: the rows updated.
    pub async fn update(
        &self,
        filter: &Filter,
        assignments: &[impl Assignment],
    ) -> Result<Committed> {
        Box::pin(mutate::update(&self.snap, filter, assignments)).await
    }

    /// A merge_insert keyed on the columns `on` (Lance's `merge_insert(on)`).
    pub fn merge_insert<S: AsRef<str>>(&self, on: &[S]) -> MergeInsert<'_> {
        merge::merge_insert(&self.snap, on)
    }

    /// Adds the column `name` holding `value` (an expression over the table's columns, as
    /// `UPDATE ... SET` takes: SQL text such as `"id * 2"`, or a parsed value: [`ValueExpr`]) for every row; returns the last version. An expression naming
    /// no column of the table, of no type (a bare NULL), or failing on any row is refused
    /// with nothing published. A column of that name is refused unless it has the
    /// expression's type and fragments without a file for it (a batched run that stopped
    /// part way): then those fragments are completed.
    pub async fn add_column(
        &self,
        name: &str,
        value: impl ValueExpr,
        options: AddColumnOptions,
    ) -> Result<Committed> {
        Box::pin(backfill::add_column(&self.snap, name, value, options)).await
    }

    /// Drops the top-level `columns` (and everything under them) in one Project, as Lance
    /// 14.0.2's `drop_columns`: no data is rewritten; a data file holding only dropped
    /// columns leaves its fragments, one holding others stays as it is; an index on a dropped
    /// column goes. A column the table does not have, or dropping every column, is
    /// `InvalidInput` with nothing published.
    pub async fn drop_columns(&self, columns: &[&str]) -> Result<Committed> {
        Box::pin(schema_change::drop_columns(&self.snap, columns)).await
    }

    /// Renames columns and changes their nullability in one Project, as Lance 14.0.2's
    /// `alter_columns` without a cast: no data is rewritten and every field keeps its id, so
    /// indexes stay. Making a column non-nullable first reads it: a NULL refuses the change.
    /// An unknown column, or a name taken, is `InvalidInput` with nothing published. A change
    /// of type rewrites the column instead, in one Merge (see `cast_columns`).
    pub async fn alter_columns(&self, alterations: &[ColumnAlteration]) -> Result<Committed> {
        Box::pin(schema_change::alter_columns(&self.snap, alterations)).await
    }

    /// Publishes the version after the latest with version `version`'s content (fragments or
    /// tree, schema, indices), as Lance's Restore: `max_fragment_id` and `next_row_id` are not
    /// lowered, so ids handed out since stay dead, and sticky feature flags stay set. The
    /// version records `Restore { version }`; it is never rebased (a concurrent commit makes
    /// it a retryable conflict). The way back from a bad version.
    pub async fn restore(&self, version: u64) -> Result<Committed> {
        Box::pin(convert::restore(&self.snap, version)).await
    }
}

/// Maintain.
impl Dataset {
    /// This version's optimizations, pylance's `dataset.optimize`: compaction (in one call,
    /// or planned, executed on many workers and committed once) and index optimization.
    pub fn optimize(&self) -> Optimizer<'_> {
        optimizer::optimizer(&self.snap)
    }

    /// Trains a BTree on `column` over every live row (ids are row addresses) and commits it as
    /// the next version under the name `{column}_idx`, replacing an index of that name.
    /// `page_rows`: rows per index page, or `None` for Lance's default, 4,096
    /// ([`lancet_btree::DEFAULT_PAGE_ROWS`]): `ds.build_btree("id", None)`.
    pub async fn build_btree(
        &self,
        column: &str,
        page_rows: impl Into<Option<u64>>,
    ) -> Result<crate::committed::Committed> {
        Box::pin(index_build::build_btree(&self.snap, column, page_rows)).await
    }

    /// Removes the versions `policy` selects and every object only they (or no version)
    /// need (module docs). Runs from this handle's version: it and newer versions are kept.
    pub async fn cleanup(&self, policy: &CleanupPolicy) -> Result<CleanupReport> {
        Box::pin(cleanup::cleanup(&self.snap, policy)).await
    }

    /// [`Dataset::cleanup`], telling `progress` how far it is.
    pub async fn cleanup_with_progress(
        &self,
        policy: &CleanupPolicy,
        progress: impl Fn(CleanupProgress) + Send + Sync,
    ) -> Result<CleanupReport> {
        Box::pin(cleanup::cleanup_with_progress(&self.snap, policy, progress)).await
    }

    /// Creates a shallow clone of `version` (this handle's version when `None`) at `target`,
    /// which must not hold a table yet: its first version, opened.
    pub async fn shallow_clone(
        &self,
        target: &str,
        version: Option<u64>,
    ) -> Result<crate::committed::Committed> {
        Box::pin(clone::shallow_clone(&self.snap, target, version)).await
    }
}

/// Inspect.
impl Dataset {
    /// The rows inserted and updated, and the row ids deleted, in versions `(begin, end]`,
    /// equal to pylance's `delta(begin_version=begin, end_version=end)`: inserted and updated
    /// rows are read from this handle's version (as Lance reads its dataset's), deleted ids
    /// by comparing versions `begin` and `end`. Asked of a handle at a version after `end`,
    /// the rows are this handle's: a row inserted in the range comes with this version's
    /// values, a row updated in the range and again after `end` is not reported as updated
    /// (its last update is outside the range), and a row deleted since is absent, as pylance
    /// answers on a dataset opened at a later version; open the handle at `end` for the rows
    /// as `end` held them. Needs stable row ids (`InvalidInput`
    /// otherwise, where pylance answers nothing silently); `begin` after `end` is
    /// `InvalidInput`; a version cleaned up is `NotFound`.
    pub async fn changes(&self, begin: u64, end: u64) -> Result<Changes> {
        Box::pin(changes::changes(&self.snap, begin, end)).await
    }

    /// Checks every rule on this version (see the module doc).
    pub async fn verify(&self) -> Result<VerifyReport> {
        Box::pin(verify::verify(&self.snap)).await
    }

    /// The table's tags: list, create, move, delete, and open a version by its tag.
    pub fn tags(&self) -> Tags<'_> {
        tags::tags(&self.snap)
    }

    /// The table's branches: list, create, open.
    pub fn branches(&self) -> Branches<'_> {
        branches::branches(&self.snap)
    }

    /// This version as stored: objects, structures and expert writes below the table API.
    pub fn storage(&self) -> Storage<'_> {
        storage::storage(&self.snap)
    }
}
