//! The one index answerer: a BTree's answer to queries on its column, as this version's row
//! addresses, limited to the fragments on which that answer is complete.
//!
//! Search (and every filtered scan, count, delete and update through it) and merge_insert's
//! key lookup ask here, and index optimization takes the coverage rule
//! ([`answered_fragments`]), so the rules of an index answer are written once:
//!
//! - a segment's stored addresses are translated through the Fragment Reuse Index when the
//!   version has one (rows a rewrite deleted drop out); segments storing stable row ids
//!   (legacy `index_version` 0) are mapped to addresses through the row-id index;
//! - the answer is complete on the fragments the segments cover, plus, through the FRI
//!   history, every fragment whose rows all came from covered fragments; entries on other
//!   fragments are not answers (a row an update moved keeps its id, not its indexed value):
//!   those fragments are scanned by the caller;
//! - each segment answers only on its own complete fragments (its bitmap, plus through the
//!   FRI history the fragments made from them): its translated entries on other fragments
//!   are stale — an update rewrote that column in place and withdrew the fragment from the
//!   bitmap, and a newer segment answers there;
//! - only the fragments the caller asks about (`within`: the version's, or those of a search)
//!   are covered.
//!
//! Rows past a fragment's `physical_rows` and deleted rows are the caller's to drop, since a
//! search keeps deleted rows when asked to.

use lancet_btree::{NullableIdSet, Query};
use lancet_rowid::RowIdIndex;
use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::Result;
use crate::fri;
use crate::rowids;
use crate::segment::BTreeSegment;
use crate::snapshot::Snapshot;

/// What an index answered.
#[derive(Debug, Default)]
pub struct IndexAnswer {
    /// The rows where every query holds (`true_ids`) or is NULL (`null_ids`), on `covered`
    /// fragments only.
    pub rows: NullableIdSet,
    /// The version's fragments on which `rows` is the complete answer.
    pub covered: RoaringBitmap,
    /// Index pages read from storage (not from the cache) while answering.
    pub pages_read: u64,
}

/// The conjunction of `queries` over `segments` (one index's, opened at this version), on
/// the fragments of `within` (ids of fragments this version has).
pub async fn answer(
    snap: &Snapshot,
    segments: &[BTreeSegment],
    queries: &[Query],
    within: &RoaringBitmap,
) -> Result<IndexAnswer> {
    let mut row_ids = None;
    let mut pages_read = 0;
    let mut rows: Option<NullableIdSet> = None;
    // each segment's own complete fragments (see the module docs)
    let mut owns = Vec::with_capacity(segments.len());
    for segment in segments {
        owns.push(answered_fragments(snap, std::slice::from_ref(segment)).await?);
    }
    for query in queries {
        let mut part = NullableIdSet::default();
        for (segment, own) in segments.iter().zip(&owns) {
            let before = segment.index.pages_read();
            let found = Box::pin(segment.index.search(query)).await?;
            pages_read += segment.index.pages_read().saturating_sub(before);
            let found = if segment.ids_are_addresses(snap.has_stable_row_ids()) {
                Box::pin(translated(snap, found)).await?
            } else {
                if row_ids.is_none() {
                    row_ids = Some(rowids::row_id_index(snap).await?);
                }
                addresses_of(row_ids.as_deref(), &found)
            };
            // a segment answers for its own fragments only: its entries elsewhere are stale
            // (a column rewritten in place withdrew the fragment, a newer segment answers)
            let found = on_fragments(own, found);
            // translated answers of two segments may share a destination
            part = if segments.len() == 1 {
                found
            } else {
                part.or(&found)
            };
        }
        rows = Some(match rows {
            None => part,
            Some(prev) => prev.and(&part),
        });
    }
    let covered = answered_fragments(snap, segments).await? & within;
    let mut rows = rows.unwrap_or_default();
    keep_on(&covered, &mut rows.true_ids);
    keep_on(&covered, &mut rows.null_ids);
    Ok(IndexAnswer {
        rows,
        covered,
        pages_read,
    })
}

/// The fragments on which the segments' answers are complete: the fragments they cover,
/// plus, through the FRI history, every fragment whose rows all came from covered
/// fragments (only when every segment stores addresses; stable row ids need no history).
pub async fn answered_fragments(
    snap: &Snapshot,
    segments: &[BTreeSegment],
) -> Result<RoaringBitmap> {
    let mut covered = RoaringBitmap::new();
    for s in segments {
        covered |= &s.fragments;
    }
    let all_addresses = segments
        .iter()
        .all(|s| s.ids_are_addresses(snap.has_stable_row_ids()));
    match fri::fri_history(snap).await? {
        Some(history) if all_addresses => Ok(history.covered_after(&covered)),
        _ => Ok(covered),
    }
}

/// A segment's stored addresses in this version's addresses: through the Fragment Reuse
/// Index's history when the version has one, else as stored.
async fn translated(snap: &Snapshot, answer: NullableIdSet) -> Result<NullableIdSet> {
    let Some(history) = fri::fri_history(snap).await? else {
        return Ok(answer);
    };
    let true_ids = history.translate_set(&answer.true_ids).await?;
    let null_ids = history.translate_set(&answer.null_ids).await?;
    Ok(NullableIdSet::new(true_ids, null_ids))
}

/// Stable row ids (a legacy segment's entries) as the addresses of the live rows holding
/// them; ids no row holds drop out.
fn addresses_of(index: Option<&RowIdIndex>, answer: &NullableIdSet) -> NullableIdSet {
    let map = |ids: &RoaringTreemap| -> RoaringTreemap {
        match index {
            Some(index) => ids.iter().filter_map(|id| index.get(id)).collect(),
            None => RoaringTreemap::new(),
        }
    };
    NullableIdSet::new(map(&answer.true_ids), map(&answer.null_ids))
}

/// `set` without its rows on fragments `covered` does not name.
fn on_fragments(covered: &RoaringBitmap, mut set: NullableIdSet) -> NullableIdSet {
    keep_on(covered, &mut set.true_ids);
    keep_on(covered, &mut set.null_ids);
    set
}

/// Drops from `ids` every row on a fragment `covered` does not name (the treemap's high
/// words are fragment ids).
fn keep_on(covered: &RoaringBitmap, ids: &mut RoaringTreemap) {
    let outside: Vec<u32> = ids
        .bitmaps()
        .map(|(f, _)| f)
        .filter(|f| !covered.contains(*f))
        .collect();
    for f in outside {
        ids.remove_range(lancet_proto::RowAddress::fragment_range(f));
    }
}
