//! `Dataset::commit(Operation)` (issue 19) on flat and tree tables with stable row ids: new
//! fragments numbered after `max_fragment_id` and given row ids from `next_row_id`; deletions
//! merged; two writers prepared on one version both land with distinct ids; a candidate whose
//! data files disagree with it, or an operation naming a fragment the version lacks, is
//! refused typed with `_versions/` byte-identical to before.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field as ArrowField, Schema};
use lancet::file::{manifest_fields, write_file, FileVersion, WriteOptions};
use lancet::paths::{flags, DatasetStore};
use lancet::proto::table::transaction::{
    Append, CreateIndex, Delete, Merge, ReserveFragments, Update,
};
use lancet::proto::table::{DataFile, DataFragment, IndexMetadata, Manifest, Uuid};
use lancet::tree::TreeWriterConfig;
use lancet::{Caches, Dataset, ErrorKind, Invariant, Operation};
use roaring::RoaringBitmap;

fn schema() -> Schema {
    Schema::new(vec![ArrowField::new("a", DataType::Int64, false)])
}

/// A fragment at id 0 (numbered at commit) of `rows` rows in a new Lance file under `dir`.
async fn written(dir: &Path, name: &str, rows: i64) -> DataFragment {
    let store = DatasetStore::create(dir.to_str().unwrap()).unwrap();
    let fs = lancet::file_store_for(&store).unwrap();
    let column: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows));
    let batch = RecordBatch::try_from_iter([("a", column)]).unwrap();
    let file = write_file(
        &fs,
        &store.path(&format!("data/{name}")),
        &schema(),
        &[batch],
        &WriteOptions::default(),
    )
    .await
    .unwrap();
    let (major, minor) = FileVersion::V2_1.data_file_version();
    DataFragment {
        files: vec![DataFile {
            path: name.to_string(),
            fields: vec![0],
            column_indices: vec![0],
            file_major_version: major,
            file_minor_version: minor,
            file_size_bytes: file.size_bytes,
            base_id: None,
        }],
        physical_rows: file.num_rows,
        ..Default::default()
    }
}

/// An empty stable-row-id table at `dir`, flat or (converted) a tree.
async fn empty_table(dir: &Path, tree: bool) -> Dataset {
    table_with_flags(dir, flags::STABLE_ROW_IDS, tree).await
}

/// An empty table at `dir` with `feature_flags` in both words, flat or (converted) a tree.
async fn table_with_flags(dir: &Path, feature_flags: u64, tree: bool) -> Dataset {
    let store = DatasetStore::create(dir.to_str().unwrap()).unwrap();
    let m = Manifest {
        version: 1,
        fields: manifest_fields(&schema()).unwrap(),
        reader_feature_flags: feature_flags,
        writer_feature_flags: feature_flags,
        timestamp: Some(lancet::paths::manifest::now_timestamp()),
        ..Default::default()
    };
    lancet::paths::manifest::write_manifest(
        &store,
        &lancet::paths::manifest::ManifestContent {
            scheme: lancet::paths::manifest::NamingScheme::V2,
            ..lancet::paths::manifest::ManifestContent::new(&m)
        },
    )
    .await
    .unwrap();
    let ds = Dataset::open_with(store, None, Caches::new(Default::default()))
        .await
        .unwrap();
    if !tree {
        return ds;
    }
    ds.storage()
        .convert_to_tree(&TreeWriterConfig::tiny(), |_, _| {})
        .await
        .unwrap()
        .dataset
}

