//! Cleanup and shallow clones through the facade (issue 13): what a cleanup keeps is exactly
//! what its retained versions need, on flat and tree tables; clones share the source's objects
//! and never write to it.

mod common;
use common::CommitStaged;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{candidate, files, flat_table, fragment, fragment_in, materialize_files, needed_by};
use lancet::paths::refs::create_tag;
use lancet::proto::table::{DataFile, DeletionFile};
use lancet::tree::{Action, TreeWriterConfig};
use lancet::{CleanupPolicy, Dataset, Error, ErrorKind};

fn deletion(id: u64) -> DeletionFile {
    DeletionFile {
        num_deleted_rows: 1,
        id,
        read_version: id,
        ..Default::default()
    }
}

/// Everything old goes, except what the versions kept need; objects no version names wait
/// for their age.
fn now_policy() -> CleanupPolicy {
    CleanupPolicy {
        older_than: Some(Duration::ZERO),
        ..Default::default()
    }
}

/// v1: fragments 0..6; then an append, a deletion, a removal, a data-file replacement, and a
/// deletion with an append: versions 1..=6, every named file present on disk.
async fn history(dir: &std::path::Path, config: Option<&TreeWriterConfig>) -> Dataset {
    let mut ds = flat_table(dir, 6).await;
    if let Some(config) = config {
        ds = ds
            .storage()
            .convert_to_tree(config, |_, _| {})
            .await
            .unwrap()
            .dataset;
    }
    let config = config.cloned().unwrap_or_default();
    materialize_files(dir, &ds).await;
    let steps: Vec<Vec<(u64, Action)>> = vec![
        vec![(6, Action::Upsert(Box::new(fragment(6))))],
        vec![(0, Action::AddDeletionFile(deletion(3)))],
        vec![(1, Action::Remove)],
        vec![(
            2,
            Action::ReplaceDataFile {
                expected_path: "2.lance".into(),
                path: "2b.lance".into(),
                file_size_bytes: 0,
                base_id: None,
            },
        )],
        vec![
            (3, Action::AddDeletionFile(deletion(6))),
            (7, Action::Upsert(Box::new(fragment(7)))),
        ],
    ];
    for actions in steps {
        ds = ds
            .commit_staged(ds.storage().manifest().clone(), &[], &actions, &config)
            .await
            .unwrap();
        materialize_files(dir, &ds).await;
    }
    settle().await;
    ds
}

/// Lets a millisecond pass: "older than 0 s" is strict, and a cleanup may start in the same
/// millisecond as the last write.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(3)).await;
}

async fn needed_by_versions(ds: &Dataset, versions: &[u64]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for &v in versions {
        out.extend(needed_by(&ds.checkout(v).await.unwrap()).await);
    }
    out
}

