//! Writing rows into a table: [`Dataset::append`](crate::Dataset::append), overwrites and
//! [`Storage::write_fragments`](crate::Storage::write_fragments) (making one is [`crate::create`]).
//!
//! Composition only: lancet-file writes the data files (split every `max_rows_per_file`
//! rows, the table's field ids), lancet-txn plans the Append or Overwrite, lancet-rowid
//! assigns row ids, and every version is judged by the invariants before it is published.

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use futures::{Stream, StreamExt};
use lancet_file::{FileVersion, FragmentOptions};
use lancet_paths::DatasetStore;
use lancet_proto::table::transaction::{Append, Operation, Overwrite};
use lancet_proto::table::DataFragment;
use lancet_txn::build::Change;
use tracing::Instrument;

use crate::committed::Committed;
use crate::operations;
use lancet_read::error::{Error, Result};
use lancet_read::rows;
use lancet_read::snapshot::Snapshot;

/// Replaces every row with `batches` of `schema` in one Overwrite, as pylance's
/// `write_dataset(mode="overwrite")`: the schema's field ids from 0 as the table's new
/// columns, data files in the table's file version, new fragments numbered after
/// `max_fragment_id` and, with stable row ids, row ids from `next_row_id` (no id is handed
/// out twice); the indexes go, as Lance leaves them. No rows is an empty table (a
/// truncation). The table's layout stays (a tree holds the new fragments).
/// [`Committed::rows`]: the rows written.
pub(crate) async fn overwrite<S>(
    snap: &Snapshot,
    schema: SchemaRef,
    batches: S,
    options: &AppendOptions,
) -> Result<Committed>
where
    S: Stream<Item = Result<RecordBatch>> + Send,
{
    let fragments = overwrite_fragments(snap, schema.clone(), batches, options).await?;
    let rows = fragments.iter().map(|f| f.physical_rows).sum();
    let committed = commit_overwrite(snap, &schema, fragments, options);
    Ok(committed.await?.with_rows(rows))
}

/// The data files of an overwrite of the table with `batches` of `schema`, uncommitted
/// (Lance's `write_fragments(mode="overwrite")`): field ids the schema's from 0, files in
/// the version `options` asks for or the table's. [`commit_overwrite`] publishes them.
pub(crate) async fn overwrite_fragments<S>(
    snap: &Snapshot,
    schema: SchemaRef,
    batches: S,
    options: &AppendOptions,
) -> Result<Vec<DataFragment>>
where
    S: Stream<Item = Result<RecordBatch>> + Send,
{
    let cut = cut(options, "overwrite options")?;
    let fields = lancet_file::manifest_fields(&schema)?;
    let version = match options.data_storage_version {
        Some(v) => v,
        None => data_file_version(snap)?,
    };
    write_data(
        snap.file_store(),
        snap.store(),
        &schema,
        &field_ids(&fields),
        batches,
        FragmentOptions { version, ..cut },
    )
    .await
}

/// The cut of new data files `options` asks for, checked (`what` names the options).
pub(crate) fn cut(options: &AppendOptions, what: &str) -> Result<FragmentOptions> {
    if options.max_rows_per_file == 0 || options.max_rows_per_group == 0 {
        return Err(Error::InvalidArgument {
            what: what.into(),
            reason: "max_rows_per_file and max_rows_per_group must be at least 1".into(),
        });
    }
    Ok(FragmentOptions {
        max_rows_per_file: options.max_rows_per_file,
        max_rows_per_group: options.max_rows_per_group,
        progress: options.progress.clone(),
        ..Default::default()
    })
}

/// Commits `fragments` (written with `schema`, as [`overwrite_fragments`] writes them) as
/// every row of the table in one Overwrite; the data storage version `options` asks for
/// becomes the table's (Lance's rule: without one the table keeps its own), and its
/// properties are recorded in the transaction.
pub(crate) async fn commit_overwrite(
    snap: &Snapshot,
    schema: &Schema,
    fragments: Vec<DataFragment>,
    options: &AppendOptions,
) -> Result<Committed> {
    let operation = Operation::Overwrite(Overwrite {
        fragments,
        schema: lancet_file::manifest_fields(schema)?,
        schema_metadata: schema_metadata(schema),
        ..Default::default()
    });
    let requested = options.data_storage_version.map(|v| v.name().to_string());
    let change = Change::new(operation)
        .with_storage_version(requested)
        .with_properties(options.transaction_properties.clone());
    operations::commit_change(snap, change).await
}

/// Writes `batches` (the table's schema) as the data files of new fragments, without
/// committing them: Lance's distributed write. Many workers write; one commits
/// `Operation::Append { fragments }` with everything they wrote ([`Dataset::commit`](crate::Dataset::commit)).
/// The fragments have id 0 and no row ids (the commit gives both).
pub(crate) async fn write_fragments<S>(snap: &Snapshot, batches: S) -> Result<Vec<DataFragment>>
where
    S: Stream<Item = Result<RecordBatch>> + Send,
{
    write_fragments_with(snap, batches, FragmentOptions::default()).await
}

/// [`Storage::write_fragments`](crate::Storage::write_fragments) with `options` (its file version is the table's).
pub(crate) async fn write_fragments_with<S>(
    snap: &Snapshot,
    batches: S,
    options: FragmentOptions,
) -> Result<Vec<DataFragment>>
where
    S: Stream<Item = Result<RecordBatch>> + Send,
{
    let schema = rows::schema(snap)?;
    let fields = &snap.manifest().fields;
    let options = FragmentOptions {
        version: data_file_version(snap)?,
        ..options
    };
    write_data(
        snap.file_store(),
        snap.store(),
        &schema,
        &field_ids(fields),
        batches,
        options,
    )
    .await
}

