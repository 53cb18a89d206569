//! Training: sort `(value, id)` pairs (NULLs first, IEEE total order for floats, ties by id),
//! cut them into pages of `page_rows`, and write `page_data.lance` and `page_lookup.lance`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array, UInt64Array};
use arrow_ord::sort::{lexsort_to_indices, SortColumn};
use arrow_select::concat::concat;
use arrow_select::take::take;
use futures::{Stream, TryStreamExt};
use lancet_file::{write_file, FileStore, FileVersion, WriteOptions};
use object_store::path::Path;

use crate::error::{BTreeError, Result};
use crate::lookup::NULLS_FIRST;
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
}

impl Default for TrainOptions {
    fn default() -> Self {
        Self {
            page_rows: crate::schema::DEFAULT_PAGE_ROWS,
            file_version: FileVersion::V2_2,
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

/// Sorts `(values, ids)` the way the index stores them.
pub fn sort_pairs(values: &ArrayRef, ids: &UInt64Array) -> Result<(ArrayRef, UInt64Array)> {
    let columns = [
        SortColumn {
            values: values.clone(),
            options: Some(NULLS_FIRST),
        },
        SortColumn {
            values: Arc::new(ids.clone()),
            options: Some(NULLS_FIRST),
        },
    ];
    let order = lexsort_to_indices(&columns, None)?;
    let values = take(values.as_ref(), &order, None)?;
    let ids = take(ids, &order, None)?;
    let ids = ids
        .as_any()
        .downcast_ref::<UInt64Array>()
        .cloned()
        .ok_or_else(|| BTreeError::InvalidInput("ids are not UInt64".into()))?;
    Ok((values, ids))
}

/// Trains from a stream of batches with columns `(value, id: UInt64)`.
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
    if options.page_rows == 0 {
        return Err(BTreeError::InvalidInput(
            "page_rows (zone_size) must be positive".into(),
        ));
    }
    if !is_supported(value_type) {
        return Err(BTreeError::InvalidInput(format!(
            "cannot index {value_type}"
        )));
    }
    let batches: Vec<RecordBatch> = batches.try_collect().await?;
    let mut values: Vec<ArrayRef> = Vec::with_capacity(batches.len());
    let mut ids: Vec<ArrayRef> = Vec::with_capacity(batches.len());
    for b in &batches {
        if b.num_columns() != 2 || b.column(0).data_type() != value_type {
            return Err(BTreeError::InvalidInput(format!(
                "training batches must be (value: {value_type}, id: UInt64), got {}",
                b.schema()
            )));
        }
        if b.column(1).data_type() != &arrow_schema::DataType::UInt64
            || b.column(1).null_count() > 0
        {
            return Err(BTreeError::InvalidInput(
                "ids must be non-NULL UInt64".into(),
            ));
        }
        values.push(b.column(0).clone());
        ids.push(b.column(1).clone());
    }
    let values = if values.is_empty() {
        arrow_array::new_empty_array(value_type)
    } else {
        concat(&values.iter().map(|a| a.as_ref()).collect::<Vec<_>>())?
    };
    let ids = if ids.is_empty() {
        UInt64Array::from(Vec::<u64>::new())
    } else {
        let all = concat(&ids.iter().map(|a| a.as_ref()).collect::<Vec<_>>())?;
        all.as_any()
            .downcast_ref::<UInt64Array>()
            .cloned()
            .ok_or_else(|| BTreeError::InvalidInput("ids are not UInt64".into()))?
    };
    let (values, ids) = sort_pairs(&values, &ids)?;
    write_sorted(fs, dir, &values, &ids, options).await
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
    let n = values.len();
    let page = options.page_rows as usize;
    let num_pages = n.div_ceil(page.max(1));
    let mut mins = Vec::with_capacity(num_pages);
    let mut maxs = Vec::with_capacity(num_pages);
    let mut null_counts = Vec::with_capacity(num_pages);
    for p in 0..num_pages {
        let start = p * page;
        let len = page.min(n - start);
        let slice = values.slice(start, len);
        mins.push(slice.slice(0, 1));
        maxs.push(slice.slice(len - 1, 1));
        null_counts.push(slice.null_count() as u32);
    }
    let cat = |parts: &[ArrayRef]| -> Result<ArrayRef> {
        if parts.is_empty() {
            Ok(arrow_array::new_empty_array(&value_type))
        } else {
            Ok(concat(
                &parts.iter().map(|a| a.as_ref()).collect::<Vec<_>>(),
            )?)
        }
    };
    // With NULLs first, a page's first value is NULL iff it holds a NULL, and its last value is
    // NULL iff it is all NULL: exactly the lookup's min/max convention.
    let lookup = RecordBatch::try_new(
        page_lookup_schema(&value_type),
        vec![
            cat(&mins)?,
            cat(&maxs)?,
            Arc::new(UInt32Array::from(null_counts)),
            Arc::new(UInt32Array::from_iter_values(0..num_pages as u32)),
        ],
    )?;
    let data = RecordBatch::try_new(
        page_data_schema(&value_type),
        vec![values.clone(), Arc::new(ids.clone())],
    )?;
    let data_file = write_file(
        fs,
        &dir.clone().join(PAGE_DATA_FILE),
        &page_data_schema(&value_type),
        &[data],
        &WriteOptions {
            version: options.file_version,
            ..Default::default()
        },
    )
    .await?;
    let lookup_file = write_file(
        fs,
        &dir.clone().join(PAGE_LOOKUP_FILE),
        &page_lookup_schema(&value_type),
        &[lookup],
        &WriteOptions {
            version: options.file_version,
            metadata: HashMap::from([
                (BATCH_SIZE_KEY.to_string(), options.page_rows.to_string()),
                (RANGE_PARTITIONED_KEY.to_string(), "false".to_string()),
            ]),
            global_buffers: Vec::new(),
        },
    )
    .await?;
    Ok(TrainedIndex {
        num_rows: n as u64,
        num_pages: num_pages as u64,
        files: vec![
            (PAGE_DATA_FILE.to_string(), data_file.size_bytes),
            (PAGE_LOOKUP_FILE.to_string(), lookup_file.size_bytes),
        ],
    })
}
