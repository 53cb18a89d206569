//! `Dataset::commit_rewrite`: what it commits, and every input it must refuse (nothing is
//! committed when it does). Manifests are built in memory; a rewrite reads only deletion
//! vectors and writes only the row map and the new manifest.

mod common;
use common::CommitStaged;

use lancet::paths::flags;
use lancet::paths::manifest::{write_manifest, ManifestContent};
use lancet::paths::DatasetStore;
use lancet::proto::table::{DataFile, DataFragment, DeletionFile, IndexMetadata, Manifest};
use lancet::reuse::{ReuseError, Translation};
use lancet::{Caches, Dataset, Error, RewriteMapping};

fn fragment(id: u64, rows: u64) -> DataFragment {
    DataFragment {
        id,
        physical_rows: rows,
        files: vec![DataFile {
            path: format!("{id}.lance"),
            fields: vec![0],
            column_indices: vec![0],
            file_major_version: 2,
            file_minor_version: 0,
            ..Default::default()
        }],
        ..Default::default()
    }
}

async fn table(m: Manifest, indices: &[IndexMetadata]) -> Dataset {
    let store = DatasetStore::scratch();
    write_manifest(
        &store,
        &ManifestContent {
            indices,
            ..ManifestContent::new(&m)
        },
    )
    .await
    .unwrap();
    Dataset::open_with(store, None, Caches::new(Default::default()))
        .await
        .unwrap()
}

fn two_fragments() -> Manifest {
    Manifest {
        version: 1,
        fragments: vec![fragment(0, 10), fragment(1, 5)],
        max_fragment_id: Some(1),
        ..Default::default()
    }
}

fn invalid(r: Result<lancet::Committed, Error>, needle: &str) {
    match r {
        Err(Error::Reuse(ReuseError::InvalidInput(m))) => assert!(m.contains(needle), "{m}"),
        other => panic!("expected InvalidInput({needle}), got {other:?}"),
    }
}

#[tokio::test]
async fn a_chain_of_rewrites_is_committed_and_translates() {
    let ds = table(two_fragments(), &[]).await;
    let destination = common::written(&ds, fragment(99, 15)).await;
    let ds = ds
        .storage()
        .commit_rewrite(
            &[0, 1],
            vec![destination],
            RewriteMapping::OrderedCompaction,
        )
        .await
        .unwrap()
        .dataset;
    assert_eq!(ds.version(), 2);
    let ids: Vec<u64> = ds.fragments().await.unwrap().iter().map(|f| f.id).collect();
    assert_eq!(ids, vec![2], "ids are assigned after the largest used");
    for word in [
        ds.storage().manifest().reader_feature_flags,
        ds.storage().manifest().writer_feature_flags,
    ] {
        assert_ne!(word & flags::FRAGMENT_REUSE_INDEX, 0);
    }
    assert_eq!(ds.storage().fri_entry().unwrap().index_version, Some(1));
    // stable partition of fragment 2: even rows to destination 0, odd to destination 1
    let labels: Vec<u16> = (0..15).map(|i| i % 2).collect();
    let mut halves = vec![fragment(0, 8), fragment(0, 7)];
    halves[1].files[0].path = "0b.lance".into();
    let mut destinations = Vec::new();
    for f in halves {
        destinations.push(common::written(&ds, f).await);
    }
    let ds = ds
        .storage()
        .commit_rewrite(
            &[2],
            destinations,
            RewriteMapping::StablePartition { labels: &labels },
        )
        .await
        .unwrap()
        .dataset;
    let ids: Vec<u64> = ds.fragments().await.unwrap().iter().map(|f| f.id).collect();
    assert_eq!(ids, vec![3, 4]);
    let history = ds.storage().fri_history().await.unwrap().unwrap();
    assert_eq!(history.ledger.transitions.len(), 2);
    // row 3 of fragment 1 was row 13 of fragment 2: odd, the 7th odd row of destination 4
    let got = history.translate(&[(1 << 32) | 3, 4]).await.unwrap();
    assert_eq!(
        got,
        vec![
            Translation::Address((4 << 32) | 6),
            Translation::Address((3 << 32) | 2)
        ]
    );
    // nothing indexes anything: the whole history can go, the flags stay
    let trimmed = ds.storage().trim_fri().await.unwrap();
    assert_eq!(trimmed.versions, 1);
    let trimmed = trimmed.dataset;
    assert!(trimmed.storage().fri_entry().is_none());
    assert_ne!(
        trimmed.storage().manifest().reader_feature_flags & flags::FRAGMENT_REUSE_INDEX,
        0
    );
    assert_eq!(trimmed.storage().trim_fri().await.unwrap().versions, 0);
}

