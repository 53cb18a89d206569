//! Training: sort `(value, id)` pairs (NULLs first, IEEE total order for floats, ties by id),
//! cut them into pages of `page_rows`, and write `page_data.lance` and `page_lookup.lance`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use arrow_select::concat::concat;

use crate::sort::{ExternalSorter, SortedStream};
use futures::{Stream, TryStreamExt};
use lancet_file::{write_file, FileStore, FileVersion, StreamingWriter, WriteOptions};
use object_store::path::Path;

use crate::error::{BTreeError, Result};
use crate::schema::{
    is_supported, page_data_schema, page_lookup_schema, BATCH_SIZE_KEY, PAGE_DATA_FILE,
    PAGE_LOOKUP_FILE, RANGE_PARTITIONED_KEY,
};

/// Training parameters.
#[derive(Debug, Clone, Copy)]
pub struct TrainOptions {
    /// Rows per page (`zone_size`); must be positive.
    pub page_rows: u64,
    /// Lance file version of both files (pylance 14 writes 2.2).
    pub file_version: FileVersion,
    /// Bytes of input held in memory before a sorted run is spilled to a temporary file.
    pub memory_budget_bytes: usize,
}

impl Default for TrainOptions {
    fn default() -> Self {
        Self {
            page_rows: crate::schema::DEFAULT_PAGE_ROWS,
            file_version: FileVersion::V2_2,
            memory_budget_bytes: 512 << 20,
        }
    }
}

/// What training wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrainedIndex {
    pub num_rows: u64,
    pub num_pages: u64,
    /// `(file name, size in bytes)`, as `IndexMetadata.files` records them.
    pub files: Vec<(String, u64)>,
}

/// What a new BTree segment's index entry records, besides its files.
#[derive(Debug, Clone)]
pub struct EntryFields<'a> {
    pub uuid: lancet_proto::table::Uuid,
    pub name: &'a str,
    pub field_id: i32,
    /// The version the segment was trained on.
    pub dataset_version: u64,
    /// The fragments it covers.
    pub fragments: roaring::RoaringBitmap,
    /// The table uses stable row ids (the segment's ids are still row addresses).
    pub stable_row_ids: bool,
    /// Milliseconds since the epoch.
    pub created_at: u64,
}

impl TrainedIndex {
    /// The segment's `IndexMetadata` as Lance 14 records a BTree it trained: the BTree
    /// details type URL with empty details, the fragment bitmap as portable Roaring, the files
    /// with their sizes, and `index_version` 1 on stable-row-id tables (0 otherwise) for ids
    /// that are row addresses.
    pub fn entry(&self, e: EntryFields<'_>) -> lancet_proto::table::IndexMetadata {
        let mut bitmap = e.fragments;
        bitmap.optimize();
        let mut fragment_bitmap = Vec::with_capacity(bitmap.serialized_size());
        // writing into a Vec cannot fail
        let _ = bitmap.serialize_into(&mut fragment_bitmap);
        lancet_proto::table::IndexMetadata {
            uuid: Some(e.uuid),
            fields: vec![e.field_id],
            name: e.name.to_string(),
            dataset_version: e.dataset_version,
            fragment_bitmap,
            index_details: Some(lancet_proto::prost_types::Any {
                type_url: lancet_proto::BTREE_DETAILS_TYPE_URL.to_string(),
                value: Vec::new(),
            }),
            index_version: Some(i32::from(e.stable_row_ids)),
            created_at: Some(e.created_at),
            base_id: None,
            files: self
                .files
                .iter()
                .map(|(path, size)| lancet_proto::table::IndexFile {
                    path: path.clone(),
                    size_bytes: *size,
                })
                .collect(),
            ..Default::default()
        }
    }
}

/// The training pairs of one fragment: its values and their row addresses, rows at `deleted`
/// offsets left out, as a `(value, id)` batch [`train`] takes.
pub fn fragment_pairs(
    fragment_id: u32,
    values: &ArrayRef,
    deleted: Option<&roaring::RoaringBitmap>,
) -> Result<arrow_array::RecordBatch> {
    let keep: Vec<u32> = (0..u32::try_from(values.len()).unwrap_or(u32::MAX))
        .filter(|o| deleted.is_none_or(|d| !d.contains(*o)))
        .collect();
    let ids: ArrayRef = std::sync::Arc::new(arrow_array::UInt64Array::from_iter_values(
        keep.iter()
            .map(|o| lancet_proto::RowAddress::new(fragment_id, *o).as_u64()),
    ));
    let values =
        arrow_select::take::take(values.as_ref(), &arrow_array::UInt32Array::from(keep), None)?;
    Ok(arrow_array::RecordBatch::try_from_iter([
        ("value", values),
        ("id", ids),
    ])?)
}

