//! Issue 41, item 7: nothing outside the table is read, written or deleted — not through a
//! symbolic link planted inside it, not through a crafted data path or base path. Each case
//! plants the link or writes the crafted version, runs the commands, and checks the sentinel
//! files outside byte for byte (and their directories), and for a refused write that the
//! table's versions are unchanged.

mod common;
use common::versions;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use futures::TryStreamExt;
use lancet::paths::manifest::{write_manifest, ManifestContent};
use lancet::paths::DatasetStore;
use lancet::proto::table::BasePath;
use lancet::{CleanupPolicy, CreateOptions, Dataset, ErrorKind, Filter, Invariant, ScanOptions};

/// A table of 30 rows (`a` = 0..30) in three fragments of 10, then an append of 10 more:
/// versions 1 and 2.
async fn table(dir: &Path) -> Dataset {
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
    let batch = |r: std::ops::Range<i64>| {
        let column: ArrayRef = Arc::new(Int64Array::from_iter_values(r));
        RecordBatch::try_from_iter([("a", column)]).unwrap()
    };
    let ds = Dataset::create(
        dir.to_str().unwrap(),
        schema,
        futures::stream::iter([Ok(batch(0..30))]),
        CreateOptions {
            max_rows_per_file: 10,
            ..Default::default()
        },
    )
    .await
    .unwrap()
    .dataset;
    ds.append(futures::stream::iter([Ok(batch(30..40))]))
        .await
        .unwrap()
        .dataset
}

/// `elsewhere/`: files (one a copy of a real data file) and an empty directory, with what
/// they hold.
fn elsewhere(tmp: &Path, data_file: &Path) -> PathBuf {
    let dir = tmp.join("elsewhere");
    std::fs::create_dir_all(dir.join("sub/empty")).unwrap();
    std::fs::write(dir.join("sentinel"), b"keep me").unwrap();
    std::fs::write(dir.join("sub/deeper"), b"and me").unwrap();
    std::fs::copy(data_file, dir.join("copy.lance")).unwrap();
    dir
}

/// Every file and directory under `dir`, with the files' bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.insert(p.clone(), None);
                todo.push(p);
            } else {
                out.insert(p.clone(), Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}

fn first_data_file(dir: &Path, ds: &Dataset) -> PathBuf {
    let f = &ds.storage().manifest().fragments[0].files[0];
    dir.join("data").join(&f.path)
}

async fn count(ds: &Dataset) -> lancet::Result<usize> {
    let batches: Vec<RecordBatch> = ds.scan(ScanOptions::default()).await?.try_collect().await?;
    Ok(batches.iter().map(RecordBatch::num_rows).sum())
}

fn everything_now() -> CleanupPolicy {
    CleanupPolicy {
        older_than: Some(Duration::ZERO),
        unverified_older_than: Duration::ZERO,
        ..Default::default()
    }
}

/// pylance 14.0.2's cleanup deletes through a linked directory; lancet's lists nothing
/// through it, deletes nothing there, and reports the link.
#[tokio::test]
async fn a_cleanup_never_deletes_through_a_linked_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let ds = table(&dir).await;
    let outside = elsewhere(tmp.path(), &first_data_file(&dir, &ds));
    let before = snapshot(&outside);
    let uuid = "00000000-0000-4000-8000-000000000001";
    for link in [
        format!("_indices/{uuid}"),
        "data/sub".into(),
        "_fri/7".into(),
    ] {
        let at = dir.join(&link);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&outside, &at).unwrap();
    }
    let ds = Dataset::open(dir.to_str().unwrap()).await.unwrap();
    let report = ds.cleanup(&everything_now()).await.unwrap();
    assert_eq!(report.removed_versions, [1]);
    assert!(
        report
            .kept_outside
            .iter()
            .any(|p| p.starts_with("data/sub/"))
            && report
                .kept_outside
                .iter()
                .any(|p| p.starts_with("_indices/")),
        "{:?}",
        report.kept_outside
    );
    assert!(!report
        .deleted_paths
        .iter()
        .any(|p| p.contains("sub/") || p.starts_with("_indices/") || p.starts_with("_fri/")));
    assert_eq!(snapshot(&outside), before);
    // the table is whole
    let ds = Dataset::open(dir.to_str().unwrap()).await.unwrap();
    assert_eq!(count(&ds).await.unwrap(), 40);
    ds.storage().verify_data().await.unwrap();
}

/// A data file replaced by a link to a file outside is not read: scans, searches, verify
/// and writes refuse it (the table's fault: `Corrupt`), and a write publishes nothing.
#[tokio::test]
async fn a_data_file_linked_out_of_the_table_is_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let ds = table(&dir).await;
    let file = first_data_file(&dir, &ds);
    let outside = elsewhere(tmp.path(), &file);
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(outside.join("copy.lance"), &file).unwrap();
    let before = snapshot(&outside);
    let ds = Dataset::open(dir.to_str().unwrap()).await.unwrap();
    let e = count(&ds).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("outside the table"), "{e}");
    assert!(ds.storage().verify_data().await.is_err());
    let before_versions = versions(&dir).await;
    let e = ds
        .delete(&Filter::parse("a = 5").unwrap())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("outside the table"), "{e}");
    assert_eq!(versions(&dir).await, before_versions);
    assert_eq!(snapshot(&outside), before);
}