fn versions_dir(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir.join("_versions"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn append(fragments: Vec<DataFragment>) -> Operation {
    Operation::Append(Append { fragments })
}

/// Every live row id of `ds`, by fragment.
async fn row_ids(ds: &Dataset) -> Vec<(u64, Vec<u64>)> {
    let mut out = Vec::new();
    for f in ds.fragments().await.unwrap().iter() {
        let ids = ds.storage().row_id_sequence(f).unwrap().unwrap();
        let deleted = ds
            .storage()
            .deletion_vector(f)
            .await
            .unwrap()
            .unwrap_or_default();
        let live = ids
            .iter()
            .enumerate()
            .filter(|(o, _)| !deleted.contains(*o as u32))
            .map(|(_, id)| id)
            .collect();
        out.push((f.id, live));
    }
    out
}

#[tokio::test]
async fn append_numbers_fragments_and_assigns_row_ids_on_both_layouts() {
    for tree in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let ds = empty_table(d, tree).await;
        let op = append(vec![
            written(d, "a.lance", 30).await,
            written(d, "b.lance", 20).await,
        ]);
        let one = ds.commit(op).await.unwrap().dataset;
        assert_eq!(one.storage().tree().is_some(), tree);
        let ids = row_ids(&one).await;
        assert_eq!(
            ids,
            vec![(0, (0..30).collect()), (1, (30..50).collect())],
            "tree={tree}"
        );
        assert_eq!(one.storage().manifest().next_row_id, 50);
        assert_eq!(one.storage().manifest().max_fragment_id, Some(1));
        let f = one.storage().fragment(1).await.unwrap().unwrap();
        let (created, updated) = one.storage().version_sequences(&f).unwrap();
        assert_eq!(created.unwrap().version_at(19), Some(one.version()));
        assert_eq!(updated.unwrap().version_at(0), Some(one.version()));
        let txn = one.storage().transaction().await.unwrap().unwrap();
        assert_eq!(txn.operation_name(), "Append");
        match txn.transaction.operation {
            // recorded as the caller gave it, as Lance records it
            Some(Operation::Append(a)) => {
                assert!(a
                    .fragments
                    .iter()
                    .all(|f| f.id == 0 && f.row_id_sequence.is_none()))
            }
            other => panic!("{other:?}"),
        }

        // deletions merge with the fragment's; a fragment left with no row is removed
        let gone: RoaringBitmap = (0..20).collect();
        let two = one
            .storage()
            .delete_rows(&[(0, [3u32, 4].into_iter().collect()), (1, gone)], "p")
            .await
            .unwrap()
            .dataset;
        let three = two
            .storage()
            .delete_rows(&[(0, [5u32].into_iter().collect())], "q")
            .await
            .unwrap()
            .dataset;
        let live = row_ids(&three).await;
        assert_eq!(live.len(), 1, "fragment 1 lost every row: removed");
        let expect: Vec<u64> = (0..30).filter(|i| ![3, 4, 5].contains(i)).collect();
        assert_eq!(live[0], (0, expect));
        let f0 = three.storage().fragment(0).await.unwrap().unwrap();
        assert_eq!(f0.deletion_file.unwrap().num_deleted_rows, 3);
        three.storage().verify_data().await.unwrap();

        // an update moves row id 7 to a new fragment: same id, creation kept
        let mut moved = written(d, "moved.lance", 1).await;
        moved.row_id_sequence = Some(
            lancet::proto::table::data_fragment::RowIdSequence::InlineRowIds(
                lancet::rowid::RowIdSequence::from_values(&[7]).encode(),
            ),
        );
        let tomb = three
            .storage()
            .delete_operation(&[(0, [7u32].into_iter().collect())], "")
            .await
            .unwrap();
        let four = three
            .commit(Operation::Update(Update {
                updated_fragments: tomb.updated_fragments,
                new_fragments: vec![moved],
                ..Default::default()
            }))
            .await
            .unwrap()
            .dataset;
        let live = row_ids(&four).await;
        assert_eq!(live.last().unwrap(), &(2, vec![7]), "tree={tree}");
        assert_eq!(
            four.storage().manifest().next_row_id,
            50,
            "a moved row takes no new id"
        );
        let f2 = four.storage().fragment(2).await.unwrap().unwrap();
        let (created, updated) = four.storage().version_sequences(&f2).unwrap();
        assert_eq!(created.unwrap().version_at(0), Some(one.version()));
        assert_eq!(updated.unwrap().version_at(0), Some(four.version()));
        four.storage().verify_data().await.unwrap();
    }
}

#[tokio::test]
async fn two_appends_prepared_on_one_version_both_land_with_distinct_ids() {
    for tree in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let ds = empty_table(d, tree).await;
        let (a, b) = (
            written(d, "a.lance", 10).await,
            written(d, "b.lance", 5).await,
        );
        let first = ds.commit(append(vec![a])).await.unwrap();
        // prepared on `ds`, which is no longer the latest: rebased, planned again
        let second = ds.commit(append(vec![b])).await.unwrap();
        assert_eq!(second.attempts, 2);
        let latest = second.dataset;
        assert_eq!(latest.version(), first.dataset.version() + 1);
        assert_eq!(
            row_ids(&latest).await,
            vec![(0, (0..10).collect()), (1, (10..15).collect())]
        );
        latest.storage().verify_data().await.unwrap();
    }
}

