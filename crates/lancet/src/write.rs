//! Writing rows: [`Dataset::create`](crate::Dataset::create), [`Dataset::append`](crate::Dataset::append) and [`Storage::write_fragments`](crate::Storage::write_fragments).
//!
//! Composition only: lancet-file writes the data files (split every `max_rows_per_file`
//! rows, the table's field ids), lancet-txn says what a new table's first version is (an
//! Overwrite of [`lancet_txn::build::new_table`]) and plans an Append, lancet-rowid assigns row
//! ids, and every version is judged by the invariants before it is published.

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use futures::{Stream, StreamExt};
use lancet_file::{FileVersion, FragmentOptions};
use lancet_paths::manifest::{self, NamingScheme};
use lancet_paths::DatasetStore;
use lancet_proto::prost::Message;
use lancet_proto::table::transaction::{Append, Operation, Overwrite};
use lancet_proto::table::{DataFragment, Manifest};
use lancet_tree::{FragmentChange, TreeWriter, TreeWriterConfig};
use lancet_txn::build::Change;
use lancet_txn::operation::new_transaction;
use tracing::Instrument;

use crate::committed::Committed;
use crate::error::{Error, Result};
use crate::operations;
use crate::publish::{publish, Publication};
use crate::rows;
use crate::session_caches::Caches;
use crate::snapshot::Snapshot;

/// Where a table keeps its fragment records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Layout {
    /// In the manifest, as Lance 14 writes them.
    #[default]
    Flat,
    /// In a fragment metadata tree (Lance 14 refuses such versions by their flag).
    Tree,
}

/// How [`Dataset::create`](crate::Dataset::create) makes a table.
#[derive(Debug, Clone, Copy)]
pub struct CreateOptions {
    /// Stable row ids (feature flag 2): `_rowid` survives updates and compaction.
    pub stable_row_ids: bool,
    pub layout: Layout,
    /// The data file version (Lance 14 writes 2.2 by default).
    pub data_storage_version: FileVersion,
    /// A new data file (and fragment) every this many rows.
    pub max_rows_per_file: u64,
    /// Rows handed to the file writer at once.
    pub max_rows_per_group: u64,
}

impl Default for CreateOptions {
    fn default() -> Self {
        let f = FragmentOptions::default();
        CreateOptions {
            stable_row_ids: false,
            layout: Layout::Flat,
            data_storage_version: f.version,
            max_rows_per_file: f.max_rows_per_file,
            max_rows_per_group: f.max_rows_per_group,
        }
    }
}

/// Refuses a location that holds a table.
async fn refuse_existing(store: &DatasetStore, uri: &str) -> Result<()> {
    if !manifest::list_versions(store).await?.is_empty() {
        return Err(Error::InvalidArgument {
            what: format!("create {uri}"),
            reason: "it already holds a table".into(),
        });
    }
    Ok(())
}

/// Creates a table at `uri` (which must hold none) from `batches` of `schema`, as its
/// version 1: Lance's Overwrite, with fragments numbered from 0 and, with stable row ids,
/// row ids from 0. Memory stays bounded by a batch.
pub(crate) async fn create<S>(
    uri: &str,
    schema: SchemaRef,
    batches: S,
    options: CreateOptions,
) -> Result<Committed>
where
    S: Stream<Item = Result<RecordBatch>> + Send,
{
    let written = write_new_fragments(uri, schema.clone(), batches, options).await?;
    create_from_fragments(uri, schema, written, options).await
}

