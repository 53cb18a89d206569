//! The data path through the library: create, append, delete, update, scan and take on flat
//! and tree tables, and the typed errors of bad calls (the table unchanged).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt64Type};
use arrow_array::{Array, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::TryStreamExt;
use lancet::{CreateOptions, Dataset, ErrorKind, Filter, Layout, RowsAt, ScanOptions, VersionRef};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]))
}

fn rows(start: i64, n: i64) -> RecordBatch {
    let ids: Vec<i64> = (start..start + n).collect();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(Float64Array::from_iter_values(
                ids.iter().map(|i| *i as f64),
            )),
            Arc::new(StringArray::from_iter(
                ids.iter().map(|i| (i % 5 != 0).then(|| format!("s{i}"))),
            )),
        ],
    )
    .unwrap()
}

fn batches(list: Vec<RecordBatch>) -> impl futures::Stream<Item = lancet::Result<RecordBatch>> {
    futures::stream::iter(list.into_iter().map(Ok))
}

async fn scan(ds: &Dataset, options: ScanOptions) -> RecordBatch {
    let schema = ds.storage().scan_schema(&options).unwrap();
    let got: Vec<RecordBatch> = ds.scan(options).await.unwrap().try_collect().await.unwrap();
    arrow_select::concat::concat_batches(&schema, &got).unwrap()
}

fn column_i64(b: &RecordBatch, name: &str) -> Vec<i64> {
    b.column_by_name(name)
        .unwrap()
        .as_primitive::<Int64Type>()
        .values()
        .to_vec()
}

fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir.join("_versions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// The same changes on a flat and a tree table give the same rows, ids and addresses.
#[tokio::test]
async fn flat_and_tree_tables_change_and_read_alike() {
    let dir = tempfile::tempdir().unwrap();
    let mut results = Vec::new();
    for layout in [Layout::Flat, Layout::Tree] {
        let uri = dir.path().join(format!("{layout:?}"));
        let ds = Dataset::create(
            uri.to_str().unwrap(),
            schema(),
            batches(vec![rows(0, 70), rows(70, 30)]),
            CreateOptions {
                stable_row_ids: true,
                layout,
                max_rows_per_file: 25,
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .dataset;
        assert_eq!(ds.fragments().await.unwrap().len(), 4);
        assert_eq!(ds.storage().tree().is_some(), layout == Layout::Tree);
        let ds = ds
            .append(batches(vec![rows(100, 10)]))
            .await
            .unwrap()
            .dataset;
        let changed = ds
            .delete(&Filter::parse("id % 4 = 1").unwrap())
            .await
            .unwrap();
        assert_eq!(changed.rows, 28);
        let ds = changed.dataset;
        let set = lancet::filter::parse_assignment("x = x + 0.5").unwrap();
        let changed = ds
            .update(&Filter::parse("id >= 20 AND id < 30").unwrap(), &[set])
            .await
            .unwrap();
        assert_eq!(changed.rows, 7);
        let ds = changed.dataset;
        ds.storage().verify_data().await.unwrap();
        let all = scan(
            &ds,
            ScanOptions {
                with_row_id: true,
                with_row_address: true,
                ..Default::default()
            },
        )
        .await;
        assert_eq!(all.num_rows(), 110 - 28);
        // the moved rows come last, keep their ids, and carry the new value
        let ids = column_i64(&all, "id");
        let row_ids = all
            .column_by_name("_rowid")
            .unwrap()
            .as_primitive::<UInt64Type>();
        let x = all
            .column_by_name("x")
            .unwrap()
            .as_primitive::<Float64Type>();
        let last = all.num_rows() - 1;
        assert_eq!(ids[last], 28);
        assert_eq!(row_ids.value(last), 28);
        assert_eq!(x.value(last), 28.5);
        // limit and offset count live rows in scan order
        let window = scan(
            &ds,
            ScanOptions {
                columns: Some(vec!["id".into()]),
                limit: Some(5),
                offset: 18,
                ..Default::default()
            },
        )
        .await;
        assert_eq!(column_i64(&window, "id"), &ids[18..23]);
        // take by row id, in the order asked
        let taken = ds.take(&[28, 0, 102], Some(&["id".into()])).await.unwrap();
        assert_eq!(column_i64(&taken, "id"), [28, 0, 102]);
        results.push(all);
    }
    assert_eq!(results[0], results[1]);
}

#[tokio::test]
async fn bad_calls_are_typed_errors_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("t");
    let ds = Dataset::create(
        uri.to_str().unwrap(),
        schema(),
        batches(vec![rows(0, 20)]),
        CreateOptions::default(),
    )
    .await
    .unwrap()
    .dataset;
    let before = listing(&uri);
    let other = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("id", DataType::Utf8, false)])),
        vec![Arc::new(StringArray::from(vec!["a"]))],
    )
    .unwrap();
    let err = ds.append(batches(vec![other])).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    // named as the table and its column, not as a file under data/
    let text = err.to_string();
    assert!(
        text.contains(uri.to_str().unwrap()) && text.contains("\"id\""),
        "{err}"
    );
    assert!(!text.contains("/data"), "{err}");
    let mistyped = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("x", DataType::Utf8, true),
            Field::new("s", DataType::Utf8, true),
        ])),
        vec![
            Arc::new(Int64Array::from(vec![1])),
            Arc::new(StringArray::from(vec!["1.5"])),
            Arc::new(StringArray::from(vec!["a"])),
        ],
    )
    .unwrap();
    let err = ds.append(batches(vec![mistyped])).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("\"x\" (Utf8)"), "{err}");
    // assignments and values as SQL text: text that does not parse is bad input too
    for bad in ["x =", "1 = 2", "x = nope("] {
        let err = ds
            .update(&Filter::parse("id = 1").unwrap(), &[bad])
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad}: {err}");
    }
    let err = ds
        .add_column("y", "x +", Default::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let err = ds
        .delete(&Filter::parse("nope = 1").unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let set = lancet::filter::parse_assignment("x = s").unwrap();
    let err = ds
        .update(&Filter::parse("id = 1").unwrap(), &[set])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    // without stable row ids a row id is the row address: 99 is not a live row
    let err = ds.take(&[99], None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("row address 99"), "{err}");
    let err = Dataset::create(
        uri.to_str().unwrap(),
        schema(),
        batches(vec![rows(0, 1)]),
        CreateOptions::default(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert_eq!(listing(&uri), before);
    assert_eq!(
        Dataset::open(uri.to_str().unwrap())
            .await
            .unwrap()
            .version(),
        1
    );
}

/// One rule for which data file holds a column (issue 31): a fragment written before a column
/// was added has no file holding it, and a filter on that column answers it as NULL there,
/// as a scan reads it — never an error (flat and tree).
#[tokio::test]
async fn a_filter_reads_a_column_no_file_holds_as_null_as_a_scan_does() {
    for layout in [Layout::Flat, Layout::Tree] {
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().to_str().unwrap();
        let options = CreateOptions {
            layout,
            max_rows_per_file: 10,
            ..Default::default()
        };
        let ds = Dataset::create(uri, schema(), batches(vec![rows(0, 30)]), options)
            .await
            .unwrap()
            .dataset;
        // `w` filled in the first two fragments; then a schema-only Merge adds `v`, which no
        // data file holds, and a backfill of `w` on a third fragment appended without it
        let value = lancet::filter::parse_value("id * 2").unwrap();
        let ds = ds
            .add_column("w", &value, Default::default())
            .await
            .unwrap()
            .dataset;
        let mut fields = ds.storage().manifest().fields.clone();
        let next = fields.iter().map(|f| f.id).max().unwrap() + 1;
        let mut v = lancet::file::manifest_fields(&Schema::new(vec![Field::new(
            "v",
            DataType::Int64,
            true,
        )]))
        .unwrap();
        v[0].id = next;
        fields.extend(v);
        ds.commit(lancet::Operation::Merge(
            lancet::proto::table::transaction::Merge {
                fragments: ds.fragments().await.unwrap().to_vec(),
                schema: fields,
                ..Default::default()
            },
        ))
        .await
        .unwrap();
        let ds = Dataset::open(uri).await.unwrap();
        assert!(
            ds.schema().unwrap().field_with_name("v").is_ok(),
            "{layout:?}"
        );
        let scanned = scan(
            &ds,
            ScanOptions {
                columns: Some(vec!["id".into(), "v".into()]),
                ..Default::default()
            },
        )
        .await;
        let v = scanned.column_by_name("v").unwrap();
        let ids = column_i64(&scanned, "id");
        let null_ids: Vec<i64> = (0..scanned.num_rows())
            .filter(|&i| v.is_null(i))
            .map(|i| ids[i])
            .collect();
        assert_eq!(null_ids, (0..30).collect::<Vec<_>>(), "{layout:?}");
        let filter = Filter::parse("v IS NULL AND w >= 40").unwrap();
        let found = ds.search(&filter).await.unwrap();
        let taken = ds
            .take(
                &found.row_ids.iter().collect::<Vec<_>>(),
                Some(&["id".to_string()]),
            )
            .await
            .unwrap();
        let mut got = column_i64(&taken, "id");
        got.sort_unstable();
        assert_eq!(got, (20..30).collect::<Vec<_>>(), "{layout:?}");
    }
}

/// Where there is no table, opening says so with its own kind (issue 31): a missing path, a
/// plain file, an empty directory, a version never committed. A BTree on a column the table
/// does not have is the caller's mistake.
#[tokio::test]
async fn no_table_here_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, b"not a table").unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for path in [dir.path().join("missing"), file, empty] {
        let err = Dataset::open(path.to_str().unwrap()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound, "{path:?}: {err}");
        assert!(err.to_string().contains("no Lance table"), "{err}");
    }
    let uri = dir.path().join("t");
    let ds = Dataset::create(
        uri.to_str().unwrap(),
        schema(),
        batches(vec![rows(0, 10)]),
        CreateOptions::default(),
    )
    .await
    .unwrap()
    .dataset;
    let err = ds.checkout(9).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    let err = Dataset::open_ref(uri.to_str().unwrap(), &VersionRef::at(9))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert_eq!(
        Dataset::open_ref(uri.to_str().unwrap(), &VersionRef::at(1))
            .await
            .unwrap()
            .version(),
        1
    );
    let err = ds.build_btree("nope", 64).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    // an append of no rows publishes nothing, as Lance's writer refuses it
    let before = listing(&uri);
    for empty in [vec![], vec![rows(0, 0)]] {
        let err = ds.append(batches(empty)).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        assert_eq!(listing(&uri), before);
    }
}

/// What `_rowid` is, said once below the CLI (issue 31): without stable row ids it is the row
/// address, live while its fragment holds it and no deletion file deletes it.
#[tokio::test]
async fn row_ids_without_stable_ids_are_live_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().to_str().unwrap();
    let ds = Dataset::create(
        uri,
        schema(),
        batches(vec![rows(0, 20)]),
        CreateOptions {
            max_rows_per_file: 10,
            ..Default::default()
        },
    )
    .await
    .unwrap()
    .dataset;
    let ds = ds
        .delete(&Filter::parse("id = 3 OR id = 12").unwrap())
        .await
        .unwrap()
        .dataset;
    let live = ds.storage().live_row_ids().await.unwrap();
    assert_eq!(live.len(), 18);
    assert!(live.iter().all(|(id, addr)| id == addr));
    let addr = |f: u32, o: u32| lancet::RowAddress::new(f, o).as_u64();
    assert!(!live
        .iter()
        .any(|(id, _)| *id == addr(0, 3) || *id == addr(1, 2)));
    let found = ds
        .storage()
        .lookup_row_ids(&[addr(0, 2), addr(0, 3), addr(1, 9), addr(1, 10), addr(7, 0)])
        .await
        .unwrap();
    assert_eq!(
        found,
        vec![Some(addr(0, 2)), None, Some(addr(1, 9)), None, None]
    );
}