async fn removes_exactly_what_no_kept_version_needs(config: Option<TreeWriterConfig>) {
    let dir = tempfile::tempdir().unwrap();
    let ds = history(dir.path(), config.as_ref()).await;
    // a tree table has one more version: the conversion
    let (last, tagged) = (ds.version(), ds.version() - 3);
    let tag = ds.checkout(tagged).await.unwrap();
    create_tag(
        ds.storage().store(),
        "kept",
        tagged,
        tag.storage().manifest_file().entry.size,
    )
    .await
    .unwrap();
    // leftovers of attempts that never committed: no version names them
    let orphans = [
        "data/orphan.lance",
        "_transactions/9-orphan.txn",
        "_bt/leaf/00000000-0000-4000-8000-000000000001.lance",
        "_indices/00000000-0000-4000-8000-000000000002/page_data.lance",
    ];
    for o in orphans {
        let p = dir.path().join(o);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"x").unwrap();
    }
    let before = files(dir.path());
    settle().await;
    let report = ds.cleanup(&now_policy()).await.unwrap();
    assert_eq!(report.kept_versions, [tagged, last]);
    let removed: Vec<u64> = (1..last).filter(|&v| v != tagged).collect();
    assert_eq!(report.removed_versions, removed);
    assert_eq!(report.kept_young, orphans.len() as u64);
    let needed = needed_by_versions(&ds, &[tagged, last]).await;
    let after = files(dir.path());
    let expected: BTreeSet<String> = before
        .iter()
        .filter(|p| !candidate(p) || needed.contains(*p) || orphans.contains(&p.as_str()))
        .cloned()
        .collect();
    assert_eq!(after, expected);
    let deleted: BTreeSet<String> = before.difference(&after).cloned().collect();
    assert_eq!(
        deleted,
        report
            .deleted_paths
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>()
    );
    // the data file only version 2..3 named is still needed by the tag; 1.lance is too
    assert!(after.contains("data/1.lance"));
    assert!(after.contains("data/2.lance") && after.contains("data/2b.lance"));
    for v in [tagged, last] {
        ds.checkout(v).await.unwrap().verify().await.unwrap();
    }
    assert!(
        ds.checkout(last - 1).await.is_err(),
        "a removed version is gone"
    );

    // with no age for unverified objects, the orphans go too, and nothing else
    let report = ds
        .cleanup(&CleanupPolicy {
            unverified_older_than: Duration::ZERO,
            ..now_policy()
        })
        .await
        .unwrap();
    let mut gone: Vec<String> = report.deleted_paths.clone();
    gone.sort();
    let mut want: Vec<String> = orphans.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(gone, want);
    assert!(!dir
        .path()
        .join("_indices/00000000-0000-4000-8000-000000000002")
        .exists());
}

#[tokio::test]
async fn cleanup_of_a_flat_table_removes_exactly_what_no_kept_version_needs() {
    removes_exactly_what_no_kept_version_needs(None).await;
}

#[tokio::test]
async fn cleanup_of_a_tree_table_removes_exactly_what_no_kept_version_needs() {
    removes_exactly_what_no_kept_version_needs(Some(TreeWriterConfig::tiny())).await;
}