/// Writes `batches` of `schema` as the data files of fragments of a table not yet created
/// at `uri`, without committing: the distributed form of [`Dataset::create`](crate::Dataset::create). Many
/// workers write with the same schema and options; one commits everything they wrote
/// with [`create_from_fragments`]. Field ids are the schema's from 0, as the
/// new table's will be. A location that holds a table is refused.
pub async fn write_new_fragments<S>(
    uri: &str,
    schema: SchemaRef,
    batches: S,
    options: CreateOptions,
) -> Result<Vec<DataFragment>>
where
    S: Stream<Item = Result<RecordBatch>> + Send,
{
    let store = DatasetStore::create(uri)?;
    refuse_existing(&store, uri).await?;
    let fields = lancet_file::manifest_fields(&schema)?;
    let fs = crate::snapshot::file_store_for(&store)?;
    write_data(
        &fs,
        &store,
        &schema,
        &field_ids(&fields),
        batches,
        FragmentOptions {
            version: options.data_storage_version,
            max_rows_per_file: options.max_rows_per_file,
            max_rows_per_group: options.max_rows_per_group,
            ..Default::default()
        },
    )
    .await
}

/// Creates a table at `uri` (which must hold none) as version 1 holding `written`
/// (fragments [`write_new_fragments`] wrote with the same `schema` and
/// options) in one Overwrite: fragments numbered from 0 in the order given.
pub async fn create_from_fragments(
    uri: &str,
    schema: SchemaRef,
    written: Vec<DataFragment>,
    options: CreateOptions,
) -> Result<Committed> {
    let store = DatasetStore::create(uri)?;
    refuse_existing(&store, uri).await?;
    let (manifest, operation, changes) = first_version(&store, &schema, written, &options).await?;
    let txn = new_transaction(0, operation);
    let (rows, added) = (
        changes
            .iter()
            .filter_map(|c| c.after.as_ref())
            .map(|f| f.physical_rows)
            .sum(),
        changes.len(),
    );
    let (created, size) = publish(
        &store,
        &Caches::new(Default::default()),
        Publication {
            manifest: &manifest,
            indices: &[],
            unknown_fields: &[],
            scheme: NamingScheme::V2,
            transaction: Some(&txn),
            previous: None,
            changes: Some(&changes),
            data_files: None,
            reserved: &[],
        },
    )
    .await
    .map_err(|e| match e {
        Error::Paths(lancet_paths::PathsError::AlreadyExists { .. }) => Error::InvalidArgument {
            what: format!("create {uri}"),
            reason: "another writer created a table there first".into(),
        },
        e => e,
    })?;
    // the manifest and the transaction file (data files are the writer's, not counted)
    let transaction = match lancet_txn::protocol::writes_transaction_file(&manifest) {
        true => txn.encoded_len() as u64,
        false => 0,
    };
    Ok(Committed {
        objects_written: 1 + u64::from(transaction > 0),
        bytes_written: size + transaction,
        versions: 1,
        attempts: 1,
        rows,
        fragments_added: added,
        ..Committed::nothing(created)
    })
}

