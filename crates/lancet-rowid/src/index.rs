//! `RowIdIndex`: stable row id → row address for every live row of a version.
//!
//! Built from each fragment's sequence and deletion vector. Instead of expanding rows, the
//! builder works on *runs*: stretches where the id and the physical offset both grow by one.
//! A `Range` segment is one run, a `RangeWithHoles` one run per gap, a `RangeWithBitmap` one per
//! stretch of set bits, arrays one per stretch of consecutive ids. Deleted offsets split runs.
//! So an append-only table costs O(fragments) to index and a table after scattered updates
//! O(fragments + updates), never O(rows) (the cost Lance hit in #6310 and #8621).
//!
//! The index is three parallel arrays sorted by first id: `first_ids`, `lens`, `first_addrs`.
//! A lookup is one binary search over `first_ids` and an add. An id covered by two runs is
//! live in two places, which is corruption (Lance 14: "row id index corrupt").
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use lancet_proto::RowAddress;
use rayon::prelude::*;
use roaring::RoaringBitmap;

use crate::error::{Result, RowIdError};
use crate::sequence::RowIdSequence;

/// The row address of `(fragment, offset)`.
pub fn row_address(fragment: u32, offset: u32) -> u64 {
    RowAddress::new(fragment, offset).as_u64()
}

/// One fragment's input to the index.
#[derive(Debug, Clone)]
pub struct FragmentRowIds {
    pub fragment_id: u64,
    pub physical_rows: u64,
    pub sequence: Arc<RowIdSequence>,
    /// Deleted physical offsets, if the fragment has a deletion file.
    pub deletions: Option<Arc<RoaringBitmap>>,
}

/// One run: `len` consecutive ids from `first_id` at consecutive addresses from `first_addr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    first_id: u64,
    len: u64,
    first_addr: u64,
}

#[derive(Debug, Clone, Default)]
pub struct RowIdIndex {
    first_ids: Vec<u64>,
    lens: Vec<u32>,
    first_addrs: Vec<u64>,
    fragments: BTreeMap<u32, FragmentRowIds>,
    live_rows: u64,
}

fn fragment_runs(f: &FragmentRowIds) -> Result<Vec<Run>> {
    let fragment = u32::try_from(f.fragment_id)
        .ok()
        .filter(|id| *id != u32::MAX)
        .ok_or_else(|| RowIdError::Unaddressable {
            fragment: f.fragment_id,
            rule: "fragment ids must be below 2^32 - 1 to form row addresses".into(),
        })?;
    if f.physical_rows > u64::from(u32::MAX) + 1 {
        return Err(RowIdError::Unaddressable {
            fragment: f.fragment_id,
            rule: format!("{} physical rows exceed 2^32 offsets", f.physical_rows),
        });
    }
    if f.sequence.len() != f.physical_rows {
        return Err(RowIdError::LengthMismatch {
            fragment: f.fragment_id,
            sequence_len: f.sequence.len(),
            physical_rows: f.physical_rows,
        });
    }
    if let Some(max) = f.deletions.as_ref().and_then(|d| d.max()) {
        if u64::from(max) >= f.physical_rows {
            return Err(RowIdError::InvalidInput(format!(
                "fragment {}: deleted offset {max} is past its {} physical rows",
                f.fragment_id, f.physical_rows
            )));
        }
    }
    let base = row_address(fragment, 0);
    let mut out = Vec::new();
    let mut seg_start = 0u64;
    for segment in f.sequence.segments() {
        for (first_id, pos, len) in segment.runs() {
            let offset = seg_start + pos;
            split_by_deletions(
                first_id,
                offset,
                len,
                f.deletions.as_deref(),
                |id, off, n| {
                    out.push(Run {
                        first_id: id,
                        len: n,
                        first_addr: base + off,
                    })
                },
            );
        }
        seg_start += segment.len();
    }
    Ok(out)
}

