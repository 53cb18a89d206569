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

/// The field ids whose data file `after` no longer holds as `before` did (the file gone, or
/// at another path or with other fields): columns rewritten in place. Files only added (a new
/// column) rewrite nothing.
pub fn rewritten_fields(before: &DataFragment, after: &DataFragment) -> Vec<i32> {
    before
        .files
        .iter()
        .filter(|d| {
            !after
                .files
                .iter()
                .any(|x| x.path == d.path && x.fields == d.fields)
        })
        .flat_map(|d| d.fields.iter().copied())
        .filter(|id| *id >= 0)
        .collect()
}
