//! Commits through the facade on flat and tree tables: actions, conversion, flattening, and
//! losing the race for a version.

use lancet::paths::manifest::{write_manifest, NamingScheme};
use lancet::paths::DatasetStore;
use lancet::proto::table::{DataFile, DataFragment, DeletionFile, Manifest};
use lancet::tree::{Action, TreeWriterConfig};
use lancet::{Caches, Dataset, Error};

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

async fn flat_table(dir: &std::path::Path, n: u64) -> Dataset {
    let store = DatasetStore::create(dir.to_str().unwrap()).unwrap();
    let m = Manifest {
        version: 1,
        fragments: (0..n).map(fragment).collect(),
        max_fragment_id: n.checked_sub(1).map(|m| m as u32),
        ..Default::default()
    };
    write_manifest(&store, &m, &[], &[], NamingScheme::V2)
        .await
        .unwrap();
    Dataset::open_with(store, None, Caches::new(Default::default()))
        .await
        .unwrap()
}

#[tokio::test]
async fn tree_and_flat_commits_agree() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut flat = flat_table(a.path(), 20).await;
    let tiny = TreeWriterConfig::tiny();
    let mut tree = flat_table(b.path(), 20)
        .await
        .convert_to_tree(&tiny, |_, _| {})
        .await
        .unwrap();
    assert!(tree.tree().is_some());
    assert_eq!(
        tree.fragments().await.unwrap(),
        flat.fragments().await.unwrap()
    );
    for round in 0..15u64 {
        let new = 20 + round;
        let mut actions = vec![
            (new, Action::Upsert(Box::new(fragment(new)))),
            (
                round,
                Action::AddDeletionFile(DeletionFile {
                    num_deleted_rows: 1 + round,
                    id: round,
                    ..Default::default()
                }),
            ),
        ];
        if round % 2 == 1 {
            actions.push((new - 1, Action::Remove));
        }
        flat = flat
            .commit_with_actions(flat.manifest().clone(), &[], &actions, &tiny)
            .await
            .unwrap();
        tree = tree
            .commit_with_actions(tree.manifest().clone(), &[], &actions, &tiny)
            .await
            .unwrap();
        tree.verify().await.unwrap();
        assert_eq!(
            tree.fragments().await.unwrap(),
            flat.fragments().await.unwrap(),
            "round {round}"
        );
        assert_eq!(
            tree.manifest().max_fragment_id,
            flat.manifest().max_fragment_id
        );
        assert_eq!(tree.num_rows(), flat.num_rows());
    }
    // flattening publishes the same fragments flat
    let back = tree.flatten().await.unwrap();
    assert!(back.tree().is_none());
    assert_eq!(
        back.fragments().await.unwrap(),
        flat.fragments().await.unwrap()
    );
    // a bad action fails before anything is published
    let err = back
        .commit_with_actions(
            back.manifest().clone(),
            &[],
            &[(999, Action::AddDataFile(fragment(0).files[0].clone()))],
            &tiny,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[tokio::test]
async fn losing_the_race_is_a_commit_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let base = flat_table(dir.path(), 3)
        .await
        .convert_to_tree(&TreeWriterConfig::default(), |_, _| {})
        .await
        .unwrap();
    let first = base
        .commit_with_actions(
            base.manifest().clone(),
            &[],
            &[(3, Action::Upsert(Box::new(fragment(3))))],
            &TreeWriterConfig::default(),
        )
        .await
        .unwrap();
    let second = base
        .commit_with_actions(
            base.manifest().clone(),
            &[],
            &[(3, Action::Upsert(Box::new(fragment(3))))],
            &TreeWriterConfig::default(),
        )
        .await;
    assert!(
        matches!(second, Err(Error::CommitConflict { version, .. }) if version == first.version())
    );
    // the winner is intact
    first.verify().await.unwrap();
    assert_eq!(first.fragments().await.unwrap().len(), 4);
}