/// A fragment a scan takes whole is read in one pass and cut into batches of at most 65,536
/// rows, its deleted rows left out; an offset or a limit inside it reads batch by batch
/// (same rows either way).
#[tokio::test]
async fn a_whole_fragment_scan_is_cut_into_bounded_batches() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().to_str().unwrap();
    let ds = Dataset::create(
        uri,
        schema(),
        batches(vec![rows(0, 150_000)]),
        CreateOptions::default(),
    )
    .await
    .unwrap()
    .dataset;
    let ds = ds
        .delete(&Filter::parse("id % 1000 = 5").unwrap())
        .await
        .unwrap()
        .dataset;
    let got: Vec<RecordBatch> = ds
        .scan(ScanOptions {
            columns: Some(vec!["id".into()]),
            with_row_address: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(got.len() >= 3, "{} batches", got.len());
    assert!(got.iter().all(|b| b.num_rows() <= 65_536));
    let ids: Vec<i64> = got.iter().flat_map(|b| column_i64(b, "id")).collect();
    let want: Vec<i64> = (0..150_000).filter(|i| i % 1000 != 5).collect();
    assert_eq!(ids, want);
    let addrs: Vec<u64> = got
        .iter()
        .flat_map(|b| {
            b.column_by_name("_rowaddr")
                .unwrap()
                .as_primitive::<UInt64Type>()
                .values()
                .to_vec()
        })
        .collect();
    assert_eq!(addrs, want.iter().map(|i| *i as u64).collect::<Vec<_>>());
    // an offset and a limit inside the fragment: the same rows
    let window = scan(
        &ds,
        ScanOptions {
            columns: Some(vec!["id".into()]),
            offset: 70_000,
            limit: Some(1_000),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(column_i64(&window, "id"), want[70_000..71_000].to_vec());
}

/// Input as a `Vec` of batches or an Arrow `RecordBatchReader` (issue 31), not only a stream;
/// a reader that fails part way publishes nothing.
#[tokio::test]
async fn writers_take_batches_in_memory_or_from_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().to_str().unwrap();
    let ds = Dataset::create(
        uri,
        schema(),
        lancet::batches(vec![rows(0, 10), rows(10, 5)]),
        CreateOptions::default(),
    )
    .await
    .unwrap()
    .dataset;
    let reader =
        arrow_array::RecordBatchIterator::new(vec![Ok(rows(15, 5)), Ok(rows(20, 5))], schema());
    let ds = ds
        .append(lancet::batches_from_reader(reader))
        .await
        .unwrap()
        .dataset;
    assert_eq!(ds.num_rows(), Some(25));
    // cut as asked: 10 rows in files of 4
    let frags = ds.fragments().await.unwrap().len();
    let ds = ds
        .append_with(
            lancet::batches(vec![rows(25, 10)]),
            &lancet::AppendOptions {
                max_rows_per_file: 4,
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .dataset;
    let all = ds.fragments().await.unwrap();
    let new: Vec<u64> = all[frags..].iter().map(|f| f.physical_rows).collect();
    assert_eq!(new, [4, 4, 2]);
    let err = ds
        .append_with(
            lancet::batches(vec![rows(35, 1)]),
            &lancet::AppendOptions {
                max_rows_per_file: 0,
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let before = listing(dir.path());
    let failing = arrow_array::RecordBatchIterator::new(
        vec![
            Ok(rows(35, 5)),
            Err(arrow_schema::ArrowError::ParseError("bad input".into())),
        ],
        schema(),
    );
    let err = ds
        .append(lancet::batches_from_reader(failing))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert_eq!(listing(dir.path()), before);
}

/// Every write returns one shape, `Committed`, saying what it did: the version it published
/// (or the one it was called on when it had nothing to do), how many versions, the rows it
/// appended, deleted or updated, the fragments it removed and added.
#[tokio::test]
async fn every_write_reports_what_it_did_in_one_shape() {
    for layout in [Layout::Flat, Layout::Tree] {
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().to_str().unwrap();
        let options = CreateOptions {
            max_rows_per_file: 10,
            layout,
            ..Default::default()
        };
        let created = Dataset::create(uri, schema(), batches(vec![rows(0, 40)]), options)
            .await
            .unwrap();
        assert_eq!(
            (created.versions, created.rows, created.fragments_added),
            (1, 40, 4),
            "{layout:?} create"
        );
        assert_eq!(created.version(), 1);
        let appended = created
            .dataset
            .append(batches(vec![rows(40, 5)]))
            .await
            .unwrap();
        assert_eq!(
            (appended.versions, appended.rows, appended.fragments_added),
            (1, 5, 1),
            "{layout:?} append"
        );
        // a delete that empties fragment 0 and cuts into fragment 1
        let deleted = appended
            .dataset
            .delete(&Filter::parse("id < 13").unwrap())
            .await
            .unwrap();
        assert_eq!(
            (deleted.versions, deleted.rows, deleted.fragments_removed),
            (1, 13, 1),
            "{layout:?} delete"
        );
        let set = lancet::filter::parse_assignment("x = 0").unwrap();
        let updated = deleted
            .dataset
            .update(&Filter::parse("id >= 40").unwrap(), &[set])
            .await
            .unwrap();
        assert_eq!(
            (updated.versions, updated.rows),
            (1, 5),
            "{layout:?} update"
        );
        assert_eq!(updated.version(), deleted.version() + 1);
        // an index build changes no row
        let indexed = updated.dataset.build_btree("id", 64).await.unwrap();
        assert_eq!((indexed.versions, indexed.rows), (1, 0), "{layout:?} index");
        // nothing to optimize: nothing published, the same version
        let optimized = indexed
            .dataset
            .optimize()
            .optimize_indices(&Default::default())
            .await
            .unwrap();
        assert_eq!(optimized.versions, 0, "{layout:?} optimize");
        // a backfill one fragment per commit: the schema, then a replacement per fragment
        let live = optimized.dataset.fragments().await.unwrap().len() as u64;
        let filled = optimized
            .dataset
            .add_column(
                "w",
                &lancet::filter::parse_value("id * 2").unwrap(),
                lancet::AddColumnOptions {
                    fragments_per_commit: 1,
                },
            )
            .await
            .unwrap();
        assert_eq!(filled.versions, 1 + live, "{layout:?} add-column");
        assert_eq!(filled.version(), optimized.version() + 1 + live);
        assert!(filled.attempts >= filled.versions as u32);
        // a compaction of the small fragments, then nothing left to compact
        let compacted = filled
            .dataset
            .optimize()
            .compact(&lancet::CompactionOptions::default())
            .await
            .unwrap();
        assert_eq!(compacted.versions, 1, "{layout:?} compact");
        assert_eq!(
            (compacted.fragments_removed, compacted.fragments_added),
            (live as usize, 1)
        );
        let again = compacted
            .dataset
            .optimize()
            .compact(&lancet::CompactionOptions::default())
            .await
            .unwrap();
        assert_eq!(
            (again.versions, again.version()),
            (0, compacted.version()),
            "{layout:?} nothing to compact"
        );
        again.dataset.verify().await.unwrap();
    }
}

/// A column holding a NULL is not made non-nullable (nothing published); one without is, and
/// keeps its rows; a rename to an empty name is refused.
#[tokio::test]
async fn a_column_with_nulls_stays_nullable() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().to_str().unwrap();
    let ds = Dataset::create(
        uri,
        schema(),
        batches(vec![rows(0, 20)]),
        Default::default(),
    )
    .await
    .unwrap()
    .dataset;
    let before = listing(dir.path());
    let tighten = |column: &str| lancet::ColumnAlteration {
        data_type: None,
        path: column.into(),
        nullable: Some(false),
        ..Default::default()
    };
    // `s` is NULL on every fifth row
    let err = ds.alter_columns(&[tighten("s")]).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("NULL"), "{err}");
    let empty = lancet::ColumnAlteration {
        data_type: None,
        path: "x".into(),
        rename: Some(String::new()),
        ..Default::default()
    };
    let err = ds.alter_columns(&[empty]).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert_eq!(listing(dir.path()), before);
    let done = ds.alter_columns(&[tighten("x")]).await.unwrap();
    let x = done
        .dataset
        .storage()
        .manifest()
        .fields
        .iter()
        .find(|f| f.name == "x")
        .unwrap();
    assert!(!x.nullable);
    assert_eq!(
        column_i64(&scan(&done.dataset, ScanOptions::default()).await, "id"),
        (0..20).collect::<Vec<_>>()
    );
}

/// A merge_insert prepared on an older version: over a delete of other rows it rebases; over
/// a compaction of the rows it updates it is redone on the newer version; either way every
/// key is once in the table with the merge's values. Bad merges are typed and publish nothing.
#[tokio::test]
async fn a_merge_insert_rebases_over_deletes_and_is_redone_over_compactions() {
    for stable in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().to_str().unwrap();
        let options = CreateOptions {
            stable_row_ids: stable,
            max_rows_per_file: 100,
            ..Default::default()
        };
        let ds = Dataset::create(uri, schema(), batches(vec![rows(0, 300)]), options)
            .await
            .unwrap()
            .dataset;
        let source = |keys: std::ops::Range<i64>| {
            let mut b = rows(keys.start, keys.end - keys.start);
            // the merged values: x = -id
            let x: Vec<f64> = column_i64(&b, "id").iter().map(|i| -(*i as f64)).collect();
            let mut columns = b.columns().to_vec();
            columns[1] = Arc::new(Float64Array::from(x));
            b = RecordBatch::try_new(schema(), columns).unwrap();
            batches(vec![b])
        };
        // 1. a delete in fragment 2 lands first; the merge (fragment 0 and new keys) rebases
        let stale = ds.clone();
        ds.delete(&Filter::parse("id >= 200 AND id < 210").unwrap())
            .await
            .unwrap();
        let merged = stale
            .merge_insert(&["id"])
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(source(90..310))
            .await
            .unwrap();
        let stats = merged.merged.unwrap();
        assert_eq!((stats.updated_rows, stats.inserted_rows), (200, 20));
        // prepared on version 1, published over the delete's version 2
        assert_eq!(merged.version(), 3, "stable={stable}");
        // 2. a compaction of the fragments it updates lands first: the merge is redone
        let stale = merged.dataset.clone();
        let compacted = merged
            .dataset
            .optimize()
            .compact(&Default::default())
            .await
            .unwrap();
        assert!(compacted.versions >= 1);
        let again = stale
            .merge_insert(&["id"])
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(source(0..50))
            .await
            .unwrap();
        let stats = again.merged.unwrap();
        assert_eq!((stats.updated_rows, stats.inserted_rows), (50, 0));
        let end = again.dataset;
        let got = scan(&end, ScanOptions::default()).await;
        let mut ids = column_i64(&got, "id");
        let xs: Vec<f64> = got
            .column(1)
            .as_primitive::<Float64Type>()
            .values()
            .to_vec();
        for (id, x) in ids.iter().zip(&xs) {
            let merged = *id < 50 || (90..310).contains(id);
            assert_eq!(
                *x,
                if merged { -(*id as f64) } else { *id as f64 },
                "id {id}"
            );
        }
        ids.sort_unstable();
        // the deleted keys 200..210 were inserted again by the merge
        let want: Vec<i64> = (0..310).collect();
        assert_eq!(ids, want, "stable={stable}: every key once");
        end.verify().await.unwrap();

        // bad merges: typed, nothing published
        let before = listing(dir.path());
        let dup = RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from(vec![1, 1])),
                Arc::new(Float64Array::from(vec![0.0, 1.0])),
                Arc::new(StringArray::from(vec!["a", "b"])),
            ],
        )
        .unwrap();
        let e = end
            .merge_insert(&["id"])
            .when_matched_update_all()
            .execute(batches(vec![dup]))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        let e = end
            .merge_insert(&["nope"])
            .execute(source(0..1))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        let e = end
            .merge_insert::<&str>(&[])
            .execute(source(0..1))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert_eq!(listing(dir.path()), before);
    }
}

