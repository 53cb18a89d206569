//! The distributed pieces an engine (the Python package, Ray) drives: fragments written for
//! a table not yet created and committed once, scans of chosen fragments with read counts,
//! BTree segments trained apart and committed as one index, and a backfill's column files
//! written per fragment and published by DataReplacement. Each refusal is typed and leaves
//! the table unchanged.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::TryStreamExt;
use lancet::{CreateOptions, Dataset, ErrorKind, Filter, Layout, ScanMetrics, ScanOptions};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Utf8, true),
    ]))
}

fn rows(start: i64, n: i64) -> RecordBatch {
    let ids: Vec<i64> = (start..start + n).collect();
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("s{i}")),
            )),
        ],
    )
    .unwrap()
}

fn stream(b: RecordBatch) -> impl futures::Stream<Item = lancet::Result<RecordBatch>> {
    futures::stream::iter([Ok(b)])
}

fn files(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

async fn table(dir: &std::path::Path, layout: Layout) -> Dataset {
    let options = CreateOptions {
        max_rows_per_file: 100,
        layout,
        ..Default::default()
    };
    Dataset::create(
        dir.to_str().unwrap(),
        schema(),
        stream(rows(0, 1000)),
        options,
    )
    .await
    .unwrap()
    .dataset
}

async fn ids(ds: &Dataset, options: ScanOptions) -> Vec<i64> {
    let got: Vec<RecordBatch> = ds.scan(options).await.unwrap().try_collect().await.unwrap();
    got.iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect()
}

#[tokio::test]
async fn fragments_written_apart_create_a_table_in_one_commit() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("t");
    let uri = uri.to_str().unwrap();
    let options = CreateOptions {
        layout: Layout::Tree,
        ..Default::default()
    };
    let mut written = Vec::new();
    for start in [0, 10, 20] {
        let part =
            lancet::write_new_fragments(uri, schema(), stream(rows(start, 10)), options.clone())
                .await
                .unwrap();
        written.extend(part);
    }
    let ds = lancet::create_from_fragments(uri, schema(), written.clone(), options.clone())
        .await
        .unwrap()
        .dataset;
    assert_eq!(ds.version(), 1);
    assert!(ds.storage().tree().is_some());
    let mut got = ids(&ds, ScanOptions::default()).await;
    got.sort();
    assert_eq!(got, (0..30).collect::<Vec<_>>());
    // a location holding a table is refused, before anything is written
    let before = files(std::path::Path::new(uri));
    let e = lancet::write_new_fragments(uri, schema(), stream(rows(0, 5)), options.clone())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = lancet::create_from_fragments(uri, schema(), written, options)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert_eq!(files(std::path::Path::new(uri)), before);
}

#[tokio::test]
async fn a_scan_of_chosen_fragments_reads_them_alone_and_counts_what_it_read() {
    for layout in [Layout::Flat, Layout::Tree] {
        let dir = tempfile::tempdir().unwrap();
        let ds = table(dir.path(), layout).await;
        let ds = ds
            .delete(&Filter::parse("id % 10 = 0").unwrap())
            .await
            .unwrap()
            .dataset;
        let ds = ds.build_btree("id", 64).await.unwrap().dataset;
        let metrics = Arc::new(ScanMetrics::default());
        let got = ids(
            &ds,
            ScanOptions {
                fragments: Some(vec![3, 1]),
                metrics: Some(metrics.clone()),
                ..Default::default()
            },
        )
        .await;
        let want: Vec<i64> = (100..200).chain(300..400).filter(|i| i % 10 != 0).collect();
        assert_eq!(got, want);
        assert_eq!(metrics.fragments_read(), 2);
        // a filter over chosen fragments: the index answers, only matching fragments read
        let metrics = Arc::new(ScanMetrics::default());
        let got = ids(
            &ds,
            ScanOptions {
                fragments: Some(vec![3, 4]),
                filter: Some(Filter::parse("id = 345 OR id = 123").unwrap()),
                metrics: Some(metrics.clone()),
                ..Default::default()
            },
        )
        .await;
        assert_eq!(got, vec![345]);
        assert_eq!(
            (metrics.scanned_fragments(), metrics.fragments_read()),
            (0, 1)
        );
        assert!(metrics.pages_read() > 0);
        let answered = |m: &ScanMetrics| -> Vec<(String, Vec<u32>)> {
            m.indexed_fragments()
                .into_iter()
                .map(|(name, f)| (name, f.iter().collect()))
                .collect()
        };
        assert_eq!(answered(&metrics), vec![("id_idx".to_string(), vec![3, 4])]);
        // the same search again, its pages cached: still said to be answered by the index
        let again = Arc::new(ScanMetrics::default());
        let search = ScanOptions {
            fragments: Some(vec![3, 4]),
            filter: Some(Filter::parse("id = 345 OR id = 123").unwrap()),
            metrics: Some(again.clone()),
            ..Default::default()
        };
        assert_eq!(ids(&ds, search).await, vec![345]);
        assert_eq!(answered(&again), answered(&metrics));
        let found = ds
            .search(&Filter::parse("id < 150").unwrap())
            .await
            .unwrap();
        assert_eq!(found.indexed.keys().collect::<Vec<_>>(), ["id_idx"]);
        // without an index, a filter reads only the chosen fragments' column
        let metrics = Arc::new(ScanMetrics::default());
        let got = ids(
            &ds,
            ScanOptions {
                fragments: Some(vec![3, 4]),
                filter: Some(Filter::parse("s = 's345'").unwrap()),
                metrics: Some(metrics.clone()),
                ..Default::default()
            },
        )
        .await;
        assert_eq!(got, vec![345]);
        assert_eq!(metrics.scanned_fragments(), 2);
        assert!(metrics.indexed_fragments().is_empty(), "no index on s");
        // a fragment the version does not have is refused
        let e = ds
            .scan(ScanOptions {
                fragments: Some(vec![99]),
                ..Default::default()
            })
            .await
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }
}