/// Trains from a stream of batches with columns `(value, id: UInt64)`. Inputs larger than
/// `options.memory_budget_bytes` are sorted in runs spilled to temporary files and merged.
pub async fn train<S>(
    fs: &FileStore,
    dir: &Path,
    value_type: &arrow_schema::DataType,
    batches: S,
    options: TrainOptions,
) -> Result<TrainedIndex>
where
    S: Stream<Item = Result<RecordBatch>>,
{
    check_options(value_type, &options)?;
    let mut sorter = ExternalSorter::new(value_type.clone(), options.memory_budget_bytes);
    let mut batches = std::pin::pin!(batches);
    while let Some(batch) = batches.try_next().await? {
        sorter.push(batch).await?;
    }
    let mut sorted = sorter.finish().await?;
    write_pages(fs, dir, value_type, &mut sorted, options).await
}

pub(crate) fn check_options(
    value_type: &arrow_schema::DataType,
    options: &TrainOptions,
) -> Result<()> {
    if options.page_rows == 0 || options.page_rows > u64::from(u32::MAX) {
        return Err(BTreeError::InvalidInput(
            "page_rows (zone_size) must be between 1 and 2^32 - 1".into(),
        ));
    }
    if !is_supported(value_type) {
        return Err(BTreeError::InvalidInput(format!(
            "cannot index {value_type}"
        )));
    }
    Ok(())
}

/// Writes already sorted pairs as one segment.
pub async fn write_sorted(
    fs: &FileStore,
    dir: &Path,
    values: &ArrayRef,
    ids: &UInt64Array,
    options: TrainOptions,
) -> Result<TrainedIndex> {
    let value_type = values.data_type().clone();
    check_options(&value_type, &options)?;
    let mut sorter = ExternalSorter::new(value_type.clone(), usize::MAX);
    let batch = RecordBatch::try_from_iter([
        ("value", values.clone()),
        ("id", Arc::new(ids.clone()) as ArrayRef),
    ])?;
    sorter.push(batch).await?;
    let mut sorted = sorter.finish().await?;
    write_pages(fs, dir, &value_type, &mut sorted, options).await
}

/// Streams sorted pairs into `page_data.lance` page by page, then writes the lookup.
pub(crate) async fn write_pages(
    fs: &FileStore,
    dir: &Path,
    value_type: &arrow_schema::DataType,
    sorted: &mut SortedStream,
    options: TrainOptions,
) -> Result<TrainedIndex> {
    let data_schema = page_data_schema(value_type);
    let mut data = StreamingWriter::create(
        fs,
        &dir.clone().join(PAGE_DATA_FILE),
        &data_schema,
        options.file_version,
    )
    .await?;
    let mut mins: Vec<ArrayRef> = Vec::new();
    let mut maxs: Vec<ArrayRef> = Vec::new();
    let mut null_counts: Vec<u32> = Vec::new();
    while let Some(page) = sorted.next_batch(options.page_rows as usize).await? {
        let values = page.column(0);
        let len = values.len();
        // With NULLs first, a page's first value is NULL iff it holds a NULL, and its last
        // value is NULL iff it is all NULL: exactly the lookup's min/max convention.
        mins.push(values.slice(0, 1));
        maxs.push(values.slice(len - 1, 1));
        null_counts.push(values.null_count() as u32);
        let batch = RecordBatch::try_new(
            data_schema.clone(),
            vec![values.clone(), page.column(1).clone()],
        )?;
        data.write(&batch).await?;
    }
    let num_rows = data.rows();
    let data_file = data.finish(&HashMap::new(), &[]).await?;
    let num_pages = mins.len();
    let cat = |parts: &[ArrayRef]| -> Result<ArrayRef> {
        if parts.is_empty() {
            Ok(arrow_array::new_empty_array(value_type))
        } else {
            Ok(concat(
                &parts.iter().map(|a| a.as_ref()).collect::<Vec<_>>(),
            )?)
        }
    };
    let lookup = RecordBatch::try_new(
        page_lookup_schema(value_type),
        vec![
            cat(&mins)?,
            cat(&maxs)?,
            Arc::new(UInt32Array::from(null_counts)),
            Arc::new(UInt32Array::from_iter_values(0..num_pages as u32)),
        ],
    )?;
    let lookup_file = write_file(
        fs,
        &dir.clone().join(PAGE_LOOKUP_FILE),
        &page_lookup_schema(value_type),
        &[lookup],
        &WriteOptions {
            version: options.file_version,
            metadata: HashMap::from([
                (BATCH_SIZE_KEY.to_string(), options.page_rows.to_string()),
                (RANGE_PARTITIONED_KEY.to_string(), "false".to_string()),
            ]),
            global_buffers: Vec::new(),
            field_ids: None,
        },
    )
    .await?;
    Ok(TrainedIndex {
        num_rows,
        num_pages: num_pages as u64,
        files: vec![
            (PAGE_DATA_FILE.to_string(), data_file.size_bytes),
            (PAGE_LOOKUP_FILE.to_string(), lookup_file.size_bytes),
        ],
    })
}