/// A version whose data path climbs out of `data/` (written raw, as a crafted table would
/// be): verify names the broken invariant, reads refuse it, no write republishes it, a
/// cleanup deletes nothing outside, and a clone of it leaves no target behind.
#[tokio::test]
async fn a_crafted_data_path_is_refused_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let ds = table(&dir).await;
    let outside = elsewhere(tmp.path(), &first_data_file(&dir, &ds));
    let mut m = ds.storage().manifest().clone();
    m.version = 3;
    m.fragments[0].files[0].path = "../../elsewhere/copy.lance".into();
    let store = DatasetStore::open(dir.to_str().unwrap()).unwrap();
    write_manifest(&store, &ManifestContent::new(&m))
        .await
        .unwrap();
    let before = snapshot(&outside);
    let bad = Dataset::open(dir.to_str().unwrap()).await.unwrap();
    assert_eq!(bad.version(), 3);
    let e = bad.verify().await.unwrap_err();
    assert_eq!(e.invariant(), Some(Invariant::DataFilePathInside), "{e}");
    assert!(count(&bad).await.is_err());
    let e = bad
        .delete(&Filter::parse("a = 35").unwrap())
        .await
        .unwrap_err();
    // refused where the path is resolved, or by the invariant before the commit
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("'..' segment"), "{e}");
    assert_eq!(versions(&dir).await, [1, 2, 3]);
    // the way back: a restore of a good version works, of the bad one is refused
    let restored = bad.restore(2).await.unwrap().dataset;
    assert_eq!(count(&restored).await.unwrap(), 40);
    let e = restored.restore(3).await.unwrap_err();
    assert_eq!(e.invariant(), Some(Invariant::DataFilePathInside), "{e}");
    assert_eq!(versions(&dir).await, [1, 2, 3, 4]);
    // a clone of the bad version fails, and leaves no target
    let target = tmp.path().join("clone");
    assert!(bad
        .shallow_clone(target.to_str().unwrap(), None)
        .await
        .is_err());
    assert!(!target.exists());
    // cleanup, with the bad version among those it reads, deletes nothing outside
    let _ = restored.cleanup(&everything_now()).await;
    assert_eq!(snapshot(&outside), before);
}

/// A relative `BasePath.path` would be resolved against the process's working directory:
/// it is refused where it is resolved, and verify reports it.
#[tokio::test]
async fn a_relative_base_path_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let ds = table(&dir).await;
    let mut m = ds.storage().manifest().clone();
    m.version = 3;
    m.base_paths = vec![BasePath {
        id: 1,
        name: None,
        is_dataset_root: false,
        path: "elsewhere".into(),
    }];
    m.fragments[0].files[0].base_id = Some(1);
    let store = DatasetStore::open(dir.to_str().unwrap()).unwrap();
    write_manifest(&store, &ManifestContent::new(&m))
        .await
        .unwrap();
    let bad = Dataset::open(dir.to_str().unwrap()).await.unwrap();
    let e = count(&bad).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("relative"), "{e}");
    assert!(bad.storage().verify_data().await.is_err());
}

/// A branch's root replaced by a link leading out of the table is not opened, cleaned or
/// written; a branch reference whose root is missing does not stop a cleanup.
#[tokio::test]
async fn a_branch_root_linked_out_of_the_table_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    let ds = table(&dir).await;
    ds.branches().create("b", None).await.unwrap();
    let outside = elsewhere(tmp.path(), &first_data_file(&dir, &ds));
    let moved = outside.join("b");
    std::fs::rename(dir.join("tree/b"), &moved).unwrap();
    std::os::unix::fs::symlink(&moved, dir.join("tree/b")).unwrap();
    let before = snapshot(&outside);
    let ds = Dataset::open(dir.to_str().unwrap()).await.unwrap();
    let e = ds.branches().checkout("b").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("outside the table"), "{e}");
    let e = ds.cleanup(&everything_now()).await.unwrap_err();
    assert!(e.to_string().contains("outside the table"), "{e}");
    assert!(ds.branches().create("b/c", None).await.is_err());
    assert_eq!(snapshot(&outside), before);
    // the reference alone: cleanup goes on (the branch has no version to keep)
    std::fs::remove_file(dir.join("tree/b")).unwrap();
    let report = ds.cleanup(&everything_now()).await.unwrap();
    assert_eq!(report.removed_versions, [1]);
    assert_eq!(snapshot(&outside), before);
}
