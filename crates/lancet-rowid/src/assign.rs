//! The writer side of stable row ids: what a Lance 14 commit gives the fragments it writes.
//!
//! - **Ids** (`assign_row_ids`, Lance's rule): each fragment without a sequence, in commit
//!   order, takes the next `physical_rows` ids from `next_row_id` as one `Range` segment. A
//!   fragment whose sequence is shorter than its rows (merge-insert: the rows it moved keep
//!   their ids) gets fresh ids appended; rows an update moved keep their ids whole.
//! - **Moved rows** (`keep_moved_ids`): rows an update or merge_insert writes again keep
//!   their ids, in the order written; rows written after them (inserted) take fresh ids at
//!   commit.
//! - **Versions** (`stamp_versions`): a fragment the commit writes without version sequences
//!   gets `_row_created_at_version` (the version each kept row was created at, the new version
//!   for new rows) and `_row_last_updated_at_version` (the new version), as Lance's writer
//!   builds them: one `Range` run per stretch of equal versions.

use std::collections::HashMap;
use std::ops::Range;

use lancet_proto::table::data_fragment::{
    CreatedAtVersionSequence, LastUpdatedAtVersionSequence, RowIdSequence as PbRowIds,
};
use lancet_proto::table::DataFragment;
use lancet_txn::finish::Finished;
use roaring::RoaringBitmap;

use crate::error::{Result, RowIdError};
use crate::segment::U64Segment;
use crate::sequence::RowIdSequence;
use crate::version::VersionSequence;

/// Gives every fragment of `fragments` one id per physical row, starting at `next_row_id`;
/// returns the `next_row_id` after them. A fragment's inline sequence is kept and completed
/// with fresh ids; one holding more ids than rows, or a sequence stored out of line, is
/// refused.
pub fn assign_row_ids(next_row_id: u64, fragments: &mut [DataFragment]) -> Result<u64> {
    let mut next = next_row_id;
    for f in fragments.iter_mut() {
        let mut sequence = match &f.row_id_sequence {
            None => RowIdSequence::default(),
            Some(PbRowIds::InlineRowIds(bytes)) => RowIdSequence::decode(bytes).map_err(|e| {
                RowIdError::InvalidInput(format!(
                    "fragment {}: its row id sequence does not decode: {e}",
                    f.id
                ))
            })?,
            Some(PbRowIds::ColumnRowIds(_)) => {
                return Err(RowIdError::InvalidInput(format!(
                    "fragment {}: row ids stored as a column cannot be assigned to",
                    f.id
                )))
            }
        };
        let missing =
            f.physical_rows
                .checked_sub(sequence.len())
                .ok_or(RowIdError::LengthMismatch {
                    fragment: f.id,
                    sequence_len: sequence.len(),
                    physical_rows: f.physical_rows,
                })?;
        if missing == 0 && f.row_id_sequence.is_some() {
            continue;
        }
        let fresh = fresh_ids(next, missing, f.id)?;
        next = fresh.end;
        sequence.extend(RowIdSequence::from_range(fresh));
        f.row_id_sequence = Some(PbRowIds::InlineRowIds(sequence.encode()));
    }
    Ok(next)
}

fn fresh_ids(next: u64, count: u64, fragment: u64) -> Result<Range<u64>> {
    let end = next.checked_add(count).ok_or_else(|| {
        RowIdError::InvalidInput(format!(
            "fragment {fragment}: {count} new row ids from {next} overflow u64"
        ))
    })?;
    Ok(next..end)
}

/// Gives `fragments` (new, in the order written) the ids of the rows they hold again:
/// each takes the next `physical_rows` of `moved`, as one inline sequence; where the ids
/// run out (the inserted rows) the sequence is shorter than the fragment, and
/// [`assign_row_ids`] appends fresh ids at commit.
pub fn keep_moved_ids(fragments: &mut [DataFragment], moved: impl IntoIterator<Item = u64>) {
    let mut ids = moved.into_iter();
    for f in fragments {
        let mine: Vec<u64> = ids
            .by_ref()
            .take(usize::try_from(f.physical_rows).unwrap_or(usize::MAX))
            .collect();
        f.row_id_sequence = Some(PbRowIds::InlineRowIds(
            RowIdSequence::from_values(&mine).encode(),
        ));
    }
}

