//! A version's live rows, from its fragment records and the deletion vectors the caller read
//! (in fragment order, `None` where a fragment has no deletion file).
//!
//! Without stable row ids `_rowid` is the row address (stable-row-ids spec: "the row id is the
//! row address"); with them, the inputs of the [`RowIdIndex`](crate::RowIdIndex) and of
//! [`LazyRowIds`](crate::LazyRowIds), and the facts lancet-txn's invariants judge a
//! fragment's ids by.

use std::sync::Arc;

use lancet_proto::table::DataFragment;
use lancet_proto::RowAddress;
use roaring::{RoaringBitmap, RoaringTreemap};

use crate::error::{Result, RowIdError};
use crate::fragment::row_ids_of;
use crate::index::FragmentRowIds;
use crate::lazy::LazyFragment;
use crate::segment::U64Segment;
use crate::sequence::RowIdSequence;

/// A fragment's deletion vector, as the caller read it.
pub type Deletions = Option<Arc<RoaringBitmap>>;

/// Whether `address` is a live row: its fragment is listed, its offset below the fragment's
/// `physical_rows`, and no deletion vector deletes it. `deletions` are `fragments`'.
pub fn is_live_address(fragments: &[DataFragment], deletions: &[Deletions], address: u64) -> bool {
    let (frag, offset) = RowAddress::split(address);
    let Some(k) = lancet_proto::fragment_position(fragments, u64::from(frag)) else {
        return false;
    };
    let (Some(f), Some(deleted)) = (fragments.get(k), deletions.get(k)) else {
        return false;
    };
    u64::from(offset) < f.physical_rows && !deleted.as_ref().is_some_and(|d| d.contains(offset))
}

/// Every live row's address, in address order (fragments in id order).
pub fn live_addresses(fragments: &[DataFragment], deletions: &[Deletions]) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    for (f, deleted) in fragments.iter().zip(deletions) {
        let frag = fragment_id32(f)?;
        let rows = u32::try_from(f.physical_rows).unwrap_or(u32::MAX);
        for offset in 0..rows {
            if !deleted.as_ref().is_some_and(|d| d.contains(offset)) {
                out.push(RowAddress::new(frag, offset).as_u64());
            }
        }
    }
    Ok(out)
}

/// The inputs of a [`RowIdIndex`](crate::RowIdIndex) over `fragments` (every one with an
/// inline sequence: a stable-row-id table), `manifest` naming where they were read.
pub fn index_inputs(
    fragments: &[DataFragment],
    deletions: Vec<Deletions>,
    manifest: &str,
) -> Result<Vec<FragmentRowIds>> {
    fragments
        .iter()
        .zip(deletions)
        .map(|(f, deletions)| {
            Ok(FragmentRowIds {
                fragment_id: f.id,
                physical_rows: f.physical_rows,
                sequence: Arc::new(sequence_of(f, manifest)?),
                deletions,
            })
        })
        .collect()
}

/// The inputs of [`LazyRowIds`](crate::LazyRowIds) over `fragments` (deletions are read
/// later, only for the fragments a lookup reaches).
pub fn lazy_inputs(fragments: &[DataFragment], manifest: &str) -> Result<Vec<LazyFragment>> {
    fragments
        .iter()
        .map(|f| {
            Ok(LazyFragment {
                fragment_id: fragment_id32(f)?,
                physical_rows: f.physical_rows,
                sequence: Arc::new(sequence_of(f, manifest)?),
            })
        })
        .collect()
}

/// What lancet-txn's invariants know of a fragment's ids: its `sequence`, less the rows
/// `deleted` deletes (`missing_deletion_file`: the fragment names a deletion file storage
/// does not hold, so nothing was counted deleted).
pub fn txn_row_ids(
    fragment: u64,
    sequence: &RowIdSequence,
    deleted: &RoaringBitmap,
    missing_deletion_file: bool,
) -> lancet_txn::FragmentRowIds {
    let mut live = every_id(sequence);
    let mut deleted_rows = 0;
    for offset in deleted {
        if let Some(id) = sequence.get(u64::from(offset)) {
            live.remove(id);
            deleted_rows += 1;
        }
    }
    // run containers: a range of ids is a few bytes instead of two per id (a conversion
    // holds every fragment's ids twice, before and after)
    live.optimize();
    lancet_txn::FragmentRowIds {
        fragment,
        sequence_len: sequence.len(),
        deleted_rows,
        missing_deletion_file,
        live,
    }
}

/// Every id of `sequence`, ranges inserted whole.
fn every_id(sequence: &RowIdSequence) -> RoaringTreemap {
    let mut ids = RoaringTreemap::new();
    for segment in sequence.segments() {
        match segment {
            U64Segment::Range(r) => {
                ids.insert_range(r.clone());
            }
            other => ids.extend(other.iter()),
        }
    }
    ids
}

fn sequence_of(f: &DataFragment, manifest: &str) -> Result<RowIdSequence> {
    row_ids_of(f, manifest)?.ok_or(RowIdError::MissingSequence { fragment: f.id })
}

/// `f`'s id as a row address holds it (32 bits), or `Unaddressable`.
pub(crate) fn fragment_id32(f: &DataFragment) -> Result<u32> {
    u32::try_from(f.id).map_err(|_| RowIdError::Unaddressable {
        fragment: f.id,
        rule: "fragment ids must fit 32 bits".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fragment(id: u64, rows: u64) -> DataFragment {
        DataFragment {
            id,
            physical_rows: rows,
            ..Default::default()
        }
    }

    #[test]
    fn an_address_is_live_when_listed_in_range_and_not_deleted() {
        let fragments = [fragment(1, 3), fragment(4, 2)];
        let deletions: Vec<Deletions> = vec![Some(Arc::new([1u32].into_iter().collect())), None];
        let at = |f, o| RowAddress::new(f, o).as_u64();
        assert!(is_live_address(&fragments, &deletions, at(1, 0)));
        assert!(
            !is_live_address(&fragments, &deletions, at(1, 1)),
            "deleted"
        );
        assert!(
            !is_live_address(&fragments, &deletions, at(1, 3)),
            "past the rows"
        );
        assert!(
            !is_live_address(&fragments, &deletions, at(2, 0)),
            "not listed"
        );
        assert!(is_live_address(&fragments, &deletions, at(4, 1)));
        // deletions missing for a listed fragment: not judged live
        assert!(!is_live_address(&fragments, &deletions[..1], at(4, 1)));
        assert_eq!(
            live_addresses(&fragments, &deletions).unwrap(),
            [at(1, 0), at(1, 2), at(4, 0), at(4, 1)]
        );
        let wide = [fragment(u64::from(u32::MAX) + 1, 1)];
        assert!(live_addresses(&wide, &[None]).is_err());
    }

    #[test]
    fn a_fragments_ids_less_its_deleted_rows_are_its_live_ids() {
        let sequence = RowIdSequence::from_range(10..15);
        let deleted: RoaringBitmap = [0u32, 3, 9].into_iter().collect();
        let facts = txn_row_ids(7, &sequence, &deleted, false);
        assert_eq!(facts.fragment, 7);
        assert_eq!(facts.sequence_len, 5);
        // offset 9 is past the sequence: not a deleted row of it
        assert_eq!(facts.deleted_rows, 2);
        assert_eq!(facts.live.iter().collect::<Vec<_>>(), [11, 12, 14]);
        // a fragment without an inline sequence on a stable table is refused
        assert!(index_inputs(&[fragment(1, 1)], vec![None], "m").is_err());
        assert!(lazy_inputs(&[fragment(1, 1)], "m").is_err());
    }
}
