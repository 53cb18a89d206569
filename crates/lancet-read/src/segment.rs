//! An opened segment of a BTree index: what the session caches per version and the search
//! and maintenance paths share.

use std::sync::Arc;

use lancet_btree::BTreeIndex;
use lancet_proto::table::IndexMetadata;
use roaring::RoaringBitmap;

/// One segment of a named BTree index, opened.
#[derive(Debug, Clone)]
pub struct BTreeSegment {
    pub metadata: IndexMetadata,
    pub index: Arc<BTreeIndex>,
    /// Fragments it covers (empty bitmap: unknown, treated as none).
    pub fragments: RoaringBitmap,
}

impl BTreeSegment {
    /// Whether its `ids` are row addresses (index_version >= 1, or no stable row ids).
    pub fn ids_are_addresses(&self, stable_row_ids: bool) -> bool {
        self.metadata.index_version.unwrap_or(0) >= 1 || !stable_row_ids
    }
}
