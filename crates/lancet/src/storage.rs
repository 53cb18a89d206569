//! A version as stored, for engines and tools below the table API ([`Dataset::storage`]):
//! its manifest file and objects, fragment tree, row-id and deletion structures, BTree
//! segments and FRI history, and the expert writes that name fragments and storage actions.
//! The view borrows the handle and adds nothing: each method is the handle's own.

use std::sync::Arc;
use std::time::Duration;

use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema, SchemaRef};
use futures::Stream;
use lancet_file::FileStore;
use lancet_filter::Filter;
use lancet_paths::manifest::{ManifestFile, NamingScheme};
use lancet_paths::{BaseTable, DatasetStore, ObjectLocation, ResolvedBase, StoredTransaction};
use lancet_proto::table::{transaction::Delete, DataFile, DataFragment, IndexMetadata, Manifest};
use lancet_reuse::History;
use lancet_rowid::{RowIdIndex, RowIdSequence, VersionSequence};
use lancet_tree::{Action, TreeReader, TreeWriterConfig};
use object_store::path::Path;
use roaring::RoaringBitmap;

use crate::{
    backfill, cleanup::CleanupPolicy, commit, committed::Committed, convert, handle::Dataset,
    index_build, metadata, metadata::FieldEntries, metadata::MetadataTarget, operations, rewrite,
    rewrite::RewriteMapping, write, write::AppendOptions,
};
use lancet_read::{
    error::Result, fri, history, indexes, indexes::IndexSummary, rowids, scan, scan::ScanOptions,
    search, search::SearchOptions, search::SearchResult, segment::BTreeSegment,
    session_caches::Caches, snapshot::Snapshot, take, take::RowsAt, verify, verify::VerifyReport,
};

/// One version as stored (see the module docs). Cheap to make: a reference.
#[derive(Debug, Clone, Copy)]
pub struct Storage<'a> {
    ds: &'a Snapshot,
}

/// This version as stored: objects, structures and expert writes below the table API.
pub(crate) fn storage(snap: &Snapshot) -> Storage<'_> {
    Storage { ds: snap }
}

/// Objects and locations.
impl<'a> Storage<'a> {
    /// The manifest file read for this version (its path, size, naming scheme, raw fields).
    pub fn manifest_file(&self) -> &'a ManifestFile {
        self.ds.manifest_file()
    }

    /// The manifest's path relative to the dataset root.
    pub fn manifest_path(&self) -> String {
        self.ds.manifest_path()
    }

    /// The manifest object, for errors about what it holds.
    pub fn manifest_ref(&self) -> lancet_proto::ObjectRef {
        self.ds.manifest_ref()
    }

    /// How the table names its manifest files.
    pub fn naming_scheme(&self) -> NamingScheme {
        self.ds.naming_scheme()
    }

    /// The dataset root's object store.
    pub fn store(&self) -> &'a DatasetStore {
        self.ds.store()
    }

    /// The Lance-file store over the dataset root.
    pub fn file_store(&self) -> &'a FileStore {
        self.ds.file_store()
    }

    /// The version's base paths, resolved.
    pub fn bases(&self) -> &'a BaseTable {
        self.ds.bases()
    }

    /// The dataset root as a base.
    pub fn root(&self) -> ResolvedBase {
        self.ds.root()
    }

    /// The fragment tree of a tree version; `None` on a flat one.
    pub fn tree(&self) -> Option<&'a TreeReader> {
        self.ds.tree()
    }

    /// Fragment `id`, or `None` when the version has no such fragment.
    pub async fn fragment(self, id: u64) -> Result<Option<DataFragment>> {
        self.ds.fragment(id).await
    }

    /// Every fragment, in id order, with its physical and deleted row counts known (read from
    /// the files where a record leaves them unknown, as Lance 14's `count_deletions`).
    pub async fn fragments_with_known_rows(self) -> Result<Arc<[DataFragment]>> {
        rowids::with_known_counts(self.ds, self.ds.fragments().await?).await
    }

    /// Where each data file of `fragment` lives.
    pub fn data_file_locations(&self, fragment: &DataFragment) -> Result<Vec<ObjectLocation>> {
        self.ds.data_file_locations(fragment)
    }

    /// Where the deletion file of `fragment` lives, if it has one.
    pub fn deletion_file_location(&self, f: &DataFragment) -> Result<Option<ObjectLocation>> {
        self.ds.deletion_file_location(f)
    }

    /// The session caches this handle shares with every handle opened with them.
    pub fn caches(&self) -> &'a Arc<Caches> {
        self.ds.caches()
    }

    /// The transaction that made this version, if it records one.
    pub async fn transaction(self) -> Result<Option<StoredTransaction>> {
        history::transaction(self.ds).await
    }
}

