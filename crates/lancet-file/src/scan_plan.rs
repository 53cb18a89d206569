//! The reads of a scan over a version's fragments: which rows of which fragment each batch
//! holds, with deleted rows (or the rows a filter did not match) left out and an offset and
//! limit applied before anything is read.
//!
//! A fragment the scan takes whole (no filter, no offset or limit inside it) whose projected
//! columns hold at most [`WHOLE_FRAGMENT_CELLS`] values is read in one pass — its pages in
//! one request — and cut into batches after; any other fragment batch by batch, so a wide
//! scan's memory stays a few batches.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};
use lancet_proto::table::DataFragment;
use roaring::RoaringBitmap;

use crate::fragment::{Column, Rows};

/// Rows read per batch of a scan.
pub const SCAN_BATCH_ROWS: u64 = 64 * 1024;

/// A fragment whose projected columns hold at most this many values (rows × columns) is read
/// in one pass.
pub const WHOLE_FRAGMENT_CELLS: u64 = 4 * 1024 * 1024;

/// The rows of one batch of a fragment: a range of offsets, or ascending offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkRows {
    Range(std::ops::Range<u64>),
    At(Vec<u64>),
}

impl ChunkRows {
    /// How many rows.
    pub fn len(&self) -> u64 {
        match self {
            ChunkRows::Range(r) => r.end.saturating_sub(r.start),
            ChunkRows::At(v) => v.len() as u64,
        }
    }

    /// No row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The offsets, ascending.
    pub fn offsets(&self) -> Vec<u64> {
        match self {
            ChunkRows::Range(r) => r.clone().collect(),
            ChunkRows::At(v) => v.clone(),
        }
    }

    /// The rows as a fragment read takes them.
    pub fn as_rows(&self) -> Rows<'_> {
        match self {
            ChunkRows::Range(r) => Rows::Range(r.clone()),
            ChunkRows::At(v) => Rows::At(v),
        }
    }

    /// Without the first `skip` rows, at most `take` rows.
    fn window(self, skip: u64, take: u64) -> ChunkRows {
        match self {
            ChunkRows::Range(r) => {
                let start = r.start.saturating_add(skip).min(r.end);
                ChunkRows::Range(start..r.end.min(start.saturating_add(take)))
            }
            ChunkRows::At(v) => {
                let skip = usize::try_from(skip).unwrap_or(usize::MAX);
                let take = usize::try_from(take).unwrap_or(usize::MAX);
                ChunkRows::At(v.into_iter().skip(skip).take(take).collect())
            }
        }
    }
}

/// One batch a scan reads: the rows `rows` of `fragment`.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    pub fragment: DataFragment,
    pub rows: ChunkRows,
}

/// One read of a scan: a batch of a fragment's rows, or a whole fragment (read in one pass
/// and cut into batches of at most [`SCAN_BATCH_ROWS`]: [`batches_of`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    Chunk(Chunk),
    Fragment(Chunk),
}

impl Read {
    /// The fragment read.
    pub fn fragment_id(&self) -> u64 {
        match self {
            Read::Chunk(c) | Read::Fragment(c) => c.fragment.id,
        }
    }
}

