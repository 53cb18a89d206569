//! Opening: tree versions are read through lancet-tree (a corrupt one is an error, never an
//! empty table), overlays pass through, and reader flags lancet does not interpret are refused.

use lancet::paths::flags;
use lancet::paths::manifest::{write_manifest, NamingScheme};
use lancet::paths::{DatasetStore, PathsError};
use lancet::proto::table::fragment_tree::Root;
use lancet::proto::table::fragment_tree_metadata::Layout;
use lancet::proto::table::{FragmentTree, FragmentTreeMetadata, FragmentTreeRoot, Manifest};
use lancet::tree::Rule;
use lancet::{Caches, Dataset, Error};

async fn open_with_flags(m: Manifest) -> Result<Dataset, Error> {
    let store = DatasetStore::open("memory://").unwrap();
    write_manifest(&store, &m, &[], &[], NamingScheme::V2)
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
    assert!(ds.tree().is_some());
    assert!(ds.fragments().await.unwrap().is_empty());
    assert_eq!(ds.num_rows(), Some(0));
    assert!(matches!(
        ds.require_flat("a test write"),
        Err(Error::Unsupported { .. })
    ));
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