/// Rows: ids, versions, deletions, addresses.
impl Storage<'_> {
    /// Whether the table assigns stable row ids.
    pub fn has_stable_row_ids(&self) -> bool {
        self.ds.has_stable_row_ids()
    }

    /// The row-id sequence of `fragment`, where stored inline.
    pub fn row_id_sequence(&self, fragment: &DataFragment) -> Result<Option<RowIdSequence>> {
        rowids::row_id_sequence(self.ds, fragment)
    }

    /// The fragment's `(created_at, last_updated_at)` version sequences, where stored inline.
    pub fn version_sequences(
        &self,
        fragment: &DataFragment,
    ) -> Result<(Option<VersionSequence>, Option<VersionSequence>)> {
        rowids::version_sequences(self.ds, fragment)
    }

    /// The rows `fragment`'s deletion file deletes (read through the session cache).
    pub async fn deletion_vector(self, fragment: &DataFragment) -> Result<Option<RoaringBitmap>> {
        rowids::deletion_vector(self.ds, fragment).await
    }

    /// Every fragment's deletion vector, in fragment order.
    pub async fn deletion_vectors(self) -> Result<Vec<Option<Arc<RoaringBitmap>>>> {
        rowids::deletion_vectors(self.ds).await
    }

    /// The row-id index of a stable-row-id version.
    pub async fn row_id_index(self) -> Result<Arc<RowIdIndex>> {
        rowids::row_id_index(self.ds).await
    }

    /// The address of each of `ids` (`_rowid` values), `None` for a row not live.
    pub async fn lookup_row_ids(self, ids: &[u64]) -> Result<Vec<Option<u64>>> {
        rowids::lookup_row_ids(self.ds, ids).await
    }

    /// Every live row as `(_rowid, address)`.
    pub async fn live_row_ids(self) -> Result<Vec<(u64, u64)>> {
        rowids::live_row_ids(self.ds).await
    }

    /// The live rows at row addresses, or at positions among the live rows (in the order
    /// a scan returns them: Lance's `take`), in the order asked.
    pub async fn take_rows(&self, at: RowsAt<'_>, cols: Option<&[String]>) -> Result<RecordBatch> {
        Box::pin(take::take_rows(self.ds, at, cols)).await
    }

    /// The schema [`Dataset::scan`] produces with `options`.
    pub fn scan_schema(&self, options: &ScanOptions) -> Result<SchemaRef> {
        scan::scan_schema(self.ds, options)
    }
}

/// Indexes, the Fragment Reuse Index, and searches over physical rows and whole checks.
impl<'a> Storage<'a> {
    /// [`Dataset::search`] with options.
    pub async fn search_with(
        &self,
        filter: &Filter,
        options: &SearchOptions,
    ) -> Result<SearchResult> {
        Box::pin(search::search_with(self.ds, filter, options)).await
    }

    /// [`Dataset::verify`], and every data file opened (footer and schema, no pages): it opens,
    /// holds `physical_rows` rows and the field ids its `DataFile.fields` lists; 16 at a time.
    pub async fn verify_data(&self) -> Result<VerifyReport> {
        Box::pin(verify::verify_data(self.ds)).await
    }

    /// The BTree indexes, each with its segments' entries.
    pub fn btree_indices(&self) -> Vec<(String, Vec<&'a IndexMetadata>)> {
        indexes::btree_indices(self.ds)
    }

    /// The fragments an index entry covers (`None`: every fragment).
    pub fn index_fragments(&self, meta: &IndexMetadata) -> Result<Option<RoaringBitmap>> {
        indexes::index_fragments(self.ds, meta)
    }