#[tokio::test]
async fn bad_rewrites_are_refused_and_nothing_is_committed() {
    let ds = table(two_fragments(), &[]).await;
    invalid(
        ds.storage()
            .commit_rewrite(
                &[0, 0],
                vec![fragment(0, 10)],
                RewriteMapping::OrderedCompaction,
            )
            .await,
        "source twice",
    );
    invalid(
        ds.storage()
            .commit_rewrite(
                &[7],
                vec![fragment(0, 10)],
                RewriteMapping::OrderedCompaction,
            )
            .await,
        "not in",
    );
    invalid(
        ds.storage()
            .commit_rewrite(&[], vec![], RewriteMapping::OrderedCompaction)
            .await,
        "at least one source",
    );
    invalid(
        ds.storage()
            .commit_rewrite(
                &[0, 1],
                vec![fragment(0, 14)],
                RewriteMapping::OrderedCompaction,
            )
            .await,
        "15 surviving source rows but 14 destination rows",
    );
    let mut deleted = fragment(0, 15);
    deleted.deletion_file = Some(DeletionFile::default());
    invalid(
        ds.storage()
            .commit_rewrite(&[0, 1], vec![deleted], RewriteMapping::OrderedCompaction)
            .await,
        "deletion file",
    );
    invalid(
        ds.storage()
            .commit_rewrite(
                &[0, 1],
                vec![fragment(0, 15), fragment(0, 0)],
                RewriteMapping::OrderedCompaction,
            )
            .await,
        "must hold rows",
    );
    let short: Vec<u16> = vec![0; 14];
    invalid(
        ds.storage()
            .commit_rewrite(
                &[0, 1],
                vec![fragment(0, 15)],
                RewriteMapping::StablePartition { labels: &short },
            )
            .await,
        "fewer labels than live rows",
    );
    let out_of_range: Vec<u16> = vec![1; 15];
    invalid(
        ds.storage()
            .commit_rewrite(
                &[0, 1],
                vec![fragment(0, 15)],
                RewriteMapping::StablePartition {
                    labels: &out_of_range,
                },
            )
            .await,
        "label 1 with 1 destinations",
    );
    let skewed: Vec<u16> = (0..15).map(|i| u16::from(i < 10)).collect();
    invalid(
        ds.storage()
            .commit_rewrite(
                &[0, 1],
                vec![fragment(0, 8), fragment(0, 7)],
                RewriteMapping::StablePartition { labels: &skewed },
            )
            .await,
        "labels send [5, 10] rows",
    );
    // the partition refused after its row map was complete left the map behind, which no
    // version references (the ones refused mid-write never finished a file); it is younger
    // than the in-progress age, so only a zero age lists it
    let zero = std::time::Duration::ZERO;
    let week = lancet::DEFAULT_UNVERIFIED_OLDER_THAN;
    assert!(ds
        .storage()
        .unreferenced_fri_files(week)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        ds.storage()
            .unreferenced_fri_files(zero)
            .await
            .unwrap()
            .len(),
        1
    );
    let again = Dataset::open_with(
        ds.storage().store().clone(),
        None,
        Caches::new(Default::default()),
    )
    .await
    .unwrap();
    assert_eq!(again.version(), 1, "nothing was committed");
}

