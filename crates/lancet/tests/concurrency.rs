//! Many writers on one table (issue 11): 8 writers × 200 commits of disjoint changes all land
//! through rebases, and every version verifies; overlapping changes end in conflicts, never in
//! a corrupt or lost version.

mod common;
use common::CommitStaged;

use lancet::paths::manifest::{write_manifest, ManifestContent};
use lancet::paths::DatasetStore;
use lancet::proto::table::{DataFile, DataFragment, DeletionFile, Manifest};
use lancet::tree::{Action, TreeWriterConfig};
use lancet::{Caches, Dataset, Error};

const WRITERS: u64 = 8;

fn commits() -> u64 {
    std::env::var("LANCET_CONCURRENT_COMMITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

fn fragment(id: u64) -> DataFragment {
    DataFragment {
        id,
        files: vec![DataFile {
            path: format!("{id}.lance"),
            fields: vec![0],
            column_indices: vec![0],
            file_major_version: 2,
            file_minor_version: 1,
            ..Default::default()
        }],
        physical_rows: 1000,
        ..Default::default()
    }
}

async fn table(dir: &std::path::Path, fragments: u64, tree: bool) -> Dataset {
    let store = DatasetStore::create(dir.to_str().unwrap()).unwrap();
    let m = Manifest {
        version: 1,
        fragments: (0..fragments).map(fragment).collect(),
        max_fragment_id: fragments.checked_sub(1).map(|m| m as u32),
        ..Default::default()
    };
    write_manifest(&store, &ManifestContent::new(&m))
        .await
        .unwrap();
    let ds = Dataset::open_with(store, None, Caches::new(Default::default()))
        .await
        .unwrap();
    if tree {
        ds.storage()
            .convert_to_tree(&TreeWriterConfig::tiny(), |_, _| {})
            .await
            .unwrap()
            .dataset
    } else {
        ds
    }
}

/// Writer `w`, commit `i`: even writers append a fragment, odd writers give one of their own
/// fragments (w, w + 8, ...) a deletion file covering `i + 1` rows.
fn disjoint_action(w: u64, i: u64) -> (u64, Action) {
    if w.is_multiple_of(2) {
        // the id is a placeholder past every existing one; rebases move it
        (
            1_000_000 + w * 10_000 + i,
            Action::Upsert(Box::new(fragment(1_000_000 + w * 10_000 + i))),
        )
    } else {
        let id = w + WRITERS * (i % 4);
        (
            id,
            Action::AddDeletionFile(DeletionFile {
                num_deleted_rows: i + 1,
                id: i,
                ..Default::default()
            }),
        )
    }
}

async fn run_writers(start: Dataset, n: u64) -> Vec<Result<u64, Error>> {
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let start = start.clone();
        tasks.push(tokio::spawn(async move {
            let mut ds = start;
            for i in 0..n {
                let (id, action) = disjoint_action(w, i);
                let mut action = action;
                let mut id = id;
                if let Action::Upsert(f) = &mut action {
                    // a fresh id on the version the writer prepares on
                    let next = ds
                        .storage()
                        .manifest()
                        .max_fragment_id
                        .map_or(0, |m| u64::from(m) + 1);
                    f.id = next;
                    id = next;
                }
                ds = ds
                    .commit_staged(
                        ds.storage().manifest().clone(),
                        &[],
                        &[(id, action)],
                        &TreeWriterConfig::tiny(),
                    )
                    .await?;
            }
            Ok(ds.version())
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

async fn disjoint_writers_all_land(tree: bool) {
    let dir = tempfile::tempdir().unwrap();
    let start = table(dir.path(), 64, tree).await;
    let n = commits();
    let results = run_writers(start.clone(), n).await;
    for r in &results {
        assert!(r.is_ok(), "{r:?}");
    }
    let latest = Dataset::open(dir.path().to_str().unwrap()).await.unwrap();
    assert_eq!(latest.version(), start.version() + WRITERS * n);
    for v in start.version()..=latest.version() {
        let ds = latest.checkout(v).await.unwrap();
        ds.verify()
            .await
            .unwrap_or_else(|e| panic!("version {v}: {e}"));
        if v > start.version() {
            assert!(
                ds.storage().transaction().await.unwrap().is_some(),
                "version {v}"
            );
        }
    }
    let fragments = latest.fragments().await.unwrap();
    // every append landed, with distinct ids
    assert_eq!(fragments.len() as u64, 64 + (WRITERS / 2) * n);
    // every odd writer's last deletion of each of its fragments is there
    for w in (1..WRITERS).step_by(2) {
        for slot in 0..4u64.min(n) {
            let id = w + WRITERS * slot;
            let last = (0..n).filter(|i| i % 4 == slot).max().unwrap();
            let f = fragments.iter().find(|f| f.id == id).unwrap();
            assert_eq!(
                f.deletion_file.as_ref().map(|d| d.num_deleted_rows),
                Some(last + 1),
                "fragment {id}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_writers_with_disjoint_changes_all_land_on_a_tree() {
    disjoint_writers_all_land(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_writers_with_disjoint_changes_all_land_on_a_flat_table() {
    disjoint_writers_all_land(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_deletions_conflict_and_never_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let start = table(dir.path(), 8, true).await;
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let start = start.clone();
        tasks.push(tokio::spawn(async move {
            let mut landed = 0u64;
            let mut conflicts = 0u64;
            let mut ds = start;
            for i in 0..20u64 {
                let action = Action::AddDeletionFile(DeletionFile {
                    num_deleted_rows: 1 + (w + i) % 50,
                    id: w * 100 + i,
                    ..Default::default()
                });
                match ds
                    .commit_staged(
                        ds.storage().manifest().clone(),
                        &[],
                        &[(0, action)],
                        &TreeWriterConfig::tiny(),
                    )
                    .await
                {
                    Ok(next) => {
                        landed += 1;
                        ds = next;
                    }
                    Err(Error::CommitConflict {
                        retryable, reason, ..
                    }) => {
                        assert!(retryable, "{reason}");
                        conflicts += 1;
                        ds = Dataset::open(ds.uri()).await.unwrap();
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            (landed, conflicts)
        }));
    }
    let mut landed = 0;
    let mut conflicts = 0;
    for t in tasks {
        let (l, c) = t.await.unwrap();
        landed += l;
        conflicts += c;
    }
    let latest = Dataset::open(dir.path().to_str().unwrap()).await.unwrap();
    assert_eq!(latest.version(), start.version() + landed);
    assert!(conflicts > 0, "8 writers on one fragment never conflicted");
    for v in start.version()..=latest.version() {
        latest.checkout(v).await.unwrap().verify().await.unwrap();
    }
}