/// A branch whose reference cannot be written leaves no version behind: its first version
/// (written before the reference) is removed, so the name stays free.
#[tokio::test]
async fn a_branch_whose_reference_fails_leaves_no_versions() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().to_str().unwrap();
    let ds = Dataset::create(
        uri,
        schema(),
        batches(vec![rows(0, 10)]),
        CreateOptions::default(),
    )
    .await
    .unwrap()
    .dataset;
    // a file where the references' directory goes: the reference write fails
    std::fs::create_dir_all(dir.path().join("_refs")).unwrap();
    std::fs::write(dir.path().join("_refs/branches"), b"").unwrap();
    let e = ds.branches().create("dev", None).await.unwrap_err();
    assert!(!e.to_string().contains("already exists"), "{e}");
    assert!(!dir.path().join("tree/dev").exists());
    std::fs::remove_file(dir.path().join("_refs/branches")).unwrap();
    let made = ds.branches().create("dev", None).await.unwrap();
    assert_eq!(made.dataset.version(), ds.version());
}

/// A legacy flat manifest leaves `physical_rows` 0 ("unknown" to Lance 14): every read
/// resolves the count from the data file, so no fragment is taken as empty — a scan, a
/// search of `TRUE` (how the Python package's `count_rows()` counts such a table) and a
/// filter all see every live row, with and without deletions.
#[tokio::test]
async fn fragments_of_unknown_row_count_are_read_not_taken_as_empty() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("t");
    let uri = uri.to_str().unwrap();
    let ds = table_at(uri, 30, 10).await;
    let ds = ds
        .delete(&Filter::parse("id % 4 = 0").unwrap())
        .await
        .unwrap()
        .dataset;
    legacy_version(&ds).await;
    let legacy = Dataset::open(uri).await.unwrap();
    assert_eq!(legacy.version(), ds.version() + 1);
    assert_eq!(legacy.num_rows(), None, "the counts are unknown");
    let live: Vec<i64> = (0..30).filter(|i| i % 4 != 0).collect();
    let mut scanned = column_i64(&scan(&legacy, ScanOptions::default()).await, "id");
    scanned.sort_unstable();
    assert_eq!(scanned, live);
    let all = legacy
        .search(&Filter::parse("TRUE").unwrap())
        .await
        .unwrap();
    assert_eq!(all.row_ids.len(), live.len() as u64);
    let some = legacy
        .search(&Filter::parse("id >= 25").unwrap())
        .await
        .unwrap();
    assert_eq!(some.row_ids.len(), 4, "25, 26, 27 and 29");
    let filtered = scan(
        &legacy,
        ScanOptions {
            filter: Some(Filter::parse("NOT (id < 25)").unwrap()),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(column_i64(&filtered, "id"), vec![25, 26, 27, 29]);
    // a delete on such fragments deletes the rows it matches (it was refused: "offset beyond
    // 0 rows")
    let deleted = legacy
        .delete(&Filter::parse("id % 4 = 1").unwrap())
        .await
        .unwrap();
    assert_eq!(deleted.rows, 8, "1, 5, ..., 29");
    let after = deleted.dataset;
    let left: Vec<i64> = (0..30).filter(|i| i % 4 != 0 && i % 4 != 1).collect();
    let mut scanned = column_i64(&scan(&after, ScanOptions::default()).await, "id");
    scanned.sort_unstable();
    assert_eq!(scanned, left);
    after.storage().verify_data().await.unwrap();
}

/// `Dataset::open_ref` opens what the CLI's `--version/--tag/--branch` and the Python
/// package's `dataset(uri, version, tag, branch)` name; references that do not exist, or that
/// contradict each other, are typed errors.
#[tokio::test]
async fn open_ref_opens_versions_tags_and_branches() {
    use lancet::VersionRef;
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("t");
    let uri = uri.to_str().unwrap();
    let v1 = Dataset::create(
        uri,
        schema(),
        batches(vec![rows(0, 10)]),
        Default::default(),
    )
    .await
    .unwrap()
    .dataset;
    let v2 = v1.append(batches(vec![rows(10, 5)])).await.unwrap().dataset;
    v2.tags().create("first", Some(1)).await.unwrap();
    let branched = v2.branches().create("dev", Some(2)).await.unwrap().dataset;
    branched.append(batches(vec![rows(100, 1)])).await.unwrap();
    let open = |at: VersionRef| async move { Dataset::open_ref(uri, &at).await };
    let rows_of = |ds: &Dataset| ds.num_rows().unwrap();
    let latest = open(VersionRef::default()).await.unwrap();
    assert_eq!((latest.version(), rows_of(&latest)), (2, 15));
    let at = |version: Option<u64>, tag: Option<&str>, branch: Option<&str>| VersionRef {
        version,
        tag: tag.map(str::to_string),
        branch: branch.map(str::to_string),
    };
    let one = open(at(Some(1), None, None)).await.unwrap();
    assert_eq!(rows_of(&one), 10);
    let tagged = open(at(None, Some("first"), None)).await.unwrap();
    assert_eq!((tagged.version(), rows_of(&tagged)), (1, 10));
    let on_dev = open(at(None, None, Some("dev"))).await.unwrap();
    assert_eq!(rows_of(&on_dev), 16);
    let dev_before = open(at(Some(2), None, Some("dev"))).await.unwrap();
    assert_eq!(rows_of(&dev_before), 15);
    // (a tag of a branch's version, as pylance writes one, opens on its branch: the CLI's
    // interop tests read pylance's)
    for (bad, kind) in [
        (at(None, Some("nope"), None), ErrorKind::NotFound),
        (at(None, None, Some("nope")), ErrorKind::NotFound),
        (at(Some(1), Some("first"), None), ErrorKind::InvalidInput),
        (
            at(None, Some("first"), Some("dev")),
            ErrorKind::InvalidInput,
        ),
    ] {
        let err = open(bad.clone()).await.unwrap_err();
        assert_eq!(err.kind(), kind, "{bad:?}: {err}");
    }
}

/// The CLI's and the Python package's merge options are judged by one rule
/// (`MergeInsert::with_options`): combinations no merge has are refused as bad input, and the
/// rest run as the builder's calls would.
#[tokio::test]
async fn merge_options_are_judged_once_for_every_front_end() {
    use lancet::MergeOptions;
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("t");
    let ds = Dataset::create(
        uri.to_str().unwrap(),
        schema(),
        batches(vec![rows(0, 10)]),
        CreateOptions::default(),
    )
    .await
    .unwrap()
    .dataset;
    let refused = [
        MergeOptions {
            when_matched: "upsert".into(),
            ..Default::default()
        },
        MergeOptions {
            when_matched: "delete".into(),
            condition: Some("source.x > target.x".into()),
            ..Default::default()
        },
        MergeOptions {
            by_source_filter: Some("id > 3".into()),
            ..Default::default()
        },
        MergeOptions {
            when_matched: "update".into(),
            condition: Some("source.x >".into()),
            ..Default::default()
        },
    ];
    for options in refused {
        let err = ds.merge_insert(&["id"]).with_options(&options).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{options:?}: {err}");
    }
    let done = ds
        .merge_insert(&["id"])
        .with_options(&MergeOptions {
            when_matched: "update_all".into(),
            insert_not_matched: true,
            delete_not_matched_by_source: true,
            by_source_filter: Some("id < 2".into()),
            ..Default::default()
        })
        .unwrap()
        .execute(batches(vec![rows(5, 10)]))
        .await
        .unwrap();
    let stats = done.merged.unwrap();
    assert_eq!(
        (stats.updated_rows, stats.inserted_rows, stats.deleted_rows),
        (5, 5, 2)
    );
    assert_eq!(done.rows, 12);
    assert_eq!(
        done.dataset.num_rows(),
        Some(13),
        "10 - 2 deleted + 5 inserted"
    );
}

/// A table at `uri` of rows `0..n`, a data file every `per_file` rows.
async fn table_at(uri: &str, n: i64, per_file: u64) -> Dataset {
    let options = CreateOptions {
        max_rows_per_file: per_file,
        ..Default::default()
    };
    Dataset::create(uri, schema(), batches(vec![rows(0, n)]), options)
        .await
        .unwrap()
        .dataset
}

/// Writes the next version of `ds` as an old writer would have left it: every fragment's
/// `physical_rows` 0 ("unknown" to Lance 14), the rest as `ds` holds it.
async fn legacy_version(ds: &Dataset) {
    use lancet::paths::manifest::{write_manifest, ManifestContent};
    let mut legacy = ds.storage().manifest().clone();
    legacy.version += 1;
    for f in &mut legacy.fragments {
        f.physical_rows = 0;
        if let Some(d) = &mut f.deletion_file {
            d.num_deleted_rows = 0;
        }
    }
    let indices = ds.storage().indices().to_vec();
    let content = ManifestContent {
        indices: &indices,
        ..ManifestContent::new(&legacy)
    };
    write_manifest(ds.storage().store(), &content)
        .await
        .unwrap();
}

/// A compaction of fragments of unknown row count rewrites every row they hold (planned,
/// read and remapped by the rows their files hold), and the BTree still answers.
#[tokio::test]
async fn a_compaction_of_fragments_of_unknown_row_count_keeps_every_row() {
    for defer in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().join("t");
        let uri = uri.to_str().unwrap();
        let ds = table_at(uri, 40, 10).await;
        let ds = ds.build_btree("id", 16).await.unwrap().dataset;
        let ds = ds
            .delete(&Filter::parse("id % 3 = 0").unwrap())
            .await
            .unwrap()
            .dataset;
        legacy_version(&ds).await;
        let legacy = Dataset::open(uri).await.unwrap();
        assert_eq!(legacy.num_rows(), None);
        let compacted = legacy
            .optimize()
            .compact(&lancet::CompactionOptions {
                defer_index_remap: defer,
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(compacted.versions >= 1, "defer={defer}");
        let ds = compacted.dataset;
        let live: Vec<i64> = (0..40).filter(|i| i % 3 != 0).collect();
        assert_eq!(ds.num_rows(), Some(live.len() as u64), "defer={defer}");
        let mut scanned = column_i64(&scan(&ds, ScanOptions::default()).await, "id");
        scanned.sort_unstable();
        assert_eq!(scanned, live, "defer={defer}");
        for (filter, want) in [("id = 7", 1), ("id = 9", 0), ("id >= 30", 6)] {
            let found = ds.search(&Filter::parse(filter).unwrap()).await.unwrap();
            assert_eq!(found.row_ids.len(), want, "defer={defer}: {filter}");
            assert!(
                !found.indexed.is_empty(),
                "defer={defer}: the index answers"
            );
        }
        ds.storage().verify_data().await.unwrap();
    }
}

/// An overwrite writes its files in the data storage version asked for and makes it the
/// table's (Lance 14.0.2's `user_requested_version` on an Overwrite); asked nothing, it keeps
/// the table's.
#[tokio::test]
async fn an_overwrite_takes_the_storage_version_asked_for() {
    use lancet::file::FileVersion;
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().to_str().unwrap();
    let ds = Dataset::create(
        uri,
        schema(),
        lancet::batches(vec![rows(0, 10)]),
        CreateOptions {
            data_storage_version: FileVersion::V2_1,
            ..Default::default()
        },
    )
    .await
    .unwrap()
    .dataset;
    let format = |ds: &Dataset| {
        let f = ds.storage().manifest().data_format.clone().unwrap();
        f.version
    };
    let file_versions = |fragments: &[lancet::proto::table::DataFragment]| {
        (fragments.iter())
            .flat_map(|f| &f.files)
            .map(|d| (d.file_major_version, d.file_minor_version))
            .collect::<Vec<_>>()
    };
    assert_eq!(format(&ds), "2.1");
    let kept = ds
        .overwrite(
            schema(),
            lancet::batches(vec![rows(0, 5)]),
            &Default::default(),
        )
        .await
        .unwrap()
        .dataset;
    assert_eq!(format(&kept), "2.1");
    assert_eq!(file_versions(&kept.fragments().await.unwrap()), [(2, 1)]);
    let asked = kept
        .overwrite(
            schema(),
            lancet::batches(vec![rows(0, 7)]),
            &lancet::AppendOptions {
                data_storage_version: Some(FileVersion::V2_2),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .dataset;
    assert_eq!(format(&asked), "2.2");
    assert_eq!(file_versions(&asked.fragments().await.unwrap()), [(2, 2)]);
    // appends after it write the table's new version
    let appended = asked
        .append(lancet::batches(vec![rows(7, 3)]))
        .await
        .unwrap()
        .dataset;
    assert_eq!(
        file_versions(&appended.fragments().await.unwrap()),
        [(2, 2), (2, 2)]
    );
    assert_eq!(appended.num_rows(), Some(10));
}

/// A struct column has no column of its own in files of 2.1 and later, and its DataFile
/// lists only the child: appends, updates and merges onto such a table are judged by what
/// the file stores (they were refused as `DataFileFields` before).
#[tokio::test]
async fn tables_with_struct_columns_take_appends_and_updates() {
    let child = Field::new("a", DataType::Int64, true);
    let schema: SchemaRef = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Struct(vec![child.clone()].into()), true),
    ]));
    let batch = |start: i64| {
        let ids = Int64Array::from_iter_values(start..start + 3);
        let s = arrow_array::StructArray::from(vec![(
            Arc::new(child.clone()),
            Arc::new(ids.clone()) as arrow_array::ArrayRef,
        )]);
        RecordBatch::try_new(schema.clone(), vec![Arc::new(ids), Arc::new(s)]).unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    for layout in [Layout::Flat, Layout::Tree] {
        let uri = dir.path().join(format!("{layout:?}"));
        let ds = Dataset::create(
            uri.to_str().unwrap(),
            schema.clone(),
            batches(vec![batch(0)]),
            CreateOptions {
                layout,
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .dataset;
        let listed = &ds.fragments().await.unwrap()[0].files[0].fields;
        assert_eq!(listed, &vec![0, 2], "the struct itself holds no column");
        let ds = ds.append(batches(vec![batch(3)])).await.unwrap().dataset;
        let ds = ds
            .update(&Filter::parse("id = 4").unwrap(), &[("id", "40")])
            .await
            .unwrap()
            .dataset;
        let all = scan(&ds, ScanOptions::default()).await;
        let mut ids = column_i64(&all, "id");
        ids.sort_unstable();
        assert_eq!(ids, [0, 1, 2, 3, 5, 40], "{layout:?}");
        ds.verify().await.unwrap();
    }
}

/// Lance's `drop_index`: every segment of the name removed in one CreateIndex, on flat and
/// tree tables; a name no index has is `IndexNotFound` (NotFound) with nothing published.
#[tokio::test]
async fn drop_index_removes_every_segment_or_publishes_nothing() {
    use lancet::proto::table::transaction::Operation;
    for layout in [Layout::Flat, Layout::Tree] {
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().to_str().unwrap();
        let options = CreateOptions {
            max_rows_per_file: 20,
            layout,
            ..Default::default()
        };
        let ds = Dataset::create(uri, schema(), batches(vec![rows(0, 60)]), options)
            .await
            .unwrap()
            .dataset;
        // two segments: one trained at creation's fragments, one over an appended fragment
        let ds = ds.build_btree("id", 16).await.unwrap().dataset;
        let ds = ds
            .append(batches(vec![rows(60, 70)]))
            .await
            .unwrap()
            .dataset;
        let ds = ds
            .optimize()
            .optimize_indices(&Default::default())
            .await
            .unwrap()
            .dataset;
        let segments = ds.storage().indices().to_vec();
        assert_eq!(segments.len(), 2, "{segments:?}");

        let before = listing(dir.path());
        let err = ds.storage().drop_index("nope").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
        assert!(matches!(err, lancet::Error::IndexNotFound { .. }), "{err}");
        assert_eq!(listing(dir.path()), before);

        let dropped = ds.storage().drop_index("id_idx").await.unwrap().dataset;
        assert_eq!(dropped.version(), ds.version() + 1);
        assert!(dropped.storage().indices().is_empty());
        let recorded = dropped.storage().transaction().await.unwrap().unwrap();
        let Some(Operation::CreateIndex(op)) = recorded.transaction.operation else {
            panic!("a CreateIndex");
        };
        assert!(op.new_indices.is_empty());
        assert_eq!(op.removed_indices, segments);
        // the answers stay: read from the column now
        let found = dropped
            .search(&Filter::parse("id = 65").unwrap())
            .await
            .unwrap();
        assert_eq!(found.row_ids.len(), 1);
        let err = dropped.storage().drop_index("id_idx").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    }
}

/// Counts an old writer left unknown (physical rows, a deletion file's deleted rows) are read
/// from the files, once, for every caller of `fragments_with_known_rows` (the Python package's
/// fragments and statistics): as Lance 14.0.2's `physical_rows` and `count_deletions`.
#[tokio::test]
async fn counts_left_unknown_are_read_from_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().to_str().unwrap();
    let ds = table_at(uri, 30, 10).await;
    let ds = ds
        .delete(&Filter::parse("id < 3 OR id = 25").unwrap())
        .await
        .unwrap()
        .dataset;
    let known = ds.storage().fragments_with_known_rows().await.unwrap();
    legacy_version(&ds).await;
    let legacy = Dataset::open(uri).await.unwrap();
    assert!(legacy
        .storage()
        .manifest()
        .fragments
        .iter()
        .all(|f| f.physical_rows == 0));
    let read = legacy.storage().fragments_with_known_rows().await.unwrap();
    let counts = |fs: &[lancet::proto::table::DataFragment]| -> Vec<(u64, u64)> {
        fs.iter()
            .map(|f| {
                (
                    f.physical_rows,
                    f.deletion_file.as_ref().map_or(0, |d| d.num_deleted_rows),
                )
            })
            .collect()
    };
    assert_eq!(counts(&read), counts(&known));
    assert_eq!(counts(&read), [(10, 3), (10, 0), (10, 1)]);
}

/// A drop staged on an old version and committed after another writer's commit, as Lance
/// 14.0.2's conflict table judges it: over an append it lands (the appended rows kept); over
/// a concurrent drop of the same index it is idempotent; over an optimize that appended a
/// segment of the index it conflicts, with nothing published.
#[tokio::test]
async fn a_stale_drop_index_is_judged_against_what_landed_since() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().to_str().unwrap();
    let ds = table_at(uri, 40, 20).await;
    let base = ds.build_btree("id", 16).await.unwrap().dataset;

    // over an append: lands, the append's rows stay
    let appended = base
        .append(batches(vec![rows(40, 10)]))
        .await
        .unwrap()
        .dataset;
    let dropped = base.storage().drop_index("id_idx").await.unwrap().dataset;
    assert_eq!(dropped.version(), appended.version() + 1);
    assert!(dropped.storage().indices().is_empty());
    assert_eq!(dropped.num_rows(), Some(50));

    // over a concurrent drop of the same index: both land, the index is gone
    let rebuilt = dropped.build_btree("id", 16).await.unwrap().dataset;
    let first = rebuilt
        .storage()
        .drop_index("id_idx")
        .await
        .unwrap()
        .dataset;
    let second = rebuilt
        .storage()
        .drop_index("id_idx")
        .await
        .unwrap()
        .dataset;
    assert_eq!(second.version(), first.version() + 1);
    assert!(second.storage().indices().is_empty());

    // over an optimize that appended a segment: a conflict, nothing published
    let rebuilt = second.build_btree("id", 16).await.unwrap().dataset;
    let grown = rebuilt
        .append(batches(vec![rows(50, 10)]))
        .await
        .unwrap()
        .dataset;
    let optimized = grown
        .optimize()
        .optimize_indices(&Default::default())
        .await
        .unwrap()
        .dataset;
    assert_eq!(optimized.storage().indices().len(), 2);
    let before = listing(dir.path());
    let err = grown.storage().drop_index("id_idx").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert_eq!(listing(dir.path()), before);
}

/// Properties a writer gives (pylance's `commit_message` and `transaction_properties`) are
/// recorded in the transaction of the version each write publishes, on create, append,
/// overwrite and a committed operation; a write without any records none.
#[tokio::test]
async fn writes_record_their_transaction_properties() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("t");
    let props = |m: &str| {
        std::collections::BTreeMap::from([
            ("__lance_commit_message".to_string(), m.to_string()),
            ("k".to_string(), "v".to_string()),
        ])
    };
    let recorded = |ds: Dataset| async move {
        let stored = ds.storage().transaction().await.unwrap().unwrap();
        let mut props: Vec<(String, String)> = stored
            .transaction
            .transaction_properties
            .into_iter()
            .collect();
        props.sort();
        props
    };
    let ds = Dataset::create(
        uri.to_str().unwrap(),
        schema(),
        batches(vec![rows(0, 10)]),
        CreateOptions {
            transaction_properties: props("initial"),
            ..Default::default()
        },
    )
    .await
    .unwrap()
    .dataset;
    let first = recorded(ds.clone()).await;
    assert_eq!(first[0].1, "initial");
    assert_eq!(first[1], ("k".to_string(), "v".to_string()));
    let options = lancet::AppendOptions {
        transaction_properties: props("more"),
        ..Default::default()
    };
    let ds = (ds
        .append_with(lancet::batches(vec![rows(10, 5)]), &options)
        .await)
        .unwrap()
        .dataset;
    assert_eq!(recorded(ds.clone()).await[0].1, "more");
    let options = lancet::AppendOptions {
        transaction_properties: props("replaced"),
        ..Default::default()
    };
    let ds = (ds
        .overwrite(schema(), batches(vec![rows(0, 3)]), &options)
        .await)
        .unwrap()
        .dataset;
    assert_eq!(recorded(ds.clone()).await[0].1, "replaced");
    let written = ds
        .storage()
        .write_fragments(lancet::batches(vec![rows(3, 2)]), &Default::default())
        .await
        .unwrap();
    let append = lancet::proto::table::transaction::Append { fragments: written };
    let change =
        lancet::Change::new(lancet::Operation::Append(append)).with_properties(props("staged"));
    let ds = ds.commit(change).await.unwrap().dataset;
    assert_eq!(recorded(ds.clone()).await[0].1, "staged");
    assert_eq!(ds.num_rows(), Some(5));
    let ds = ds.append(batches(vec![rows(5, 1)])).await.unwrap().dataset;
    assert!(recorded(ds).await.is_empty());
}