#[tokio::test]
async fn versions_are_selected_by_count_and_age_together() {
    let dir = tempfile::tempdir().unwrap();
    let ds = history(dir.path(), None).await;
    let before = files(dir.path());
    // both filters: only versions that are old and outside the newest 2
    let recent = CleanupPolicy {
        older_than: Some(Duration::from_secs(3600)),
        retain_versions: Some(2),
        dry_run: true,
        ..Default::default()
    };
    assert!(ds
        .cleanup(&recent)
        .await
        .unwrap()
        .removed_versions
        .is_empty());
    let dry = CleanupPolicy {
        retain_versions: Some(2),
        dry_run: true,
        ..Default::default()
    };
    let report = ds.cleanup(&dry).await.unwrap();
    assert_eq!(report.removed_versions, [1, 2, 3, 4]);
    assert!(report.dry_run && !report.deleted_paths.is_empty());
    assert_eq!(files(dir.path()), before, "a dry run deletes nothing");
    // from an older handle, it and every newer version stay
    let old = ds.checkout(3).await.unwrap();
    let report = old.cleanup(&now_policy()).await.unwrap();
    assert_eq!(report.removed_versions, [1, 2]);
    assert_eq!(report.kept_versions, [3, 4, 5, 6]);
    let err = ds
        .cleanup(&CleanupPolicy {
            retain_versions: Some(0),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
}

#[tokio::test]
async fn a_file_only_a_superseded_mutation_names_is_not_reachable() {
    let dir = tempfile::tempdir().unwrap();
    let config = TreeWriterConfig::default();
    let mut ds = flat_table(dir.path(), 3)
        .await
        .storage()
        .convert_to_tree(&config, |_, _| {})
        .await
        .unwrap()
        .dataset;
    materialize_files(dir.path(), &ds).await;
    let extra = DataFile {
        path: "extra.lance".into(),
        fields: vec![1],
        column_indices: vec![1],
        file_major_version: 2,
        file_minor_version: 1,
        ..Default::default()
    };
    for action in [
        Action::AddDataFile(extra),
        Action::RemoveDataFile {
            path: "extra.lance".into(),
        },
    ] {
        ds = ds
            .commit_staged(
                ds.storage().manifest().clone(),
                &[],
                &[(0, action)],
                &config,
            )
            .await
            .unwrap();
        materialize_files(dir.path(), &ds).await;
    }
    // both mutations are still buffered in the latest version's root
    let walk = ds.storage().tree().unwrap().walk().await.unwrap();
    assert!(walk.stats().root_buffer + walk.stats().mutations_since_root >= 2);
    assert!(dir.path().join("data/extra.lance").exists());
    settle().await;
    let report = ds.cleanup(&now_policy()).await.unwrap();
    assert_eq!(report.kept_versions, [ds.version()]);
    assert!(!dir.path().join("data/extra.lance").exists());
    assert!(dir.path().join("data/0.lance").exists());
    ds.verify().await.unwrap();
}

#[tokio::test]
async fn a_corrupt_version_stops_cleanup_before_any_delete() {
    let dir = tempfile::tempdir().unwrap();
    let ds = history(dir.path(), None).await;
    let v2 = ds.checkout(2).await.unwrap();
    let path = dir.path().join(v2.storage().manifest_path());
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 20] ^= 0xff;
    bytes[n / 2] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let before = files(dir.path());
    let err = ds.cleanup(&now_policy()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert_eq!(files(dir.path()), before);
    // a broken tag is corrupt too, not "no tag"
    std::fs::write(&path, {
        let mut b = bytes.clone();
        b[n - 20] ^= 0xff;
        b[n / 2] ^= 0xff;
        b
    })
    .unwrap();
    std::fs::create_dir_all(dir.path().join("_refs/tags")).unwrap();
    std::fs::write(dir.path().join("_refs/tags/bad.json"), b"{\"branch\": 3}").unwrap();
    let err = ds.cleanup(&now_policy()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    assert_eq!(files(dir.path()).len(), before.len() + 1);
}

/// The source's files, and each version of the clone resolving every fragment to an object
/// that exists.
async fn assert_resolves(ds: &Dataset) {
    ds.verify().await.unwrap();
    for f in ds.fragments().await.unwrap().iter() {
        for l in ds.storage().data_file_locations(f).unwrap() {
            assert!(
                std::path::Path::new(&l.display_uri()).exists(),
                "{}",
                l.display_uri()
            );
        }
        if let Some(l) = ds.storage().deletion_file_location(f).unwrap() {
            assert!(std::path::Path::new(&l.display_uri()).exists());
        }
    }
}

async fn clone_shares_and_never_writes_to_the_source(config: Option<TreeWriterConfig>) {
    let (src_dir, clone_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = history(src_dir.path(), config.as_ref()).await;
    let src_files = files(src_dir.path());
    let target = clone_dir.path().join("c");
    let clone = src
        .shallow_clone(target.to_str().unwrap(), Some(5))
        .await
        .unwrap()
        .dataset;
    assert_eq!(
        clone.version(),
        5,
        "a clone keeps the source's version number"
    );
    let base = clone
        .storage()
        .manifest()
        .base_paths
        .last()
        .unwrap()
        .clone();
    assert!(base.is_dataset_root);
    assert_eq!(
        std::fs::canonicalize(&base.path).unwrap(),
        std::fs::canonicalize(src_dir.path()).unwrap()
    );
    let txn = clone.storage().transaction().await.unwrap().unwrap();
    assert_eq!(txn.operation_name(), "Clone");
    assert_eq!(txn.transaction.read_version, 5);
    let source5 = src.checkout(5).await.unwrap();
    let uris = |ds: Dataset| async move {
        let mut out = Vec::new();
        for f in ds.fragments().await.unwrap().iter() {
            for l in ds.storage().data_file_locations(f).unwrap() {
                out.push(std::fs::canonicalize(l.display_uri()).unwrap());
            }
        }
        out
    };
    assert_eq!(uris(clone.clone()).await, uris(source5).await);
    assert_resolves(&clone).await;
    if config.is_none() {
        assert!(clone
            .storage()
            .manifest()
            .fragments
            .iter()
            .all(|f| f.files.iter().all(|d| d.base_id == Some(base.id))));
    }

    // writes to the clone land in the clone
    let config = config.unwrap_or_default();
    let mut c = clone;
    for round in 0..6u64 {
        let id = 20 + round;
        let actions = vec![
            (
                id,
                Action::Upsert(Box::new(fragment_in(id, &format!("c{id}.lance")))),
            ),
            (
                [0, 2, 3, 4][round as usize % 4],
                Action::AddDeletionFile(deletion(100 + round)),
            ),
        ];
        c = c
            .commit_staged(c.storage().manifest().clone(), &[], &actions, &config)
            .await
            .unwrap();
        materialize_files(&target, &c).await;
        assert_resolves(&c).await;
    }
    assert!(target.join("data/c25.lance").exists());
    assert_eq!(files(src_dir.path()), src_files, "the source is untouched");
    settle().await;

    // cleaning the clone, with no age for anything, never reaches into the source
    let report = c
        .cleanup(&CleanupPolicy {
            unverified_older_than: Duration::ZERO,
            ..now_policy()
        })
        .await
        .unwrap();
    assert!(!report.removed_versions.is_empty());
    assert_eq!(files(src_dir.path()), src_files);
    assert_resolves(&c).await;

    // a clone of the clone keeps the first source's id and names the clone under a new one
    let cc_dir = tempfile::tempdir().unwrap();
    let cc = c
        .shallow_clone(cc_dir.path().join("cc").to_str().unwrap(), None)
        .await
        .unwrap()
        .dataset;
    let ids: Vec<u32> = cc
        .storage()
        .manifest()
        .base_paths
        .iter()
        .map(|b| b.id)
        .collect();
    assert_eq!(ids, [base.id, base.id + 1]);
    assert_resolves(&cc).await;
    assert_eq!(
        cc.fragments().await.unwrap().len(),
        c.fragments().await.unwrap().len()
    );
    // a target that holds a table is refused
    let err = src
        .shallow_clone(target.to_str().unwrap(), None)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
}

#[tokio::test]
async fn a_flat_clone_shares_and_never_writes_to_the_source() {
    clone_shares_and_never_writes_to_the_source(None).await;
}

#[tokio::test]
async fn a_tree_clone_with_an_inline_root_shares_and_never_writes_to_the_source() {
    clone_shares_and_never_writes_to_the_source(Some(TreeWriterConfig::default())).await;
}

#[tokio::test]
async fn a_tree_clone_with_an_external_root_shares_and_never_writes_to_the_source() {
    let external = TreeWriterConfig {
        inline_root_max_bytes: 0,
        ..TreeWriterConfig::tiny()
    };
    clone_shares_and_never_writes_to_the_source(Some(external)).await;
}

#[tokio::test]
async fn cleaning_the_source_keeps_a_tagged_cloned_version() {
    let (src_dir, clone_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = history(src_dir.path(), Some(&TreeWriterConfig::tiny())).await;
    let v4 = src.checkout(4).await.unwrap();
    create_tag(
        src.storage().store(),
        "cloned",
        4,
        v4.storage().manifest_file().entry.size,
    )
    .await
    .unwrap();
    let clone = v4
        .shallow_clone(clone_dir.path().join("c").to_str().unwrap(), None)
        .await
        .unwrap()
        .dataset;
    let report = src
        .cleanup(&CleanupPolicy {
            unverified_older_than: Duration::ZERO,
            ..now_policy()
        })
        .await
        .unwrap();
    assert!(report.kept_versions.contains(&4));
    assert!(report.total().objects > 0, "the cleanup removed something");
    assert_resolves(&clone).await;
}

#[tokio::test]
async fn a_clone_reads_the_row_maps_of_its_sources_tagged_fri() {
    let (src_dir, clone_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    use lancet::proto::table::DataFragment;
    let rows = |id: u64, n: u64| DataFragment {
        physical_rows: n,
        ..fragment(id)
    };
    let ds = flat_table(src_dir.path(), 1).await;
    let ds = ds
        .storage()
        .commit_manifest(
            lancet::proto::table::Manifest {
                fragments: vec![rows(0, 15)],
                ..ds.storage().manifest().clone()
            },
            &[],
        )
        .await
        .unwrap()
        .dataset;
    // a stable partition writes a row map under the source's `_fri/`, named with no base_id
    let labels: Vec<u16> = (0..15).map(|i| i % 2).collect();
    let destinations = vec![
        common::written(
            &ds,
            DataFragment {
                physical_rows: 8,
                ..fragment_in(0, "d8.lance")
            },
        )
        .await,
        common::written(
            &ds,
            DataFragment {
                physical_rows: 7,
                ..fragment_in(0, "d7.lance")
            },
        )
        .await,
    ];
    let src = ds
        .storage()
        .commit_rewrite(
            &[0],
            destinations,
            lancet::RewriteMapping::StablePartition { labels: &labels },
        )
        .await
        .unwrap()
        .dataset;
    assert_eq!(
        files(src_dir.path())
            .iter()
            .filter(|f| f.starts_with("_fri/"))
            .count(),
        1
    );
    let probe = [13u64, 4];
    let want = src
        .storage()
        .fri_history()
        .await
        .unwrap()
        .unwrap()
        .translate(&probe)
        .await
        .unwrap();
    let src_files = files(src_dir.path());
    let clone = src
        .shallow_clone(clone_dir.path().join("c").to_str().unwrap(), None)
        .await
        .unwrap()
        .dataset;
    // the clone's own entry names the source's row map through the source's base id
    assert_ne!(
        clone.storage().fri_entry().unwrap().uuid,
        src.storage().fri_entry().unwrap().uuid
    );
    let got = clone
        .storage()
        .fri_history()
        .await
        .unwrap()
        .unwrap()
        .translate(&probe)
        .await
        .unwrap();
    assert_eq!(got, want);
    settle().await;
    clone
        .cleanup(&CleanupPolicy {
            unverified_older_than: Duration::ZERO,
            ..now_policy()
        })
        .await
        .unwrap();
    assert_eq!(
        files(src_dir.path()),
        src_files,
        "the source's row map is not the clone's"
    );
    clone.storage().fri_history().await.unwrap().unwrap();
}

/// The injected clock is what commits stamp and what cleanup's age rules judge by: versions
/// committed at a clock's time are removed by Lance's default 14-day policy once that clock
/// has moved 15 days on, and not at 13; an object no version names waits for its 7 days.
#[tokio::test]
async fn commits_stamp_and_cleanup_judges_by_the_injected_clock() {
    use lancet::paths::clock::{Clock, ManualClock};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(std::time::SystemTime::now()));
    let ds = flat_table(dir.path(), 2).await.with_clock(clock.clone());
    let ds = ds
        .commit_staged(
            ds.storage().manifest().clone(),
            &[],
            &[(1, Action::Remove)],
            &TreeWriterConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        lancet::paths::manifest::timestamp_ms(ds.storage().manifest()),
        clock.now_ms(),
        "the commit time is the clock's"
    );
    let ds = ds
        .storage()
        .commit_manifest(ds.storage().manifest().clone(), &[])
        .await
        .unwrap();
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/orphan.lance"), b"x").unwrap();
    let orphan =
        |r: &lancet::CleanupReport| r.deleted_paths.iter().any(|p| p == "data/orphan.lance");
    let dry = CleanupPolicy {
        dry_run: true,
        ..Default::default()
    };
    let report = ds.dataset.cleanup(&dry).await.unwrap();
    assert!(
        report.removed_versions.is_empty() && !orphan(&report),
        "{report:?}"
    );
    assert_eq!(report.kept_young, 1);
    clock.advance(Duration::from_secs(13 * 24 * 3600));
    let report = ds.dataset.cleanup(&dry).await.unwrap();
    assert!(report.removed_versions.is_empty(), "{report:?}");
    assert!(orphan(&report), "13 days on, older than 7: {report:?}");
    clock.advance(Duration::from_secs(2 * 24 * 3600));
    // a handle checked out from this one shares its clock
    let later = ds.dataset.checkout(ds.version()).await.unwrap();
    let report = later.cleanup(&Default::default()).await.unwrap();
    assert_eq!(report.removed_versions, [1, 2], "{report:?}");
    assert_eq!(report.kept_versions, [3]);
}
