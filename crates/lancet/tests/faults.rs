//! Fault injection on the commit path (issue 11): for every k-th request of each kind a tree
//! commit makes (objects, transaction, manifest; reads of the prior records), failing before
//! or after performing it, readers see exactly the old or the new version, the new version
//! verifies, and a manifest put that landed but reported failure is never committed twice.

use std::sync::Arc;

use lancet::paths::fault::{FaultyStore, Mode, Request};
use lancet::paths::manifest::{write_manifest, NamingScheme};
use lancet::paths::DatasetStore;
use lancet::proto::table::{DataFile, DataFragment, DeletionFile, Manifest};
use lancet::tree::{Action, TreeWriterConfig};
use lancet::{Caches, Dataset};

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
        physical_rows: 50,
        ..Default::default()
    }
}

/// A tree table of 40 fragments under the tiny policy, where the commit below flushes,
/// splits and writes several objects.
async fn tree_table(dir: &std::path::Path) -> Dataset {
    let store = DatasetStore::create(dir.to_str().unwrap()).unwrap();
    let m = Manifest {
        version: 1,
        fragments: (0..40).map(fragment).collect(),
        max_fragment_id: Some(39),
        ..Default::default()
    };
    write_manifest(&store, &m, &[], &[], NamingScheme::V2, None)
        .await
        .unwrap();
    Dataset::open_with(store, None, Caches::new(Default::default()))
        .await
        .unwrap()
        .convert_to_tree(&TreeWriterConfig::tiny(), |_, _| {})
        .await
        .unwrap()
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
    let uri = format!("file://{}", dir.display());
    let ds_store = DatasetStore::from_store(store.clone(), root, &uri);
    let ds = Dataset::open_with(ds_store, None, Caches::new(Default::default()))
        .await
        .unwrap();
    store.arm();
    (ds, store)
}

#[tokio::test]
async fn every_failed_request_of_a_tree_commit_leaves_the_old_or_the_new_version() {
    let template = tempfile::tempdir().unwrap();
    let base = tree_table(template.path()).await;
    let config = TreeWriterConfig::tiny();
    // the expected result, from a clean commit on a copy
    let clean_dir = tempfile::tempdir().unwrap();
    copy(template.path(), clean_dir.path());
    let expected = Dataset::open(clean_dir.path().to_str().unwrap())
        .await
        .unwrap()
        .commit_with_actions(base.manifest().clone(), &[], &actions(), &config)
        .await
        .unwrap()
        .fragments()
        .await
        .unwrap();
    let mut cases = 0;
    for request in [Request::Put, Request::PutIfAbsent, Request::Get] {
        // count the matching requests of one clean commit
        let count_dir = tempfile::tempdir().unwrap();
        copy(template.path(), count_dir.path());
        let (ds, store) = faulty(count_dir.path(), request, 0, Mode::Before).await;
        ds.commit_with_actions(ds.manifest().clone(), &[], &actions(), &config)
            .await
            .unwrap();
        let n = store.matching();
        assert!(n > 0 || request == Request::Get, "{request:?}");
        for k in 1..=n {
            for mode in [Mode::Before, Mode::After] {
                cases += 1;
                let dir = tempfile::tempdir().unwrap();
                copy(template.path(), dir.path());
                let (ds, _) = faulty(dir.path(), request, k, mode).await;
                let result = ds
                    .commit_with_actions(ds.manifest().clone(), &[], &actions(), &config)
                    .await;
                let latest = Dataset::open(dir.path().to_str().unwrap()).await.unwrap();
                let what = format!("{request:?} #{k} {mode:?}: {result:?}");
                match latest.version() - base.version() {
                    0 => assert!(result.is_err(), "{what}"),
                    1 => {
                        latest.verify().await.unwrap();
                        assert_eq!(latest.fragments().await.unwrap(), expected, "{what}");
                    }
                    n => panic!("{what}: committed {n} versions"),
                }
                if let Ok(committed) = &result {
                    assert_eq!(committed.version(), base.version() + 1, "{what}");
                }
            }
        }
    }
    assert!(cases > 10, "only {cases} cases");
}

fn copy(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
