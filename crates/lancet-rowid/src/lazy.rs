//! Lookups without building the whole index: what a first take by row id after opening needs.
//!
//! Each fragment's id bounds come from its sequence alone (no deletion files). A lookup checks
//! the fragments whose bounds cover the id (a binary search over fragments sorted by their
//! lowest id, plus the few whose range is wide, such as those holding updated rows), finds the
//! id's position in the sequence, and only then loads that fragment's deletion vector. A take
//! of k ids therefore reads the deletion files of the fragments holding them, not all of them.
//! Answers and the duplicate-live-id error are the same as [`crate::RowIdIndex`]'s.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use roaring::RoaringBitmap;

use crate::error::{Result, RowIdError};
use crate::index::row_address;
use crate::segment::U64Segment;
use crate::sequence::RowIdSequence;

/// A fragment for lazy lookups: its sequence and physical rows; deletions come later.
#[derive(Debug, Clone)]
pub struct LazyFragment {
    pub fragment_id: u32,
    pub physical_rows: u64,
    pub sequence: Arc<RowIdSequence>,
}

/// Fragments wider than this many ids per row are checked for every lookup instead of being
/// found by binary search (updates put strided ids into one fragment).
const WIDE_FACTOR: u64 = 4;

#[derive(Debug)]
pub struct LazyRowIds {
    fragments: Vec<LazyFragment>,
    /// `(min id, max id, fragment index)` of compact fragments, sorted by min.
    compact: Vec<(u64, u64, usize)>,
    /// Indices of wide fragments.
    wide: Vec<usize>,
    /// The largest `max - min` among compact fragments: bounds the backwards scan.
    max_span: u64,
}

fn bounds(seq: &RowIdSequence) -> Option<(u64, u64)> {
    let mut lo = u64::MAX;
    let mut hi = 0u64;
    let mut any = false;
    for s in seq.segments() {
        let (a, b) = match s {
            U64Segment::Range(r) if r.is_empty() => continue,
            U64Segment::Range(r)
            | U64Segment::RangeWithHoles { range: r, .. }
            | U64Segment::RangeWithBitmap { range: r, .. } => (r.start, r.end - 1),
            U64Segment::SortedArray(a) => match (a.get(0), a.get(a.len().saturating_sub(1))) {
                (Some(a), Some(b)) => (a, b),
                _ => continue,
            },
            U64Segment::Array(a) => match (a.iter().min(), a.iter().max()) {
                (Some(a), Some(b)) => (a, b),
                _ => continue,
            },
        };
        lo = lo.min(a);
        hi = hi.max(b);
        any = true;
    }
    any.then_some((lo, hi))
}

impl LazyRowIds {
    pub fn new(fragments: Vec<LazyFragment>) -> Result<Self> {
        let mut compact = Vec::new();
        let mut wide = Vec::new();
        let mut max_span = 0;
        for (i, f) in fragments.iter().enumerate() {
            if f.sequence.len() != f.physical_rows {
                return Err(RowIdError::LengthMismatch {
                    fragment: u64::from(f.fragment_id),
                    sequence_len: f.sequence.len(),
                    physical_rows: f.physical_rows,
                });
            }
            let Some((lo, hi)) = bounds(&f.sequence) else {
                continue;
            };
            let span = hi - lo;
            if span / WIDE_FACTOR > f.physical_rows.max(1) {
                wide.push(i);
            } else {
                compact.push((lo, hi, i));
                max_span = max_span.max(span);
            }
        }
        compact.sort_unstable();
        Ok(Self {
            fragments,
            compact,
            wide,
            max_span,
        })
    }

    /// Fragments whose bounds may hold `id`.
    fn candidates(&self, id: u64) -> impl Iterator<Item = usize> + '_ {
        let end = self.compact.partition_point(|(lo, _, _)| *lo <= id);
        let start = self
            .compact
            .partition_point(|(lo, _, _)| lo.saturating_add(self.max_span) < id);
        self.compact
            .get(start..end)
            .unwrap_or_default()
            .iter()
            .filter(move |(_, hi, _)| *hi >= id)
            .map(|(_, _, i)| *i)
            .chain(self.wide.iter().copied())
    }

    /// The addresses of `ids` (None when not live), loading deletion vectors only for
    /// fragments where an id was found. `load(fragment_id)` returns that fragment's deleted
    /// offsets.
    pub async fn get_many<F, Fut, E>(&self, ids: &[u64], load: F) -> Result<Vec<Option<u64>>, E>
    where
        F: Fn(u32) -> Fut,
        Fut: Future<Output = Result<Option<Arc<RoaringBitmap>>, E>>,
        E: From<RowIdError>,
    {
        let mut deletions: HashMap<u32, Option<Arc<RoaringBitmap>>> = HashMap::new();
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let mut found: Option<u64> = None;
            for i in self.candidates(id) {
                let Some(f) = self.fragments.get(i) else {
                    continue;
                };
                let Some(offset) = f.sequence.position(id) else {
                    continue;
                };
                let deleted_rows = match deletions.entry(f.fragment_id) {
                    std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert(load(f.fragment_id).await?)
                    }
                };
                let deleted = deleted_rows
                    .as_ref()
                    .is_some_and(|d| u32::try_from(offset).is_ok_and(|o| d.contains(o)));
                if deleted {
                    continue;
                }
                let addr = row_address(f.fragment_id, offset as u32);
                if let Some(first) = found {
                    return Err(RowIdError::DuplicateRowId {
                        row_id: id,
                        first,
                        second: addr,
                    }
                    .into());
                }
                found = Some(addr);
            }
            out.push(found);
        }
        Ok(out)
    }

    /// How many fragments were classed wide (checked on every lookup).
    pub fn wide_fragments(&self) -> usize {
        self.wide.len()
    }
}
