//! Reading rows: `Dataset::scan`, `Dataset::take` and `Dataset::take_addresses`.
//!
//! Composition only: lancet-file reads a fragment's columns from its data files (NULL for a
//! field no file holds), deletion vectors and row ids come from lancet-rowid, and a filter is
//! answered by `Dataset::search` (through BTrees where they cover, by reading columns
//! elsewhere) before any projected column is read. Rows come in fragment order, then offset,
//! as pylance's `to_table` returns them; `_rowid` then `_rowaddr` follow the projected
//! columns.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use futures::stream::{BoxStream, Stream, StreamExt, TryStreamExt};
use lancet_file::scan_plan::{batches_of, plan_reads, Chunk, Read, SCAN_BATCH_ROWS};
use lancet_filter::Filter;
use lancet_proto::table::DataFragment;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::paths::{self, Projection};
use crate::row_columns::RowColumn;
use crate::rowids;
use crate::search;
use crate::snapshot::Snapshot;

/// Batches read ahead of the consumer.
const SCAN_READ_AHEAD: usize = 2;
/// Rows a scan on an object store may hold in reads ahead of the one it yields (counted by
/// its largest read: whole fragments read two ahead, as on a disk; an index's few rows per
/// fragment, 64).
const SCAN_AHEAD_ROWS: u64 = 1 << 18;

/// What `Dataset::scan` returns.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// The columns, in this order (every column in schema order when `None`).
    pub columns: Option<Vec<String>>,
    /// Only rows where the filter is TRUE.
    pub filter: Option<Filter>,
    /// Add `_rowid` (the stable row id, or the row address without stable row ids).
    pub with_row_id: bool,
    /// Add `_rowaddr` (fragment id << 32 | offset).
    pub with_row_address: bool,
    /// Add `_row_last_updated_at_version` (the version each row was last updated at).
    pub with_row_last_updated_at_version: bool,
    /// Add `_row_created_at_version` (the version each row was created at).
    pub with_row_created_at_version: bool,
    /// At most this many rows.
    pub limit: Option<u64>,
    /// Skip this many rows first.
    pub offset: u64,
    /// Read this version of the table (this handle's when `None`).
    pub version: Option<u64>,
    /// Only these fragments (by id; read in the table's fragment order). An id the version
    /// does not have is refused. A filter is answered over these fragments alone.
    pub fragments: Option<Vec<u64>>,
    /// Every physical row, deleted ones too, with `_rowid` and `_rowaddr` NULL on those
    /// (Lance's `include_deleted_rows`; `with_row_id` is required, as in Lance). A filter is
    /// evaluated on the stored values of every row, never through an index (an index may
    /// not hold a row deleted before it was built).
    pub include_deleted: bool,
    /// Counts of what the scan read, added to as it runs (shared across scans when the
    /// same counters are passed to several).
    pub metrics: Option<Arc<ScanMetrics>>,
}

impl ScanOptions {
    /// The row columns asked for, in the order the scan adds them (Lance's).
    pub fn row_columns(&self) -> Vec<RowColumn> {
        let asked = [
            self.with_row_id,
            self.with_row_address,
            self.with_row_last_updated_at_version,
            self.with_row_created_at_version,
        ];
        RowColumn::ALL
            .into_iter()
            .zip(asked)
            .filter_map(|(c, on)| on.then_some(c))
            .collect()
    }
}

/// What scans read, counted: index pages a filter read, fragments whose column a filter read
/// directly, and fragments whose rows the scan read.
#[derive(Debug, Default)]
pub struct ScanMetrics {
    pages_read: AtomicU64,
    scanned_fragments: AtomicU64,
    fragments_read: AtomicU64,
    indexed: std::sync::Mutex<std::collections::BTreeMap<String, roaring::RoaringBitmap>>,
}

impl ScanMetrics {
    /// Index pages read answering filters.
    pub fn pages_read(&self) -> u64 {
        self.pages_read.load(Ordering::Relaxed)
    }

    /// Fragments whose column a filter read directly (summed over its predicates).
    pub fn scanned_fragments(&self) -> u64 {
        self.scanned_fragments.load(Ordering::Relaxed)
    }