/// A merge_insert source carrying some of the table's columns (Lance 14.0.2's partial-schema
/// merge): an updated row keeps its other columns, an inserted row reads NULL there; an
/// insert that would leave a non-nullable column NULL is refused typed, nothing published.
#[tokio::test]
async fn a_merge_of_some_columns_keeps_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().to_str().unwrap();
    let ds = Dataset::create(
        uri,
        schema(),
        batches(vec![rows(0, 10)]),
        Default::default(),
    )
    .await
    .unwrap()
    .dataset;
    let part = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Float64, true),
        Field::new("id", DataType::Int64, false),
    ]));
    let source = RecordBatch::try_new(
        part.clone(),
        vec![
            Arc::new(Float64Array::from(vec![None, Some(-8.0), Some(-20.0)])),
            Arc::new(Int64Array::from(vec![3, 8, 20])),
        ],
    )
    .unwrap();
    let merged = ds
        .merge_insert(&["id"])
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(batches(vec![source]))
        .await
        .unwrap();
    let stats = merged.merged.unwrap();
    assert_eq!((stats.updated_rows, stats.inserted_rows), (2, 1));
    let got = scan(&merged.dataset, ScanOptions::default()).await;
    let mut seen: Vec<(i64, Option<f64>, Option<String>)> = (0..got.num_rows())
        .map(|i| {
            let x = got.column(1).as_primitive::<Float64Type>();
            let s = got.column(2).as_string::<i32>();
            (
                column_i64(&got, "id")[i],
                x.is_valid(i).then(|| x.value(i)),
                s.is_valid(i).then(|| s.value(i).to_string()),
            )
        })
        .collect();
    seen.sort_by_key(|r| r.0);
    assert_eq!(seen.len(), 11);
    assert_eq!(seen[3], (3, None, Some("s3".into())));
    assert_eq!(seen[8], (8, Some(-8.0), Some("s8".into())));
    assert_eq!(seen[10], (20, Some(-20.0), None));
    assert_eq!(seen[4], (4, Some(4.0), Some("s4".into())));
    merged.dataset.verify().await.unwrap();
    // `id` cannot be NULL: a source without it inserting rows is refused
    let before = listing(dir.path());
    let no_id = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let source = RecordBatch::try_new(
        no_id,
        vec![
            Arc::new(Float64Array::from(vec![1.0])),
            Arc::new(StringArray::from(vec!["k"])),
        ],
    )
    .unwrap();
    let e = (merged.dataset.merge_insert(&["s"]))
        .when_not_matched_insert_all()
        .execute(batches(vec![source]))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("\"id\""), "{e}");
    assert_eq!(listing(dir.path()), before);
}

