//! `Dataset::search` as a library call: its futures can be spawned, its errors cloned, and
//! what it refuses.
//! (Answers are compared with pylance's full scans in lancet-cli's interop tests.)

use lancet::paths::manifest::{write_manifest, ManifestContent};
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
    assert_send(&ds.storage().deletion_vectors());
    assert_send(&ds.storage().row_id_index());
    assert_send(&ds.storage().fri_history());
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
    let store = DatasetStore::scratch();
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
    write_manifest(&store, &ManifestContent::new(&m))
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
    assert_eq!(e.kind(), lancet::filter::ErrorKind::InvalidInput);
    assert_eq!(lancet::Error::from(e).kind(), ErrorKind::InvalidInput);
}

/// The session caches a search goes through count what they serve: BTree pages (missed once,
/// then hit), the version's index structures, and manifests (a checkout of a version already
/// read is a hit).
#[tokio::test]
async fn search_cache_statistics_count_hits_and_misses() {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field as ArrowField, Schema};
    use lancet::file::{manifest_fields, write_file, FileVersion, WriteOptions};
    use lancet::paths::ObjectUuid;
    use lancet::proto::table::{DataFile, DataFragment};

    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().to_str().unwrap().to_string();
    let store = DatasetStore::create(&uri).unwrap();
    let fs = lancet::file_store_for(&store).unwrap();
    let schema = Schema::new(vec![ArrowField::new("v", DataType::Int64, false)]);
    let (major, minor) = FileVersion::V2_1.data_file_version();
    let mut fragments = Vec::new();
    for f in 0..2i64 {
        let values: ArrayRef = Arc::new(Int64Array::from_iter_values(f * 3000..(f + 1) * 3000));
        let batch = RecordBatch::try_from_iter([("v", values)]).unwrap();
        let name = format!("{}.lance", ObjectUuid::new_v4());
        let written = write_file(
            &fs,
            &store.path(&format!("data/{name}")),
            &schema,
            &[batch],
            &WriteOptions::default(),
        )
        .await
        .unwrap();
        fragments.push(DataFragment {
            id: f as u64,
            files: vec![DataFile {
                path: name,
                fields: vec![0],
                column_indices: vec![0],
                file_major_version: major,
                file_minor_version: minor,
                file_size_bytes: written.size_bytes,
                base_id: None,
            }],
            physical_rows: written.num_rows,
            ..Default::default()
        });
    }
    let manifest = Manifest {
        fields: manifest_fields(&schema).unwrap(),
        fragments,
        version: 1,
        max_fragment_id: Some(1),
        ..Default::default()
    };
    write_manifest(&store, &ManifestContent::new(&manifest))
        .await
        .unwrap();
    let caches = Caches::new(Default::default());
    let built = Dataset::open_with(store.clone(), None, caches.clone())
        .await
        .unwrap()
        .build_btree("v", 256)
        .await
        .unwrap()
        .dataset;
    let ds = Dataset::open_with(store, Some(built.version()), caches.clone())
        .await
        .unwrap();

    let eq = Filter::parse("v = 4100").unwrap();
    let before = caches.page_stats();
    assert_eq!(
        ds.search(&eq)
            .await
            .unwrap()
            .row_ids
            .iter()
            .collect::<Vec<_>>(),
        vec![(1 << 32) | 1100]
    );
    let first = caches.page_stats();
    assert_eq!(first.misses - before.misses, 1, "one page read: {first:?}");
    assert_eq!(first.hits, before.hits, "nothing cached yet: {first:?}");
    ds.search(&eq).await.unwrap();
    let second = caches.page_stats();
    assert_eq!(second.misses, first.misses, "{second:?}");
    assert_eq!(
        second.hits - first.hits,
        1,
        "the page served from the cache: {second:?}"
    );
    // a range over pages 1..=3 (rows 256..1024): the cached page is not among them
    let range = Filter::parse("v >= 300 AND v < 1000").unwrap();
    assert_eq!(ds.search(&range).await.unwrap().row_ids.len(), 700);
    let third = caches.page_stats();
    assert_eq!(third.misses - second.misses, 3, "{third:?}");

    // the segment structures were loaded on the first search and served after it
    let index = caches.index_stats();
    assert!(index.misses >= 1 && index.hits >= 2, "{index:?}");
    // reading version 1 again through the session is a manifest cache hit
    let manifests = caches.manifest_stats();
    ds.checkout(1).await.unwrap();
    let after = caches.manifest_stats();
    assert_eq!(after.hits - manifests.hits, 1, "{after:?}");
    assert_eq!(after.misses, manifests.misses, "{after:?}");
}

