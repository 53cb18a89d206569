//! The `__lance_frag_reuse` index entry and its details (inline, or external in
//! `_indices/{fri uuid}/details.binpb` when the history exceeds 204,800 bytes).

use lancet_proto::table::{ExternalFile, IndexMetadata};
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
    /// The exact stored `InlineContent` bytes (the ledger walks them field by field).
    Inline(Vec<u8>),
    /// Relative to `_indices/{fri uuid}/` of the entry's base.
    External(ExternalFile),
}

/// Reads the entry's details: the inline history's exact bytes, or where the external one is.
/// Walks the `Any` value's fields once; neither arm, or both, is corrupt.
pub fn content_location(m: &IndexMetadata) -> Result<ContentLocation> {
    let what = "__lance_frag_reuse details";
    let any = m
        .index_details
        .as_ref()
        .ok_or_else(|| corrupt(what, "the entry has no index_details"))?;
    let mut found = None;
    for field in lancet_proto::wire::fields(&any.value) {
        let field = field.map_err(|e| corrupt(what, e.to_string()))?;
        let body = any.value.get(field.value).unwrap_or_default();
        let content = match field.number {
            1 => ContentLocation::Inline(body.to_vec()),
            2 => ContentLocation::External(
                ExternalFile::decode(body)
                    .map_err(|e| corrupt(what, format!("ExternalFile: {e}")))?,
            ),
            _ => continue,
        };
        if found.replace(content).is_some() {
            return Err(corrupt(
                what,
                "details set both inline and external content",
            ));
        }
    }
    found.ok_or_else(|| corrupt(what, "details have neither inline nor external content"))
}

/// The bytes of an external history: `file` of the entry's index directory `dir` (relative to
/// `store`'s root), exactly `[offset, offset + size)`; a range that overflows or a shorter
/// object is corrupt.
pub async fn read_external(
    store: &lancet_paths::DatasetStore,
    dir: &str,
    file: &ExternalFile,
) -> Result<Vec<u8>> {
    let path = store.path(&format!("{dir}/{}", file.path));
    let end = file
        .offset
        .checked_add(file.size)
        .ok_or_else(|| corrupt(path.to_string(), "external history range overflows"))?;
    let bytes = store.get_range(&path, file.offset..end).await?;
    if bytes.len() as u64 != file.size {
        return Err(corrupt(
            path.to_string(),
            "the external history is shorter than its recorded size",
        ));
    }
    Ok(bytes.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use lancet_proto::table::fragment_reuse_index_details::{Content, InlineContent};
    use lancet_proto::table::FragmentReuseIndexDetails;
    use prost::Message;

    fn entry(value: Vec<u8>) -> IndexMetadata {
        IndexMetadata {
            name: FRI_INDEX_NAME.into(),
            index_details: Some(lancet_proto::prost_types::Any {
                type_url: lancet_proto::FRI_DETAILS_TYPE_URL.into(),
                value,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn one_content_arm_exactly() {
        let inline = FragmentReuseIndexDetails {
            content: Some(Content::Inline(InlineContent::default())),
        }
        .encode_to_vec();
        assert!(is_fri_entry(&entry(inline.clone())));
        assert_eq!(
            content_location(&entry(inline.clone())).ok(),
            Some(ContentLocation::Inline(vec![]))
        );
        let external = FragmentReuseIndexDetails {
            content: Some(Content::External(ExternalFile {
                path: "details.binpb".into(),
                offset: 0,
                size: 9,
            })),
        }
        .encode_to_vec();
        assert!(matches!(
            content_location(&entry(external.clone())),
            Ok(ContentLocation::External(_))
        ));
        let mut both = inline;
        both.extend_from_slice(&external);
        assert!(matches!(
            content_location(&entry(both)),
            Err(crate::ReuseError::Corrupt { .. })
        ));
        assert!(matches!(
            content_location(&entry(vec![])),
            Err(crate::ReuseError::Corrupt { .. })
        ));
    }
}
