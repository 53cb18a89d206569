//! Fault injection on the commit path (issue 11): for every k-th request of each kind a tree
//! commit makes (objects, transaction, manifest; reads of the prior records), failing before
//! or after performing it, readers see exactly the old or the new version, the new version
//! verifies, and a manifest put that landed but reported failure (an error, or "already
//! exists" to a retry) is never committed twice.
//! Then (issue 13) a cleanup removes exactly the objects the failed attempt left.

mod common;

use common::{copy, flat_table, fragment};

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use lancet::paths::fault::{FaultyStore, Mode, Request};
use lancet::paths::DatasetStore;
use lancet::proto::table::DeletionFile;
use lancet::tree::{Action, TreeWriterConfig};
use lancet::{Caches, CleanupPolicy, Dataset};

/// A tree table of 40 fragments under the tiny policy, where the commit below flushes,
/// splits and writes several objects.
async fn tree_table(dir: &std::path::Path) -> Dataset {
    flat_table(dir, 40)
        .await
        .storage()
        .convert_to_tree(&TreeWriterConfig::tiny(), |_, _| {})
        .await
        .unwrap()
        .dataset
}

fn actions() -> Vec<(u64, Action)> {
    let mut out: Vec<(u64, Action)> = (40..60)
        .map(|id| (id, Action::Upsert(Box::new(fragment(id)))))
        .collect();
    for id in (0..40).step_by(3) {
        out.push((
            id,
            Action::AddDeletionFile(DeletionFile {
                num_deleted_rows: 1 + id % 7,
                id,
                ..Default::default()
            }),
        ));
    }
    out
}

/// The same table opened through a faulty store.
async fn faulty(
    dir: &std::path::Path,
    request: Request,
    k: u64,
    mode: Mode,
) -> (Dataset, Arc<FaultyStore>) {
    let clean = DatasetStore::open(dir.to_str().unwrap()).unwrap();
    let store = Arc::new(FaultyStore::new(
        clean.object_store().clone(),
        request,
        k,
        mode,
    ));
    let root = clean.path("");
    // not file://: lance-io would write the leaves' local files itself, around the store
    let uri = format!("memory://faulty{}", dir.display());
    let ds_store = DatasetStore::from_store(store.clone(), root, &uri);
    let ds = Dataset::open_with(ds_store, None, Caches::new(Default::default()))
        .await
        .unwrap();
    store.arm();
    (ds, store)
}

/// Files under `dir` that `template` does not have, counted per top-level directory.
fn added(template: &BTreeSet<String>, dir: &std::path::Path) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for f in common::files(dir).difference(template) {
        *out.entry(f.split('/').next().unwrap().to_string())
            .or_default() += 1;
    }
    out
}

/// Removes every object no version names, at any age, keeping every version.
fn orphans_only() -> CleanupPolicy {
    CleanupPolicy {
        retain_versions: Some(u64::MAX),
        unverified_older_than: Duration::ZERO,
        ..Default::default()
    }
}

#[tokio::test]
async fn every_failed_request_of_a_tree_commit_leaves_the_old_or_the_new_version() {
    let template = tempfile::tempdir().unwrap();
    let base = tree_table(template.path()).await;
    let template_files = common::files(template.path());
    // the data files the commit adds, written before it as a writer does (not template
    // objects: a cleanup after a commit that did not land removes them)
    common::stage(&base, &actions()).await;
    let config = TreeWriterConfig::tiny();
    // the expected result, from a clean commit on a copy: it flushes and splits
    let clean_dir = tempfile::tempdir().unwrap();
    copy(template.path(), clean_dir.path());
    let clean = Dataset::open(clean_dir.path().to_str().unwrap())
        .await
        .unwrap()
        .storage()
        .commit_actions(base.storage().manifest().clone(), &[], &actions(), &config)
        .await
        .unwrap();
    assert!(clean.objects_written >= 6, "{}", clean.objects_written);
    let stats = clean
        .dataset
        .storage()
        .tree()
        .unwrap()
        .verify()
        .await
        .unwrap();
    assert!(stats.height >= 2 && stats.leaves > 10, "{stats:?}");
    let expected = clean.dataset.fragments().await.unwrap();
    let clean_added = added(&template_files, clean_dir.path());
    let mut cases = 0;
    for request in [
        Request::Put,
        Request::PutIfAbsent,
        Request::Get,
        Request::List,
        Request::Delete,
    ] {
        // count the matching requests of one clean commit
        let count_dir = tempfile::tempdir().unwrap();
        copy(template.path(), count_dir.path());
        let (ds, store) = faulty(count_dir.path(), request, 0, Mode::Before).await;
        ds.storage()
            .commit_actions(ds.storage().manifest().clone(), &[], &actions(), &config)
            .await
            .unwrap();
        let n = store.matching();
        assert!(
            n > 0 || matches!(request, Request::Get | Request::List | Request::Delete),
            "{request:?}"
        );
        for k in 1..=n {
            // a retried put-if-absent told that its own object exists: only the commit put
            let retried = (request == Request::PutIfAbsent).then_some(Mode::AfterAsTaken);
            for mode in [Mode::Before, Mode::After].into_iter().chain(retried) {
                cases += 1;
                let dir = tempfile::tempdir().unwrap();
                copy(template.path(), dir.path());
                let (ds, _) = faulty(dir.path(), request, k, mode).await;
                let result = ds
                    .storage()
                    .commit_actions(ds.storage().manifest().clone(), &[], &actions(), &config)
                    .await;
                let latest = Dataset::open(dir.path().to_str().unwrap()).await.unwrap();
                let what = format!("{request:?} #{k} {mode:?}: {result:?}");
                let landed = match latest.version() - base.version() {
                    0 => {
                        assert!(result.is_err(), "{what}");
                        false
                    }
                    1 => {
                        latest.verify().await.unwrap();
                        assert_eq!(latest.fragments().await.unwrap(), expected, "{what}");
                        true
                    }
                    n => panic!("{what}: committed {n} versions"),
                };
                // the commit reads its own transaction there and reports it committed
                if mode == Mode::AfterAsTaken {
                    assert!(result.is_ok() && landed, "{what}");
                }
                if let Ok(committed) = &result {
                    assert_eq!(committed.version(), base.version() + 1, "{what}");
                }
                // cleanup removes exactly what the attempt left: the table then holds the
                // template's objects plus, when the commit landed, what a clean commit adds
                // (an object is older than 0 s once a millisecond has passed)
                tokio::time::sleep(Duration::from_millis(3)).await;
                let report = latest.cleanup(&orphans_only()).await.unwrap();
                let want = if landed {
                    clean_added.clone()
                } else {
                    BTreeMap::new()
                };
                let mut got = added(&template_files, dir.path());
                got.retain(|_, n| *n > 0);
                assert_eq!(
                    got,
                    want,
                    "{what}: {:?} {report:?}",
                    common::files(dir.path())
                        .difference(&template_files)
                        .collect::<Vec<_>>()
                );
                assert!(
                    template_files.is_subset(&common::files(dir.path())),
                    "{what}: a template object was deleted"
                );
                for v in common::versions(dir.path()).await {
                    latest.checkout(v).await.unwrap().verify().await.unwrap();
                }
            }
        }
    }
    assert!(cases > 10, "only {cases} cases");
}

