//! Encoding a history as a tagged (index_version 1) `__lance_frag_reuse` entry.

use lancet_proto::roaring_wire::{encode_roaring32, encode_treemap};
use lancet_proto::table::fragment_reuse_index_details::{
    transition::Mapping as PbMapping, Content, FragmentDigest, InlineContent, OrderedCompaction,
    StablePartition, Transition as PbTransition,
};
use lancet_proto::table::{ExternalFile, FragmentReuseIndexDetails, IndexMetadata};
use prost::Message;
use roaring::RoaringBitmap;

use crate::details::{FRI_INDEX_NAME, INLINE_LIMIT};
use crate::ledger::{Digest, Ledger, Mapping, Transition};

/// File name of an external history inside `_indices/{fri uuid}/`.
pub const EXTERNAL_FILE: &str = "details.binpb";

fn digest(d: &Digest) -> FragmentDigest {
    FragmentDigest {
        id: u64::from(d.id),
        physical_rows: d.physical_rows,
        num_deleted_rows: d.num_deleted_rows,
    }
}

fn transition(t: &Transition) -> PbTransition {
    let mapping = match &t.mapping {
        Mapping::OrderedCompaction { surviving } => {
            PbMapping::OrderedCompaction(OrderedCompaction {
                changed_row_addrs: encode_treemap(surviving),
            })
        }
        Mapping::StablePartition {
            map_id,
            map_size_bytes,
            base_id,
        } => PbMapping::StablePartition(StablePartition {
            map_id: map_id.clone(),
            map_size_bytes: *map_size_bytes,
            base_id: *base_id,
        }),
    };
    PbTransition {
        sources: t.sources.iter().map(digest).collect(),
        destinations: t.destinations.iter().map(digest).collect(),
        mapping: Some(mapping),
    }
}

/// The `InlineContent` bytes of a v1 history: every transition (legacy groups included) as a
/// `Transition`, in dependency-consistent list order.
pub fn encode_v1(ledger: &Ledger) -> Vec<u8> {
    InlineContent {
        legacy_versions: Vec::new(),
        transitions: ledger.transitions.iter().map(transition).collect(),
    }
    .encode_to_vec()
}

/// A new tagged entry for `content` (InlineContent bytes). Histories over 204,800 bytes go to
/// an external file the caller writes to `_indices/{uuid}/details.binpb`: the second value.
pub fn tagged_entry(
    uuid: lancet_proto::table::Uuid,
    content: Vec<u8>,
    dataset_version: u64,
    ledger: &Ledger,
    created_at_ms: u64,
) -> (IndexMetadata, Option<Vec<u8>>) {
    let (details, external) = if content.len() > INLINE_LIMIT {
        let file = ExternalFile {
            path: EXTERNAL_FILE.to_string(),
            offset: 0,
            size: content.len() as u64,
        };
        (
            FragmentReuseIndexDetails {
                content: Some(Content::External(file)),
            },
            Some(content),
        )
    } else {
        let inline = InlineContent::decode(content.as_slice()).unwrap_or_default();
        (
            FragmentReuseIndexDetails {
                content: Some(Content::Inline(inline)),
            },
            None,
        )
    };
    let mut fragments = RoaringBitmap::new();
    for t in &ledger.transitions {
        fragments.extend(t.sources.iter().map(|d| d.id));
        fragments.extend(t.destinations.iter().map(|d| d.id));
    }
    fragments.optimize();
    let entry = IndexMetadata {
        uuid: Some(uuid),
        fields: Vec::new(),
        name: FRI_INDEX_NAME.to_string(),
        dataset_version,
        fragment_bitmap: encode_roaring32(&fragments),
        index_details: Some(lancet_proto::prost_types::Any {
            type_url: lancet_proto::FRI_DETAILS_TYPE_URL.to_string(),
            value: details.encode_to_vec(),
        }),
        index_version: Some(1),
        created_at: Some(created_at_ms),
        ..Default::default()
    };
    (entry, external)
}
