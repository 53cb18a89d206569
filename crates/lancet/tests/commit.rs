//! Commits through the facade on flat and tree tables: actions, conversion, flattening, and
//! losing the race for a version.

mod common;
use common::CommitStaged;

use common::{flat_table, fragment, table_of};
use lancet::proto::table::DeletionFile;
use lancet::proto::table::Manifest;
use lancet::tree::{Action, TreeWriterConfig};
use lancet::{Dataset, Error};

#[tokio::test]
async fn tree_and_flat_commits_agree() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut flat = flat_table(a.path(), 20).await;
    let tiny = TreeWriterConfig::tiny();
    let mut tree = flat_table(b.path(), 20)
        .await
        .storage()
        .convert_to_tree(&tiny, |_, _| {})
        .await
        .unwrap()
        .dataset;
    assert!(tree.storage().tree().is_some());
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
            .commit_staged(flat.storage().manifest().clone(), &[], &actions, &tiny)
            .await
            .unwrap();
        tree = tree
            .commit_staged(tree.storage().manifest().clone(), &[], &actions, &tiny)
            .await
            .unwrap();
        tree.verify().await.unwrap();
        assert_eq!(
            tree.fragments().await.unwrap(),
            flat.fragments().await.unwrap(),
            "round {round}"
        );
        assert_eq!(
            tree.storage().manifest().max_fragment_id,
            flat.storage().manifest().max_fragment_id
        );
        assert_eq!(tree.num_rows(), flat.num_rows());
    }
    // flattening publishes the same fragments flat
    let back = tree.storage().flatten().await.unwrap().dataset;
    assert!(back.storage().tree().is_none());
    assert_eq!(
        back.fragments().await.unwrap(),
        flat.fragments().await.unwrap()
    );
    // a bad action fails before anything is published
    let err = back
        .commit_staged(
            back.storage().manifest().clone(),
            &[],
            &[(999, Action::AddDataFile(fragment(0).files[0].clone()))],
            &tiny,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[tokio::test]
async fn a_lost_race_rebases_compatible_commits_and_reports_real_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let base = flat_table(dir.path(), 3)
        .await
        .storage()
        .convert_to_tree(&TreeWriterConfig::default(), |_, _| {})
        .await
        .unwrap()
        .dataset;
    let append = |ds: &Dataset| {
        let ds = ds.clone();
        async move {
            ds.commit_staged(
                ds.storage().manifest().clone(),
                &[],
                &[(3, Action::Upsert(Box::new(fragment(3))))],
                &TreeWriterConfig::default(),
            )
            .await
        }
    };
    let first = append(&base).await.unwrap();
    // prepared on the same version: the append rebases, its new fragment moves to id 4
    let second = append(&base).await.unwrap();
    assert_eq!(second.version(), first.version() + 1);
    second.verify().await.unwrap();
    let ids: Vec<u64> = second
        .fragments()
        .await
        .unwrap()
        .iter()
        .map(|f| f.id)
        .collect();
    assert_eq!(ids, vec![0, 1, 2, 3, 4]);
    assert_eq!(second.storage().manifest().max_fragment_id, Some(4));
    let txn = second.storage().transaction().await.unwrap().unwrap();
    assert_eq!(txn.operation_name(), "Append");
    assert_eq!(txn.transaction.read_version, base.version());

    // two deletions of one fragment prepared on one version: the second is a conflict
    let delete = |ds: &Dataset, n: u64| {
        let ds = ds.clone();
        async move {
            ds.commit_staged(
                ds.storage().manifest().clone(),
                &[],
                &[(
                    1,
                    Action::AddDeletionFile(DeletionFile {
                        num_deleted_rows: n,
                        id: n,
                        ..Default::default()
                    }),
                )],
                &TreeWriterConfig::default(),
            )
            .await
        }
    };
    let won = delete(&second, 1).await.unwrap();
    let lost = delete(&second, 2).await;
    assert_eq!(
        lost.as_ref().err().map(|e| e.kind()),
        Some(lancet::ErrorKind::Conflict)
    );
    match lost {
        Err(Error::CommitConflict {
            version,
            reason,
            retryable,
            cause,
            ..
        }) => {
            assert_eq!(version, won.version());
            assert!(retryable);
            assert_eq!(cause, lancet::txn::rebase::ConflictCause::Incompatible);
            assert!(reason.contains("Delete against Delete"), "{reason}");
            assert!(reason.contains("fragment 1"), "{reason}");
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    // nothing was published by the loser; the winner is intact
    let latest = Dataset::open(won.uri()).await.unwrap();
    assert_eq!(latest.version(), won.version());
    latest.verify().await.unwrap();
    // a deletion of another fragment rebases
    let other = second
        .commit_staged(
            second.storage().manifest().clone(),
            &[],
            &[(
                2,
                Action::AddDeletionFile(DeletionFile {
                    num_deleted_rows: 3,
                    id: 3,
                    ..Default::default()
                }),
            )],
            &TreeWriterConfig::default(),
        )
        .await
        .unwrap();
    assert_eq!(other.version(), won.version() + 1);
    let f = other.fragments().await.unwrap();
    assert_eq!(f[1].deletion_file.as_ref().unwrap().num_deleted_rows, 1);
    assert_eq!(f[2].deletion_file.as_ref().unwrap().num_deleted_rows, 3);
}

#[tokio::test]
async fn a_rebased_tree_commit_reuses_the_winners_external_root() {
    let dir = tempfile::tempdir().unwrap();
    let config = TreeWriterConfig {
        inline_root_max_bytes: 0,
        ..TreeWriterConfig::default()
    };
    let base = flat_table(dir.path(), 10)
        .await
        .storage()
        .convert_to_tree(&config, |_, _| {})
        .await
        .unwrap()
        .dataset;
    let root = |ds: &Dataset| ds.storage().tree().unwrap().root_info().clone();
    assert!(matches!(
        root(&base),
        lancet::tree::RootInfo::External { .. }
    ));
    let append = |id: u64| vec![(id, Action::Upsert(Box::new(fragment(id))))];
    common::stage(&base, &append(10)).await;
    let won = base
        .storage()
        .commit_actions(base.storage().manifest().clone(), &[], &append(10), &config)
        .await
        .unwrap();
    // a tree table inlines its transactions (flag 32): the manifest is the only object
    assert_eq!((won.attempts, won.objects_written), (1, 1));
    assert!(won.dataset.storage().manifest().transaction_file.is_empty());
    assert!(
        won.dataset.storage().transaction().await.unwrap().is_some(),
        "the transaction is read from the manifest's inline section"
    );
    // prepared on the same version: loses the race, rebases onto the winner's tree
    let rebased = base
        .storage()
        .commit_actions(base.storage().manifest().clone(), &[], &append(10), &config)
        .await
        .unwrap();
    assert_eq!(rebased.attempts, 2);
    assert_eq!(
        rebased.objects_written, 1,
        "the changes fit in mutations_since_root: only the manifest"
    );
    assert_eq!(root(&rebased.dataset), root(&won.dataset));
    assert_eq!(rebased.dataset.version(), won.dataset.version() + 1);
    let ids: Vec<u64> = rebased
        .dataset
        .fragments()
        .await
        .unwrap()
        .iter()
        .map(|f| f.id)
        .collect();
    assert_eq!(
        ids,
        (0..12).collect::<Vec<_>>(),
        "the new id moved past the winner's"
    );
    rebased.dataset.verify().await.unwrap();
}

/// A backfill of storage actions (a data file for a field no file holds) is recorded as a
/// DataReplacement and rebases over a delete of the same fragment; two backfills of one
/// fragment prepared on one version conflict, and the loser publishes nothing.
#[tokio::test]
async fn a_backfill_is_a_replacement_that_rebases_over_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let base = flat_table(dir.path(), 3)
        .await
        .storage()
        .convert_to_tree(&TreeWriterConfig::default(), |_, _| {})
        .await
        .unwrap()
        .dataset;
    let config = TreeWriterConfig::default();
    let deleted = base
        .commit_staged(
            base.storage().manifest().clone(),
            &[],
            &[(
                1,
                Action::AddDeletionFile(DeletionFile {
                    num_deleted_rows: 2,
                    id: 7,
                    ..Default::default()
                }),
            )],
            &config,
        )
        .await
        .unwrap();
    let backfill = |path: &str| {
        let mut file = fragment(1).files[0].clone();
        file.path = path.into();
        file.fields = vec![1];
        file.column_indices = vec![0];
        vec![(1, Action::AddDataFile(file))]
    };
    // prepared on the version before the delete
    let filled = base
        .commit_staged(
            base.storage().manifest().clone(),
            &[],
            &backfill("w1.lance"),
            &config,
        )
        .await
        .unwrap();
    assert_eq!(filled.version(), deleted.version() + 1);
    let txn = filled.storage().transaction().await.unwrap().unwrap();
    assert_eq!(txn.operation_name(), "DataReplacement");
    let f = &filled.fragments().await.unwrap()[1];
    assert_eq!(f.files.len(), 2);
    assert_eq!(f.deletion_file.as_ref().unwrap().num_deleted_rows, 2);
    filled.verify().await.unwrap();
    // a second backfill of fragment 1 prepared on the same version as the first
    let lost = base
        .commit_staged(
            base.storage().manifest().clone(),
            &[],
            &backfill("w2.lance"),
            &config,
        )
        .await;
    match lost {
        Err(Error::CommitConflict {
            reason, retryable, ..
        }) => {
            assert!(retryable);
            assert!(reason.contains("fragment 1"), "{reason}");
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    let latest = Dataset::open(filled.uri()).await.unwrap();
    assert_eq!(latest.version(), filled.version());
}

/// Issue 30, item 10: a storage-action commit that adds a column (a schema change with
/// `add_data_file` actions) and loses the race to a compatible commit lands with its column:
/// the rebase replays the caller's schema edit on the latest manifest. Two such commits that
/// both change the schema conflict, nothing published.
#[tokio::test]
async fn a_rebased_storage_action_commit_keeps_its_schema_change() {
    use lancet::proto::file::Field;
    for tree in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let field = |id: i32, name: &str| Field {
            id,
            parent_id: -1,
            name: name.into(),
            logical_type: "int64".into(),
            nullable: true,
            ..Default::default()
        };
        // column a (field 0) is the one the fragments' files hold
        let mut base = table_of(
            dir.path(),
            Manifest {
                fragments: (0..3).map(fragment).collect(),
                max_fragment_id: Some(2),
                fields: vec![field(0, "a")],
                ..Default::default()
            },
        )
        .await;
        if tree {
            base = base
                .storage()
                .convert_to_tree(&TreeWriterConfig::default(), |_, _| {})
                .await
                .unwrap()
                .dataset;
        }
        let config = TreeWriterConfig::default();
        let same = base.storage().manifest().clone();
        let base = base.storage().commit_manifest(same, &[]).await.unwrap();
        // another writer deletes rows of fragment 2 first
        let deleted = base
            .dataset
            .commit_staged(
                base.dataset.storage().manifest().clone(),
                &[],
                &[(
                    2,
                    Action::AddDeletionFile(DeletionFile {
                        num_deleted_rows: 1,
                        id: 9,
                        ..Default::default()
                    }),
                )],
                &config,
            )
            .await
            .unwrap();
        // prepared on `base`: column w (field 1) and its file on fragment 1
        let mut with_w = base.dataset.storage().manifest().clone();
        with_w.fields.push(field(1, "w"));
        let mut file = fragment(1).files[0].clone();
        file.path = "w1.lance".into();
        file.fields = vec![1];
        let filled = base
            .dataset
            .commit_staged(
                with_w.clone(),
                &[],
                &[(1, Action::AddDataFile(file))],
                &config,
            )
            .await
            .unwrap();
        assert_eq!(filled.version(), deleted.version() + 1, "tree={tree}");
        let names: Vec<&str> = filled
            .storage()
            .manifest()
            .fields
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(names, ["a", "w"], "tree={tree}");
        assert!(filled.fragments().await.unwrap()[2].deletion_file.is_some());
        // a second schema change prepared on `base` conflicts: the schema changed since
        // (Lance's table lets an UpdateConfig rebase over a Merge; the manifest replay refuses)
        let mut with_x = base.dataset.storage().manifest().clone();
        with_x.fields.push(field(1, "x"));
        let lost = base.dataset.commit_staged(with_x, &[], &[], &config).await;
        assert!(
            matches!(
                lost,
                Err(Error::CommitConflict {
                    cause: lancet::txn::rebase::ConflictCause::SchemaChanged,
                    ..
                })
            ),
            "tree={tree}: {lost:?}"
        );
        let latest = Dataset::open(filled.uri()).await.unwrap();
        assert_eq!(latest.version(), filled.version());
    }
}

/// A fragment whose row count is unknown (0 in a legacy manifest, as Lance 14 reads it) is
/// not skipped by a merge_insert or a cast: both refuse it, typed, nothing published.
#[tokio::test]
async fn merges_and_casts_refuse_fragments_of_unknown_row_count() {
    use arrow_array::{Int64Array, RecordBatch};
    use lancet::proto::file::Field;
    let dir = tempfile::tempdir().unwrap();
    let mut legacy = fragment(0);
    legacy.physical_rows = 0;
    let ds = table_of(
        dir.path(),
        Manifest {
            fragments: vec![legacy],
            max_fragment_id: Some(0),
            fields: vec![Field {
                id: 0,
                parent_id: -1,
                name: "id".into(),
                logical_type: "int64".into(),
                nullable: true,
                ..Default::default()
            }],
            ..Default::default()
        },
    )
    .await;
    let batch = RecordBatch::try_new(
        ds.schema().unwrap(),
        vec![std::sync::Arc::new(Int64Array::from(vec![1]))],
    )
    .unwrap();
    let e = ds
        .merge_insert(&["id"])
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute(futures::stream::iter([Ok(batch)]))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), lancet::ErrorKind::Unsupported, "{e}");
    let cast = lancet::ColumnAlteration {
        path: "id".into(),
        data_type: Some(arrow_schema::DataType::Int32),
        ..Default::default()
    };
    let e = ds.alter_columns(&[cast]).await.unwrap_err();
    assert_eq!(e.kind(), lancet::ErrorKind::Unsupported, "{e}");
    assert_eq!(Dataset::open(ds.uri()).await.unwrap().version(), 1);
}