/// Gives `fragment`, written by the commit of `version`, the version sequences it lacks:
/// created at `version` for a row whose id is at or above `fresh_from` (the `next_row_id`
/// the ids were assigned from: a new row), else at `created_at(row id)` (a row an update
/// moved, keeping its id; `version` when unknown); last updated at `version`. Sequences it
/// has are kept. Costs a lookup per moved row only: fresh `Range` segments become one run.
pub fn stamp_versions(
    fragment: &mut DataFragment,
    version: u64,
    fresh_from: u64,
    created_at: impl Fn(u64) -> Option<u64>,
) -> Result<()> {
    let rows = fragment.physical_rows;
    if fragment.created_at_version_sequence.is_none() {
        let mut stretches: Vec<(u64, u64)> = Vec::new();
        match &fragment.row_id_sequence {
            Some(PbRowIds::InlineRowIds(bytes)) => {
                let ids = RowIdSequence::decode(bytes).map_err(|e| {
                    RowIdError::InvalidInput(format!("fragment {}: {e}", fragment.id))
                })?;
                for segment in ids.segments() {
                    match segment {
                        U64Segment::Range(r) if r.start >= fresh_from => {
                            stretches.push((r.end - r.start, version))
                        }
                        other => stretches.extend(other.iter().map(|id| {
                            (
                                1,
                                if id >= fresh_from {
                                    version
                                } else {
                                    created_at(id).unwrap_or(version)
                                },
                            )
                        })),
                    }
                }
            }
            _ => stretches.push((rows, version)),
        }
        fragment.created_at_version_sequence =
            Some(CreatedAtVersionSequence::InlineCreatedAtVersions(
                VersionSequence::from_run_lengths(&stretches).encode(),
            ));
    }
    if fragment.last_updated_at_version_sequence.is_none() {
        fragment.last_updated_at_version_sequence =
            Some(LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(
                VersionSequence::from_run_lengths(&[(rows, version)]).encode(),
            ));
    }
    Ok(())
}

/// A fragment whose data files a commit of `version` rewrote in place (a DataReplacement, or
/// a Merge that changed its files: Lance 14.0.2's "full fragment rewrite of columns") has every
/// row last updated at `version`; its created-at sequence is kept.
pub fn restamp_updated(fragment: &mut DataFragment, version: u64) {
    fragment.last_updated_at_version_sequence =
        Some(LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(
            VersionSequence::from_run_lengths(&[(fragment.physical_rows, version)]).encode(),
        ));
}

/// Compaction (Lance 14's rule): `destinations`, written from the surviving rows of
/// `sources` (each with its deleted offsets) in order, get those rows' ids and version
/// sequences, cut by their physical rows. A source without a created-at sequence counts as
/// created at version 1 (written before Lance tracked versions), without a last-updated one as
/// last updated when created. `manifest` names the sources' manifest in errors.
pub fn rechunk_fragments(
    sources: &[(&DataFragment, Option<&roaring::RoaringBitmap>)],
    destinations: &mut [DataFragment],
    manifest: &str,
) -> Result<()> {
    let mut sequences = Vec::with_capacity(sources.len());
    let (mut created, mut updated) = (Vec::new(), Vec::new());
    for (f, deleted) in sources {
        let ids = crate::row_ids_of(f, manifest)?
            .ok_or(RowIdError::MissingSequence { fragment: f.id })?;
        let (c, u) = crate::versions_of(f, manifest)?;
        for offset in 0..f.physical_rows {
            if deleted.is_some_and(|d| u32::try_from(offset).is_ok_and(|o| d.contains(o))) {
                continue;
            }
            let at = c.as_ref().and_then(|c| c.version_at(offset)).unwrap_or(1);
            created.push(at);
            updated.push(u.as_ref().and_then(|u| u.version_at(offset)).unwrap_or(at));
        }
        sequences.push((ids, *deleted));
    }
    let sizes: Vec<u64> = destinations.iter().map(|d| d.physical_rows).collect();
    let borrowed: Vec<(&RowIdSequence, Option<&roaring::RoaringBitmap>)> =
        sequences.iter().map(|(s, d)| (s, *d)).collect();
    let ids = crate::sequence::rechunk(&borrowed, &sizes)?;
    let mut start = 0usize;
    for (d, ids) in destinations.iter_mut().zip(ids) {
        let n = usize::try_from(d.physical_rows)
            .map_err(|_| RowIdError::InvalidInput(format!("fragment {}: too many rows", d.id)))?;
        let end = start + n;
        let (Some(c), Some(u)) = (created.get(start..end), updated.get(start..end)) else {
            return Err(RowIdError::InvalidInput(
                "the destinations hold more rows than the sources keep".into(),
            ));
        };
        d.row_id_sequence = Some(PbRowIds::InlineRowIds(ids.encode()));
        d.created_at_version_sequence = Some(CreatedAtVersionSequence::InlineCreatedAtVersions(
            VersionSequence::from_versions(c).encode(),
        ));
        d.last_updated_at_version_sequence =
            Some(LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(
                VersionSequence::from_versions(u).encode(),
            ));
        start = end;
    }
    Ok(())
}

