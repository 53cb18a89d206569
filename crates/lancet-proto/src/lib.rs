//! Protobuf messages of the Lance 14 table format, written for lancet from the wire facts in
//! `FORMAT-FACTS.md` (never copied from Lance). Package names match Lance's, so `Any` type
//! URLs (`"/lance.table.BTreeIndexDetails"`) and field numbers are interchangeable with pylance.
//!
//! Codegen is plain `prost-build` (what tonic-build runs underneath when services are off), fed
//! by the `protoc-bin-vendored` binary.
//!
//! Besides the generated types this crate has [`wire`], a bounds-checked walker over raw
//! protobuf fields. Lance readers and tools rely on bytes surviving a decode/encode round trip
//! (fields lancet does not model, the exact `DataFragment` bytes), which prost alone drops.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

pub mod address;
pub mod change;
pub mod counts;
mod error_kind;
pub mod flags;
pub mod fragment_lookup;
pub mod le;
pub mod malformed;
pub mod modelled;
pub mod object_ref;
mod outside;
pub mod relative_path;
pub mod roaring_wire;
pub mod transaction;
pub mod wire;

/// `lance.file`: schema fields and the v2 file descriptor.
pub mod file {
    #![allow(missing_docs, clippy::all)]
    include!(concat!(env!("OUT_DIR"), "/lance.file.rs"));
}

/// `lance.table`: manifest, fragments, tree messages, index metadata, row ids, FRI details.
pub mod table {
    #![allow(missing_docs, clippy::all)]
    include!(concat!(env!("OUT_DIR"), "/lance.table.rs"));
}

pub use address::RowAddress;
pub use change::{diff_fragments, FragmentChange};
pub use counts::{rows_unknown, FragmentSummary};
pub use error_kind::ErrorKind;
pub use fragment_lookup::{fragment_by_id, fragment_position};
pub use malformed::Malformed;
pub use object_ref::{register_local_root, shown, ObjectRef};
pub use outside::Outside;
pub use prost;
pub use prost_types;
pub use transaction::StoredTransaction;

/// `Any` type URL of BTree index details as Lance 14 writes it.
pub const BTREE_DETAILS_TYPE_URL: &str = "/lance.table.BTreeIndexDetails";
/// `Any` type URL of Fragment Reuse Index details as Lance 14 writes it.
pub const FRI_DETAILS_TYPE_URL: &str = "/lance.table.FragmentReuseIndexDetails";

/// The last `/`-separated part of a type URL, which Lance compares against full message names.
pub fn type_url_message_name(type_url: &str) -> Option<&str> {
    type_url.rsplit_once('/').map(|(_, name)| name)
}

/// The index type a details type URL names, as Lance's message names spell it without the
/// package and the `IndexDetails` suffix: `"BTree"`, `"Bitmap"`, `"ZoneMap"`, `"Inverted"`,
/// `"Vector"`, `"FragmentReuse"`, ... (BTree's Lance 0.36 alias included, case-insensitively
/// normalised for BTree). `None` when the URL has no `/` or names no `...IndexDetails` message.
pub fn index_type_name(type_url: &str) -> Option<String> {
    if is_btree_type_url(type_url) {
        return Some("BTree".into());
    }
    let message = type_url_message_name(type_url)?;
    let short = message.rsplit('.').next()?;
    let cut = short.len().checked_sub("IndexDetails".len())?;
    let (kind, suffix) = (short.get(..cut)?, short.get(cut..)?);
    (suffix.eq_ignore_ascii_case("IndexDetails") && !kind.is_empty()).then(|| kind.to_string())
}

/// Whether `index` answers with row addresses rather than stable row ids (Lance 14.0.2's
/// `IndexMetadata::results_are_row_addrs`, an allow-list): ZoneMap, BloomFilter and FM
/// indexes, and BTree segments from format version 1. Every other index (LabelList, Inverted,
/// Bitmap, NGram, vector indexes, BTree version 0), whatever its `index_version`, stores
/// row ids: on a stable-row-id table its entries follow rows a rewrite moves.
pub fn results_are_row_addrs(index: &table::IndexMetadata) -> bool {
    index.index_details.as_ref().is_some_and(|details| {
        let url = details.type_url.as_str();
        let is_fm = url
            .rsplit_once('/')
            .is_some_and(|(_, name)| name.eq_ignore_ascii_case("lance.index.pb.FMIndexDetails"));
        url.ends_with("ZoneMapIndexDetails")
            || url.ends_with("BloomFilterIndexDetails")
            || is_fm
            || (url.ends_with("BTreeIndexDetails") && index.index_version.unwrap_or(0) >= 1)
    })
}

/// Whether `type_url` names a BTree index, accepting what Lance 14 accepts: the text after the last
/// `/`, compared case-insensitively with `lance.table.BTreeIndexDetails` or the Lance 0.36 alias
/// `lance.index.pb.BTreeIndexDetails`. A URL without `/` is rejected.
pub fn is_btree_type_url(type_url: &str) -> bool {
    type_url_message_name(type_url).is_some_and(|name| {
        name.eq_ignore_ascii_case("lance.table.BTreeIndexDetails")
            || name.eq_ignore_ascii_case("lance.index.pb.BTreeIndexDetails")
    })
}

/// Whether `type_url` names Fragment Reuse Index details (case-insensitive, as Lance's entry
/// detection).
pub fn is_fri_type_url(type_url: &str) -> bool {
    type_url_message_name(type_url)
        .is_some_and(|name| name.eq_ignore_ascii_case("lance.table.FragmentReuseIndexDetails"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]
mod tests {
    use super::*;
    use prost::Name;

    #[test]
    fn type_urls_match_lance() {
        assert_eq!(table::BTreeIndexDetails::type_url(), BTREE_DETAILS_TYPE_URL);
        assert_eq!(
            table::FragmentReuseIndexDetails::type_url(),
            FRI_DETAILS_TYPE_URL
        );
    }

    #[test]
    fn btree_type_url_rules() {
        assert!(is_btree_type_url("/lance.table.BTreeIndexDetails"));
        assert!(is_btree_type_url(
            "type.googleapis.com/LANCE.TABLE.BTREEINDEXDETAILS"
        ));
        assert!(is_btree_type_url("/lance.index.pb.BTreeIndexDetails"));
        assert!(!is_btree_type_url("BTreeIndexDetails"));
        assert!(!is_btree_type_url("/.lance.table.BTreeIndexDetails"));
        assert!(is_fri_type_url("/lance.table.FragmentReuseIndexDetails"));
        assert!(!is_fri_type_url("/lance.table.BTreeIndexDetails"));
    }

    #[test]
    fn index_type_names() {
        let name = |u: &str| index_type_name(u);
        assert_eq!(
            name("/lance.table.BTreeIndexDetails").as_deref(),
            Some("BTree")
        );
        assert_eq!(
            name("/lance.index.pb.BTreeIndexDetails").as_deref(),
            Some("BTree")
        );
        assert_eq!(
            name("/lance.table.BitmapIndexDetails").as_deref(),
            Some("Bitmap")
        );
        assert_eq!(
            name("/lance.table.ZoneMapIndexDetails").as_deref(),
            Some("ZoneMap")
        );
        assert_eq!(name(FRI_DETAILS_TYPE_URL).as_deref(), Some("FragmentReuse"));
        assert_eq!(name("/lance.table.IndexDetails"), None);
        assert_eq!(name("/lance.table.Bitmap"), None);
        assert_eq!(name("BitmapIndexDetails"), None);
        assert_eq!(name(""), None);
    }
}
