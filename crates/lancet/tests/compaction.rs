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
    .unwrap()
    .dataset;
    ds.build_btree("id", 64).await.unwrap().dataset
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
        let tasks = ds.optimize().compaction().plan(&options()).await.unwrap();
        assert_eq!(tasks.len(), 2);
        let mut results = Vec::new();
        for t in &tasks {
            results.push(ds.optimize().compaction().execute(t).await.unwrap());
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
            .dataset;
        let compacted = ds.optimize().compaction().commit(&results).await.unwrap();
        let latest = compacted.dataset;
        assert_eq!(latest.version(), deleted.version() + 1);
        let want: Vec<i64> = (0..840).collect();
        assert_eq!(ids(&latest).await, want, "stable={stable}");
        assert_eq!(latest.fragments().await.unwrap().len(), 3);
        latest.storage().verify_data().await.unwrap();
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
    let tasks = ds.optimize().compaction().plan(&options()).await.unwrap();
    let mut results = Vec::new();
    for t in &tasks {
        results.push(ds.optimize().compaction().execute(t).await.unwrap());
    }
    // a delete of rows the compaction already copied
    let deleted = ds
        .delete(&Filter::parse("id < 10").unwrap())
        .await
        .unwrap()
        .dataset;
    let err = ds
        .optimize()
        .compaction()
        .commit(&results)
        .await
        .unwrap_err();
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
    let again = latest.optimize().compact(&options()).await.unwrap();
    let compacted = again.dataset;
    assert_eq!(ids(&compacted).await, (10..800).collect::<Vec<i64>>());
}

/// Issue 30, item 2: on a stable-row-id table a BTree with a legacy row-id segment
/// (`index_version` 0, as older Lance wrote them) is never extended with an address segment
/// beside it (refused as `IndexRowIdDomain`, nothing published); `optimize_indices` rebuilds
/// it into one address segment over every fragment, which answers exactly.
#[tokio::test]
async fn a_legacy_row_id_segment_is_rebuilt_never_mixed() {
    use lancet::proto::table::transaction::{CreateIndex, Operation};
    let dir = tempfile::tempdir().unwrap();
    let ds = table(dir.path(), true).await;
    // relabel the segment as a legacy (row-id) one
    let old = ds.storage().indices()[0].clone();
    let mut legacy = old.clone();
    legacy.index_version = Some(0);
    legacy.uuid = Some(lancet::proto::table::Uuid { uuid: vec![7; 16] });
    // (same files: the relabelled entry names the trained segment's directory by uuid, so
    // copy them under the new one)
    let hyphenated = |b: &[u8]| {
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        )
    };
    let from = dir
        .path()
        .join("_indices")
        .join(hyphenated(&old.uuid.as_ref().unwrap().uuid));
    let to = dir.path().join("_indices").join(hyphenated(&[7; 16]));
    std::fs::create_dir_all(&to).unwrap();
    for e in std::fs::read_dir(&from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
    let ds = ds
        .commit(Operation::CreateIndex(CreateIndex {
            new_indices: vec![legacy.clone()],
            removed_indices: vec![old.clone()],
        }))
        .await
        .unwrap()
        .dataset;
    let ds = ds
        .append(batches(vec![rows(800, 100)]))
        .await
        .unwrap()
        .dataset;
    // an address segment beside the legacy one is refused, nothing published
    let mut address = old.clone();
    address.uuid = Some(lancet::proto::table::Uuid { uuid: vec![9; 16] });
    let err = ds
        .commit(Operation::CreateIndex(CreateIndex {
            new_indices: vec![address],
            removed_indices: vec![],
        }))
        .await
        .unwrap_err();
    assert_eq!(
        err.invariant(),
        Some(lancet::Invariant::IndexRowIdDomain),
        "{err}"
    );
    let reopened = Dataset::open(dir.path().to_str().unwrap()).await.unwrap();
    assert_eq!(reopened.version(), ds.version());
    // optimize rebuilds one address segment over all nine fragments
    let optimized = ds
        .optimize()
        .optimize_indices(&Default::default())
        .await
        .unwrap()
        .dataset;
    let segments: Vec<_> = optimized.storage().indices().to_vec();
    assert_eq!(segments.len(), 1);
    assert_eq!(segments[0].index_version, Some(1));
    let covered = optimized
        .storage()
        .index_fragments(&segments[0])
        .unwrap()
        .unwrap();
    assert_eq!(covered.len(), 9);
    for f in ["id = 850", "id < 10", "id >= 795 AND id < 805"] {
        let filter = Filter::parse(f).unwrap();
        let answer = optimized.search(&filter).await.unwrap();
        assert_eq!(answer.scanned_fragments, 0, "{f}");
        let scanned: Vec<RecordBatch> = optimized
            .scan(ScanOptions {
                filter: Some(filter.clone()),
                with_row_id: true,
                ..Default::default()
            })
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let want: Vec<u64> = scanned
            .iter()
            .flat_map(|b| {
                b.column_by_name("_rowid")
                    .unwrap()
                    .as_primitive::<arrow_array::types::UInt64Type>()
                    .values()
                    .to_vec()
            })
            .collect();
        let mut want = want;
        want.sort_unstable();
        assert_eq!(answer.row_ids.iter().collect::<Vec<_>>(), want, "{f}");
    }
}

