//! Encoding a history as a `__lance_frag_reuse` entry: tagged (index_version 1, transitions)
//! or legacy (index_version 0, `Version` records of ordered-compaction groups, as pylance
//! 14.0.2 writes a table's first deferred compactions).

use lancet_proto::roaring_wire::{encode_roaring32, encode_treemap};
use lancet_proto::table::fragment_reuse_index_details::{
    transition::Mapping as PbMapping, Content, FragmentDigest, Group, InlineContent,
    OrderedCompaction, StablePartition, Transition as PbTransition, Version as PbVersion,
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

/// A v1 history as `InlineContent`: every transition (legacy groups included) as a
/// `Transition`, in dependency-consistent list order.
fn inline_content(ledger: &Ledger) -> InlineContent {
    InlineContent {
        legacy_versions: Vec::new(),
        transitions: ledger.transitions.iter().map(transition).collect(),
    }
}

/// The `InlineContent` bytes of a v1 history (see [`tagged_entry`]).
pub fn encode_v1(ledger: &Ledger) -> Vec<u8> {
    inline_content(ledger).encode_to_vec()
}

/// A new tagged entry holding `ledger`. Histories whose `InlineContent` exceeds 204,800
/// bytes go to an external file the caller writes to `_indices/{uuid}/details.binpb`: the
/// second value, exactly [`encode_v1`]'s bytes. The entry is built from the ledger itself, so
/// it can never hold less than the ledger (no bytes are decoded back).
pub fn tagged_entry(
    uuid: lancet_proto::table::Uuid,
    dataset_version: u64,
    ledger: &Ledger,
    created_at_ms: u64,
) -> (IndexMetadata, Option<Vec<u8>>) {
    let mut fragments = RoaringBitmap::new();
    for t in &ledger.transitions {
        fragments.extend(t.sources.iter().map(|d| d.id));
        fragments.extend(t.destinations.iter().map(|d| d.id));
    }
    let inline = inline_content(ledger);
    entry(uuid, dataset_version, inline, fragments, 1, created_at_ms)
}

/// Writes the external history of a new entry (the second value of [`tagged_entry`] or
/// [`legacy_entry`], made with `uuid`) to `_indices/{uuid}/details.binpb` under `store`, and
/// returns the entry.
pub async fn write_external(
    store: &lancet_paths::DatasetStore,
    uuid: lancet_paths::ObjectUuid,
    (entry, external): (IndexMetadata, Option<Vec<u8>>),
) -> crate::Result<IndexMetadata> {
    if let Some(bytes) = external {
        let path = store.path(&lancet_paths::layout::index_file(uuid, EXTERNAL_FILE));
        store.put(&path, bytes.into()).await?;
    }
    Ok(entry)
}

/// A new legacy (index_version 0) entry holding `ledger`, as pylance 14.0.2 writes a history
/// on a table whose history is not tagged: each transition an ordered-compaction `Group` of
/// the `Version` record of its `dataset_version` (transitions without one take
/// `dataset_version`, the version the entry is added at), the fragment bitmap the
/// destinations, no feature flag needed. `None` when the ledger holds a transition only a
/// tagged history can (a stable partition).
pub fn legacy_entry(
    uuid: lancet_proto::table::Uuid,
    dataset_version: u64,
    ledger: &Ledger,
    created_at_ms: u64,
) -> Option<(IndexMetadata, Option<Vec<u8>>)> {
    let mut versions: Vec<PbVersion> = Vec::new();
    let mut fragments = RoaringBitmap::new();
    for t in &ledger.transitions {
        let Mapping::OrderedCompaction { surviving } = &t.mapping else {
            return None;
        };
        let at = t.dataset_version.unwrap_or(dataset_version);
        let group = Group {
            changed_row_addrs: encode_treemap(surviving),
            old_fragments: t.sources.iter().map(digest).collect(),
            new_fragments: t.destinations.iter().map(digest).collect(),
        };
        fragments.extend(t.destinations.iter().map(|d| d.id));
        match versions.last_mut() {
            Some(v) if v.dataset_version == at => v.groups.push(group),
            _ => versions.push(PbVersion {
                dataset_version: at,
                groups: vec![group],
            }),
        }
    }
    let inline = InlineContent {
        legacy_versions: versions,
        transitions: Vec::new(),
    };
    Some(entry(
        uuid,
        dataset_version,
        inline,
        fragments,
        0,
        created_at_ms,
    ))
}

/// The entry of `inline` content, external past the inline limit.
fn entry(
    uuid: lancet_proto::table::Uuid,
    dataset_version: u64,
    inline: InlineContent,
    mut fragments: RoaringBitmap,
    index_version: i32,
    created_at_ms: u64,
) -> (IndexMetadata, Option<Vec<u8>>) {
    let (details, external) = if inline.encoded_len() > INLINE_LIMIT {
        let content = inline.encode_to_vec();
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
        (
            FragmentReuseIndexDetails {
                content: Some(Content::Inline(inline)),
            },
            None,
        )
    };
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
        index_version: Some(index_version),
        created_at: Some(created_at_ms),
        ..Default::default()
    };
    (entry, external)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(transitions: usize) -> Ledger {
        let digest = |id: u32| Digest {
            id,
            physical_rows: 100,
            num_deleted_rows: 1,
        };
        Ledger {
            index_version: 1,
            transitions: (0..transitions as u32)
                .map(|i| Transition {
                    dataset_version: None,
                    sources: vec![digest(2 * i), digest(2 * i + 1)],
                    destinations: vec![digest(1_000_000 + i)],
                    mapping: Mapping::StablePartition {
                        map_id: format!("{i:032x}"),
                        map_size_bytes: 4096,
                        base_id: None,
                    },
                })
                .collect(),
            has_unsupported: false,
            unmodelled_row_maps: Vec::new(),
        }
    }

    fn content(entry: &IndexMetadata) -> Option<Content> {
        let any = entry.index_details.as_ref()?;
        FragmentReuseIndexDetails::decode(any.value.as_slice())
            .ok()?
            .content
    }

    #[test]
    fn a_small_history_is_inline_and_whole() {
        let l = ledger(3);
        let (entry, external) = tagged_entry(Default::default(), 7, &l, 1);
        assert!(external.is_none());
        let Some(Content::Inline(inline)) = content(&entry) else {
            panic!("not inline");
        };
        assert_eq!(inline.encode_to_vec(), encode_v1(&l));
        assert_eq!(inline.transitions.len(), 3);
        assert_eq!(entry.dataset_version, 7);
    }

    #[test]
    fn a_large_history_is_external_and_whole() {
        let l = ledger(3000);
        let (entry, external) = tagged_entry(Default::default(), 7, &l, 1);
        let bytes = external.expect("over the inline limit");
        assert!(bytes.len() > INLINE_LIMIT);
        assert_eq!(bytes, encode_v1(&l));
        let Some(Content::External(file)) = content(&entry) else {
            panic!("not external");
        };
        assert_eq!(
            (file.path.as_str(), file.size),
            (EXTERNAL_FILE, bytes.len() as u64)
        );
    }

    #[tokio::test]
    async fn an_external_history_is_written_where_its_entry_says() {
        let dir = tempfile::tempdir().unwrap();
        let store = lancet_paths::DatasetStore::open(dir.path().to_str().unwrap()).unwrap();
        let uuid = lancet_paths::ObjectUuid::new_v4();
        let l = ledger(3000);
        let made = tagged_entry(uuid.to_proto(), 7, &l, 1);
        let entry = write_external(&store, uuid, made).await.unwrap();
        let Some(Content::External(file)) = content(&entry) else {
            panic!("not external");
        };
        let index_dir = lancet_paths::layout::index_dir(uuid);
        let bytes = crate::details::read_external(&store, &index_dir, &file)
            .await
            .unwrap();
        assert_eq!(bytes, encode_v1(&l));
        // a small history writes nothing
        let small = lancet_paths::ObjectUuid::new_v4();
        let made = tagged_entry(small.to_proto(), 7, &ledger(3), 1);
        write_external(&store, small, made).await.unwrap();
        assert!(!dir
            .path()
            .join(lancet_paths::layout::index_dir(small))
            .exists());
    }

    #[test]
    fn a_legacy_entry_decodes_as_the_ordered_compactions_it_holds() {
        let digest = |id: u32, deleted: u64| Digest {
            id,
            physical_rows: 4,
            num_deleted_rows: deleted,
        };
        let compaction = |sources: [u32; 2], to: u32, at: Option<u64>| {
            let deleted: Vec<RoaringBitmap> =
                vec![[1u32].into_iter().collect(), RoaringBitmap::new()];
            let src = [digest(sources[0], 1), digest(sources[1], 0)];
            Transition {
                dataset_version: at,
                mapping: crate::rules::ordered_compaction(&src, &deleted).unwrap(),
                sources: src.to_vec(),
                destinations: vec![Digest {
                    id: to,
                    physical_rows: 7,
                    num_deleted_rows: 0,
                }],
            }
        };
        let l = Ledger {
            index_version: 0,
            transitions: vec![
                compaction([0, 1], 10, Some(3)),
                compaction([2, 3], 11, None),
            ],
            has_unsupported: false,
            unmodelled_row_maps: Vec::new(),
        };
        let (entry, external) = legacy_entry(Default::default(), 5, &l, 1).unwrap();
        assert!(external.is_none());
        assert_eq!(entry.index_version, Some(0));
        let covered = lancet_proto::roaring_wire::decode_roaring32(&entry.fragment_bitmap).unwrap();
        assert_eq!(covered.iter().collect::<Vec<_>>(), [10, 11]);
        let Some(Content::Inline(inline)) = content(&entry) else {
            panic!("not inline");
        };
        assert_eq!(inline.legacy_versions.len(), 2);
        let back = crate::decode_inline(&inline.encode_to_vec(), 0, "test").unwrap();
        let mut want = l.transitions.clone();
        want[1].dataset_version = Some(5);
        assert_eq!(back.transitions, want);
        // a stable partition needs a tagged history
        assert!(legacy_entry(Default::default(), 5, &ledger(1), 1).is_none());
        // the rule: legacy while the table's history is, and flag 1024 is not set
        assert!(crate::rules::keeps_legacy(None, 0));
        assert!(crate::rules::keeps_legacy(Some(&entry), 0));
        assert!(!crate::rules::keeps_legacy(
            None,
            lancet_paths::flags::FRAGMENT_REUSE_INDEX
        ));
        let (tagged, _) = tagged_entry(Default::default(), 5, &l, 1);
        assert!(!crate::rules::keeps_legacy(Some(&tagged), 0));
    }
}
