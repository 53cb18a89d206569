//! An Update's matched offsets: the physical row offsets of each fragment a `RewriteColumns`
//! Update rewrote in place that its join matched (`update_columns(with_offsets=True)`), as
//! Lance 14.0.2 records and judges them.
//!
//! - **Wire.** Field 10 (`updated_fragment_offset_bitmaps`) holds portable RoaringBitmap bytes
//!   per fragment id and is what a writer emits ([`set_updated_offsets`]); field 9 holds the
//!   same as lists and is read only when field 10 is empty. Empty entries are dropped.
//! - **Keys** (Lance's `validate_operation`). Under `RewriteColumns` each key names a fragment
//!   the Update rewrites: offsets for any other fragment would stamp an unrelated fragment's
//!   rows ([`judged`], refused before anything is built). Other modes keep their offsets
//!   unjudged and unused.
//! - **Use.** On a stable-row-id table the rows at those offsets are last updated at the new
//!   version (`lancet_rowid::assign::stamp_change`); elsewhere they change nothing.

use std::collections::{BTreeMap, HashSet};

use lancet_proto::table::transaction::{Update, UpdateMode};
use roaring::RoaringBitmap;

use crate::error::{Result, TxnError};

/// The offsets per fragment id `u` records (field 10, else field 9), entries of no bytes (or
/// an empty list) dropped, as Lance 14.0.2 reads them: an empty bitmap under a key is kept,
/// so its key is judged; bytes that are no portable RoaringBitmap are an error naming the
/// fragment.
pub fn updated_offsets(u: &Update) -> Result<BTreeMap<u64, RoaringBitmap>> {
    if !u.updated_fragment_offset_bitmaps.is_empty() {
        let mut out = BTreeMap::new();
        for (id, bytes) in u.updated_fragment_offset_bitmaps.iter() {
            if bytes.is_empty() {
                continue;
            }
            out.insert(*id, decode_bitmap(*id, bytes)?);
        }
        return Ok(out);
    }
    Ok(u.updated_fragment_offsets
        .iter()
        .filter(|(_, list)| !list.values.is_empty())
        .map(|(id, list)| (*id, list.values.iter().copied().collect()))
        .collect())
}

/// `bytes` as the offsets of fragment `fragment`: a portable RoaringBitmap, or an error.
pub fn decode_bitmap(fragment: u64, bytes: &[u8]) -> Result<RoaringBitmap> {
    RoaringBitmap::deserialize_from(bytes).map_err(|e| {
        TxnError::operation(
            "Update",
            format!(
                "updated_fragment_offsets[{fragment}]: invalid portable RoaringBitmap bytes: {e}"
            ),
        )
    })
}

/// Records `offsets` in `u` as a writer does: field 10 only, portable bytes, empty entries left
/// out.
pub fn set_updated_offsets(u: &mut Update, offsets: &BTreeMap<u64, RoaringBitmap>) {
    u.updated_fragment_offsets.clear();
    u.updated_fragment_offset_bitmaps = offsets
        .iter()
        .filter(|(_, b)| !b.is_empty())
        .map(|(id, b)| {
            let mut bytes = Vec::with_capacity(b.serialized_size());
            // writing to a Vec cannot fail
            let _ = b.serialize_into(&mut bytes);
            (*id, bytes)
        })
        .collect();
}

/// The offsets a commit of `u` applies: those of a `RewriteColumns` Update, each keyed by a
/// fragment it rewrites (else an error naming the key, [`check_keys`]); none for another mode.
pub fn judged(u: &Update) -> Result<BTreeMap<u64, RoaringBitmap>> {
    let offsets = updated_offsets(u)?;
    if u.update_mode() != UpdateMode::RewriteColumns {
        return Ok(BTreeMap::new());
    }
    check_keys(u, offsets.keys().copied())?;
    Ok(offsets)
}

