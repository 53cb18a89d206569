//! What an index entry covers, and which columns a changed fragment rewrote: the two facts
//! the index rules (planning, compaction, invariants) share.

use lancet_proto::roaring_wire::decode_roaring32;
use lancet_proto::table::{DataFragment, IndexMetadata};
use roaring::RoaringBitmap;

use crate::error::{Result, TxnError};

/// The fragments `index` covers; `None` when it names no bitmap (it covers every fragment). A
/// bitmap that does not decode is `operation`'s error naming the index.
pub fn index_bitmap(
    index: &IndexMetadata,
    operation: &'static str,
) -> Result<Option<RoaringBitmap>> {
    if index.fragment_bitmap.is_empty() {
        return Ok(None);
    }
    decode_roaring32(&index.fragment_bitmap)
        .map(Some)
        .map_err(|e| {
            TxnError::operation(
                operation,
                format!(
                    "index {:?}: fragment_bitmap does not decode: {e}",
                    index.name
                ),
            )
        })
}

/// The field ids answered for by another data file in `after` than in `before` (the file
/// gone, at another path or base, or the field tombstoned there): columns rewritten in place.
/// Files only added (a new column) rewrite nothing, and a file whose other fields were
/// tombstoned (a DataReplacement of them) still answers for the rest.
pub fn rewritten_fields(before: &DataFragment, after: &DataFragment) -> Vec<i32> {
    let holder = |f: &DataFragment, id: i32| {
        f.files
            .iter()
            .find(|d| d.fields.contains(&id))
            .map(|d| (d.path.clone(), d.base_id))
    };
    let mut ids: Vec<i32> = (before.files.iter())
        .flat_map(|d| d.fields.iter().copied())
        .filter(|id| *id >= 0)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.retain(|&id| holder(before, id) != holder(after, id));
    ids
}
