//! Opening: tree versions are read through lancet-tree (a corrupt one is an error, never an
//! empty table), overlays pass through, and reader flags lancet does not interpret are refused.

mod common;
use common::CommitStaged;

use lancet::paths::flags;
use lancet::paths::manifest::{write_manifest, ManifestContent};
use lancet::paths::{DatasetStore, PathsError};
use lancet::proto::table::fragment_tree::Root;
use lancet::proto::table::fragment_tree_metadata::Layout;
use lancet::proto::table::{FragmentTree, FragmentTreeMetadata, FragmentTreeRoot, Manifest};
use lancet::tree::Rule;
use lancet::{Caches, Dataset, Error};

async fn open_with_flags(m: Manifest) -> Result<Dataset, Error> {
    let store = DatasetStore::scratch();
    write_manifest(&store, &ManifestContent::new(&m))
        .await
        .unwrap();
    Dataset::open_with(store, None, Caches::new(Default::default())).await
}

fn tree_manifest(tree: FragmentTree, reader: u64, writer: u64) -> Manifest {
    Manifest {
        version: 1,
        reader_feature_flags: reader,
        writer_feature_flags: writer,
        fragment_tree: Some(FragmentTreeMetadata {
            layout: Some(Layout::Tree(tree)),
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn tree_versions_are_read_and_never_empty_by_mistake() {
    let empty_root = FragmentTree {
        root: Some(Root::InlineRoot(FragmentTreeRoot {
            next_action_sequence: 1,
            ..Default::default()
        })),
        next_action_sequence: 1,
        ..Default::default()
    };
    let t = flags::FRAGMENT_TREE;
    // a valid empty tree is an empty table
    let ds = open_with_flags(tree_manifest(empty_root.clone(), t, t))
        .await
        .unwrap();
    assert!(ds.storage().tree().is_some());
    assert!(ds.fragments().await.unwrap().is_empty());
    assert_eq!(ds.num_rows(), Some(0));
    // no root arm: corrupt
    match open_with_flags(tree_manifest(FragmentTree::default(), t, t)).await {
        Err(Error::Tree(e)) => assert_eq!(e.rule(), Some(Rule::RootArm)),
        other => panic!("expected a tree corruption, got {other:?}"),
    }
    // a one-sided flag is a corrupt manifest, not an empty flat table
    for (r, w) in [(t, 0), (0, t)] {
        let got = open_with_flags(tree_manifest(empty_root.clone(), r, w)).await;
        assert!(
            matches!(got, Err(Error::Paths(PathsError::CorruptManifest { .. }))),
            "{got:?}"
        );
        // whichever crate found it, the error names the object in one type
        let at = got.unwrap_err().object().cloned().unwrap();
        assert!(at.object.ends_with(".manifest"), "{at}");
    }
}

#[tokio::test]
async fn unknown_reader_flags_are_refused_and_overlays_pass() {
    let plain = Manifest {
        version: 1,
        ..Default::default()
    };
    assert!(open_with_flags(plain.clone()).await.is_ok());
    let overlays = Manifest {
        reader_feature_flags: flags::DATA_OVERLAY_FILES,
        writer_feature_flags: flags::DATA_OVERLAY_FILES,
        ..plain.clone()
    };
    assert!(open_with_flags(overlays).await.is_ok());
    for flag in [flags::SPILLED_ROW_LINEAGE, 1 << 40] {
        let m = Manifest {
            reader_feature_flags: flag,
            writer_feature_flags: flag,
            ..plain.clone()
        };
        assert!(
            matches!(open_with_flags(m).await, Err(Error::Unsupported { .. })),
            "flag {flag}"
        );
    }
}

/// Version 1 of a tree table at `store`: fragments 0..40 (one data file and 10 rows each)
/// in leaves of 5 under one interior level and an external root. Returns the records.
async fn forty_record_tree(store: &DatasetStore) -> Vec<lancet::proto::table::DataFragment> {
    use lancet::proto::table::{DataFile, DataFragment};
    use lancet_tree::testing::TreeBuilder;

    let records: Vec<DataFragment> = (0..40)
        .map(|id| DataFragment {
            id,
            files: vec![DataFile {
                path: format!("{id}.lance"),
                fields: vec![0],
                column_indices: vec![0],
                file_major_version: 2,
                file_minor_version: 1,
                ..Default::default()
            }],
            physical_rows: 10,
            ..Default::default()
        })
        .collect();
    let built = TreeBuilder {
        records: records.clone(),
        leaf_records: 5,
        fanout: 4,
        interior_levels: 1,
        external_root: true,
        ..Default::default()
    }
    .build(store)
    .await
    .unwrap();
    let m = Manifest {
        version: 1,
        reader_feature_flags: flags::FRAGMENT_TREE,
        writer_feature_flags: flags::FRAGMENT_TREE,
        max_fragment_id: Some(39),
        fragment_tree: Some(built.metadata),
        ..Default::default()
    };
    write_manifest(store, &ManifestContent::new(&m))
        .await
        .unwrap();
    records
}

/// A tree version through the facade: concurrent cold resolves of one fragment load each
/// object once (single flight through the moka node cache), and `fragments()` equals the
/// records resolved one by one.
#[tokio::test]
async fn tree_objects_load_once_through_the_node_cache() {
    let dir = tempfile::tempdir().unwrap();
    let store = DatasetStore::create(dir.path().to_str().unwrap()).unwrap();
    let records = forty_record_tree(&store).await;
    let caches = Caches::new(Default::default());
    let ds = Dataset::open_with(store, None, caches.clone())
        .await
        .unwrap();
    let resolves = (0..8).map(|_| ds.storage().fragment(17));
    for got in futures::future::join_all(resolves).await {
        assert_eq!(got.unwrap().as_ref(), Some(&records[17]));
    }
    // one interior and one leaf on the path, each loaded once
    let stats = caches.tree_node_stats();
    assert_eq!(stats.misses, 2, "{stats:?}");
    assert_eq!(stats.hits, 14, "{stats:?}");
    assert_eq!(ds.fragments().await.unwrap().to_vec(), records);
    assert_eq!(ds.storage().fragment(40).await.unwrap(), None);
}

/// A tree whose leaves do not fit the node cache: commits point-read the records they change
/// from cold leaves, and a leaf read before is reopened from its kept outline (its file
/// metadata) rather than opened afresh; what they publish reads back as the model says.
#[tokio::test]
async fn commits_on_cold_leaves_reopen_them_from_kept_outlines() {
    use lancet::proto::table::DeletionFile;
    use lancet::tree::{Action, TreeWriterConfig};

    let dir = tempfile::tempdir().unwrap();
    let store = DatasetStore::create(dir.path().to_str().unwrap()).unwrap();
    let mut records = forty_record_tree(&store).await;
    // 2 KiB of nodes: the eight leaves (several KiB each) are never cached decoded.
    let caches = Caches::new(lancet::CacheConfig {
        node_bytes: 2 << 10,
        ..Default::default()
    });
    let mut ds = Dataset::open_with(store, None, caches.clone())
        .await
        .unwrap();
    for (step, id) in [17u64, 18, 17, 3, 19, 3].into_iter().enumerate() {
        let deletion = DeletionFile {
            file_type: 0,
            read_version: ds.version(),
            id: step as u64 + 1,
            num_deleted_rows: step as u64 % 3 + 1,
            base_id: None,
        };
        records[id as usize].deletion_file = Some(deletion);
        ds = ds
            .commit_staged(
                ds.storage().manifest().clone(),
                &[],
                &[(id, Action::AddDeletionFile(deletion))],
                &TreeWriterConfig::default(),
            )
            .await
            .unwrap();
    }
    let outlines = caches.tree_outline_stats();
    // fragments 17, 18 and 19 share a leaf, as do the two commits on 3: two leaves kept,
    // the other four point reads reopened from them
    assert_eq!(outlines.misses, 2, "{outlines:?}");
    assert_eq!(outlines.hits, 4, "{outlines:?}");
    // what the commits published, read by a fresh session
    let reopened = Dataset::open_with(
        DatasetStore::open(dir.path().to_str().unwrap()).unwrap(),
        None,
        Caches::new(Default::default()),
    )
    .await
    .unwrap();
    assert_eq!(reopened.version(), 7);
    assert_eq!(reopened.fragments().await.unwrap().to_vec(), records);
}

/// A stored `fragment_bitmap` is one Roaring bitmap occupying the whole field: trailing bytes
/// or garbage are a typed error naming the index, never an empty or partial coverage.
#[tokio::test]
async fn index_fragment_bitmaps_decode_strictly() {
    use lancet::proto::roaring_wire::encode_roaring32;
    use lancet::proto::table::{IndexMetadata, Uuid};
    let store = DatasetStore::scratch();
    let good: roaring::RoaringBitmap = [0u32, 3].into_iter().collect();
    let entry = |name: &str, bitmap: Vec<u8>| IndexMetadata {
        uuid: Some(Uuid {
            uuid: vec![name.len() as u8; 16],
        }),
        name: name.into(),
        fragment_bitmap: bitmap,
        ..Default::default()
    };
    let mut trailing = encode_roaring32(&good);
    trailing.push(0);
    let indices = vec![
        entry("ok", encode_roaring32(&good)),
        entry("none", Vec::new()),
        entry("trailing", trailing),
        entry("garbage!", vec![1, 2, 3]),
    ];
    let m = Manifest {
        version: 1,
        ..Default::default()
    };
    write_manifest(
        &store,
        &ManifestContent {
            indices: &indices,
            ..ManifestContent::new(&m)
        },
    )
    .await
    .unwrap();
    let ds = Dataset::open_with(store, None, Caches::new(Default::default()))
        .await
        .unwrap();
    assert_eq!(
        ds.storage()
            .index_fragments(&ds.storage().indices()[0])
            .unwrap(),
        Some(good)
    );
    assert_eq!(
        ds.storage()
            .index_fragments(&ds.storage().indices()[1])
            .unwrap(),
        None
    );
    for i in [2, 3] {
        let err = ds
            .storage()
            .index_fragments(&ds.storage().indices()[i])
            .unwrap_err();
        assert_eq!(err.kind(), lancet::ErrorKind::Corrupt, "{err}");
        let err = err.to_string();
        assert!(err.contains(&ds.storage().indices()[i].name), "{err}");
        assert!(err.contains("fragment_bitmap"), "{err}");
    }
}