/// The reads of a scan over `fragments` (each with its deletion vector, or, under a filter,
/// the offsets it `matched` by fragment id), `columns` wide, skipping `window.0` rows and
/// taking at most `window.1`.
pub fn plan_reads(
    fragments: &[DataFragment],
    deletions: Vec<Option<Arc<RoaringBitmap>>>,
    matched: Option<&BTreeMap<u32, RoaringBitmap>>,
    columns: usize,
    window: (u64, u64),
) -> Vec<Read> {
    let (mut skip, mut left) = window;
    let mut reads = Vec::new();
    for (f, deleted) in fragments.iter().zip(deletions) {
        if left == 0 {
            break;
        }
        let cells = f.physical_rows.saturating_mul(columns.max(1) as u64);
        if matched.is_none() && skip == 0 && cells <= WHOLE_FRAGMENT_CELLS {
            let live = match &deleted {
                Some(d) => f.physical_rows.saturating_sub(d.len()),
                None => f.physical_rows,
            };
            if live <= left {
                let rows = match &deleted {
                    Some(d) => ChunkRows::At(live_offsets(f.physical_rows, d).collect()),
                    None => ChunkRows::Range(0..f.physical_rows),
                };
                left -= live;
                if live > 0 {
                    reads.push(Read::Fragment(Chunk {
                        fragment: f.clone(),
                        rows,
                    }));
                }
                continue;
            }
        }
        let rows: Vec<ChunkRows> = match (matched, deleted) {
            (Some(m), _) => {
                let Some(offsets) = u32::try_from(f.id).ok().and_then(|id| m.get(&id)) else {
                    continue;
                };
                offsets_in_chunks(offsets.iter().map(u64::from))
            }
            (None, Some(d)) => offsets_in_chunks(live_offsets(f.physical_rows, &d)),
            (None, None) => ranges_in_chunks(f.physical_rows),
        };
        for r in rows {
            let n = r.len();
            if skip >= n {
                skip -= n;
                continue;
            }
            let r = r.window(skip, left);
            skip = 0;
            left = left.saturating_sub(r.len());
            reads.push(Read::Chunk(Chunk {
                fragment: f.clone(),
                rows: r,
            }));
            if left == 0 {
                break;
            }
        }
    }
    reads
}

/// The offsets below `physical_rows` that `deleted` does not delete.
pub fn live_offsets(physical_rows: u64, deleted: &RoaringBitmap) -> impl Iterator<Item = u64> + '_ {
    // the runs between deleted offsets, in order (no lookup per row)
    let mut start = 0u64;
    deleted
        .iter()
        .map(u64::from)
        .take_while(move |d| *d < physical_rows)
        .chain(std::iter::once(physical_rows))
        .flat_map(move |d| {
            let run = start..d.max(start);
            start = d.saturating_add(1);
            run
        })
}

/// A fragment's live rows in batches of at most [`SCAN_BATCH_ROWS`] (`deleted`: its deleted
/// offsets, if it has a deletion file).
pub fn live_chunks(physical_rows: u64, deleted: Option<&RoaringBitmap>) -> Vec<ChunkRows> {
    match deleted {
        Some(d) => offsets_in_chunks(live_offsets(physical_rows, d)),
        None => ranges_in_chunks(physical_rows),
    }
}

/// Ascending offsets in batches of at most [`SCAN_BATCH_ROWS`].
pub fn offsets_in_chunks(offsets: impl Iterator<Item = u64>) -> Vec<ChunkRows> {
    let all: Vec<u64> = offsets.collect();
    all.chunks(SCAN_BATCH_ROWS as usize)
        .map(|c| ChunkRows::At(c.to_vec()))
        .collect()
}

/// `0..rows` in ranges of at most [`SCAN_BATCH_ROWS`].
pub fn ranges_in_chunks(rows: u64) -> Vec<ChunkRows> {
    (0..rows)
        .step_by(SCAN_BATCH_ROWS as usize)
        .map(|start| ChunkRows::Range(start..rows.min(start.saturating_add(SCAN_BATCH_ROWS))))
        .collect()
}

/// `batch` cut into consecutive batches of at most `rows` rows (zero-copy slices).
pub fn batches_of(batch: &RecordBatch, rows: u64) -> Vec<RecordBatch> {
    let step = usize::try_from(rows).unwrap_or(usize::MAX).max(1);
    (0..batch.num_rows())
        .step_by(step)
        .map(|start| batch.slice(start, step.min(batch.num_rows() - start)))
        .collect()
}