/// Commits `op` on `ds` expecting a refusal of `kind` whose message names `says`, with
/// nothing visible written.
async fn refused(dir: &Path, ds: &Dataset, op: Operation, kind: ErrorKind, says: &str) {
    let before = versions_dir(dir);
    let err = ds.commit(op).await.unwrap_err();
    assert_eq!(err.kind(), kind, "{err}");
    assert!(err.to_string().contains(says), "{err}");
    assert_eq!(
        versions_dir(dir),
        before,
        "a refused commit wrote to _versions/"
    );
}

#[tokio::test]
async fn bad_operations_are_refused_typed_and_write_nothing() {
    for tree in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let ds = empty_table(d, tree).await;
        let ds = ds
            .commit(append(vec![written(d, "a.lance", 10).await]))
            .await
            .unwrap()
            .dataset;

        // physical_rows disagrees with the data file: judged by its footer
        let mut lying = written(d, "b.lance", 10).await;
        lying.physical_rows = 12;
        refused(
            d,
            &ds,
            append(vec![lying]),
            ErrorKind::InvalidInput,
            "DataFileRows",
        )
        .await;
        let err = ds
            .commit(append(vec![{
                let mut f = written(d, "c.lance", 4).await;
                f.files[0].path = "missing.lance".into();
                f
            }]))
            .await
            .unwrap_err();
        assert_eq!(err.invariant(), Some(Invariant::DataFileOpens), "{err}");

        // a fragment the version does not have
        let ghost = Operation::Delete(Delete {
            deleted_fragment_ids: vec![42],
            ..Default::default()
        });
        refused(
            d,
            &ds,
            ghost,
            ErrorKind::InvalidInput,
            "fragment 42 is not in version",
        )
        .await;
        let mut unknown = written(d, "d.lance", 10).await;
        unknown.id = 9;
        let update = Operation::Update(Update {
            updated_fragments: vec![unknown],
            ..Default::default()
        });
        refused(
            d,
            &ds,
            update,
            ErrorKind::InvalidInput,
            "fragment 9 is not in version",
        )
        .await;

        // ids: reserved ids are skipped by numbering; an id live in the version is refused
        let reserved = ds
            .commit(Operation::ReserveFragments(ReserveFragments {
                num_fragments: 4,
            }))
            .await
            .unwrap()
            .dataset;
        assert_eq!(reserved.storage().manifest().max_fragment_id, Some(4));
        let five = reserved
            .commit(append(vec![written(d, "g.lance", 3).await]))
            .await
            .unwrap()
            .dataset;
        assert!(five.storage().fragment(5).await.unwrap().is_some());
        let five = five
            .commit(Operation::Delete(Delete {
                deleted_fragment_ids: vec![0],
                ..Default::default()
            }))
            .await
            .unwrap()
            .dataset;
        let mut dead = written(d, "h.lance", 3).await;
        dead.id = 5; // live: appending it would replace fragment 5
        refused(
            d,
            &five,
            append(vec![dead.clone()]),
            ErrorKind::InvalidInput,
            "in version",
        )
        .await;
        dead.id = 0; // numbered: 6
        let six = five.commit(append(vec![dead])).await.unwrap().dataset;
        assert!(six.storage().fragment(6).await.unwrap().is_some());
        // an id the reservation left unused may still be taken (Lance's reserve-then-commit;
        // `reserved_fragment_ids_can_be_used_once` refuses the used ones)
        let mut reserved_id = written(d, "i.lance", 2).await;
        reserved_id.id = 3;
        let five = six.commit(append(vec![reserved_id])).await.unwrap().dataset;
        assert!(five.storage().fragment(3).await.unwrap().is_some());

        // operations committed elsewhere, or not yet
        refused(
            d,
            &five,
            Operation::UpdateMemWalState(Default::default()),
            ErrorKind::Unsupported,
            "UpdateMemWalState",
        )
        .await;
        // a Project keeping no column drops every column: refused, as Lance refuses it
        refused(
            d,
            &five,
            Operation::Project(Default::default()),
            ErrorKind::InvalidInput,
            "Cannot drop all columns",
        )
        .await;
        refused(
            d,
            &five,
            Operation::Rewrite(Default::default()),
            ErrorKind::Unsupported,
            "commit_rewrite",
        )
        .await;

        // CreateIndex adds entries; two of one name are refused
        let entry = |b: u8| IndexMetadata {
            uuid: Some(Uuid { uuid: vec![b; 16] }),
            name: "a_idx".into(),
            fields: vec![0],
            ..Default::default()
        };
        let indexed = five
            .commit(Operation::CreateIndex(CreateIndex {
                new_indices: vec![entry(1)],
                removed_indices: vec![],
            }))
            .await
            .unwrap()
            .dataset;
        assert_eq!(indexed.storage().indices().len(), 1);
        let twice = Operation::CreateIndex(CreateIndex {
            new_indices: vec![entry(1)],
            removed_indices: vec![],
        });
        refused(
            d,
            &indexed,
            twice,
            ErrorKind::InvalidInput,
            "IndexEntriesDistinct",
        )
        .await;
    }
}