/// A rewrite prepared on a version another writer has since changed is rebased: the
/// published version removes the sources, holds the destinations and the other writer's
/// change, and records a Rewrite. (It once recorded a CreateIndex of the FRI alone and
/// dropped the rewrite: a flat rewrite edited the manifest in place, which a rebase
/// replaces with the latest's.) When the other writer took the destination's id, the
/// rewrite is prepared again on the latest version.
#[tokio::test]
async fn a_flat_rewrite_is_rebased_over_other_writers() {
    let deletion = lancet::tree::Action::AddDeletionFile(DeletionFile {
        id: 7,
        num_deleted_rows: 1,
        ..Default::default()
    });
    let append = lancet::tree::Action::Upsert(Box::new(fragment(3, 3)));
    // (the other writer's change, the version the rewrite is finally prepared on, ids after)
    for ((id, other), read_version, want) in [
        ((2, deletion), 1, vec![2, 3]),
        ((3, append), 2, vec![2, 3, 4]),
    ] {
        let mut m = two_fragments();
        m.fragments.push(fragment(2, 4));
        m.max_fragment_id = Some(2);
        let ds = table(m, &[]).await;
        let changed = ds
            .commit_staged(
                ds.storage().manifest().clone(),
                ds.storage().indices(),
                &[(id, other)],
                &Default::default(),
            )
            .await
            .unwrap();
        let destination = common::written(&ds, fragment(99, 15)).await;
        let rewritten = ds
            .storage()
            .commit_rewrite(
                &[0, 1],
                vec![destination],
                RewriteMapping::OrderedCompaction,
            )
            .await
            .unwrap()
            .dataset;
        assert_eq!(rewritten.version(), changed.version() + 1);
        let ids: Vec<u64> = rewritten
            .fragments()
            .await
            .unwrap()
            .iter()
            .map(|f| f.id)
            .collect();
        assert_eq!(ids, want, "the other change kept, the destination after it");
        let kept = rewritten.storage().fragment(2).await.unwrap().unwrap();
        assert_eq!(kept.deletion_file.is_some(), read_version == 1);
        let txn = rewritten.storage().transaction().await.unwrap().unwrap();
        assert_eq!(txn.operation_name(), "Rewrite");
        assert_eq!(txn.transaction.read_version, read_version);
        let history = rewritten.storage().fri_history().await.unwrap().unwrap();
        let dst: Vec<u32> = history
            .ledger
            .transitions
            .iter()
            .flat_map(|t| t.destinations.iter().map(|d| d.id))
            .collect();
        assert_eq!(
            dst,
            vec![*want.last().unwrap() as u32],
            "the history names the fragment the manifest holds"
        );
        rewritten.verify().await.unwrap();
    }
}