/// The schema of scanned rows: the projection, then `_rowid`, then `_rowaddr` (Lance's
/// names for the row id and the row address).
pub fn output_schema(projection: &[Column], with_id: bool, with_addr: bool) -> SchemaRef {
    let mut fields: Vec<FieldRef> = projection.iter().map(|c| c.field.clone()).collect();
    if with_id {
        fields.push(Arc::new(Field::new("_rowid", DataType::UInt64, true)));
    }
    if with_addr {
        fields.push(Arc::new(Field::new("_rowaddr", DataType::UInt64, true)));
    }
    Arc::new(Schema::new(fields))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn fragment(id: u64, rows: u64) -> DataFragment {
        DataFragment {
            id,
            physical_rows: rows,
            ..Default::default()
        }
    }

    fn rows_of(reads: &[Read]) -> Vec<(u64, Vec<u64>)> {
        reads
            .iter()
            .map(|r| match r {
                Read::Chunk(c) | Read::Fragment(c) => (c.fragment.id, c.rows.offsets()),
            })
            .collect()
    }

    #[test]
    fn small_fragments_taken_whole_are_read_in_one_pass_without_deleted_rows() {
        let deleted: RoaringBitmap = [1u32].into_iter().collect();
        let reads = plan_reads(
            &[fragment(1, 3), fragment(2, 2)],
            vec![Some(Arc::new(deleted)), None],
            None,
            2,
            (0, u64::MAX),
        );
        assert!(reads.iter().all(|r| matches!(r, Read::Fragment(_))));
        assert_eq!(rows_of(&reads), [(1, vec![0, 2]), (2, vec![0, 1])]);
    }

    #[test]
    fn offset_and_limit_are_applied_before_anything_is_read() {
        let reads = plan_reads(
            &[fragment(1, 3), fragment(2, 3)],
            vec![None, None],
            None,
            1,
            (2, 2),
        );
        assert_eq!(rows_of(&reads), [(1, vec![2]), (2, vec![0])]);
        // nothing left: no read
        let none = plan_reads(&[fragment(1, 3)], vec![None], None, 1, (0, 0));
        assert!(none.is_empty());
    }

    #[test]
    fn under_a_filter_only_matched_rows_of_matched_fragments_are_read() {
        let matched: BTreeMap<u32, RoaringBitmap> = [(2, [0u32, 2].into_iter().collect())].into();
        let reads = plan_reads(
            &[fragment(1, 3), fragment(2, 3)],
            vec![None, None],
            Some(&matched),
            1,
            (0, u64::MAX),
        );
        assert_eq!(rows_of(&reads), [(2, vec![0, 2])]);
    }

    #[test]
    fn large_fragments_are_read_batch_by_batch() {
        let rows = SCAN_BATCH_ROWS * 2 + 5;
        let reads = plan_reads(&[fragment(1, rows)], vec![None], None, 64, (0, u64::MAX));
        let lens: Vec<u64> = reads
            .iter()
            .map(|r| match r {
                Read::Chunk(c) => c.rows.len(),
                Read::Fragment(_) => panic!("read whole"),
            })
            .collect();
        assert_eq!(lens, [SCAN_BATCH_ROWS, SCAN_BATCH_ROWS, 5]);
        let deleted: RoaringBitmap = [0u32].into_iter().collect();
        assert_eq!(live_chunks(3, Some(&deleted)), [ChunkRows::At(vec![1, 2])]);
        assert_eq!(live_chunks(3, None), [ChunkRows::Range(0..3)]);
    }

    #[test]
    fn live_offsets_are_the_offsets_not_deleted() {
        for deleted in [
            vec![],
            vec![0u32],
            vec![9],
            vec![0, 1, 2, 9],
            vec![3, 4, 7, 12, 40],
        ] {
            let d: RoaringBitmap = deleted.iter().copied().collect();
            let want: Vec<u64> = (0..10u64)
                .filter(|o| !deleted.contains(&(*o as u32)))
                .collect();
            assert_eq!(
                live_offsets(10, &d).collect::<Vec<_>>(),
                want,
                "{deleted:?}"
            );
        }
    }
}