/// Issue 41, item 1: a compaction planned and executed before another writer dropped the
/// index it remaps does not bring that index back when it commits (its remap was made from
/// values the table no longer indexes), as Lance 14.0.2 skips remapped indexes whose uuid is
/// gone.
#[tokio::test]
async fn a_compaction_does_not_bring_back_an_index_dropped_meanwhile() {
    use lancet::proto::table::transaction::{CreateIndex, Operation};
    for stable in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let ds = table(dir.path(), stable).await;
        let tasks = ds.optimize().compaction().plan(&options()).await.unwrap();
        let mut results = Vec::new();
        for t in &tasks {
            results.push(ds.optimize().compaction().execute(t).await.unwrap());
        }
        // meanwhile the index is dropped (Lance's drop_index: a CreateIndex removing it)
        let dropped = ds
            .commit(Operation::CreateIndex(CreateIndex {
                new_indices: Vec::new(),
                removed_indices: ds.storage().indices().to_vec(),
            }))
            .await
            .unwrap()
            .dataset;
        assert!(dropped.storage().indices().is_empty());
        let compacted = ds
            .optimize()
            .compaction()
            .commit(&results)
            .await
            .unwrap()
            .dataset;
        assert_eq!(compacted.version(), dropped.version() + 1);
        assert!(
            compacted.storage().indices().is_empty(),
            "stable={stable}: {:?}",
            compacted.storage().indices()
        );
        assert_eq!(ids(&compacted).await, (0..800).collect::<Vec<i64>>());
        let found = compacted
            .search(&Filter::parse("id = 5").unwrap())
            .await
            .unwrap();
        assert_eq!(found.row_ids.len(), 1);
        assert!(
            found.indexed.is_empty(),
            "no index answers: {:?}",
            found.indexed
        );
        compacted.storage().verify_data().await.unwrap();
    }
}

/// Issue 41, item 1: an index built meanwhile over fragments a compaction rewrites was not
/// remapped by it: the compaction's commit is a retryable conflict (Lance 14.0.2's
/// `check_rewrite_txn`), nothing is published, and the compaction planned again lands with
/// the new build remapped, never two builds of one index over one fragment.
#[tokio::test]
async fn a_compaction_over_an_index_rebuilt_meanwhile_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let ds = table(dir.path(), false).await;
    let tasks = ds.optimize().compaction().plan(&options()).await.unwrap();
    let mut results = Vec::new();
    for t in &tasks {
        results.push(ds.optimize().compaction().execute(t).await.unwrap());
    }
    let rebuilt = ds.build_btree("id", 64).await.unwrap().dataset;
    let segments = |d: &Dataset| d.storage().indices().to_vec();
    let before = segments(&rebuilt);
    let err = ds
        .optimize()
        .compaction()
        .commit(&results)
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
    assert_eq!(latest.version(), rebuilt.version(), "nothing published");
    assert_eq!(segments(&latest), before);
    let compacted = latest.optimize().compact(&options()).await.unwrap().dataset;
    let names: Vec<&str> = compacted
        .storage()
        .indices()
        .iter()
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(
        names,
        before.iter().map(|i| i.name.as_str()).collect::<Vec<_>>()
    );
    assert_eq!(ids(&compacted).await, (0..800).collect::<Vec<i64>>());
    let found = compacted
        .search(&Filter::parse("id = 5 OR id = 705").unwrap())
        .await
        .unwrap();
    assert_eq!(found.row_ids.len(), 2);
    compacted.storage().verify_data().await.unwrap();
}
