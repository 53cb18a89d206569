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

/// Deletion files read at once by [`LazyRowIds::get_many`].
pub const LOAD_CONCURRENCY: usize = 32;

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

    /// The addresses of `ids` (None when not live). Candidates are found from the sequences
    /// alone; then the deletion vectors of the fragments holding candidates are loaded
    /// concurrently (`load(fragment_id)`, at most [`LOAD_CONCURRENCY`] at once); then each id
    /// is resolved.
    pub async fn get_many<F, Fut, E>(&self, ids: &[u64], load: F) -> Result<Vec<Option<u64>>, E>
    where
        F: Fn(u32) -> Fut,
        Fut: Future<Output = Result<Option<Arc<RoaringBitmap>>, E>>,
        E: From<RowIdError>,
    {
        use futures::{StreamExt, TryStreamExt};
        // 1. (id slot, fragment, offset) for every place a sequence holds the id
        let mut hits: Vec<(usize, u32, u64)> = Vec::new();
        for (slot, &id) in ids.iter().enumerate() {
            for i in self.candidates(id) {
                let Some(f) = self.fragments.get(i) else {
                    continue;
                };
                if let Some(offset) = f.sequence.position(id) {
                    hits.push((slot, f.fragment_id, offset));
                }
            }
        }
        // 2. the deletion vectors of those fragments, concurrently
        let mut needed: Vec<u32> = hits.iter().map(|h| h.1).collect();
        needed.sort_unstable();
        needed.dedup();
        let loaded: Vec<(u32, Option<Arc<RoaringBitmap>>)> = futures::stream::iter(needed)
            .map(|f| {
                let fut = load(f);
                async move { Ok::<_, E>((f, fut.await?)) }
            })
            .buffer_unordered(LOAD_CONCURRENCY)
            .try_collect()
            .await?;
        let deletions: HashMap<u32, Option<Arc<RoaringBitmap>>> = loaded.into_iter().collect();
        // 3. resolve: live hits only; two live places for one id is corruption
        let mut out: Vec<Option<u64>> = vec![None; ids.len()];
        for (slot, fragment, offset) in hits {
            let deleted = deletions
                .get(&fragment)
                .and_then(|d| d.as_ref())
                .is_some_and(|d| u32::try_from(offset).is_ok_and(|o| d.contains(o)));
            if deleted {
                continue;
            }
            let addr = row_address(fragment, offset as u32);
            let Some(cell) = out.get_mut(slot) else {
                continue;
            };
            if let Some(first) = *cell {
                return Err(RowIdError::DuplicateRowId {
                    row_id: ids.get(slot).copied().unwrap_or_default(),
                    first,
                    second: addr,
                }
                .into());
            }
            *cell = Some(addr);
        }
        Ok(out)
    }

    /// How many fragments were classed wide (checked on every lookup).
    pub fn wide_fragments(&self) -> usize {
        self.wide.len()
    }
}