/// Without stable row ids too, a Delete naming a deletion file that is not in storage is
/// refused (`DeletionFileExists`), with nothing written.
#[tokio::test]
async fn a_delete_naming_a_missing_deletion_file_is_refused_on_any_table() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let ds = table_with_flags(d, 0, false).await;
    assert!(!ds.storage().has_stable_row_ids());
    let ds = ds
        .commit(append(vec![written(d, "a.lance", 10).await]))
        .await
        .unwrap()
        .dataset;
    let mut f = ds.storage().fragment(0).await.unwrap().unwrap();
    f.deletion_file = Some(lancet::proto::table::DeletionFile {
        num_deleted_rows: 2,
        id: 99,
        read_version: ds.version(),
        ..Default::default()
    });
    let ghost = Operation::Delete(Delete {
        updated_fragments: vec![f],
        ..Default::default()
    });
    refused(d, &ds, ghost, ErrorKind::InvalidInput, "DeletionFileExists").await;
    // the same rows deleted through delete_rows: the file is written, and the delete lands
    let two = ds
        .storage()
        .delete_rows(&[(0, [1u32, 2].into_iter().collect())], "a in (1, 2)")
        .await
        .unwrap()
        .dataset;
    assert_eq!(two.num_rows(), Some(8));
    two.storage().verify_data().await.unwrap();
}

/// Merge lists every fragment of the table (Lance 14.0.2's `merge_fragments_valid`): one it
/// leaves out, or one whose `physical_rows` it changes, is refused; a staged new fragment at
/// id 0 (as `write_fragments` returns them) is numbered as new and never replaces fragment 0;
/// a DataReplacement whose file covers a field no file holds beside one a file holds is refused.
/// Nothing is written by a refusal.
#[tokio::test]
async fn merge_and_data_replacement_keep_lances_rules() {
    use lancet::proto::table::transaction::{DataReplacement, DataReplacementGroup};
    for tree in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let ds = empty_table(d, tree).await;
        let ds = ds
            .commit(append(vec![
                written(d, "a.lance", 10).await,
                written(d, "b.lance", 5).await,
            ]))
            .await
            .unwrap()
            .dataset;
        let zero = ds.storage().fragment(0).await.unwrap().unwrap();
        let keep = ds.storage().fragment(1).await.unwrap().unwrap();
        let op = Operation::Merge(Merge {
            fragments: vec![keep.clone()],
            ..Default::default()
        });
        refused(
            d,
            &ds,
            op,
            ErrorKind::InvalidInput,
            "leaves out fragments [0]",
        )
        .await;
        let mut grown = keep.clone();
        grown.physical_rows = 6;
        let op = Operation::Merge(Merge {
            fragments: vec![zero.clone(), grown],
            ..Default::default()
        });
        refused(d, &ds, op, ErrorKind::InvalidInput, "row count").await;
        // a staged fragment at id 0 is a new fragment, after the others
        let staged = written(d, "s.lance", 3).await;
        assert_eq!(staged.id, 0);
        let merged = ds
            .commit(Operation::Merge(Merge {
                fragments: vec![zero.clone(), keep.clone(), staged],
                ..Default::default()
            }))
            .await
            .unwrap()
            .dataset;
        let rows: Vec<(u64, u64)> = merged
            .fragments()
            .await
            .unwrap()
            .iter()
            .map(|f| (f.id, f.physical_rows))
            .collect();
        assert_eq!(rows, vec![(0, 10), (1, 5), (2, 3)], "tree={tree}");
        let mut partial = written(d, "c.lance", 5).await.files.remove(0);
        partial.fields = vec![0, 3];
        let op = Operation::DataReplacement(DataReplacement {
            replacements: vec![DataReplacementGroup {
                fragment_id: 1,
                new_file: Some(partial),
            }],
        });
        refused(
            d,
            &merged,
            op,
            ErrorKind::InvalidInput,
            "cannot be tombstoned",
        )
        .await;
        // a file of the same fields replaces the fragment's, footer checked
        let same = written(d, "d.lance", 5).await.files.remove(0);
        let op = Operation::DataReplacement(DataReplacement {
            replacements: vec![DataReplacementGroup {
                fragment_id: 1,
                new_file: Some(same.clone()),
            }],
        });
        let replaced = merged.commit(op).await.unwrap().dataset;
        assert_eq!(
            replaced.storage().fragment(1).await.unwrap().unwrap().files,
            vec![same]
        );
        replaced.storage().verify_data().await.unwrap();
    }
}

