//! Opening refuses versions whose reader flags lancet does not interpret, instead of reading a
//! tree table as its (empty) flat fragment list.

use lancet::paths::flags;
use lancet::paths::manifest::{write_manifest, NamingScheme};
use lancet::paths::DatasetStore;
use lancet::proto::table::{FragmentTree, FragmentTreeMetadata, Manifest};
use lancet::{Caches, Dataset, Error};

async fn open_with_flags(m: Manifest) -> Result<Dataset, Error> {
    let store = DatasetStore::open("memory://").unwrap();
    write_manifest(&store, &m, &[], &[], NamingScheme::V2)
        .await
        .unwrap();
    Dataset::open_with(store, None, Caches::new(Default::default())).await
}

#[tokio::test]
async fn tree_tables_and_unknown_flags_are_refused() {
    let plain = Manifest {
        version: 1,
        ..Default::default()
    };
    assert!(open_with_flags(plain.clone()).await.is_ok());

    let tree = Manifest {
        reader_feature_flags: flags::FRAGMENT_TREE,
        writer_feature_flags: flags::FRAGMENT_TREE,
        fragment_tree: Some(FragmentTreeMetadata {
            layout: Some(lancet::proto::table::fragment_tree_metadata::Layout::Tree(
                FragmentTree::default(),
            )),
        }),
        ..plain.clone()
    };
    match open_with_flags(tree).await {
        Err(Error::Unsupported { rule, .. }) => assert!(rule.contains("fragment_tree"), "{rule}"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
    for flag in [
        flags::DATA_OVERLAY_FILES,
        flags::SPILLED_ROW_LINEAGE,
        1 << 40,
    ] {
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