    /// The segments of BTree index `name`, opened (cached per version).
    pub async fn btree_segments(self, name: &str) -> Result<Arc<Vec<BTreeSegment>>> {
        indexes::btree_segments(self.ds, name).await
    }

    /// Drops index `name` (every segment) in one CreateIndex, as Lance's `drop_index`; no
    /// index of that name is [`Error::IndexNotFound`](crate::Error::IndexNotFound).
    pub async fn drop_index(self, name: &str) -> Result<Committed> {
        Box::pin(index_build::drop_index(self.ds, name)).await
    }

    /// The Fragment Reuse Index entry, if the version has one.
    pub fn fri_entry(&self) -> Option<&'a IndexMetadata> {
        fri::fri_entry(self.ds)
    }

    /// The FRI history, validated and ready to translate (cached per version).
    pub async fn fri_history(self) -> Result<Option<Arc<History>>> {
        fri::fri_history(self.ds).await
    }

    /// The FRI history as stored.
    pub async fn fri_ledger(self) -> Result<Option<lancet_reuse::Ledger>> {
        fri::fri_ledger(self.ds).await
    }

    /// Objects under `_fri/` no version references, older than `older_than`.
    pub async fn unreferenced_fri_files(self, older_than: Duration) -> Result<Vec<Path>> {
        rewrite::unreferenced_fri_files(self.ds, older_than).await
    }
}

/// Checks and expert writes.
impl Storage<'_> {
    /// The rules between `previous` and this version (ids and flags never go back).
    pub fn check_lineage(&self, previous: &Dataset) -> Result<()> {
        verify::check_lineage(self.ds, &previous.snap)
    }

    /// Commits `actions` (the fragment tree's storage actions) with `manifest` and `indices`
    /// as the rest of the next version; the files they add must be stored already (their
    /// footers are judged with the candidate). After a lost race the changes are carried
    /// onto the latest version and new fragment ids moved past its `max_fragment_id`.
    pub async fn commit_actions(
        &self,
        manifest: Manifest,
        indices: &[IndexMetadata],
        actions: &[(u64, Action)],
        config: &TreeWriterConfig,
    ) -> Result<Committed> {
        commit::commit_with_actions(self.ds, manifest, indices, actions, config).await
    }

    /// Commits `manifest` and `indices` as the next version, the fragments unchanged.
    pub async fn commit_manifest(
        &self,
        manifest: Manifest,
        indices: &[IndexMetadata],
    ) -> Result<Committed> {
        commit::commit_manifest(self.ds, manifest, indices).await
    }

    /// The Delete of the rows at `offsets` of each fragment named, deletion files written,
    /// not committed.
    pub async fn delete_operation(
        &self,
        offsets: &[(u64, RoaringBitmap)],
        predicate: &str,
    ) -> Result<Delete> {
        operations::delete_operation(self.ds, offsets, predicate).await
    }

    /// Deletes the rows at `offsets` of each fragment named, as one Delete recording
    /// `predicate`.
    pub async fn delete_rows(
        &self,
        offsets: &[(u64, RoaringBitmap)],
        predicate: &str,
    ) -> Result<Committed> {
        operations::delete_rows(self.ds, offsets, predicate).await
    }

    /// Commits a rewrite of `sources` into `destinations` recorded in the Fragment Reuse
    /// Index (indexes answer through translation until optimized).
    pub async fn commit_rewrite(
        &self,
        sources: &[u32],
        destinations: Vec<DataFragment>,
        mapping: RewriteMapping<'_>,
    ) -> Result<Committed> {
        rewrite::commit_rewrite(self.ds, sources, destinations, mapping).await
    }

    /// Drops the FRI transitions no index needs (nothing published when none can go).
    pub async fn trim_fri(self) -> Result<Committed> {
        rewrite::trim_fri(self.ds).await
    }

    /// Re-publishes the FRI history as a tagged (index_version 1) entry.
    pub async fn upgrade_fri(self) -> Result<Committed> {
        rewrite::upgrade_fri(self.ds).await
    }

    /// Deletes the `_fri/` objects [`Storage::unreferenced_fri_files`] lists, as the cleanup
    /// sweep of `policy` would.
    pub async fn delete_unreferenced_fri_files(
        &self,
        older_than: Duration,
        policy: &CleanupPolicy,
    ) -> Result<Vec<Path>> {
        rewrite::delete_unreferenced_fri_files(self.ds, older_than, policy).await
    }
}