/// Appends `batches` (the table's schema) as new fragments in one Append. No rows at all
/// is refused with nothing published, as Lance 14.0.2's writer refuses it ("No data to
/// write").
pub(crate) async fn append<S>(snap: &Snapshot, batches: S) -> Result<Committed>
where
    S: Stream<Item = Result<RecordBatch>> + Send,
{
    append_with(snap, batches, &AppendOptions::default()).await
}

/// [`Dataset::append`](crate::Dataset::append) with how the new data files are cut (`options`).
pub(crate) async fn append_with<S>(
    snap: &Snapshot,
    batches: S,
    options: &AppendOptions,
) -> Result<Committed>
where
    S: Stream<Item = Result<RecordBatch>> + Send,
{
    let cut = cut(options, "append options")?;
    let span = tracing::debug_span!("write_fragments", uri = %snap.uri());
    let fragments = write_fragments_with(snap, batches, cut)
        .instrument(span)
        .await?;
    if fragments.is_empty() {
        return Err(Error::InvalidArgument {
            what: "append".into(),
            reason: "no rows to append".into(),
        });
    }
    let rows = fragments.iter().map(|f| f.physical_rows).sum();
    Ok(operations::commit(snap, append_change(fragments, options))
        .await?
        .with_rows(rows))
}

/// An Append of `fragments` with the properties `options` records.
fn append_change(fragments: Vec<DataFragment>, options: &AppendOptions) -> Change {
    let properties = options.transaction_properties.clone();
    Change::new(Operation::Append(Append { fragments })).with_properties(properties)
}

/// The file version the table writes data files in (its manifest's data storage format).
pub(crate) fn data_file_version(snap: &Snapshot) -> Result<FileVersion> {
    let version = snap
        .manifest()
        .data_format
        .as_ref()
        .map_or("2.0", |f| f.version.as_str());
    FileVersion::parse(version).ok_or_else(|| Error::Unsupported {
        uri: snap.uri().to_string(),
        version: snap.version(),
        rule: format!("lancet writes data files of 2.0, 2.1 and 2.2, not {version:?}"),
    })
}

/// Every field id of a table's schema, in the manifest's (depth-first) order.
pub(crate) fn field_ids(fields: &[lancet_proto::file::Field]) -> Vec<i32> {
    fields.iter().map(|f| f.id).collect()
}

/// The data files of `batches` under the table's `data/`. Rows that do not fit the schema
/// (a missing, extra or mistyped column) are the caller's bad input naming the table and the
/// column, before anything is written.
pub(crate) async fn write_data<S>(
    fs: &lancet_file::FileStore,
    store: &DatasetStore,
    schema: &Schema,
    field_ids: &[i32],
    batches: S,
    options: FragmentOptions,
) -> Result<Vec<DataFragment>>
where
    S: Stream<Item = Result<RecordBatch>> + Send,
{
    let table = store.uri().to_string();
    let batches = batches.map(move |batch| {
        let batch = batch?;
        lancet_file::conform(&batch, schema).map_err(|reason| Error::SchemaMismatch {
            table: table.clone(),
            reason,
        })
    });
    lancet_file::write_fragments(fs, &store.path("data"), schema, field_ids, batches, options).await
}

/// How [`Dataset::append_with`](crate::Dataset::append_with) cuts the rows into data files (Lance's defaults: a new file
/// every 1,048,576 rows, 1,024 rows handed to the file writer at once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendOptions {
    pub max_rows_per_file: u64,
    pub max_rows_per_group: u64,
    /// The data storage version an overwrite writes its files in and publishes as the
    /// table's (Lance's `data_storage_version` on an overwrite); `None` keeps the table's.
    /// An append writes the table's version whatever this says (lancet keeps one file
    /// version per table: see docs/decisions/0037).
    pub data_storage_version: Option<FileVersion>,
    /// Told of each new fragment as it starts and as its file is finished.
    pub progress: lancet_file::Progress,
    /// Recorded in the transaction (pylance's `commit_message` and `transaction_properties`).
    pub transaction_properties: BTreeMap<String, String>,
}

impl Default for AppendOptions {
    fn default() -> Self {
        let lance = FragmentOptions::default();
        AppendOptions {
            max_rows_per_file: lance.max_rows_per_file,
            max_rows_per_group: lance.max_rows_per_group,
            data_storage_version: None,
            progress: Default::default(),
            transaction_properties: BTreeMap::new(),
        }
    }
}

/// Batches held in memory as the stream [`Dataset::create`](crate::Dataset::create), [`Dataset::append`](crate::Dataset::append) and
/// [`Storage::write_fragments`](crate::Storage::write_fragments) take.
pub fn batches(
    batches: impl IntoIterator<Item = RecordBatch, IntoIter: Send>,
) -> impl Stream<Item = Result<RecordBatch>> + Send {
    futures::stream::iter(batches.into_iter().map(Ok))
}

/// An Arrow `RecordBatchReader` (a Parquet or IPC reader, a pyarrow stream) as the stream the
/// writers take; a batch the reader fails on is `InvalidArgument`, and the write publishes
/// nothing.
pub fn batches_from_reader(
    reader: impl arrow_array::RecordBatchReader + Send,
) -> impl Stream<Item = Result<RecordBatch>> + Send {
    futures::stream::iter(reader.map(|b| {
        b.map_err(|e| Error::InvalidArgument {
            what: "input batches".into(),
            reason: e.to_string(),
        })
    }))
}

/// The schema's metadata as the manifest keeps it (pandas' index and column types among it,
/// which `to_pandas()` reads back), as pylance's `write_dataset` keeps it.
pub(crate) fn schema_metadata(schema: &Schema) -> std::collections::BTreeMap<String, Vec<u8>> {
    schema
        .metadata()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
        .collect()
}