/// A field inside a struct column, named by its path (`s.x`), is a filter's column, a
/// scan's column and a BTree's column, as Lance resolves it: NULL where its struct is NULL.
#[tokio::test]
async fn fields_inside_struct_columns_are_columns_by_path() {
    use std::sync::Arc;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StructArray};
    use arrow_buffer::NullBuffer;
    use arrow_schema::{DataType, Field as ArrowField, Schema};
    use futures::TryStreamExt;

    let x: ArrayRef = Arc::new(Int64Array::from_iter_values((0..40).map(|i| i % 10)));
    let s = StructArray::new(
        vec![ArrowField::new("x", DataType::Int64, true)].into(),
        vec![x],
        Some(NullBuffer::from_iter((0..40).map(|i| i != 13))),
    );
    let id: ArrayRef = Arc::new(Int64Array::from_iter_values(0..40));
    let schema = Arc::new(Schema::new(vec![
        ArrowField::new("id", DataType::Int64, false),
        ArrowField::new("s", s.data_type().clone(), true),
    ]));
    let batch = RecordBatch::try_new(schema.clone(), vec![id, Arc::new(s)]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("t");
    let ds = lancet::Dataset::create(
        uri.to_str().unwrap(),
        schema,
        futures::stream::iter([Ok(batch)]),
        lancet::CreateOptions::default(),
    )
    .await
    .unwrap()
    .dataset;
    let ids = |found: &lancet::SearchResult| found.row_ids.iter().collect::<Vec<u64>>();
    // read directly: row 13's struct is NULL, so its x is too
    let direct = ds.search(&Filter::parse("s.x = 3").unwrap()).await.unwrap();
    assert_eq!(
        (ids(&direct), direct.scanned_fragments),
        (vec![3, 23, 33], 1)
    );
    let nulls = ds
        .search(&Filter::parse("s.x IS NULL").unwrap())
        .await
        .unwrap();
    assert_eq!(ids(&nulls), [13]);
    // through a BTree on the path: the same rows, no column read
    let ds = ds.build_btree("s.x", 8).await.unwrap().dataset;
    let summary = ds.storage().index_summaries().unwrap();
    assert_eq!(
        (summary[0].name.as_str(), summary[0].columns.clone()),
        ("s.x_idx", vec!["s.x".to_string()])
    );
    let indexed = ds.search(&Filter::parse("s.x = 3").unwrap()).await.unwrap();
    assert_eq!(
        (ids(&indexed), indexed.scanned_fragments),
        (vec![3, 23, 33], 0)
    );
    assert!(indexed.indexed.contains_key("s.x_idx"));
    // a scan's column named as asked
    let options = lancet::ScanOptions {
        columns: Some(vec!["`s`.`x`".into()]),
        filter: Some(Filter::parse("id > 11 AND id < 15").unwrap()),
        ..Default::default()
    };
    let got: Vec<RecordBatch> = ds.scan(options).await.unwrap().try_collect().await.unwrap();
    assert_eq!(got[0].schema().field(0).name(), "`s`.`x`");
    let values = got[0].column(0).as_primitive::<Int64Type>();
    assert_eq!(values.iter().collect::<Vec<_>>(), [Some(2), None, Some(4)]);
    // a path to no field is the caller's error
    for bad in ["s.nope = 1", "id.x = 1"] {
        let err = ds.search(&Filter::parse(bad).unwrap()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    }
    let err = ds.build_btree("s.nope", 8).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
}

/// A fragment record claiming more rows than an address can hold is refused as corrupt
/// when a filter names `_rowaddr` (no data file is opened to check the count), never an
/// allocation of its size.
#[tokio::test]
async fn row_column_filters_refuse_impossible_row_counts() {
    let store = DatasetStore::scratch();
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
        fragments: vec![lancet::proto::table::DataFragment {
            id: 0,
            physical_rows: 1 << 36,
            ..Default::default()
        }],
        ..Default::default()
    };
    write_manifest(&store, &ManifestContent::new(&m))
        .await
        .unwrap();
    let ds = Dataset::open_with(store, None, Caches::new(Default::default()))
        .await
        .unwrap();
    let err = ds
        .search(&Filter::parse("_rowaddr > 0").unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
}