/// Row ids and version sequences for what a change finished on a stable-row-id table writes
/// (`finished`, committed as `version`; `manifest` names the manifest in errors), as Lance
/// 14.0.2's commit gives them:
/// - new fragments take ids from the manifest's `next_row_id`, which is advanced past them;
///   rows an update moved keep their ids ([`assign_row_ids`]);
/// - each new fragment is created at `version`, except rows an update moved, which keep the
///   version they were created at in the records the change updates or removes (a row of a
///   record without a created-at sequence counts as created at 1, written before Lance
///   tracked versions); every row is last updated at `version` ([`stamp_versions`]);
/// - records whose data files a Merge or a DataReplacement rewrote are updated at `version`
///   ([`restamp_updated`]).
///
/// - in records a `RewriteColumns` Update rewrote in place, the rows at its matched offsets
///   (`finished.matched_offsets`) are updated at `version`
///   ([`refresh_matched`]).
///
/// Returns the new fragments that hold only moved rows (every row keeps its id), for the
/// index rule of an Update that moves rows (`lancet_txn::build::cover_moved_rows`). A
/// Rewrite's destinations carry their rows' ids and versions as the rewrite wrote them: the
/// caller does not stamp a Rewrite.
pub fn stamp_change(finished: &mut Finished, version: u64, manifest: &str) -> Result<Vec<u32>> {
    let mut moved_only = Vec::new();
    let mut moved = false;
    for f in &finished.created {
        let carried = crate::fragment::row_ids_of(f, manifest)?.map(|s| s.len());
        moved |= carried.is_some();
        if carried == Some(f.physical_rows) {
            moved_only.push(u32::try_from(f.id).unwrap_or(u32::MAX));
        }
    }
    let fresh_from = finished.manifest.next_row_id;
    finished.manifest.next_row_id = assign_row_ids(fresh_from, &mut finished.created)?;
    let created_at = match moved {
        true => created_at_of(
            finished
                .updated
                .iter()
                .map(|(before, _)| before)
                .chain(&finished.removed),
            manifest,
        )?,
        false => HashMap::new(),
    };
    for f in &mut finished.created {
        stamp_versions(f, version, fresh_from, |id| created_at.get(&id).copied())?;
    }
    for (before, after) in &mut finished.updated {
        if finished.rewritten.contains(&after.id) {
            restamp_updated(after, version);
        }
        if let Some(matched) = finished.matched_offsets.get(&after.id) {
            refresh_matched(before, after, matched, version, manifest)?;
        }
    }
    Ok(moved_only)
}

