//! Compaction racing other writers: a compaction planned and executed on one version and
//! committed after others committed rebases over what does not touch its fragments, and
//! fails with a typed conflict over what does; no row is lost or duplicated either way.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::TryStreamExt;
use lancet::{CompactionOptions, CreateOptions, Dataset, ErrorKind, Filter, ScanOptions};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]))
}

fn rows(start: i64, n: i64) -> RecordBatch {
    RecordBatch::try_new(
        schema(),
        vec![Arc::new(Int64Array::from_iter_values(start..start + n))],
    )
    .unwrap()
}

fn batches(list: Vec<RecordBatch>) -> impl futures::Stream<Item = lancet::Result<RecordBatch>> {
    futures::stream::iter(list.into_iter().map(Ok))
}

async fn ids(ds: &Dataset) -> Vec<i64> {
    let got: Vec<RecordBatch> = ds
        .scan(ScanOptions::default())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut out: Vec<i64> = got
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    out.sort_unstable();
    out
}

/// Eight fragments of 100 rows (`stable`: with stable row ids), a BTree on `id`.
async fn table(dir: &std::path::Path, stable: bool) -> Dataset {
    let ds = Dataset::create(
        dir.to_str().unwrap(),
        schema(),
        batches(vec![rows(0, 800)]),
        CreateOptions {
            stable_row_ids: stable,
            max_rows_per_file: 100,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    ds.build_btree("id", 64).await.unwrap()
}

fn options() -> CompactionOptions {
    CompactionOptions {
        target_rows_per_fragment: 400,
        ..Default::default()
    }
}

#[tokio::test]
async fn a_compaction_rebases_over_appends_and_deletes_elsewhere() {
    for stable in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let ds = table(dir.path(), stable).await;
        let tasks = ds.plan_compaction(&options()).await.unwrap();
        assert_eq!(tasks.len(), 2);
        let mut results = Vec::new();
        for t in &tasks {
            results.push(ds.execute_compaction(t).await.unwrap());
        }
        // meanwhile: an append, and a delete in a fragment no task rewrites... there is none
        // here, so delete in the appended fragment
        let appended = ds
            .append(batches(vec![rows(800, 50)]))
            .await
            .unwrap()
            .dataset;
        let deleted = appended
            .delete(&Filter::parse("id >= 840").unwrap())
            .await
            .unwrap()
            .committed
            .dataset;
        let compacted = ds.commit_compaction(&results).await.unwrap();
        let latest = compacted.committed.unwrap().dataset;
        assert_eq!(latest.version(), deleted.version() + 1);
        let want: Vec<i64> = (0..840).collect();
        assert_eq!(ids(&latest).await, want, "stable={stable}");
        assert_eq!(latest.fragments().await.unwrap().len(), 3);
        latest.verify_data().await.unwrap();
        // the remapped index still answers, the appended fragment scanned
        let found = latest
            .search(&Filter::parse("id = 5 OR id = 820").unwrap())
            .await
            .unwrap();
        assert_eq!(found.row_ids.len(), 2);
    }
}

#[tokio::test]
async fn a_compaction_over_a_delete_of_its_rows_is_a_typed_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let ds = table(dir.path(), true).await;
    let tasks = ds.plan_compaction(&options()).await.unwrap();
    let mut results = Vec::new();
    for t in &tasks {
        results.push(ds.execute_compaction(t).await.unwrap());
    }
    // a delete of rows the compaction already copied
    let deleted = ds
        .delete(&Filter::parse("id < 10").unwrap())
        .await
        .unwrap()
        .committed
        .dataset;
    let err = ds.commit_compaction(&results).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
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
    // nothing was published: the deleted rows stay deleted
    let latest = Dataset::open(dir.path().to_str().unwrap()).await.unwrap();
    assert_eq!(latest.version(), deleted.version());
    assert_eq!(ids(&latest).await, (10..800).collect::<Vec<i64>>());
    // planned again on the latest version, it lands
    let again = latest.compact(&options()).await.unwrap();
    let compacted = again.committed.unwrap().dataset;
    assert_eq!(ids(&compacted).await, (10..800).collect::<Vec<i64>>());
}