#[tokio::test]
async fn stable_row_id_tables_are_refused() {
    let mut m = two_fragments();
    m.reader_feature_flags = flags::STABLE_ROW_IDS;
    m.writer_feature_flags = flags::STABLE_ROW_IDS;
    for f in &mut m.fragments {
        f.row_id_sequence =
            Some(lancet::proto::table::data_fragment::RowIdSequence::InlineRowIds(Vec::new()));
    }
    let ds = table(m, &[]).await;
    match ds
        .storage()
        .commit_rewrite(
            &[0, 1],
            vec![fragment(0, 15)],
            RewriteMapping::OrderedCompaction,
        )
        .await
    {
        Err(Error::Reuse(ReuseError::Unsupported { rule, .. })) => {
            assert!(rule.contains("stable-row-id"), "{rule}")
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

/// A history with a transition lancet cannot interpret is read (skipped) but never extended
/// or trimmed: re-encoding it would drop that transition.
#[tokio::test]
async fn histories_with_unsupported_transitions_are_not_extended() {
    // InlineContent holding only field 9 (a varint), which lancet does not know
    let inline = [9 << 3, 1];
    let mut details = vec![(1 << 3) | 2, inline.len() as u8];
    details.extend_from_slice(&inline);
    let entry = IndexMetadata {
        uuid: Some(lancet::paths::ObjectUuid::new_v4().to_proto()),
        name: "__lance_frag_reuse".into(),
        dataset_version: 1,
        index_details: Some(lancet::proto::prost_types::Any {
            type_url: "/lance.table.FragmentReuseIndexDetails".into(),
            value: details,
        }),
        index_version: Some(1),
        ..Default::default()
    };
    let mut m = two_fragments();
    m.reader_feature_flags = flags::FRAGMENT_REUSE_INDEX;
    m.writer_feature_flags = flags::FRAGMENT_REUSE_INDEX;
    let ds = table(m, &[entry]).await;
    assert!(
        ds.storage()
            .fri_ledger()
            .await
            .unwrap()
            .unwrap()
            .has_unsupported
    );
    for r in [
        ds.storage()
            .commit_rewrite(
                &[0, 1],
                vec![fragment(0, 15)],
                RewriteMapping::OrderedCompaction,
            )
            .await,
        ds.storage().trim_fri().await,
    ] {
        match r {
            Err(Error::Reuse(ReuseError::Unsupported { rule, .. })) => {
                assert!(rule.contains("cannot interpret"), "{rule}")
            }
            other => panic!("expected Unsupported, got {other:?}"),
        }
    }
}

/// Stable row ids and an FRI together need flag 512 in both words, and only a legacy (v0)
/// history: a reader refuses anything else as corrupt.
#[tokio::test]
async fn stable_row_ids_with_an_fri_need_flag_512_and_v0() {
    let entry = |index_version: i32| IndexMetadata {
        uuid: Some(lancet::paths::ObjectUuid::new_v4().to_proto()),
        name: "__lance_frag_reuse".into(),
        dataset_version: 1,
        index_details: Some(lancet::proto::prost_types::Any {
            type_url: "/lance.table.FragmentReuseIndexDetails".into(),
            // inline, empty InlineContent
            value: vec![(1 << 3) | 2, 0],
        }),
        index_version: Some(index_version),
        ..Default::default()
    };
    let with_flags = |bits: u64| {
        let mut m = two_fragments();
        m.reader_feature_flags = flags::STABLE_ROW_IDS | bits;
        m.writer_feature_flags = flags::STABLE_ROW_IDS | bits;
        for f in &mut m.fragments {
            f.row_id_sequence =
                Some(lancet::proto::table::data_fragment::RowIdSequence::InlineRowIds(Vec::new()));
        }
        m
    };
    let both = flags::FRAG_REUSE_WITH_STABLE_ROW_IDS;
    let ok = table(with_flags(both), &[entry(0)]).await;
    assert!(ok.storage().fri_ledger().await.unwrap().is_some());
    for (m, e, needle) in [
        (with_flags(0), entry(0), "flag 512"),
        (
            with_flags(both | flags::FRAGMENT_REUSE_INDEX),
            entry(1),
            "tagged FRI entry on a stable-row-id table",
        ),
    ] {
        let ds = table(m, &[e]).await;
        match ds.storage().fri_ledger().await {
            Err(Error::Reuse(ReuseError::Corrupt { rule, .. })) => {
                assert!(rule.contains(needle), "{rule}")
            }
            other => panic!("expected Corrupt({needle}), got {other:?}"),
        }
    }
}

/// A rewrite whose destination names a data file that does not exist is refused as
/// `DataFileOpens`, nothing published (the version stays, and so does the hint).
#[tokio::test]
async fn a_rewrite_into_a_missing_file_is_refused() {
    let ds = table(two_fragments(), &[]).await;
    let err = ds
        .storage()
        .commit_rewrite(
            &[0, 1],
            vec![fragment(99, 15)],
            RewriteMapping::OrderedCompaction,
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.invariant(),
        Some(lancet::Invariant::DataFileOpens),
        "{err}"
    );
    let latest = lancet::paths::manifest::list_versions(ds.storage().store())
        .await
        .unwrap();
    assert_eq!(latest.iter().map(|v| v.version).max(), Some(1));
}