/// Lance 14.0.2's refresh for a fragment an Update rewrote in place (`after`, its record on
/// the version being replaced `before`): the rows at `matched` offsets are last updated at
/// `version`, the others keep the versions of `after`'s sequence. A record without a
/// last-updated-at sequence is left alone (a stamp for its other rows would be invented).
/// Offsets are physical and bounded by `before`'s rows: more offsets than rows, or one past
/// them, are refused.
pub fn refresh_matched(
    before: &DataFragment,
    after: &mut DataFragment,
    matched: &RoaringBitmap,
    version: u64,
    manifest: &str,
) -> Result<()> {
    // Lance's order: nothing to stamp, no sequence to refresh, then the bounds
    if matched.is_empty() || after.last_updated_at_version_sequence.is_none() {
        return Ok(());
    }
    let limit = before.physical_rows;
    if matched.len() > limit {
        return Err(RowIdError::InvalidInput(format!(
            "updatedFragmentOffsets cardinality {} exceeds fragment {} limit {limit}",
            matched.len(),
            after.id
        )));
    }
    if let Some(max) = matched.max().filter(|&m| u64::from(m) >= limit) {
        return Err(RowIdError::InvalidInput(format!(
            "updatedFragmentOffsets max offset {max} exceeds fragment {} limit {limit}",
            after.id
        )));
    }
    if let Some(LastUpdatedAtVersionSequence::ColumnLastUpdatedAtVersions(_)) =
        &after.last_updated_at_version_sequence
    {
        return Err(RowIdError::Unsupported {
            fragment: after.id,
            rule: "its last-updated-at versions are in a spilled column (flag 2048), which lancet does not read yet".into(),
        });
    }
    if after.physical_rows == 0 {
        return Ok(());
    }
    let (_, base) = crate::fragment::versions_of(after, manifest)?;
    let refreshed = VersionSequence::refreshed(
        base.as_ref(),
        after.physical_rows,
        matched,
        version,
        version.saturating_sub(1),
    );
    after.last_updated_at_version_sequence = Some(
        LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(refreshed.encode()),
    );
    Ok(())
}