    /// The indexes that answered filters, by name, and the fragments each answered for
    /// (empty when none did: every filtered fragment's column was read).
    pub fn indexed_fragments(&self) -> std::collections::BTreeMap<String, roaring::RoaringBitmap> {
        self.indexed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Fragments whose rows were read (a fragment read in several batches counts once).
    pub fn fragments_read(&self) -> u64 {
        self.fragments_read.load(Ordering::Relaxed)
    }
}

/// The schema of the batches `Dataset::scan` returns for `options`.
pub fn scan_schema(snap: &Snapshot, options: &ScanOptions) -> Result<SchemaRef> {
    let projection = paths::projection(snap, options.columns.as_deref())?;
    Ok(projection.schema(&options.row_columns()))
}

/// The rows of this version (deleted rows left out) as a stream of batches; see
/// [`ScanOptions`]. A filter is answered before any projected column is read.
pub async fn scan(
    snap: &Snapshot,
    options: ScanOptions,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    if let Some(v) = options.version.filter(|v| *v != snap.version()) {
        let at = snap.checkout(v).await?;
        let options = ScanOptions {
            version: None,
            ..options
        };
        return Box::pin(scan(&at, options)).await;
    }
    let projection = paths::projection(snap, options.columns.as_deref())?;
    let schema = projection.schema(&options.row_columns());
    let fragments = snap
        .with_known_rows(fragments_and_indexes(snap, &options).await?)
        .await?;
    if options.include_deleted && !options.with_row_id {
        return Err(Error::InvalidArgument {
            what: "a scan of deleted rows".into(),
            reason: "include_deleted_rows is set but with_row_id is false".into(),
        });
    }
    let matched = match &options.filter {
        Some(filter) => Some(matched_rows(snap, filter, &fragments, &options).await?),
        None => None,
    };
    let deletions = match (&matched, &options.fragments) {
        (Some(_), _) if !options.include_deleted => vec![None; fragments.len()],
        (_, None) => rowids::deletion_vectors(snap).await?,
        (_, Some(_)) => {
            let mut out = Vec::with_capacity(fragments.len());
            for f in fragments.iter() {
                out.push(rowids::cached_deletion_vector(snap, f).await?);
            }
            out
        }
    };
    // a scan of deleted rows reads every physical row and marks the deleted ones
    let (deletions, shown_deleted) = match options.include_deleted {
        false => (deletions, ShownDeleted::default()),
        true => {
            let shown = fragments
                .iter()
                .zip(&deletions)
                .filter_map(|(f, d)| Some((f.id, d.clone()?)))
                .collect();
            (vec![None; fragments.len()], Arc::new(shown))
        }
    };
    let window = (options.offset, options.limit.unwrap_or(u64::MAX));
    let reads = plan_reads(
        &fragments,
        deletions,
        matched.as_ref(),
        projection.len(),
        window,
    );
    if let Some(m) = &options.metrics {
        let mut ids: Vec<u64> = reads.iter().map(|r| r.fragment_id()).collect();
        ids.dedup();
        m.fragments_read
            .fetch_add(ids.len() as u64, Ordering::Relaxed);
    }
    let stream = read_all(snap, reads, projection, schema, &options, shown_deleted);
    Ok(stream.boxed())
}

/// The fragments the scan reads. On a tree in an object store, the BTrees on the filter's
/// columns are opened while the tree resolves (the index's first round trips overlap the
/// leaves'); an index that fails to open fails again, and is reported, when searched.
async fn fragments_and_indexes(
    snap: &Snapshot,
    options: &ScanOptions,
) -> Result<Arc<[DataFragment]>> {
    let fragments = async {
        match &options.fragments {
            None => snap.fragments().await,
            Some(ids) => snap.fragments_with_ids(ids).await,
        }
    };
    let filter = options.filter.as_ref();
    let Some(filter) = filter.filter(|_| snap.tree().is_some() && snap.file_store().is_remote())
    else {
        return fragments.await;
    };
    let fields = &snap.manifest().fields;
    let names: Vec<String> = (filter.columns().into_iter())
        .filter_map(|c| paths::resolve(fields, c))
        .filter_map(|p| crate::indexes::btree_on_field(snap, p.id))
        .collect();
    let opens = futures::future::join_all(
        names
            .iter()
            .map(|name| crate::indexes::btree_segments(snap, name)),
    );
    let (fragments, _) = futures::join!(fragments, opens);
    fragments
}

/// The live rows `filter` matches among `fragments`, by fragment; what answering read
/// goes to the scan's metrics.
async fn matched_rows(
    snap: &Snapshot,
    filter: &Filter,
    fragments: &Arc<[DataFragment]>,
    options: &ScanOptions,
) -> Result<crate::rows::Matched> {
    let deleted = match options.include_deleted {
        true => search::DeletedRows::Shown,
        false => search::DeletedRows::Left,
    };
    let (matched, stats) =
        search::search_addresses_in(snap, filter, fragments.clone(), deleted).await?;
    if let Some(m) = &options.metrics {
        m.pages_read.fetch_add(stats.pages_read, Ordering::Relaxed);
        m.scanned_fragments
            .fetch_add(stats.scanned_fragments, Ordering::Relaxed);
        let mut indexed = m
            .indexed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for (name, fragments) in stats.indexed {
            *indexed.entry(name).or_default() |= fragments;
        }
    }
    Ok(matched)
}

/// The deleted offsets a scan of deleted rows shows, by fragment id.
type ShownDeleted = Arc<std::collections::HashMap<u64, Arc<RoaringBitmap>>>;

/// The batches of `reads`, a few read ahead, in order.
fn read_all(
    snap: &Snapshot,
    reads: Vec<Read>,
    projection: Projection,
    schema: SchemaRef,
    options: &ScanOptions,
    shown_deleted: ShownDeleted,
) -> impl Stream<Item = Result<RecordBatch>> + Send + 'static {
    let ahead = read_ahead(snap, &reads);
    let ds = snap.clone();
    let projection = Arc::new(projection);
    let row_columns: Arc<[RowColumn]> = options.row_columns().into();
    futures::stream::iter(reads)
        .map(move |read| {
            let (ds, projection, schema) = (ds.clone(), projection.clone(), schema.clone());
            let (shown_deleted, row_columns) = (shown_deleted.clone(), row_columns.clone());
            async move {
                let (chunk, whole) = match &read {
                    Read::Chunk(chunk) => (chunk, false),
                    Read::Fragment(chunk) => (chunk, true),
                };
                let deleted = shown_deleted.get(&chunk.fragment.id).map(|d| &**d);
                let batch =
                    read_chunk(&ds, chunk, &projection, schema, &row_columns, deleted).await?;
                Ok::<_, Error>(match whole {
                    true => batches_of(&batch, SCAN_BATCH_ROWS),
                    false => vec![batch],
                })
            }
        })
        .buffered(ahead)
        .map_ok(|batches: Vec<RecordBatch>| futures::stream::iter(batches.into_iter().map(Ok)))
        .try_flatten()
}

