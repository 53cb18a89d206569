//! Row operations on a stale handle: a delete, update or merge_insert planned on version V
//! whose rows another writer changed since is planned again on the latest version (Lance
//! 14.0.2's `execute_with_retry`), and refused typed, with nothing published, when its retries
//! are spent.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::TryStreamExt;
use lancet::{CreateOptions, Dataset, Error, ErrorKind, Filter, ScanOptions};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Int64, false),
    ]))
}

fn rows(ids: &[i64], v: impl Fn(i64) -> i64) -> RecordBatch {
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(ids.to_vec())),
            Arc::new(Int64Array::from_iter_values(ids.iter().map(|i| v(*i)))),
        ],
    )
    .unwrap()
}

/// One fragment of 100 rows, `v = id`.
async fn table(dir: &std::path::Path) -> Dataset {
    let ids: Vec<i64> = (0..100).collect();
    let uri = dir.join("t");
    let batches = futures::stream::iter([Ok(rows(&ids, |i| i))]);
    Dataset::create(
        uri.to_str().unwrap(),
        schema(),
        batches,
        CreateOptions::default(),
    )
    .await
    .unwrap()
    .dataset
}

async fn contents(ds: &Dataset) -> BTreeMap<i64, i64> {
    let latest = Dataset::open(ds.uri()).await.unwrap();
    let batches: Vec<RecordBatch> = latest
        .scan(ScanOptions::default())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut out = BTreeMap::new();
    for b in batches {
        let id = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
        let v = b.column_by_name("v").unwrap().as_primitive::<Int64Type>();
        out.extend(id.values().iter().copied().zip(v.values().iter().copied()));
    }
    out
}

fn filter(text: &str) -> Filter {
    Filter::parse(text).unwrap()
}

#[tokio::test]
async fn a_stale_update_after_a_delete_of_its_fragment_is_planned_again_on_the_latest() {
    let dir = tempfile::tempdir().unwrap();
    let stale = table(dir.path()).await;
    // another writer deletes rows of the one fragment the update reads
    let deleted = stale.delete(&filter("id % 4 = 0")).await.unwrap().dataset;
    let done = stale
        .update(&filter("id % 2 = 0"), &["v = v + 1000"])
        .await
        .unwrap();
    assert_eq!(done.version(), deleted.version() + 1);
    assert!(done.attempts >= 2, "planned once only: {}", done.attempts);
    // the rows the delete removed stay removed; the update touched the rest of its rows
    assert_eq!(done.rows, 25);
    let want: BTreeMap<i64, i64> = (0..100)
        .filter(|i| i % 4 != 0)
        .map(|i| (i, if i % 2 == 0 { i + 1000 } else { i }))
        .collect();
    assert_eq!(contents(&done.dataset).await, want);
}

#[tokio::test]
async fn a_stale_delete_after_an_update_answers_its_filter_on_the_latest_rows() {
    let dir = tempfile::tempdir().unwrap();
    let stale = table(dir.path()).await;
    // another writer moves rows 0..10 (v = v + 500) into a new fragment
    stale
        .update(&filter("id < 10"), &["v = v + 500"])
        .await
        .unwrap();
    // at V the delete's rows are addresses of fragment 0 the update deleted; on the latest
    // version they are rows of the update's new fragment
    let done = stale.delete(&filter("id < 5")).await.unwrap();
    assert_eq!(done.rows, 5);
    assert!(done.attempts >= 2, "planned once only: {}", done.attempts);
    let want: BTreeMap<i64, i64> = (5..100)
        .map(|i| (i, if i < 10 { i + 500 } else { i }))
        .collect();
    assert_eq!(contents(&done.dataset).await, want);
    // a filter nothing matched at V touches no fragment: it lands as it was planned, as
    // Lance's does (rows matching only on the latest version stay)
    let nothing = stale.delete(&filter("v >= 500")).await.unwrap();
    assert_eq!(nothing.rows, 0);
    assert_eq!(contents(&nothing.dataset).await, want);
}

#[tokio::test]
async fn a_merge_insert_with_no_retries_left_is_refused_and_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let stale = table(dir.path()).await;
    let updated = stale
        .update(&filter("id < 10"), &["v = v + 500"])
        .await
        .unwrap()
        .dataset;
    let before = contents(&updated).await;
    let err = stale
        .merge_insert(&["id"])
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .conflict_retries(0)
        .execute(futures::stream::iter([Ok(rows(&[5, 200], |i| -i))]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert!(
        matches!(
            err,
            Error::CommitConflict {
                retryable: true,
                ..
            }
        ),
        "{err}"
    );
    let latest = Dataset::open(stale.uri()).await.unwrap();
    assert_eq!(latest.version(), updated.version());
    assert_eq!(contents(&latest).await, before);
    // with its retries it lands on the latest rows
    let done = stale
        .merge_insert(&["id"])
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(futures::stream::iter([Ok(rows(&[5, 200], |i| -i))]))
        .await
        .unwrap();
    let mut want = before;
    want.insert(5, -5);
    want.insert(200, -200);
    assert_eq!(contents(&done.dataset).await, want);
}
