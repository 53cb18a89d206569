//! Merging a segment with new data into a new segment.
//!
//! The old segment's pages are read in chunks, their ids passed through `remap` (the identity,
//! or a Fragment Reuse Index translation; `None` drops a row whose fragment was compacted away
//! or deleted), and fed with the new pairs through the external sorter, which removes exact
//! duplicate `(value, id)` pairs. The result is written like a fresh build.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, UInt64Array};
use arrow_select::filter::filter;
use futures::{Stream, TryStreamExt};
use lancet_file::FileStore;
use object_store::path::Path;

use crate::error::Result;
use crate::index::BTreeIndex;
use crate::sort::ExternalSorter;
use crate::train::{check_options, write_pages, TrainOptions, TrainedIndex};

/// Rows of the old segment read at a time.
const MERGE_CHUNK_ROWS: u64 = 64 * 1024;

/// Writes into `dir` a segment holding `old`'s rows (remapped) and the `(value, id)` batches
/// of `new`.
pub async fn merge<S, F>(
    fs: &FileStore,
    old: &BTreeIndex,
    remap: F,
    new: S,
    dir: &Path,
    options: TrainOptions,
) -> Result<TrainedIndex>
where
    S: Stream<Item = Result<RecordBatch>>,
    F: Fn(u64) -> Option<u64>,
{
    let value_type = old.lookup().value_type().clone();
    check_options(&value_type, &options)?;
    let mut sorter = ExternalSorter::new(value_type.clone(), options.memory_budget_bytes);
    let rows = old.data_rows().await?;
    // an old index well within the memory budget is read in one request, then taken a chunk
    // at a time; a larger one chunk by chunk (memory stays within the budget)
    let whole = match old.data_bytes() {
        Some(bytes) if bytes.saturating_mul(4) <= options.memory_budget_bytes as u64 => {
            Some(old.read_rows(0..rows).await?)
        }
        _ => None,
    };
    let mut start = 0;
    while start < rows {
        let end = (start + MERGE_CHUNK_ROWS).min(rows);
        let (values, ids) = match &whole {
            Some((values, ids)) => {
                let offset = usize::try_from(start).unwrap_or(usize::MAX);
                let len = usize::try_from(end - start).unwrap_or(0);
                (values.slice(offset, len), ids.slice(offset, len))
            }
            None => old.read_rows(start..end).await?,
        };
        let mapped: Vec<Option<u64>> = ids.values().iter().map(|id| remap(*id)).collect();
        let keep = arrow_array::BooleanArray::from(
            mapped.iter().map(|m| Some(m.is_some())).collect::<Vec<_>>(),
        );
        let values = filter(values.as_ref(), &keep)?;
        let ids: ArrayRef = Arc::new(UInt64Array::from_iter_values(mapped.into_iter().flatten()));
        if !values.is_empty() {
            sorter
                .push(RecordBatch::try_from_iter([
                    ("value", values),
                    ("id", ids),
                ])?)
                .await?;
        }
        start = end;
    }
    let mut new = std::pin::pin!(new);
    while let Some(batch) = new.try_next().await? {
        sorter.push(batch).await?;
    }
    let mut sorted = sorter.finish().await?;
    write_pages(fs, dir, &value_type, &mut sorted, options).await
}