/// `optimize_indices` merges the newest `merge` segments with the rows no segment covers
/// (Lance's `num_indices_to_merge`): 0 adds a segment, 2 folds the newest two and the new
/// rows into one and keeps the oldest, `usize::MAX` leaves one segment; every search answers
/// as a scan does.
#[tokio::test]
async fn optimize_merges_the_newest_segments_it_is_asked_to() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().to_str().unwrap();
    let mut ds = Dataset::create(
        uri,
        schema(),
        batches(vec![rows(0, 10)]),
        Default::default(),
    )
    .await
    .unwrap()
    .dataset;
    ds = ds.build_btree("id", 4).await.unwrap().dataset;
    let segments = |ds: &Dataset| ds.storage().btree_indices()[0].1.len();
    let optimize = |ds: Dataset, merge: usize| async move {
        let options = lancet::OptimizeOptions { merge };
        let next = ds.optimize().optimize_indices(&options).await.unwrap();
        next.dataset
    };
    for (start, merge, want) in [
        (10, 0, 2),
        (20, 0, 3),
        (30, 2, 2),
        (40, 1, 2),
        (50, usize::MAX, 1),
    ] {
        ds = ds
            .append(batches(vec![rows(start, 10)]))
            .await
            .unwrap()
            .dataset;
        ds = optimize(ds, merge).await;
        assert_eq!(
            segments(&ds),
            want,
            "after the rows from {start}, merge {merge}"
        );
        let found = ds.search(&Filter::parse("id >= 5").unwrap()).await.unwrap();
        assert_eq!(found.row_ids.len(), start as u64 + 5, "merge {merge}");
        assert!(found.pages_read > 0);
    }
    ds.verify().await.unwrap();
}