#[tokio::test]
async fn btree_segments_trained_apart_answer_as_one_index() {
    let dir = tempfile::tempdir().unwrap();
    let ds = table(dir.path(), Layout::Tree).await;
    let a = ds
        .storage()
        .train_btree_segment("id", Some(&[0, 2, 4, 6, 8]), 64)
        .await
        .unwrap();
    let b = ds
        .storage()
        .train_btree_segment("id", Some(&[1, 3, 5, 7, 9]), 64)
        .await
        .unwrap();
    let c = ds
        .storage()
        .train_btree_segment("s", Some(&[1]), 64)
        .await
        .unwrap();
    let before = files(dir.path());
    // refused: overlapping segments, another column's segment, none
    for (segments, column) in [
        (vec![a.clone(), a.clone()], "id"),
        (vec![a.clone(), c], "id"),
        (vec![], "id"),
        (vec![a.clone()], "nope"),
    ] {
        let e = ds
            .storage()
            .commit_btree_segments(column, segments)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    }
    assert_eq!(files(dir.path()), before);
    assert_eq!(
        Dataset::open(dir.path().to_str().unwrap())
            .await
            .unwrap()
            .version(),
        1
    );

    let ds = ds
        .storage()
        .commit_btree_segments("id", vec![a, b])
        .await
        .unwrap()
        .dataset;
    let summary = ds.storage().index_summaries().unwrap();
    assert_eq!((summary.len(), summary[0].segments), (1, 2));
    assert_eq!(summary[0].fragments.len(), 10);
    // every row of the ten fragments, the two segments together
    let rows = ds.storage().rows_indexed("id_idx").await.unwrap();
    assert_eq!(Some(rows), ds.num_rows());
    let found = ds
        .search(&Filter::parse("id IN (5, 555, 999)").unwrap())
        .await
        .unwrap();
    assert_eq!(found.row_ids.len(), 3);
    assert_eq!(found.scanned_fragments, 0);
}

