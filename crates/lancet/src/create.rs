//! Making a table: [`Dataset::create`](crate::Dataset::create), and its distributed form
//! ([`write_new_fragments`] by many workers, [`create_from_fragments`] once).
//!
//! Composition only: [`crate::write`] writes the data files with the schema's field ids,
//! lancet-txn says what a new table's first version is (an Overwrite of
//! [`lancet_txn::build::new_table`]), lancet-rowid assigns row ids, lancet-tree bulk-loads a
//! tree, and the version is judged by the invariants before it is published.

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::Stream;
use lancet_file::{FileVersion, FragmentOptions};
use lancet_paths::manifest::{self, NamingScheme};
use lancet_paths::DatasetStore;
use lancet_proto::prost::Message;
use lancet_proto::table::transaction::{Operation, Overwrite};
use lancet_proto::table::{DataFragment, Manifest};
use lancet_tree::{FragmentChange, TreeWriter, TreeWriterConfig};
use lancet_txn::operation::new_transaction;

use crate::committed::Committed;
use crate::publish::{publish, Publication};
use crate::write::{field_ids, schema_metadata, write_data};
use lancet_read::error::{Error, Result};
use lancet_read::session_caches::Caches;

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
#[derive(Debug, Clone)]
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
    /// Told of each new fragment as it starts and as its file is finished.
    pub progress: lancet_file::Progress,
    /// Recorded in version 1's transaction (pylance's `commit_message` and
    /// `transaction_properties`).
    pub transaction_properties: BTreeMap<String, String>,
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
            progress: f.progress,
            transaction_properties: BTreeMap::new(),
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
/// row ids from 0. Memory stays bounded (see `lancet_file::write_fragments`).
pub(crate) async fn create<S>(
    uri: &str,
    schema: SchemaRef,
    batches: S,
    options: CreateOptions,
) -> Result<Committed>
where
    S: Stream<Item = Result<RecordBatch>> + Send,
{
    let written = write_new_fragments(uri, schema.clone(), batches, options.clone()).await?;
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
    let fs = lancet_read::snapshot::file_store_for(&store)?;
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
            progress: options.progress,
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
    let mut txn = new_transaction(0, operation);
    txn.transaction_properties = options.transaction_properties.clone();
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