/// Emits the parts of run `(first_id, offset, len)` whose offsets are not deleted.
fn split_by_deletions(
    first_id: u64,
    offset: u64,
    len: u64,
    deleted: Option<&RoaringBitmap>,
    mut emit: impl FnMut(u64, u64, u64),
) {
    let Some(deleted) = deleted.filter(|d| !d.is_empty()) else {
        emit(first_id, offset, len);
        return;
    };
    // offsets fit u32 (checked by the caller); the end may be 2^32
    let end = offset + len;
    let lo = offset as u32;
    let mut cursor = offset;
    let mut iter = deleted.iter();
    iter.advance_to(lo);
    for d in iter {
        let d = u64::from(d);
        if d >= end {
            break;
        }
        if d > cursor {
            emit(first_id + (cursor - offset), cursor, d - cursor);
        }
        cursor = d + 1;
    }
    if cursor < end {
        emit(first_id + (cursor - offset), cursor, end - cursor);
    }
}

impl RowIdIndex {
    /// Builds the index; fragments are processed in parallel.
    pub fn build(fragments: Vec<FragmentRowIds>) -> Result<Self> {
        let per_fragment: Vec<Vec<Run>> = fragments
            .par_iter()
            .map(fragment_runs)
            .collect::<Result<_>>()?;
        let mut runs: Vec<Run> = per_fragment.into_iter().flatten().collect();
        runs.par_sort_unstable_by_key(|r| r.first_id);

        let mut index = RowIdIndex::default();
        index.first_ids.reserve(runs.len());
        let mut last: Option<Run> = None;
        for run in runs {
            if let Some(prev) = last.as_mut() {
                let prev_end = prev.first_id + prev.len;
                if run.first_id < prev_end {
                    let second = run.first_addr;
                    let first = prev.first_addr + (run.first_id - prev.first_id);
                    return Err(RowIdError::DuplicateRowId {
                        row_id: run.first_id,
                        first,
                        second,
                    });
                }
                // Adjacent in both id and address, and short enough for a u32 length: merge.
                if run.first_id == prev_end
                    && run.first_addr == prev.first_addr + prev.len
                    && prev.len + run.len <= u64::from(u32::MAX)
                {
                    prev.len += run.len;
                    continue;
                }
                index.push(*prev);
            }
            last = Some(run);
        }
        if let Some(prev) = last {
            index.push(prev);
        }
        index.live_rows = index.lens.iter().map(|l| u64::from(*l)).sum();
        for f in fragments {
            if let Ok(id) = u32::try_from(f.fragment_id) {
                index.fragments.insert(id, f);
            }
        }
        Ok(index)
    }

    fn push(&mut self, run: Run) {
        // Runs longer than u32::MAX are split (a fragment has at most 2^32 rows).
        let mut run = run;
        while run.len > 0 {
            let n = run.len.min(u64::from(u32::MAX));
            self.first_ids.push(run.first_id);
            self.lens.push(n as u32);
            self.first_addrs.push(run.first_addr);
            run.first_id += n;
            run.first_addr += n;
            run.len -= n;
        }
    }

    /// The address of live row `row_id`.
    #[inline]
    pub fn get(&self, row_id: u64) -> Option<u64> {
        let k = self
            .first_ids
            .partition_point(|&f| f <= row_id)
            .checked_sub(1)?;
        let first = *self.first_ids.get(k)?;
        let delta = row_id - first;
        (delta < u64::from(*self.lens.get(k)?))
            .then(|| self.first_addrs.get(k).map(|a| a + delta))?
    }

    /// The stable row id at `address`, through the fragment's sequence; deleted rows have none.
    pub fn row_id_of(&self, address: u64) -> Option<u64> {
        let (fragment, offset) = RowAddress::split(address);
        let f = self.fragments.get(&fragment)?;
        if f.deletions.as_ref().is_some_and(|d| d.contains(offset)) {
            return None;
        }
        f.sequence.get(u64::from(offset))
    }

    /// The stable row id stored at `address`, deleted or not (for answers that ignore
    /// deletion vectors).
    pub fn row_id_at(&self, address: u64) -> Option<u64> {
        let (fragment, offset) = RowAddress::split(address);
        self.fragments
            .get(&fragment)?
            .sequence
            .get(u64::from(offset))
    }

    /// Number of live rows.
    pub fn len(&self) -> u64 {
        self.live_rows
    }

