//! `Dataset::search` as a library call: its futures can be spawned, its errors cloned, and
//! what it refuses.
//! (Answers are compared with pylance's full scans in lancet-cli's interop tests.)

use lancet::paths::manifest::{write_manifest, NamingScheme};
use lancet::paths::DatasetStore;
use lancet::proto::file::Field;
use lancet::proto::table::Manifest;
use lancet::{Caches, Dataset, Error, ErrorKind, Filter};

fn assert_send<T: Send>(_: &T) {}

/// Compile-time: the futures a storage engine spawns on a multi-threaded runtime are `Send`.
#[allow(dead_code)]
fn futures_are_send(ds: &Dataset, filter: &Filter) {
    assert_send(&ds.search(filter));
    assert_send(&ds.fragments());
    assert_send(&ds.deletion_vectors());
    assert_send(&ds.row_id_index());
    assert_send(&ds.fri_history());
    assert_send(&ds.verify());
}

/// Compile-time: every error a caller can get is `Clone` (a cached load's error reaches each
/// waiting caller typed, not as a string).
#[allow(dead_code)]
fn errors_are_clone() {
    fn assert_clone<T: Clone>() {}
    assert_clone::<lancet::Error>();
    assert_clone::<lancet::paths::PathsError>();
    assert_clone::<lancet::file::FileError>();
    assert_clone::<lancet::rowid::RowIdError>();
    assert_clone::<lancet::btree::BTreeError>();
    assert_clone::<lancet::reuse::ReuseError>();
    assert_clone::<lancet::tree::TreeError>();
    assert_clone::<lancet::proto::Malformed>();
}

async fn empty_table() -> Dataset {
    let store = DatasetStore::open("memory://").unwrap();
    let m = Manifest {
        version: 1,
        fields: vec![Field {
            name: "x".into(),
            id: 0,
            parent_id: -1,
            logical_type: "int64".into(),
            nullable: true,
            ..Default::default()
        }],
        ..Default::default()
    };
    write_manifest(&store, &m, &[], &[], NamingScheme::V2, None)
        .await
        .unwrap();
    Dataset::open_with(store, None, Caches::new(Default::default()))
        .await
        .unwrap()
}

#[tokio::test]
async fn filters_on_missing_columns_and_constants() {
    let ds = empty_table().await;
    match ds.search(&Filter::parse("y = 1").unwrap()).await {
        Err(e @ Error::InvalidFilter { .. }) => {
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
            assert!(e.to_string().contains("no column \"y\""), "{e}");
        }
        other => panic!("{other:?}"),
    }
    // an empty table answers every valid filter with nothing
    for f in [
        "x = 1",
        "NOT (x > 2) OR x IS NULL",
        "TRUE",
        "x IN (1, NULL)",
    ] {
        let r = ds.search(&Filter::parse(f).unwrap()).await.unwrap();
        assert!(r.row_ids.is_empty() && r.null_row_ids.is_empty(), "{f}");
        assert_eq!(r.scanned_fragments, 0);
    }
    let e = Filter::parse("x = ").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}