/// Reads in flight at once: [`SCAN_READ_AHEAD`] on a local disk; on an object store as many
/// as the store's fan-out while the rows held ahead stay within [`SCAN_AHEAD_ROWS`] (small
/// chunks, as an index's answer reads, cost one round of round trips, not one each).
fn read_ahead(snap: &Snapshot, reads: &[Read]) -> usize {
    let per_read = (reads.iter())
        .map(|r| match r {
            Read::Chunk(c) | Read::Fragment(c) => c.rows.len(),
        })
        .max()
        .unwrap_or(0)
        .max(1);
    let by_rows = usize::try_from(SCAN_AHEAD_ROWS / per_read).unwrap_or(usize::MAX);
    snap.fanout(SCAN_READ_AHEAD)
        .min(by_rows)
        .max(SCAN_READ_AHEAD)
}

/// The rows of `chunk`, `projection`'s columns (then `row_columns`) in `schema`; offsets in
/// `deleted` (a scan of deleted rows) have no `_rowid` or `_rowaddr`.
pub async fn read_chunk(
    snap: &Snapshot,
    chunk: &Chunk,
    projection: &Projection,
    schema: SchemaRef,
    row_columns: &[RowColumn],
    deleted: Option<&RoaringBitmap>,
) -> Result<RecordBatch> {
    let batch = (projection.read_rows(snap, &chunk.fragment, chunk.rows.as_rows())).await?;
    let offsets = match row_columns.is_empty() {
        true => Vec::new(),
        false => chunk.rows.offsets(),
    };
    with_row_columns(
        snap,
        batch,
        &chunk.fragment,
        &offsets,
        schema,
        row_columns,
        deleted,
    )
}

/// `batch` (rows at `offsets` of `fragment`) with `row_columns` added; a row whose offset is
/// in `deleted` (a scan of deleted rows) has no `_rowid` or `_rowaddr`.
pub fn with_row_columns(
    snap: &Snapshot,
    batch: RecordBatch,
    fragment: &DataFragment,
    offsets: &[u64],
    schema: SchemaRef,
    row_columns: &[RowColumn],
    deleted: Option<&RoaringBitmap>,
) -> Result<RecordBatch> {
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    for column in row_columns {
        columns.push(Arc::new(column.values(snap, fragment, offsets, deleted)?));
    }
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(schema, columns, &options)
        .map_err(|e| Error::Internal(format!("assembling scanned rows: {e}")))
}