/// Schema and metadata, below the table API.
impl<'a> Storage<'a> {
    pub fn manifest(&self) -> &'a Manifest {
        self.ds.manifest()
    }

    pub fn indices(&self) -> &'a [IndexMetadata] {
        self.ds.indices()
    }

    /// Every index, grouped by name in manifest order, with its type (the manifest alone).
    pub fn index_summaries(&self) -> Result<Vec<IndexSummary>> {
        indexes::index_summaries(self.ds)
    }

    /// The live rows the segments of index `name` cover (Lance's `describe_indices` count).
    pub async fn rows_indexed(self, name: &str) -> Result<u64> {
        indexes::rows_indexed(self.ds, name).await
    }

    /// Sets (`Some`) or removes (`None`) keys of one of the table's maps (with `replace`, the
    /// map becomes the entries with a value) in one UpdateConfig, as Lance 14.0.2's `update_*`.
    pub async fn update_metadata(
        &self,
        target: MetadataTarget<'_>,
        entries: &[(&str, Option<&str>)],
        replace: bool,
    ) -> Result<Committed> {
        Box::pin(metadata::update_metadata(self.ds, target, entries, replace)).await
    }

    /// [`Self::update_metadata`] of several fields' maps (by path, `a.b`), in one UpdateConfig.
    pub async fn update_field_metadata(
        &self,
        fields: &[FieldEntries<'_>],
        replace: bool,
    ) -> Result<Committed> {
        Box::pin(metadata::update_field_metadata(self.ds, fields, replace)).await
    }
}

/// Distributed writes: data files and index segments staged by workers, committed once.
impl<'a> Storage<'a> {
    /// New fragments of `batches` (the table's schema), uncommitted: Lance's distributed
    /// write, which one `Operation::Append` commits ([`Dataset::commit`]). Id 0, no row ids
    /// (the commit gives both); files in the table's version, cut as `options` asks.
    pub async fn write_fragments<S>(
        &self,
        batches: S,
        options: &AppendOptions,
    ) -> Result<Vec<DataFragment>>
    where
        S: Stream<Item = Result<RecordBatch>> + Send,
    {
        let cut = write::cut(options, "write options")?;
        Box::pin(write::write_fragments_with(self.ds, batches, cut)).await
    }

    /// The data files of an overwrite with `batches` of `schema`, uncommitted (Lance's
    /// `write_fragments(mode="overwrite")`, committed by [`Storage::commit_overwrite`]): field
    /// ids the schema's from 0, files in the version `options` asks for or the table's.
    pub async fn write_overwrite_fragments<S>(
        &self,
        schema: SchemaRef,
        batches: S,
        options: &AppendOptions,
    ) -> Result<Vec<DataFragment>>
    where
        S: Stream<Item = Result<RecordBatch>> + Send,
    {
        let staged = write::overwrite_fragments(self.ds, schema, batches, options);
        Box::pin(staged).await
    }

    /// Commits `fragments` ([`Storage::write_overwrite_fragments`]'s, written with `schema`)
    /// as every row of the table in one Overwrite (pylance's `LanceOperation.Overwrite` on an
    /// existing table); `options`' data storage version, when given, becomes the table's and
    /// its properties are recorded (the cut is the writer's: it is not used here).
    pub async fn commit_overwrite(
        &self,
        schema: &Schema,
        fragments: Vec<DataFragment>,
        options: &AppendOptions,
    ) -> Result<Committed> {
        Box::pin(write::commit_overwrite(self.ds, schema, fragments, options)).await
    }

