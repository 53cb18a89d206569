//! Writing a stable-partition row map: the labels of the live source rows in scan order in,
//! `stable_partition.lance` out (one nullable label per physical row, NULL for deleted rows),
//! with its LSPC counts matrix built in the same pass, one batch per block.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt16Array};
use bytes::Bytes;
use lancet_file::{FileStore, FileVersion, StreamingWriter};
use object_store::path::Path;
use roaring::RoaringBitmap;

use crate::counts::{Counts, DEFAULT_BLOCK_ROWS};
use crate::error::{Result, ReuseError};
use crate::rowmap::{row_map_schema, COUNTS_BUFFER_KEY};

/// One source fragment as the writer sees it.
#[derive(Debug, Clone)]
pub struct SourceRows<'a> {
    pub physical_rows: u64,
    /// Deleted offsets at rewrite time.
    pub deleted: Option<&'a RoaringBitmap>,
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenRowMap {
    pub size_bytes: u64,
    /// Rows each destination receives (its physical rows).
    pub destination_rows: Vec<u64>,
}

/// Writes the row map for `sources` into `num_destinations` destinations. `live_labels` must
/// yield exactly one label (< `num_destinations`) per live source row, in source order then
/// offset order. Uses [`DEFAULT_BLOCK_ROWS`] rows per block unless `block_rows` says otherwise.
pub async fn write_row_map(
    fs: &FileStore,
    path: &Path,
    sources: &[SourceRows<'_>],
    num_destinations: usize,
    mut live_labels: impl Iterator<Item = u16>,
    block_rows: Option<u32>,
) -> Result<WrittenRowMap> {
    let invalid = |m: String| ReuseError::InvalidInput(m);
    if !(1..=crate::counts::MAX_DESTINATIONS).contains(&num_destinations) {
        return Err(invalid(format!(
            "{num_destinations} destinations (1..=65536 allowed)"
        )));
    }
    let block_rows = block_rows.unwrap_or(DEFAULT_BLOCK_ROWS).max(1);
    let total_rows: u64 = sources.iter().map(|s| s.physical_rows).sum();
    let mut writer =
        StreamingWriter::create(fs, path, &row_map_schema(), FileVersion::V2_1).await?;
    let mut per_block: Vec<Vec<u32>> = Vec::new();
    let mut block: Vec<Option<u16>> = Vec::with_capacity(block_rows as usize);
    let mut counts = vec![0u32; num_destinations];
    let mut totals = vec![0u64; num_destinations];
    let flush =
        |block: &mut Vec<Option<u16>>, counts: &mut Vec<u32>, per_block: &mut Vec<Vec<u32>>| {
            per_block.push(std::mem::replace(counts, vec![0; num_destinations]));
            let labels: ArrayRef = Arc::new(UInt16Array::from(std::mem::take(block)));
            RecordBatch::try_new(Arc::new(row_map_schema()), vec![labels])
        };
    for (k, s) in sources.iter().enumerate() {
        for offset in 0..s.physical_rows {
            let deleted = s
                .deleted
                .is_some_and(|d| u32::try_from(offset).is_ok_and(|o| d.contains(o)));
            let label = if deleted {
                None
            } else {
                let l = live_labels.next().ok_or_else(|| {
                    invalid(format!(
                        "fewer labels than live rows (ran out at source {k}, offset {offset})"
                    ))
                })?;
                let d = usize::from(l);
                let c = counts.get_mut(d).ok_or_else(|| {
                    invalid(format!("label {l} with {num_destinations} destinations"))
                })?;
                *c += 1;
                if let Some(t) = totals.get_mut(d) {
                    *t += 1;
                }
                Some(l)
            };
            block.push(label);
            if block.len() == block_rows as usize {
                let batch = flush(&mut block, &mut counts, &mut per_block)
                    .map_err(|e| invalid(e.to_string()))?;
                writer.write(&batch).await?;
            }
        }
    }
    if live_labels.next().is_some() {
        return Err(invalid("more labels than live rows".into()));
    }
    if !block.is_empty() {
        let batch =
            flush(&mut block, &mut counts, &mut per_block).map_err(|e| invalid(e.to_string()))?;
        writer.write(&batch).await?;
    }
    let grid = Counts::encode(num_destinations as u32, block_rows, total_rows, &per_block);
    // Global buffer 0 is the file descriptor, so the counts are buffer 1.
    let metadata = [(COUNTS_BUFFER_KEY.to_string(), "1".to_string())].into();
    let written = writer.finish(&metadata, &[Bytes::from(grid)]).await?;
    if written.global_buffers.first() != Some(&1) {
        return Err(invalid("the counts buffer did not land at index 1".into()));
    }
    Ok(WrittenRowMap {
        size_bytes: written.size_bytes,
        destination_rows: totals,
    })
}