#[tokio::test]
async fn a_backfill_writes_column_files_per_fragment_and_publishes_them() {
    let dir = tempfile::tempdir().unwrap();
    let ds = table(dir.path(), Layout::Tree).await;
    let twice = Field::new("twice", DataType::Int64, true);
    // refused: a name the table has, a non-nullable field; nothing published
    for bad in [
        Field::new("id", DataType::Int64, true),
        Field::new("other", DataType::Int64, false),
    ] {
        let e = ds.storage().add_null_columns(&[bad]).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }
    let ds = ds
        .storage()
        .add_null_columns(std::slice::from_ref(&twice))
        .await
        .unwrap()
        .dataset;
    assert_eq!(ds.version(), 2);
    assert_eq!(
        ds.storage()
            .unfilled_fragments("twice")
            .await
            .unwrap()
            .len(),
        10
    );

    let column = |n: i64, start: i64| -> RecordBatch {
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![twice.clone()])),
            vec![Arc::new(Int64Array::from_iter_values(
                (start..start + n).map(|i| i * 2),
            ))],
        )
        .unwrap()
    };
    let rows0 = ds
        .storage()
        .fragment_rows(0, Some(&["id".to_string()]))
        .await
        .unwrap();
    assert_eq!(rows0.num_rows(), 100);
    let before = files(dir.path());
    // refused before writing: a row count other than the fragment's, an unknown column, a
    // column of another type
    let wrong_type = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("twice", DataType::Utf8, true)])),
        vec![Arc::new(StringArray::from_iter_values(
            (0..100).map(|i| i.to_string()),
        ))],
    )
    .unwrap();
    let unknown = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("nope", DataType::Int64, true)])),
        vec![Arc::new(Int64Array::from_iter_values(0..100))],
    )
    .unwrap();
    for bad in [column(99, 0), wrong_type, unknown] {
        let e = ds.storage().write_column_file(0, bad).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }
    let e = ds
        .storage()
        .write_column_file(42, column(100, 0))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert_eq!(files(dir.path()), before);

    let mut written = Vec::new();
    for f in 0..4u64 {
        let file = ds
            .storage()
            .write_column_file(f, column(100, f as i64 * 100))
            .await
            .unwrap();
        written.push((f, file));
    }
    let ds = ds
        .storage()
        .replace_data_files(&written)
        .await
        .unwrap()
        .dataset;
    assert_eq!(
        ds.storage().unfilled_fragments("twice").await.unwrap(),
        vec![4, 5, 6, 7, 8, 9]
    );
    let got: Vec<RecordBatch> = ds
        .scan(ScanOptions {
            columns: Some(vec!["id".into(), "twice".into()]),
            filter: Some(Filter::parse("id = 321 OR id = 777").unwrap()),
            ..Default::default()
        })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let twice_values: Vec<Option<i64>> = got
        .iter()
        .flat_map(|b| {
            b.column(1)
                .as_primitive::<Int64Type>()
                .iter()
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(twice_values, vec![Some(642), None]); // fragment 7 not backfilled yet
    ds.storage().verify_data().await.unwrap();
}

#[tokio::test]
async fn an_empty_table_gets_an_empty_btree_as_lance_builds_one() {
    let dir = tempfile::tempdir().unwrap();
    let ds = table(dir.path(), Layout::Flat).await;
    let ds = ds.storage().truncate().await.unwrap().dataset;
    let ds = ds.build_btree("id", 64).await.unwrap().dataset;
    let summary = ds.storage().index_summaries().unwrap();
    assert_eq!((summary.len(), summary[0].fragments.len()), (1, 0));
    let found = ds.search(&Filter::parse("id = 5").unwrap()).await.unwrap();
    assert!(found.row_ids.is_empty());
    ds.storage().verify_data().await.unwrap();
    // rows appended later are found (by scan until the index is optimized over them)
    let ds = ds.append(stream(rows(5000, 10))).await.unwrap().dataset;
    let found = ds
        .search(&Filter::parse("id = 5003").unwrap())
        .await
        .unwrap();
    assert_eq!(found.row_ids.len(), 1);
    let ds = ds
        .optimize()
        .optimize_indices(&Default::default())
        .await
        .unwrap()
        .dataset;
    let found = ds
        .search(&Filter::parse("id = 5003").unwrap())
        .await
        .unwrap();
    assert_eq!((found.row_ids.len(), found.scanned_fragments), (1, 0));
}

/// Issue 41, item 2: segments trained on an older version are judged against every version
/// published since their training when committed through a newer handle: one that rewrote
/// the indexed column of a fragment they cover is a retryable conflict (the segments hold the
/// old values), nothing published; an append since lands, its fragment left to scans.
#[tokio::test]
async fn segments_trained_on_an_old_version_meet_what_changed_since() {
    let dir = tempfile::tempdir().unwrap();
    let ds = table(dir.path(), Layout::Flat).await;
    let trained = ds
        .storage()
        .train_btree_segment("id", None, 64)
        .await
        .unwrap();
    // an append since: the segment lands over it, exact answers either way
    let appended = ds.append(stream(rows(1000, 100))).await.unwrap().dataset;
    let ok = appended
        .storage()
        .commit_btree_segments("id", vec![trained.clone()])
        .await
        .unwrap()
        .dataset;
    let found = ok
        .search(&Filter::parse("id IN (5, 1050)").unwrap())
        .await
        .unwrap();
    assert_eq!(found.row_ids.len(), 2);
    assert_eq!(
        found.scanned_fragments, 1,
        "the appended fragment is scanned"
    );

    // the indexed column of fragment 0 rewritten in place since the training
    let dir = tempfile::tempdir().unwrap();
    let ds = table(dir.path(), Layout::Flat).await;
    let trained = ds
        .storage()
        .train_btree_segment("id", None, 64)
        .await
        .unwrap();
    // (a DataReplacement puts a file in place of one holding the same fields: both columns)
    let old = ds.storage().fragment_rows(0, None).await.unwrap();
    let shifted: Int64Array = old
        .column(0)
        .as_primitive::<Int64Type>()
        .iter()
        .map(|v| v.map(|v| v + 10_000))
        .collect();
    let batch =
        RecordBatch::try_new(schema(), vec![Arc::new(shifted), old.column(1).clone()]).unwrap();
    let file = ds.storage().write_column_file(0, batch).await.unwrap();
    let replaced = ds
        .storage()
        .replace_data_files(&[(0, file)])
        .await
        .unwrap()
        .dataset;
    let err = replaced
        .storage()
        .commit_btree_segments("id", vec![trained])
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            lancet::Error::CommitConflict {
                retryable: true,
                ..
            }
        ),
        "{err}"
    );
    let latest = Dataset::open(dir.path().to_str().unwrap()).await.unwrap();
    assert_eq!(latest.version(), replaced.version(), "nothing published");
    assert!(latest.storage().indices().is_empty());
    // trained again on the latest version, it answers the new values
    let again = latest
        .storage()
        .train_btree_segment("id", None, 64)
        .await
        .unwrap();
    let built = latest
        .storage()
        .commit_btree_segments("id", vec![again])
        .await
        .unwrap()
        .dataset;
    let found = built
        .search(&Filter::parse("id = 10005 OR id = 5").unwrap())
        .await
        .unwrap();
    assert_eq!(found.row_ids.len(), 1);
}