/// `_rowid` and `_rowaddr` in filters, a scan of deleted rows, and take by position, on a
/// table with stable row ids (ids differ from addresses after an update) and one without.
#[tokio::test]
async fn row_columns_filter_deleted_rows_show_and_positions_take() {
    let dir = tempfile::tempdir().unwrap();
    for stable_row_ids in [false, true] {
        let uri = dir.path().join(format!("t{stable_row_ids}"));
        let ds = Dataset::create(
            uri.to_str().unwrap(),
            schema(),
            batches(vec![rows(0, 20)]),
            CreateOptions {
                stable_row_ids,
                max_rows_per_file: 10,
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .dataset;
        let ds = ds
            .delete(&Filter::parse("id = 3 OR id = 12").unwrap())
            .await
            .unwrap()
            .dataset;
        let set = lancet::filter::parse_assignment("x = x + 0.5").unwrap();
        let ds = ds
            .update(&Filter::parse("id = 5").unwrap(), &[set])
            .await
            .unwrap()
            .dataset;
        // id 5 moved to a new fragment: its address changed, its stable id did not
        let moved = RecordBatchColumns::of(
            &scan(
                &ds,
                ScanOptions {
                    filter: Some(Filter::parse("_rowid = 5").unwrap()),
                    with_row_address: true,
                    ..Default::default()
                },
            )
            .await,
        );
        let want: Vec<i64> = if stable_row_ids { vec![5] } else { vec![] };
        assert_eq!(moved.ids, want, "stable row ids: {stable_row_ids}");
        let second = scan(
            &ds,
            ScanOptions {
                filter: Some(
                    Filter::parse("_rowaddr >= 4294967296 AND _rowaddr < 4294967299").unwrap(),
                ),
                ..Default::default()
            },
        )
        .await;
        assert_eq!(column_i64(&second, "id"), vec![10, 11]);
        // every physical row; deleted ones (3, 12 and 5's old copy) without row columns
        let all = scan(
            &ds,
            ScanOptions {
                include_deleted: true,
                with_row_id: true,
                with_row_address: true,
                ..Default::default()
            },
        )
        .await;
        assert_eq!(all.num_rows(), 21);
        let hidden = scan(
            &ds,
            ScanOptions {
                include_deleted: true,
                with_row_id: true,
                filter: Some(Filter::parse("_rowid IS NULL").unwrap()),
                ..Default::default()
            },
        )
        .await;
        assert_eq!(column_i64(&hidden, "id"), vec![3, 5, 12]);
        assert_eq!(hidden.column_by_name("_rowid").unwrap().null_count(), 3);
        let err = ds
            .scan(ScanOptions {
                include_deleted: true,
                ..Default::default()
            })
            .await
            .err()
            .unwrap();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        // positions count live rows in scan order: 0..18 skip 3 and 12, 5 comes last
        let taken = ds
            .storage()
            .take_rows(RowsAt::Positions(&[0, 3, 9, 10, 17, 3]), None)
            .await
            .unwrap();
        assert_eq!(column_i64(&taken, "id"), vec![0, 4, 11, 13, 5, 4]);
        let err = ds
            .storage()
            .take_rows(RowsAt::Positions(&[18]), None)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    }
}

/// `_row_created_at_version` and `_row_last_updated_at_version` as columns and in filters,
/// on flat and tree tables with stable row ids: an appended row was created at the append's
/// version, an updated row last updated at the update's; columns come after `_rowid` in
/// Lance's order.
#[tokio::test]
async fn row_version_columns_show_when_rows_were_created_and_updated() {
    let dir = tempfile::tempdir().unwrap();
    for layout in [Layout::Flat, Layout::Tree] {
        let uri = dir.path().join(format!("{layout:?}"));
        let ds = Dataset::create(
            uri.to_str().unwrap(),
            schema(),
            batches(vec![rows(0, 10)]),
            CreateOptions {
                stable_row_ids: true,
                layout,
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .dataset;
        let ds = ds
            .append(batches(vec![rows(10, 15)]))
            .await
            .unwrap()
            .dataset;
        let set = lancet::filter::parse_assignment("x = x + 0.5").unwrap();
        let ds = ds
            .update(&Filter::parse("id = 2 OR id = 12").unwrap(), &[set])
            .await
            .unwrap()
            .dataset;
        let versions = |filter: &str| {
            let ds = ds.clone();
            let filter = Filter::parse(filter).unwrap();
            async move {
                let b = scan(
                    &ds,
                    ScanOptions {
                        columns: Some(vec!["id".into()]),
                        filter: Some(filter),
                        with_row_id: true,
                        with_row_created_at_version: true,
                        with_row_last_updated_at_version: true,
                        ..Default::default()
                    },
                )
                .await;
                let names: Vec<String> = b
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| f.name().clone())
                    .collect();
                assert_eq!(
                    names,
                    [
                        "id",
                        "_rowid",
                        "_row_last_updated_at_version",
                        "_row_created_at_version"
                    ]
                );
                let u64s = |name: &str| {
                    b.column_by_name(name)
                        .unwrap()
                        .as_primitive::<arrow_array::types::UInt64Type>()
                        .values()
                        .to_vec()
                };
                let mut rows: Vec<(i64, u64, u64)> = column_i64(&b, "id")
                    .into_iter()
                    .zip(u64s("_row_created_at_version"))
                    .zip(u64s("_row_last_updated_at_version"))
                    .map(|((id, c), u)| (id, c, u))
                    .collect();
                rows.sort();
                rows
            }
        };
        assert_eq!(
            versions("_row_last_updated_at_version = 3").await,
            vec![(2, 1, 3), (12, 2, 3)],
            "{layout:?}"
        );
        assert_eq!(
            versions("_row_created_at_version = 2 AND id < 12").await,
            vec![(10, 2, 2), (11, 2, 2)],
            "{layout:?}"
        );
    }
}

struct RecordBatchColumns {
    ids: Vec<i64>,
}

impl RecordBatchColumns {
    fn of(b: &RecordBatch) -> Self {
        RecordBatchColumns {
            ids: column_i64(b, "id"),
        }
    }
}