/// The version each row of `fragments` was created at, by row id. Rows of a fragment without
/// a created-at sequence count as created at 1 (written before Lance tracked versions).
fn created_at_of<'a>(
    fragments: impl Iterator<Item = &'a DataFragment>,
    manifest: &str,
) -> Result<HashMap<u64, u64>> {
    let mut out = HashMap::new();
    for f in fragments {
        let Some(ids) = crate::fragment::row_ids_of(f, manifest)? else {
            continue;
        };
        let (created, _) = crate::fragment::versions_of(f, manifest)?;
        for (offset, id) in ids.iter().enumerate() {
            let at = created
                .as_ref()
                .and_then(|c| c.version_at(offset as u64))
                .unwrap_or(1);
            out.insert(id, at);
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::U64Segment;

    fn frag(id: u64, rows: u64) -> DataFragment {
        DataFragment {
            id,
            physical_rows: rows,
            ..Default::default()
        }
    }

    fn ids(f: &DataFragment) -> RowIdSequence {
        match &f.row_id_sequence {
            Some(PbRowIds::InlineRowIds(b)) => RowIdSequence::decode(b).unwrap(),
            other => panic!("no inline ids: {other:?}"),
        }
    }

    #[test]
    fn new_fragments_take_consecutive_ranges_in_order() {
        let mut fs = vec![frag(3, 4), frag(4, 2)];
        let next = assign_row_ids(10, &mut fs).unwrap();
        assert_eq!(next, 16);
        assert_eq!(ids(&fs[0]).segments(), &[U64Segment::Range(10..14)]);
        assert_eq!(ids(&fs[1]).segments(), &[U64Segment::Range(14..16)]);
    }

    #[test]
    fn rows_written_again_keep_their_ids_in_order_and_inserted_rows_take_fresh_ones() {
        // 3 moved rows over two new fragments of 2 rows each, then a fragment of inserts
        let mut fs = vec![frag(7, 2), frag(8, 2), frag(9, 1)];
        keep_moved_ids(&mut fs, [40, 3, 17]);
        assert_eq!(ids(&fs[0]).iter().collect::<Vec<_>>(), vec![40, 3]);
        assert_eq!(ids(&fs[1]).iter().collect::<Vec<_>>(), vec![17]);
        assert_eq!(ids(&fs[2]).len(), 0);
        assign_row_ids(100, &mut fs).unwrap();
        assert_eq!(ids(&fs[1]).iter().collect::<Vec<_>>(), vec![17, 100]);
        assert_eq!(ids(&fs[2]).iter().collect::<Vec<_>>(), vec![101]);
    }

    #[test]
    fn moved_rows_keep_their_ids_and_a_partial_sequence_is_completed() {
        let mut moved = frag(5, 2);
        moved.row_id_sequence = Some(PbRowIds::InlineRowIds(
            RowIdSequence::from_values(&[5, 15]).encode(),
        ));
        let mut partial = frag(6, 3);
        partial.row_id_sequence = Some(PbRowIds::InlineRowIds(
            RowIdSequence::from_values(&[7]).encode(),
        ));
        let mut fs = vec![moved.clone(), partial];
        assert_eq!(assign_row_ids(20, &mut fs).unwrap(), 22);
        assert_eq!(fs[0], moved, "a complete sequence is kept byte for byte");
        assert_eq!(ids(&fs[1]).iter().collect::<Vec<_>>(), vec![7, 20, 21]);
    }

    #[test]
    fn more_ids_than_rows_or_overflow_is_refused() {
        let mut long = frag(1, 1);
        long.row_id_sequence = Some(PbRowIds::InlineRowIds(
            RowIdSequence::from_range(0..2).encode(),
        ));
        assert!(matches!(
            assign_row_ids(0, &mut [long]),
            Err(RowIdError::LengthMismatch { fragment: 1, .. })
        ));
        assert!(matches!(
            assign_row_ids(u64::MAX - 1, &mut [frag(2, 3)]),
            Err(RowIdError::InvalidInput(_))
        ));
    }

    #[test]
    fn versions_keep_a_moved_rows_creation_and_stamp_the_update() {
        let mut f = frag(5, 3);
        f.row_id_sequence = Some(PbRowIds::InlineRowIds(
            RowIdSequence::from_values(&[5, 15, 30]).encode(),
        ));
        stamp_versions(&mut f, 4, 30, |id| match id {
            5 => Some(1),
            15 => Some(2),
            _ => None,
        })
        .unwrap();
        let created = match &f.created_at_version_sequence {
            Some(CreatedAtVersionSequence::InlineCreatedAtVersions(b)) => {
                VersionSequence::decode(b).unwrap()
            }
            other => panic!("{other:?}"),
        };
        let updated = match &f.last_updated_at_version_sequence {
            Some(LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(b)) => {
                VersionSequence::decode(b).unwrap()
            }
            other => panic!("{other:?}"),
        };
        let at = |s: &VersionSequence| (0..3).map(|o| s.version_at(o).unwrap()).collect::<Vec<_>>();
        assert_eq!(at(&created), vec![1, 2, 4]);
        assert_eq!(at(&updated), vec![4, 4, 4]);
        assert_eq!(updated.runs().count(), 1, "one run, as Lance writes it");
    }

    #[test]
    fn fresh_ranges_are_one_run_and_encode_as_lance_builds_them() {
        let mut f = frag(1, 5);
        f.row_id_sequence = Some(PbRowIds::InlineRowIds(
            RowIdSequence::from_range(40..45).encode(),
        ));
        stamp_versions(&mut f, 7, 40, |_| panic!("a fresh id is never looked up")).unwrap();
        let bytes = match &f.created_at_version_sequence {
            Some(CreatedAtVersionSequence::InlineCreatedAtVersions(b)) => b.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(bytes, VersionSequence::from_versions(&[7; 5]).encode());
        let mixed = VersionSequence::from_run_lengths(&[(2, 1), (0, 9), (1, 1), (3, 4)]);
        assert_eq!(mixed, VersionSequence::from_versions(&[1, 1, 1, 4, 4, 4]));
    }

    #[test]
    fn compaction_keeps_ids_and_versions_of_the_surviving_rows() {
        let mut a = frag(1, 4);
        a.row_id_sequence = Some(PbRowIds::InlineRowIds(
            RowIdSequence::from_range(10..14).encode(),
        ));
        a.created_at_version_sequence = Some(CreatedAtVersionSequence::InlineCreatedAtVersions(
            VersionSequence::from_versions(&[2, 2, 3, 3]).encode(),
        ));
        let mut b = frag(2, 2);
        b.row_id_sequence = Some(PbRowIds::InlineRowIds(
            RowIdSequence::from_values(&[7, 3]).encode(),
        ));
        let deleted: roaring::RoaringBitmap = [1u32].into_iter().collect();
        let mut out = vec![frag(0, 3), frag(0, 2)];
        rechunk_fragments(&[(&a, Some(&deleted)), (&b, None)], &mut out, "m").unwrap();
        let ids: Vec<Vec<u64>> = out
            .iter()
            .map(|f| crate::row_ids_of(f, "m").unwrap().unwrap().iter().collect())
            .collect();
        assert_eq!(ids, [vec![10, 12, 13], vec![7, 3]]);
        let (c, u) = crate::versions_of(&out[0], "m").unwrap();
        let at = |s: &VersionSequence| (0..3).map(|o| s.version_at(o).unwrap()).collect::<Vec<_>>();
        assert_eq!(at(&c.unwrap()), [2, 3, 3]);
        assert_eq!(at(&u.unwrap()), [2, 3, 3]);
        // a source without versions counts as created at 1
        let (c, _) = crate::versions_of(&out[1], "m").unwrap();
        assert_eq!(c.unwrap().version_at(1), Some(1));
        // sizes that do not add up to the survivors are refused
        let mut wrong = vec![frag(0, 6)];
        assert!(rechunk_fragments(&[(&a, Some(&deleted)), (&b, None)], &mut wrong, "m").is_err());
        // a source without row ids is refused
        assert!(rechunk_fragments(&[(&frag(3, 1), None)], &mut [frag(0, 1)], "m").is_err());
    }

    #[test]
    fn matched_offsets_refresh_their_rows_and_are_bounded_by_the_fragments_rows() {
        let updated_at = |f: &DataFragment| -> Vec<u64> {
            let (_, u) = crate::fragment::versions_of(f, "m").unwrap();
            let u = u.unwrap();
            (0..u.len()).map(|i| u.version_at(i).unwrap()).collect()
        };
        let before = frag(0, 4);
        let mut after = frag(0, 4);
        restamp_updated(&mut after, 2);
        let matched: RoaringBitmap = [1u32, 2].into_iter().collect();
        refresh_matched(&before, &mut after, &matched, 5, "m").unwrap();
        assert_eq!(updated_at(&after), vec![2, 5, 5, 2]);

        // a record without a last-updated-at sequence is left alone (and not bounds-checked)
        let mut bare = frag(0, 4);
        let far: RoaringBitmap = [9u32].into_iter().collect();
        refresh_matched(&before, &mut bare, &far, 5, "m").unwrap();
        assert!(bare.last_updated_at_version_sequence.is_none());

        // an offset past the fragment's rows, or more offsets than rows: refused, unchanged
        let kept = after.clone();
        let e = refresh_matched(&before, &mut after, &far, 6, "m").unwrap_err();
        assert!(
            e.to_string()
                .contains("max offset 9 exceeds fragment 0 limit 4"),
            "{e}"
        );
        let many: RoaringBitmap = (0u32..5).collect();
        let e = refresh_matched(&before, &mut after, &many, 6, "m").unwrap_err();
        assert!(e.to_string().contains("cardinality 5 exceeds"), "{e}");
        assert_eq!(after, kept);

        // versions spilled to a column are named, not guessed
        let mut spilled = frag(0, 4);
        spilled.last_updated_at_version_sequence = Some(
            LastUpdatedAtVersionSequence::ColumnLastUpdatedAtVersions(Default::default()),
        );
        let e = refresh_matched(&before, &mut spilled, &matched, 6, "m").unwrap_err();
        assert!(
            matches!(e, RowIdError::Unsupported { fragment: 0, .. }),
            "{e}"
        );
    }

    #[test]
    fn stamp_change_refreshes_only_the_matched_offsets_of_rewritten_records() {
        let mut before = frag(3, 3);
        restamp_updated(&mut before, 1);
        let mut finished = Finished {
            manifest: Default::default(),
            indices: vec![],
            removed_all: vec![],
            removed: vec![],
            updated: vec![(before.clone(), before.clone()), (frag(4, 2), frag(4, 2))],
            created: vec![],
            reserved: vec![],
            rewritten: vec![],
            matched_offsets: std::collections::BTreeMap::from([(3, [2u32].into_iter().collect())]),
        };
        stamp_change(&mut finished, 7, "m").unwrap();
        let (_, u) = crate::fragment::versions_of(&finished.updated[0].1, "m").unwrap();
        let u = u.unwrap();
        assert_eq!(
            (0..3).map(|i| u.version_at(i).unwrap()).collect::<Vec<_>>(),
            vec![1, 1, 7]
        );
        assert!(finished.updated[1]
            .1
            .last_updated_at_version_sequence
            .is_none());
    }
}