/// A Merge lists the whole next fragment list, so one prepared before a concurrent append
/// is not replayed over it (it would drop the appended fragment): the commit is a retryable
/// conflict, and the appended fragment stays.
#[tokio::test]
async fn a_merge_that_lost_to_an_append_is_a_conflict_not_a_loss() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let ds = empty_table(d, false).await;
    let ds = ds
        .commit(append(vec![written(d, "a.lance", 10).await]))
        .await
        .unwrap()
        .dataset;
    let listed = ds.fragments().await.unwrap().to_vec();
    let appended = ds
        .commit(append(vec![written(d, "b.lance", 5).await]))
        .await
        .unwrap()
        .dataset;
    let err = ds
        .commit(Operation::Merge(Merge {
            fragments: listed,
            ..Default::default()
        }))
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
    let latest = Dataset::open(d.to_str().unwrap()).await.unwrap();
    assert_eq!(latest.version(), appended.version());
    assert_eq!(latest.fragments().await.unwrap().len(), 2);
}

/// Issue 30, item 11: UpdateConfig carries Lance 14.0.2's payload, and its commit changes
/// what it says (flat and tree alike); a field it does not know is refused, nothing written.
#[tokio::test]
async fn update_config_changes_config_and_metadata() {
    use lancet::proto::table::transaction::{UpdateConfig, UpdateMap, UpdateMapEntry};
    for tree in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let ds = empty_table(d, tree).await;
        let set = |k: &str, v: &str| UpdateMap {
            update_entries: vec![UpdateMapEntry {
                key: k.into(),
                value: Some(v.into()),
            }],
            replace: false,
        };
        let next = ds
            .commit(Operation::UpdateConfig(UpdateConfig {
                config_updates: Some(set("lance.auto_cleanup.interval", "20")),
                table_metadata_updates: Some(set("owner", "storage")),
                ..Default::default()
            }))
            .await
            .unwrap()
            .dataset;
        let reopened = Dataset::open(d.to_str().unwrap()).await.unwrap();
        assert_eq!(reopened.version(), next.version());
        let m = reopened.storage().manifest();
        assert_eq!(
            m.config
                .get("lance.auto_cleanup.interval")
                .map(String::as_str),
            Some("20")
        );
        assert_eq!(
            m.table_metadata.get("owner").map(String::as_str),
            Some("storage")
        );
        let op = Operation::UpdateConfig(UpdateConfig {
            field_metadata_updates: [(77, set("unit", "m"))].into(),
            ..Default::default()
        });
        refused(d, &next, op, ErrorKind::InvalidInput, "does not exist").await;
    }
}