/// Under `RewriteColumns`, every key of an Update's offsets names a fragment it rewrites
/// (Lance's `validate_operation`, which judges the offsets as given, empty ones included:
/// a caller holding them before [`set_updated_offsets`] drops the empty ones asks here).
pub fn check_keys(u: &Update, keys: impl IntoIterator<Item = u64>) -> Result<()> {
    if u.update_mode() != UpdateMode::RewriteColumns {
        return Ok(());
    }
    let rewritten: HashSet<u64> = u.updated_fragments.iter().map(|f| f.id).collect();
    match keys.into_iter().find(|id| !rewritten.contains(id)) {
        Some(stray) => Err(TxnError::operation(
            "Update",
            format!(
                "updatedFragmentOffsets key {stray} is not in updated_fragments; offsets must reference only fragments being rewritten"
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use lancet_proto::table::transaction::UInt32List;
    use lancet_proto::table::DataFragment;

    fn update(mode: UpdateMode, rewritten: &[u64]) -> Update {
        Update {
            updated_fragments: rewritten
                .iter()
                .map(|&id| DataFragment {
                    id,
                    physical_rows: 8,
                    ..Default::default()
                })
                .collect(),
            update_mode: mode as i32,
            ..Default::default()
        }
    }

    fn bitmap(offsets: &[u32]) -> RoaringBitmap {
        offsets.iter().copied().collect()
    }

    #[test]
    fn written_as_bitmaps_and_read_back_empty_entries_dropped() {
        let mut u = update(UpdateMode::RewriteColumns, &[0, 1]);
        let offsets = BTreeMap::from([(0, bitmap(&[1, 2])), (1, RoaringBitmap::new())]);
        set_updated_offsets(&mut u, &offsets);
        // the writer leaves the empty one out (Lance's writer does)
        assert_eq!(u.updated_fragment_offset_bitmaps.len(), 1);
        assert!(u.updated_fragment_offsets.is_empty());
        assert_eq!(
            updated_offsets(&u).unwrap(),
            BTreeMap::from([(0, bitmap(&[1, 2]))])
        );
        assert_eq!(judged(&u).unwrap(), BTreeMap::from([(0, bitmap(&[1, 2]))]));
    }

    #[test]
    fn the_deprecated_lists_are_read_when_no_bitmap_is_recorded() {
        let mut u = update(UpdateMode::RewriteColumns, &[3]);
        u.updated_fragment_offsets = BTreeMap::from([
            (3, UInt32List { values: vec![0, 5] }),
            (4, UInt32List { values: vec![] }),
        ]);
        assert_eq!(judged(&u).unwrap(), BTreeMap::from([(3, bitmap(&[0, 5]))]));
        // field 10 wins over field 9
        set_updated_offsets(&mut u, &BTreeMap::from([(3, bitmap(&[7]))]));
        u.updated_fragment_offsets = BTreeMap::from([(3, UInt32List { values: vec![1] })]);
        assert_eq!(judged(&u).unwrap(), BTreeMap::from([(3, bitmap(&[7]))]));
    }

    #[test]
    fn a_key_the_update_does_not_rewrite_is_refused_under_rewrite_columns_only() {
        let mut u = update(UpdateMode::RewriteColumns, &[0]);
        set_updated_offsets(&mut u, &BTreeMap::from([(1, bitmap(&[2]))]));
        let e = judged(&u).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidInput);
        assert!(
            e.to_string().contains("key 1 is not in updated_fragments"),
            "{e}"
        );
        u.update_mode = UpdateMode::RewriteRows as i32;
        assert!(judged(&u).unwrap().is_empty());
    }

    #[test]
    fn a_recorded_empty_bitmap_under_a_stray_key_is_refused() {
        let mut u = update(UpdateMode::RewriteColumns, &[0]);
        let mut empty = Vec::new();
        RoaringBitmap::new().serialize_into(&mut empty).unwrap();
        u.updated_fragment_offset_bitmaps = BTreeMap::from([(7, empty), (0, Vec::new())]);
        let e = judged(&u).unwrap_err();
        assert!(e.to_string().contains("key 7"), "{e}");
    }

    #[test]
    fn bytes_that_are_no_bitmap_are_refused_naming_the_fragment() {
        let mut u = update(UpdateMode::RewriteColumns, &[5]);
        u.updated_fragment_offset_bitmaps = BTreeMap::from([(5, b"xx".to_vec())]);
        let e = judged(&u).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("updated_fragment_offsets[5]"), "{e}");
        // hostile bytes claiming a huge container count fail without a panic
        u.updated_fragment_offset_bitmaps =
            BTreeMap::from([(5, vec![0x3a, 0x30, 0, 0, 0xff, 0xff, 0xff, 0x7f])]);
        assert!(judged(&u).is_err());
    }
}