    pub fn is_empty(&self) -> bool {
        self.live_rows == 0
    }

    /// Number of runs the index holds.
    pub fn num_runs(&self) -> usize {
        self.first_ids.len()
    }

    /// Every live `(row_id, address)`, ascending by row id.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.first_ids
            .iter()
            .zip(&self.lens)
            .zip(&self.first_addrs)
            .flat_map(|((&id, &len), &addr)| (0..u64::from(len)).map(move |k| (id + k, addr + k)))
    }

    /// Bytes the index keeps resident: its run arrays, plus the sequences and deletion vectors
    /// it holds for reverse lookups.
    pub fn resident_bytes(&self) -> usize {
        self.first_ids.capacity() * 8
            + self.lens.capacity() * 4
            + self.first_addrs.capacity() * 8
            + self
                .fragments
                .values()
                .map(|f| {
                    f.sequence.heap_bytes()
                        + f.deletions.as_ref().map_or(0, |d| d.serialized_size())
                        + std::mem::size_of::<FragmentRowIds>()
                })
                .sum::<usize>()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;

    fn frag(id: u64, seq: RowIdSequence, deleted: &[u32]) -> FragmentRowIds {
        FragmentRowIds {
            fragment_id: id,
            physical_rows: seq.len(),
            sequence: Arc::new(seq),
            deletions: (!deleted.is_empty()).then(|| Arc::new(deleted.iter().copied().collect())),
        }
    }

    #[test]
    fn ranges_cost_one_run_each() {
        let idx = RowIdIndex::build(vec![
            frag(0, RowIdSequence::from_range(0..1000), &[]),
            frag(1, RowIdSequence::from_range(1000..2000), &[]),
        ])
        .unwrap();
        assert_eq!(idx.num_runs(), 2);
        assert_eq!(idx.len(), 2000);
        assert_eq!(idx.get(5), Some(5));
        assert_eq!(idx.get(1500), Some(row_address(1, 500)));
        assert_eq!(idx.get(2000), None);
        assert_eq!(idx.row_id_of(row_address(1, 7)), Some(1007));
    }

    #[test]
    fn updates_move_rows_and_deletions_hide_old_copies() {
        // ids 3 and 4 were updated: tombstoned in fragment 0, rewritten in fragment 1
        let idx = RowIdIndex::build(vec![
            frag(0, RowIdSequence::from_range(0..10), &[3, 4]),
            frag(1, RowIdSequence::from_values(&[3, 4]), &[]),
        ])
        .unwrap();
        assert_eq!(idx.get(3), Some(row_address(1, 0)));
        assert_eq!(idx.get(4), Some(row_address(1, 1)));
        assert_eq!(idx.get(5), Some(row_address(0, 5)));
        assert_eq!(idx.row_id_of(row_address(0, 3)), None);
        assert_eq!(idx.len(), 10);
        let all: Vec<_> = idx.iter().collect();
        assert_eq!(all.len(), 10);
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn an_id_live_twice_is_an_error() {
        let err = RowIdIndex::build(vec![
            frag(0, RowIdSequence::from_range(0..10), &[]),
            frag(1, RowIdSequence::from_values(&[5]), &[]),
        ])
        .unwrap_err();
        assert!(
            matches!(err, RowIdError::DuplicateRowId { row_id: 5, .. }),
            "{err}"
        );
    }

    #[test]
    fn length_and_address_rules() {
        let mut f = frag(0, RowIdSequence::from_range(0..10), &[]);
        f.physical_rows = 11;
        assert!(matches!(
            RowIdIndex::build(vec![f]),
            Err(RowIdError::LengthMismatch { .. })
        ));
        let f = frag(u64::from(u32::MAX), RowIdSequence::from_range(0..1), &[]);
        assert!(matches!(
            RowIdIndex::build(vec![f]),
            Err(RowIdError::Unaddressable { .. })
        ));
        let mut f = frag(0, RowIdSequence::from_range(0..3), &[]);
        f.deletions = Some(Arc::new([7u32].into_iter().collect()));
        assert!(matches!(
            RowIdIndex::build(vec![f]),
            Err(RowIdError::InvalidInput(_))
        ));
    }
}