/// Issue 30, item 4: a DataReplacement rewriting an indexed column in place withdraws the
/// fragment from that column's index (Lance's `prune_updated_fields_from_indices`), so a
/// filter answers from the new values: the old ones are not found, the new ones are.
#[tokio::test]
async fn a_column_rewritten_in_place_leaves_its_index() {
    use futures::stream;
    use lancet::proto::table::transaction::{DataReplacement, DataReplacementGroup};
    use lancet::{CreateOptions, Filter};
    for layout in [lancet::Layout::Flat, lancet::Layout::Tree] {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let column: ArrayRef = Arc::new(Int64Array::from_iter_values(1000..1020));
        let batch = RecordBatch::try_from_iter([("a", column)]).unwrap();
        let ds = Dataset::create(
            d.to_str().unwrap(),
            Arc::new(schema()),
            stream::iter([Ok(batch)]),
            CreateOptions {
                max_rows_per_file: 10,
                layout,
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .dataset;
        let ds = ds.build_btree("a", 64).await.unwrap().dataset;
        // fragment 0's column rewritten: values 0..10 where 1000..1010 were
        let new_file = written(d, "r.lance", 10).await.files.remove(0);
        let ds = ds
            .commit(Operation::DataReplacement(DataReplacement {
                replacements: vec![DataReplacementGroup {
                    fragment_id: 0,
                    new_file: Some(new_file),
                }],
            }))
            .await
            .unwrap()
            .dataset;
        let covered = ds
            .storage()
            .index_fragments(&ds.storage().indices()[0])
            .unwrap()
            .unwrap();
        assert_eq!(covered.iter().collect::<Vec<_>>(), [1], "{layout:?}");
        let found = |f: &str| {
            let ds = ds.clone();
            let f = Filter::parse(f).unwrap();
            async move {
                ds.search(&f)
                    .await
                    .unwrap()
                    .row_ids
                    .iter()
                    .collect::<Vec<_>>()
            }
        };
        assert_eq!(found("a = 5").await, [5], "{layout:?}");
        assert!(found("a = 1005").await.is_empty(), "{layout:?}");
        assert_eq!(found("a = 1015").await, [(1 << 32) | 5], "{layout:?}");
        ds.storage().verify_data().await.unwrap();
    }
}

/// Issue 30, item 9: Lance's reserve-then-commit write. After a ReserveFragments, an Append
/// whose fragments carry reserved ids lands with those ids; an id used since (here by the
/// append, then removed) or one a fragment held before the reservation is refused as
/// `FragmentIdFresh`, nothing written.
#[tokio::test]
async fn reserved_fragment_ids_can_be_used_once() {
    use lancet::proto::table::transaction::{Delete, ReserveFragments};
    for tree in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let ds = empty_table(d, tree).await;
        let ds = ds
            .commit(append(vec![
                written(d, "a.lance", 10).await,
                written(d, "b.lance", 5).await,
            ]))
            .await
            .unwrap()
            .dataset;
        let ds = ds
            .commit(Operation::ReserveFragments(ReserveFragments {
                num_fragments: 3,
            }))
            .await
            .unwrap()
            .dataset;
        assert_eq!(ds.storage().manifest().max_fragment_id, Some(4));
        let mut staged = written(d, "c.lance", 4).await;
        staged.id = 3;
        let ds = ds
            .commit(append(vec![staged.clone()]))
            .await
            .unwrap()
            .dataset;
        let ids: Vec<u64> = ds.fragments().await.unwrap().iter().map(|f| f.id).collect();
        assert_eq!(ids, [0, 1, 3], "tree={tree}");
        assert_eq!(ds.storage().manifest().max_fragment_id, Some(4));
        ds.storage().verify_data().await.unwrap();
        // fragments 1 and 3 removed: neither id may be taken again
        let ds = ds
            .commit(Operation::Delete(Delete {
                deleted_fragment_ids: vec![1, 3],
                predicate: "true".into(),
                ..Default::default()
            }))
            .await
            .unwrap()
            .dataset;
        for id in [1, 3] {
            let mut again = written(d, &format!("again{id}.lance"), 4).await;
            again.id = id;
            refused(
                d,
                &ds,
                append(vec![again]),
                ErrorKind::InvalidInput,
                "FragmentIdFresh",
            )
            .await;
        }
        // the reserved id 4, never used, still may be
        let mut last = written(d, "e.lance", 2).await;
        last.id = 4;
        let ds = ds.commit(append(vec![last])).await.unwrap().dataset;
        let ids: Vec<u64> = ds.fragments().await.unwrap().iter().map(|f| f.id).collect();
        assert_eq!(ids, [0, 4], "tree={tree}");
    }
}