/// A cleanup whose listing or deletes fail: a failed listing stops it before any delete; a
/// failed delete is reported and the rest goes on; nothing a version needs is ever deleted.
#[tokio::test]
async fn a_cleanup_that_meets_failed_requests_never_deletes_what_a_version_needs() {
    let template = tempfile::tempdir().unwrap();
    let base = tree_table(template.path()).await;
    // a history of five more commits, whose superseded objects a cleanup removes (a tree
    // table's versions have no transaction file: each is a manifest and tree objects)
    let mut ds = base;
    for round in 0..5u64 {
        let actions = vec![(60 + round, Action::Upsert(Box::new(fragment(60 + round))))];
        common::stage(&ds, &actions).await;
        ds = ds
            .storage()
            .commit_actions(
                ds.storage().manifest().clone(),
                &[],
                &actions,
                &TreeWriterConfig::tiny(),
            )
            .await
            .unwrap()
            .dataset;
    }
    let everything = CleanupPolicy {
        older_than: Some(Duration::ZERO),
        unverified_older_than: Duration::ZERO,
        ..Default::default()
    };
    let clean_dir = tempfile::tempdir().unwrap();
    copy(template.path(), clean_dir.path());
    let clean = Dataset::open(clean_dir.path().to_str().unwrap())
        .await
        .unwrap()
        .cleanup(&everything)
        .await
        .unwrap();
    let kept = common::files(clean_dir.path());
    assert!(clean.total().objects > 5);
    for request in [Request::List, Request::Delete, Request::Get] {
        let count_dir = tempfile::tempdir().unwrap();
        copy(template.path(), count_dir.path());
        let (ds, store) = faulty(count_dir.path(), request, 0, Mode::Before).await;
        ds.cleanup(&everything).await.unwrap();
        for k in 1..=store.matching() {
            // a retried put-if-absent told that its own object exists: only the commit put
            let retried = (request == Request::PutIfAbsent).then_some(Mode::AfterAsTaken);
            for mode in [Mode::Before, Mode::After].into_iter().chain(retried) {
                let dir = tempfile::tempdir().unwrap();
                copy(template.path(), dir.path());
                let before = common::files(dir.path());
                let (ds, _) = faulty(dir.path(), request, k, mode).await;
                let what = format!("{request:?} #{k} {mode:?}");
                match ds.cleanup(&everything).await {
                    Err(e) => {
                        assert_eq!(common::files(dir.path()), before, "{what}: {e}");
                    }
                    Ok(report) => {
                        let left = common::files(dir.path());
                        // the report counts only what is gone
                        for p in &report.deleted_paths {
                            assert!(!left.contains(p), "{what}: {p} reported deleted");
                        }
                        assert_eq!(
                            report.total().objects as usize,
                            report.deleted_paths.len(),
                            "{what}"
                        );
                        assert!(kept.is_subset(&left), "{what}: a needed object is gone");
                        assert!(report.failed.len() <= 1, "{what}");
                        if report.failed.is_empty() && mode == Mode::Before {
                            assert_eq!(left, kept, "{what}");
                        }
                    }
                }
                // every version still listed is complete (a manifest whose delete failed
                // keeps its objects)
                let latest = Dataset::open(dir.path().to_str().unwrap()).await.unwrap();
                for v in common::versions(dir.path()).await {
                    latest
                        .checkout(v)
                        .await
                        .unwrap()
                        .verify()
                        .await
                        .unwrap_or_else(|e| panic!("{what}: version {v}: {e}"));
                }
            }
        }
    }
}