    /// Trains one segment of the BTree `{column}_idx` over the live rows of `fragments` (every
    /// fragment when `None`) and writes its files, without committing: the distributed form of
    /// [`Dataset::build_btree`]. Workers train disjoint fragment sets of one version; one
    /// commits every segment with [`Storage::commit_btree_segments`].
    pub async fn train_btree_segment(
        &self,
        column: &str,
        fragments: Option<&[u64]>,
        page_rows: u64,
    ) -> Result<IndexMetadata> {
        let trained = index_build::train_btree_segment(self.ds, column, fragments, page_rows);
        Box::pin(trained).await
    }

    /// Commits `segments` ([`Storage::train_btree_segment`]'s, of this table's column
    /// `column`) as the one BTree `{column}_idx` in one CreateIndex, replacing an index of
    /// that name. Segments of another index or column, or two covering one fragment, are
    /// refused with nothing published.
    pub async fn commit_btree_segments(
        &self,
        column: &str,
        segments: Vec<IndexMetadata>,
    ) -> Result<Committed> {
        Box::pin(index_build::commit_btree_segments(
            self.ds, column, segments,
        ))
        .await
    }
}

/// Backfills: a column added as NULLs, then its files written fragment by fragment.
impl<'a> Storage<'a> {
    /// Adds `fields` as columns every row reads as NULL, in one Merge that writes no data
    /// (pylance's `add_columns` with a schema): the first step of a backfill whose values
    /// come from elsewhere ([`Storage::write_column_file`], [`Storage::replace_data_files`]).
    /// A name the table has, or a non-nullable field, is refused with nothing published.
    pub async fn add_null_columns(&self, fields: &[Field]) -> Result<Committed> {
        Box::pin(backfill::add_null_columns(self.ds, fields)).await
    }

    /// Fragments with no file holding column `name`, in id order: a backfill's work left.
    pub async fn unfilled_fragments(&self, name: &str) -> Result<Vec<u64>> {
        Box::pin(backfill::unfilled_fragments(self.ds, name)).await
    }

    /// Every physical row of fragment `id` (deleted ones too), the columns `columns` (all
    /// when `None`): what a backfill computes a new column's file from.
    pub async fn fragment_rows(&self, id: u64, columns: Option<&[String]>) -> Result<RecordBatch> {
        Box::pin(backfill::fragment_rows(self.ds, id, columns)).await
    }

    /// Writes `batch` (columns of the table, of their types, one value per physical row of
    /// fragment `id`) as one data file for that fragment, and returns it unpublished:
    /// [`Storage::replace_data_files`] publishes it. A column the table lacks, of another
    /// type, or a row count other than the fragment's is refused and nothing is written.
    pub async fn write_column_file(&self, id: u64, batch: RecordBatch) -> Result<DataFile> {
        Box::pin(backfill::write_column_file(self.ds, id, batch)).await
    }

    /// Publishes data files written by [`Storage::write_column_file`] in one DataReplacement
    /// (on a tree, `add_data_file` mutations), each for its fragment. A refused commit
    /// publishes nothing and the caller still owns the files.
    pub async fn replace_data_files(&self, files: &[(u64, DataFile)]) -> Result<Committed> {
        Box::pin(backfill::replace_data_files(self.ds, files)).await
    }
}

/// Layout and bulk rewrites.
impl<'a> Storage<'a> {
    /// Publishes version N+1 of this flat table with its fragments moved into a fragment
    /// tree: `Manifest.fragments` empty, flag 4096 in both words, the rest carried over.
    /// Counts a flat manifest leaves unknown (`physical_rows` or `num_deleted_rows` 0) are
    /// read from the files; `progress` is told how many fragments are ready.
    pub async fn convert_to_tree(
        &self,
        config: &TreeWriterConfig,
        progress: impl Fn(usize, usize),
    ) -> Result<Committed> {
        Box::pin(convert::convert_to_tree(self.ds, config, progress)).await
    }

    /// Publishes version N+1 of this tree table as a flat manifest (what Lance 14 reads).
    pub async fn flatten(&self) -> Result<Committed> {
        Box::pin(convert::flatten(self.ds)).await
    }

    /// Deletes every row, as Lance 14.0.2's `truncate_table`: schema, indexes, history stay.
    pub async fn truncate(&self) -> Result<Committed> {
        Box::pin(metadata::truncate(self.ds)).await
    }
}
