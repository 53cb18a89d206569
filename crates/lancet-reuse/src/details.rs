//! The `__lance_frag_reuse` index entry and its details (inline, or external in
//! `_indices/{fri uuid}/details.binpb` when the history exceeds 204,800 bytes).

use lancet_proto::table::fragment_reuse_index_details::Content;
use lancet_proto::table::{ExternalFile, FragmentReuseIndexDetails, IndexMetadata};
use prost::Message;

use crate::error::{corrupt, Result};

/// Name of the FRI's index entry.
pub const FRI_INDEX_NAME: &str = "__lance_frag_reuse";
/// Histories larger than this are stored externally.
pub const INLINE_LIMIT: usize = 204_800;

/// Whether `m` is the FRI entry: its name, and details whose type URL names
/// `lance.table.FragmentReuseIndexDetails` (compared case-insensitively, as Lance does).
pub fn is_fri_entry(m: &IndexMetadata) -> bool {
    m.name == FRI_INDEX_NAME
        && m.index_details
            .as_ref()
            .is_some_and(|d| lancet_proto::is_fri_type_url(&d.type_url))
}

/// Where the history's `InlineContent` bytes are.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentLocation {
    Inline(Vec<u8>),
    /// Relative to `_indices/{fri uuid}/` of the entry's base.
    External(ExternalFile),
}

/// Decodes the entry's details.
pub fn content_location(m: &IndexMetadata) -> Result<ContentLocation> {
    let what = "__lance_frag_reuse details";
    let any = m
        .index_details
        .as_ref()
        .ok_or_else(|| corrupt(what, "the entry has no index_details"))?;
    let details = FragmentReuseIndexDetails::decode(any.value.as_slice())
        .map_err(|e| corrupt(what, format!("FragmentReuseIndexDetails: {e}")))?;
    match details.content {
        Some(Content::Inline(inline)) => Ok(ContentLocation::Inline(inline.encode_to_vec())),
        Some(Content::External(file)) => Ok(ContentLocation::External(file)),
        None => Err(corrupt(
            what,
            "details have neither inline nor external content",
        )),
    }
}

/// The raw `InlineContent` bytes as stored inline. (Re-encoding the decoded message keeps the
/// fields the ledger walks; an external file is read as stored.)
pub fn inline_bytes(m: &IndexMetadata) -> Result<Option<Vec<u8>>> {
    let what = "__lance_frag_reuse details";
    let Some(any) = m.index_details.as_ref() else {
        return Err(corrupt(what, "the entry has no index_details"));
    };
    // Walk the Any value's fields to hand the ledger the exact InlineContent bytes.
    for field in lancet_proto::wire::fields(&any.value) {
        let field = field.map_err(|e| corrupt(what, e.to_string()))?;
        if field.number == 1 {
            return Ok(any.value.get(field.value).map(<[u8]>::to_vec));
        }
    }
    Ok(None)
}