/// Version 1 of a new table holding `written`: Lance's Overwrite planned on an empty
/// table (lancet-txn), row ids and versions given (lancet-rowid) when the table has stable
/// row ids, the fragments listed flat or bulk-loaded into a fragment tree (its objects
/// written now); with the operation to record and the fragments created.
async fn first_version(
    store: &DatasetStore,
    schema: &SchemaRef,
    written: Vec<DataFragment>,
    options: &CreateOptions,
) -> Result<(Manifest, Operation, Vec<FragmentChange>)> {
    let fields = lancet_file::manifest_fields(schema)?;
    let version = options.data_storage_version;
    let (major, minor) = version.data_file_version();
    let base = lancet_txn::build::new_table(
        &fields,
        &format!("{major}.{minor}"),
        options.stable_row_ids,
        env!("CARGO_PKG_VERSION"),
    );
    let operation = Operation::Overwrite(Overwrite {
        fragments: written,
        schema: fields,
        schema_metadata: schema_metadata(schema),
        ..Default::default()
    });
    let empty = lancet_txn::Version {
        manifest: &base,
        indices: &[],
    };
    let plan = lancet_txn::build::plan(empty, &operation)?;
    let mut manifest = plan.manifest;
    let mut fragments = plan.created;
    if options.stable_row_ids {
        manifest.next_row_id = lancet_rowid::assign::assign_row_ids(0, &mut fragments)?;
        for f in &mut fragments {
            lancet_rowid::assign::stamp_versions(f, 1, 0, |_| None)?;
        }
    }
    manifest.version = 1;
    manifest.timestamp = Some(manifest::now_timestamp());
    let changes: Vec<FragmentChange> = fragments.iter().map(FragmentChange::created).collect();
    match options.layout {
        Layout::Flat => manifest.fragments = fragments,
        Layout::Tree => {
            let writer = TreeWriter::new(store.clone(), TreeWriterConfig::default());
            let commit = writer.bulk_load(&fragments).await?;
            manifest.fragment_tree = Some(commit.metadata);
        }
    }
    // the flags the layout needs, decided by lancet-txn
    lancet_txn::protocol::settle(&mut manifest, &[]);
    Ok((manifest, operation, changes))
}

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
    let committed = commit_overwrite(snap, &schema, fragments, options.data_storage_version);
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
    if options.max_rows_per_file == 0 || options.max_rows_per_group == 0 {
        return Err(Error::InvalidArgument {
            what: "overwrite options".into(),
            reason: "max_rows_per_file and max_rows_per_group must be at least 1".into(),
        });
    }
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
        FragmentOptions {
            version,
            max_rows_per_file: options.max_rows_per_file,
            max_rows_per_group: options.max_rows_per_group,
            ..Default::default()
        },
    )
    .await
}

/// Commits `fragments` (written with `schema`, as [`overwrite_fragments`] writes them) as
/// every row of the table in one Overwrite; `requested`, the data storage version asked for,
/// becomes the table's (Lance's rule: without one the table keeps its own).
pub(crate) async fn commit_overwrite(
    snap: &Snapshot,
    schema: &Schema,
    fragments: Vec<DataFragment>,
    requested: Option<FileVersion>,
) -> Result<Committed> {
    let operation = Operation::Overwrite(Overwrite {
        fragments,
        schema: lancet_file::manifest_fields(schema)?,
        schema_metadata: schema_metadata(schema),
        ..Default::default()
    });
    let requested = requested.map(|v| v.name().to_string());
    let change = Change::new(operation).with_storage_version(requested);
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
    if options.max_rows_per_file == 0 || options.max_rows_per_group == 0 {
        return Err(Error::InvalidArgument {
            what: "append options".into(),
            reason: "max_rows_per_file and max_rows_per_group must be at least 1".into(),
        });
    }
    let span = tracing::debug_span!("write_fragments", uri = %snap.uri());
    let cut = FragmentOptions {
        max_rows_per_file: options.max_rows_per_file,
        max_rows_per_group: options.max_rows_per_group,
        ..Default::default()
    };
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
    Ok(
        operations::commit(snap, Operation::Append(Append { fragments }))
            .await?
            .with_rows(rows),
    )
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
fn field_ids(fields: &[lancet_proto::file::Field]) -> Vec<i32> {
    fields.iter().map(|f| f.id).collect()
}

/// The data files of `batches` under the table's `data/`. Rows that do not fit the schema
/// (a missing, extra or mistyped column) are the caller's bad input naming the table and the
/// column, before anything is written.
async fn write_data<S>(
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
        lancet_file::conform(&batch, schema).map_err(|reason| Error::InvalidArgument {
            what: format!("rows written to table {table}"),
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
}

impl Default for AppendOptions {
    fn default() -> Self {
        let lance = FragmentOptions::default();
        AppendOptions {
            max_rows_per_file: lance.max_rows_per_file,
            max_rows_per_group: lance.max_rows_per_group,
            data_storage_version: None,
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
fn schema_metadata(schema: &Schema) -> std::collections::BTreeMap<String, Vec<u8>> {
    schema
        .metadata()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
        .collect()
}