/// An index's segment answers only on the fragments its own bitmap names: after the
/// indexed column of a fragment is rewritten in place (the fragment withdrawn from the
/// segment) and a new segment indexes the new values, the old segment's entries there are
/// stale and no search answers them (a difftest finding: `update_columns` then
/// `optimize_indices` answered a value the row no longer held).
#[tokio::test]
async fn a_segment_answers_only_on_its_own_fragments() {
    for stable in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let options = CreateOptions {
            max_rows_per_file: 100,
            stable_row_ids: stable,
            ..Default::default()
        };
        let ds = Dataset::create(
            dir.path().to_str().unwrap(),
            schema(),
            stream(rows(0, 300)),
            options,
        )
        .await
        .unwrap()
        .dataset;
        let ds = ds.build_btree("id", 16).await.unwrap().dataset;
        // fragment 0's ids shifted by 10,000 in place: the index no longer covers it
        let old = ds.storage().fragment_rows(0, None).await.unwrap();
        let shifted: Int64Array = (old.column(0).as_primitive::<Int64Type>().iter())
            .map(|v| v.map(|v| v + 10_000))
            .collect();
        let batch =
            RecordBatch::try_new(schema(), vec![Arc::new(shifted), old.column(1).clone()]).unwrap();
        let file = ds.storage().write_column_file(0, batch).await.unwrap();
        let ds = ds
            .storage()
            .replace_data_files(&[(0, file)])
            .await
            .unwrap()
            .dataset;
        let covered = ds.storage().index_summaries().unwrap()[0].fragments.clone();
        assert_eq!(
            covered.iter().collect::<Vec<_>>(),
            [1, 2],
            "stable {stable}"
        );
        // a new segment for fragment 0, the old one kept (no merge)
        let options = lancet::OptimizeOptions { merge: 0 };
        let ds = ds
            .optimize()
            .optimize_indices(&options)
            .await
            .unwrap()
            .dataset;
        assert_eq!(ds.storage().index_summaries().unwrap()[0].segments, 2);
        for (filter, want) in [
            ("id = 5", vec![]),
            ("id = 10005", vec![5]),
            ("id < 3", vec![]),
        ] {
            let found = ds.search(&Filter::parse(filter).unwrap()).await.unwrap();
            assert_eq!(
                found.row_ids.iter().collect::<Vec<_>>(),
                want,
                "{filter}, stable {stable}"
            );
            assert_eq!(
                found.scanned_fragments, 0,
                "the index answers every fragment"
            );
        }
    }
}
