//! Misuse through the public write API: every invariant of `lancet-txn` broken at least once,
//! on flat and tree tables. Each refusal is the typed error naming the invariant, and the
//! table's `_versions/` (every manifest and the latest-version hint) is byte-identical to
//! before: nothing visible was written.

mod common;
use common::CommitStaged;

use std::collections::BTreeMap;
use std::path::Path;

use common::{flat_table, fragment, table_of};
use lancet::paths::flags;
use lancet::paths::manifest::{write_manifest, ManifestContent};
use lancet::proto::table::data_fragment::RowIdSequence as PbRowIds;
use lancet::proto::table::{DataFragment, DeletionFile, IndexMetadata, Manifest, Uuid};
use lancet::rowid::RowIdSequence;
use lancet::tree::{Action, TreeWriterConfig};
use lancet::{Dataset, ErrorKind, Invariant};
use lancet_tree::testing::TreeBuilder;

/// Every object under `_versions/` with its bytes.
fn versions_dir(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir.join("_versions")).unwrap() {
        let entry = entry.unwrap();
        out.insert(
            entry.file_name().to_string_lossy().into_owned(),
            std::fs::read(entry.path()).unwrap(),
        );
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    Flat,
    Tree,
}

async fn layout(ds: Dataset, layout: Layout) -> Dataset {
    match layout {
        Layout::Flat => ds,
        Layout::Tree => {
            ds.storage()
                .convert_to_tree(&TreeWriterConfig::tiny(), |_, _| {})
                .await
                .unwrap()
                .dataset
        }
    }
}

/// Commits `actions` with `edit` applied to the manifest and `indices` as the index list,
/// expecting the refusal `want`; checks nothing visible changed and the table still opens
/// at the same version.
async fn refused(
    dir: &Path,
    ds: &Dataset,
    edit: impl FnOnce(&mut Manifest),
    indices: &[IndexMetadata],
    actions: &[(u64, Action)],
    want: Invariant,
) {
    let before = versions_dir(dir);
    let mut manifest = ds.storage().manifest().clone();
    edit(&mut manifest);
    // the data files staged, as a writer writes them (deletion files are not: the
    // deletion-file rules are among those tested)
    let data_only: Vec<(u64, Action)> = actions
        .iter()
        .filter(|(_, a)| !matches!(a, Action::AddDeletionFile(_)))
        .map(|(id, a)| match a {
            Action::Upsert(f) => {
                let mut f = f.clone();
                f.deletion_file = None;
                (*id, Action::Upsert(f))
            }
            other => (*id, other.clone()),
        })
        .collect();
    common::stage(ds, &data_only).await;
    let err = ds
        .storage()
        .commit_actions(manifest, indices, actions, &TreeWriterConfig::tiny())
        .await
        .unwrap_err();
    assert_eq!(err.invariant(), Some(want), "{err}");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains(&want.to_string()), "{err}");
    assert_eq!(
        versions_dir(dir),
        before,
        "a refused commit wrote to _versions/"
    );
    let latest = Dataset::open(dir.to_str().unwrap()).await.unwrap();
    assert_eq!(latest.version(), ds.version());
}

fn upsert(f: DataFragment) -> (u64, Action) {
    (f.id, Action::Upsert(Box::new(f)))
}

fn entry(name: &str, uuid: u8, fields: &[i32]) -> IndexMetadata {
    IndexMetadata {
        uuid: Some(Uuid {
            uuid: vec![uuid; 16],
        }),
        name: name.into(),
        fields: fields.to_vec(),
        ..Default::default()
    }
}

#[tokio::test]
async fn fragment_id_count_base_and_index_rules_refuse_without_writing() {
    for l in [Layout::Flat, Layout::Tree] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ds = layout(flat_table(d, 4).await, l).await;
        // fragment 3 removed: its id stays dead
        let ds = ds
            .commit_staged(
                ds.storage().manifest().clone(),
                &[],
                &[(3, Action::Remove)],
                &TreeWriterConfig::tiny(),
            )
            .await
            .unwrap();
        let keep = |_: &mut Manifest| {};
        refused(
            d,
            &ds,
            keep,
            &[],
            &[upsert(fragment(3))],
            Invariant::FragmentIdFresh,
        )
        .await;
        refused(
            d,
            &ds,
            |m| m.max_fragment_id = Some(1),
            &[],
            &[],
            Invariant::MaxFragmentIdMonotone,
        )
        .await;
        let mut advanced = ds.storage().manifest().clone();
        advanced.next_row_id = 100;
        let ds = ds
            .storage()
            .commit_manifest(advanced, &[])
            .await
            .unwrap()
            .dataset;
        refused(
            d,
            &ds,
            |m| m.next_row_id = 99,
            &[],
            &[],
            Invariant::NextRowIdMonotone,
        )
        .await;
        // too many deleted rows: the action's own semantics refuse it first; a hand-edited
        // flat list reaches the invariant
        let too_many = DeletionFile {
            id: 1,
            num_deleted_rows: 51,
            ..Default::default()
        };
        let before = versions_dir(d);
        let err = ds
            .commit_staged(
                ds.storage().manifest().clone(),
                &[],
                &[(1, Action::AddDeletionFile(too_many))],
                &TreeWriterConfig::tiny(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        assert_eq!(versions_dir(d), before);
        if let Layout::Flat = l {
            refused(
                d,
                &ds,
                |m| {
                    m.fragments[1].deletion_file = Some(too_many);
                    m.reader_feature_flags |= flags::DELETION_FILES;
                    m.writer_feature_flags |= flags::DELETION_FILES;
                },
                &[],
                &[],
                Invariant::DeletionsWithinRows,
            )
            .await;
        }
        let mut elsewhere = fragment(4);
        elsewhere.files[0].base_id = Some(7);
        refused(
            d,
            &ds,
            keep,
            &[],
            &[upsert(elsewhere)],
            Invariant::BaseIdKnown,
        )
        .await;
        let fri = |u| entry("__lance_frag_reuse", u, &[]);
        refused(
            d,
            &ds,
            keep,
            &[fri(1), fri(2)],
            &[],
            Invariant::SingleFragmentReuseIndex,
        )
        .await;
        refused(
            d,
            &ds,
            keep,
            &[entry("a", 1, &[0]), entry("b", 1, &[0])],
            &[],
            Invariant::IndexEntriesDistinct,
        )
        .await;
        refused(
            d,
            &ds,
            |m| m.reader_feature_flags |= flags::FRAGMENT_REUSE_INDEX,
            &[],
            &[],
            Invariant::ManifestFlags,
        )
        .await;
        // a reader flag no reader interprets: no reader would open the version
        refused(
            d,
            &ds,
            |m| {
                m.reader_feature_flags |= 1 << 40;
                m.writer_feature_flags |= 1 << 40;
            },
            &[],
            &[],
            Invariant::ManifestDecodes,
        )
        .await;
        // a tagged FRI entry without flag 1024
        let mut tagged = fri(3);
        tagged.index_version = Some(1);
        refused(d, &ds, keep, &[tagged], &[], Invariant::FlagRequired).await;
        // 1024 is sticky once set
        let mut with_fri = ds.storage().manifest().clone();
        with_fri.reader_feature_flags |= flags::FRAGMENT_REUSE_INDEX;
        with_fri.writer_feature_flags |= flags::FRAGMENT_REUSE_INDEX;
        let ds = ds
            .storage()
            .commit_manifest(with_fri, &[])
            .await
            .unwrap()
            .dataset;
        refused(
            d,
            &ds,
            |m| {
                m.reader_feature_flags &= !flags::FRAGMENT_REUSE_INDEX;
                m.writer_feature_flags &= !flags::FRAGMENT_REUSE_INDEX;
            },
            &[],
            &[],
            Invariant::FlagKept,
        )
        .await;
        if let Layout::Flat = l {
            // hand-edited flat lists
            refused(
                d,
                &ds,
                |m| m.fragments.swap(0, 1),
                &[],
                &[],
                Invariant::FragmentIdsIncrease,
            )
            .await;
            refused(
                d,
                &ds,
                |m| m.fragments.push(fragment(9)),
                &[],
                &[],
                Invariant::FragmentIdWithinMax,
            )
            .await;
        }
    }
}

fn sequence(ids: std::ops::Range<u64>) -> Option<PbRowIds> {
    Some(PbRowIds::InlineRowIds(
        RowIdSequence::from_range(ids).encode(),
    ))
}

/// Version 1 of a flat stable-row-id table of fragments `0..n`, 50 rows each, ids assigned
/// in order.
async fn stable_table(dir: &Path, n: u64) -> Dataset {
    let m = Manifest {
        fragments: (0..n)
            .map(|i| DataFragment {
                row_id_sequence: sequence(i * 50..(i + 1) * 50),
                ..fragment(i)
            })
            .collect(),
        max_fragment_id: n.checked_sub(1).map(|m| m as u32),
        next_row_id: n * 50,
        reader_feature_flags: flags::STABLE_ROW_IDS,
        writer_feature_flags: flags::STABLE_ROW_IDS,
        ..Default::default()
    };
    table_of(dir, m).await
}

#[tokio::test]
async fn row_id_rules_refuse_without_writing() {
    for l in [Layout::Flat, Layout::Tree] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ds = layout(stable_table(d, 3).await, l).await;
        let next = |m: &mut Manifest| m.next_row_id = 200;
        let with_ids = |ids| DataFragment {
            row_id_sequence: sequence(ids),
            ..fragment(3)
        };
        // the headline: a fragment without a sequence on a stable-row-id table
        refused(
            d,
            &ds,
            next,
            &[],
            &[upsert(fragment(3))],
            Invariant::RowIdSequencePresent,
        )
        .await;
        refused(
            d,
            &ds,
            next,
            &[],
            &[upsert(with_ids(150..199))],
            Invariant::RowIdSequenceLength,
        )
        .await;
        // next_row_id not advanced past the new ids
        refused(
            d,
            &ds,
            |_| {},
            &[],
            &[upsert(with_ids(150..200))],
            Invariant::RowIdBelowNext,
        )
        .await;
        // ids live in fragment 0 given to a new fragment
        refused(
            d,
            &ds,
            next,
            &[],
            &[upsert(with_ids(0..50))],
            Invariant::RowIdFresh,
        )
        .await;
        // a sequence repeating an id
        let mut ids: Vec<u64> = (150..200).collect();
        ids[1] = 150;
        let repeated = DataFragment {
            row_id_sequence: Some(PbRowIds::InlineRowIds(
                RowIdSequence::from_values(&ids).encode(),
            )),
            ..fragment(3)
        };
        refused(
            d,
            &ds,
            next,
            &[],
            &[upsert(repeated)],
            Invariant::RowIdLiveOnce,
        )
        .await;
        // a deletion file that was never written: read as deleting nothing, it would bring
        // the rows it deletes back
        let absent = DeletionFile {
            id: 4242,
            num_deleted_rows: 2,
            ..Default::default()
        };
        refused(
            d,
            &ds,
            |_| {},
            &[],
            &[(1, Action::AddDeletionFile(absent))],
            Invariant::DeletionFileExists,
        )
        .await;
        // dropping stable row ids
        refused(
            d,
            &ds,
            |m| {
                m.reader_feature_flags &= !flags::STABLE_ROW_IDS;
                m.writer_feature_flags &= !flags::STABLE_ROW_IDS;
            },
            &[],
            &[],
            Invariant::FlagKept,
        )
        .await;
        // and the valid append lands
        let mut m = ds.storage().manifest().clone();
        next(&mut m);
        let appended = ds
            .commit_staged(
                m,
                &[],
                &[upsert(with_ids(150..200))],
                &TreeWriterConfig::tiny(),
            )
            .await
            .unwrap();
        assert_eq!(appended.version(), ds.version() + 1);
        appended.verify().await.unwrap();
    }
}

#[tokio::test]
async fn restore_publishes_an_old_version_without_lowering_ids() {
    for l in [Layout::Flat, Layout::Tree] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let start = layout(flat_table(d, 4).await, l).await;
        let removed = start
            .commit_staged(
                start.storage().manifest().clone(),
                &[],
                &[(3, Action::Remove)],
                &TreeWriterConfig::tiny(),
            )
            .await
            .unwrap();
        let appended = removed
            .commit_staged(
                removed.storage().manifest().clone(),
                &[],
                &[upsert(fragment(4))],
                &TreeWriterConfig::tiny(),
            )
            .await
            .unwrap();
        // restore from an old handle: it publishes after the latest
        let restored = start.restore(start.version()).await.unwrap().dataset;
        assert_eq!(restored.version(), appended.version() + 1, "{l:?}");
        let ids: Vec<u64> = restored
            .fragments()
            .await
            .unwrap()
            .iter()
            .map(|f| f.id)
            .collect();
        assert_eq!(ids, vec![0, 1, 2, 3], "{l:?}");
        assert_eq!(
            restored.storage().manifest().max_fragment_id,
            Some(4),
            "{l:?}"
        );
        let txn = restored.storage().transaction().await.unwrap().unwrap();
        assert_eq!(txn.operation_name(), "Restore");
        restored.verify().await.unwrap();
        // id 4 was handed out and stays dead; the next new fragment takes 5
        refused(
            d,
            &restored,
            |_| {},
            &[],
            &[upsert(fragment(4))],
            Invariant::FragmentIdFresh,
        )
        .await;
        let next = restored
            .commit_staged(
                restored.storage().manifest().clone(),
                &[],
                &[upsert(fragment(5))],
                &TreeWriterConfig::tiny(),
            )
            .await
            .unwrap();
        assert_eq!(next.fragments().await.unwrap().len(), 5);
    }
}

type Edit = fn(&mut Manifest);

/// Edits of a stored stable table of 3 fragments that break an invariant lancet's writers
/// would refuse.
fn stored_breakage() -> [(Edit, Invariant); 3] {
    [
        // fragment 1 holds fragment 0's ids too
        (
            |m| m.fragments[1].row_id_sequence = sequence(0..50),
            Invariant::RowIdLiveOnce,
        ),
        // next_row_id not advanced past the last fragment's ids
        (|m| m.next_row_id = 120, Invariant::RowIdBelowNext),
        (
            |m| m.fragments[2].files[0].base_id = Some(9),
            Invariant::BaseIdKnown,
        ),
    ]
}

/// `m`'s fragments moved into leaf records of a tree written raw in `ds`'s store (lancet's
/// conversion would refuse a broken version).
async fn into_raw_tree(ds: &Dataset, m: &mut Manifest) {
    let built = TreeBuilder {
        records: std::mem::take(&mut m.fragments),
        ..Default::default()
    }
    .build(ds.storage().store())
    .await
    .unwrap();
    m.fragment_tree = Some(built.metadata);
    m.reader_feature_flags |= flags::FRAGMENT_TREE;
    m.writer_feature_flags |= flags::FRAGMENT_TREE;
}

/// Versions written around lancet (raw storage actions) that break an invariant: `verify`
/// finds each as `Corrupt` naming it, flat and as a tree of leaf records (built raw: lancet's
/// conversion refuses such a version, as the next test shows).
#[tokio::test]
async fn verify_names_the_invariant_a_stored_version_breaks() {
    let cases = stored_breakage();
    for (edit, want) in cases {
        for l in [Layout::Flat, Layout::Tree] {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            let ds = stable_table(d, 3).await;
            let mut m = ds.storage().manifest().clone();
            m.version = 2;
            edit(&mut m);
            if l == Layout::Tree {
                into_raw_tree(&ds, &mut m).await;
            }
            write_manifest(ds.storage().store(), &ManifestContent::new(&m))
                .await
                .unwrap();
            let bad = ds.checkout(2).await.unwrap();
            assert_eq!(bad.storage().tree().is_some(), l == Layout::Tree);
            let err = bad.verify().await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
            // a tree's reader refuses a record naming an unknown base itself
            let tree_rule = l == Layout::Tree && want == Invariant::BaseIdKnown;
            let named = match tree_rule {
                true => "record-base-id".to_string(),
                false => want.to_string(),
            };
            assert!(err.to_string().contains(&named), "{l:?}: {err}");
            // the rule is typed, not only named in the message
            if !tree_rule {
                assert_eq!(err.invariant(), Some(want), "{l:?}: {err}");
            }
        }
    }
    // and a valid stable table verifies
    let dir = tempfile::tempdir().unwrap();
    stable_table(dir.path(), 3).await.verify().await.unwrap();
}

/// A conversion judges every fragment: a flat version that breaks an invariant is not carried
/// into a tree (nor a corrupt tree into a flat list), and nothing visible is written.
#[tokio::test]
async fn a_conversion_of_a_version_that_breaks_an_invariant_is_refused() {
    let cases = stored_breakage();
    for (edit, want) in cases {
        for to_tree in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            let ds = stable_table(d, 3).await;
            let mut m = ds.storage().manifest().clone();
            m.version = 2;
            edit(&mut m);
            if !to_tree {
                into_raw_tree(&ds, &mut m).await;
            }
            write_manifest(ds.storage().store(), &ManifestContent::new(&m))
                .await
                .unwrap();
            let bad = ds.checkout(2).await.unwrap();
            let before = versions_dir(d);
            let err = match to_tree {
                true => bad
                    .storage()
                    .convert_to_tree(&TreeWriterConfig::tiny(), |_, _| {})
                    .await
                    .unwrap_err(),
                false => bad.storage().flatten().await.unwrap_err(),
            };
            if !to_tree && want == Invariant::BaseIdKnown {
                // the tree reader refuses the record before any invariant is judged
                assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
                assert!(err.to_string().contains("record-base-id"), "{err}");
            } else {
                assert_eq!(err.invariant(), Some(want), "to tree {to_tree}: {err}");
            }
            assert_eq!(versions_dir(d), before, "a refused conversion wrote");
        }
    }
    // a valid table converts both ways
    let dir = tempfile::tempdir().unwrap();
    let tree = layout(stable_table(dir.path(), 3).await, Layout::Tree).await;
    tree.storage()
        .flatten()
        .await
        .unwrap()
        .dataset
        .verify()
        .await
        .unwrap();
}

/// Issue 30's index and schema invariants, broken through the public API on flat and tree
/// tables: each refused typed, `_versions/` unchanged.
#[tokio::test]
async fn index_coverage_and_schema_rules_refuse_without_writing() {
    use lancet::proto::file::Field;
    use lancet::proto::roaring_wire::encode_roaring32;
    for l in [Layout::Flat, Layout::Tree] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let field = |id: i32, name: &str| Field {
            id,
            parent_id: -1,
            name: name.into(),
            logical_type: "int64".into(),
            nullable: true,
            ..Default::default()
        };
        // column a (field 0) is the one the fragments' files hold
        let holding_a = lancet::proto::table::Manifest {
            fragments: (0..3).map(fragment).collect(),
            max_fragment_id: Some(2),
            fields: vec![field(0, "a")],
            ..Default::default()
        };
        let ds = layout(common::table_of(d, holding_a).await, l).await;
        let mut schema = ds.storage().manifest().clone();
        schema.fields = vec![field(0, "a")];
        schema.max_allocated_field_id = Some(2);
        schema.writer_feature_flags |= flags::NON_REUSABLE_FIELD_IDS;
        let covering = |uuid: u8, fragments: &[u32]| IndexMetadata {
            uuid: Some(Uuid {
                uuid: vec![uuid; 16],
            }),
            name: "a_idx".into(),
            fields: vec![0],
            fragment_bitmap: encode_roaring32(&fragments.iter().copied().collect()),
            ..Default::default()
        };
        // an index on fragments 0 and 1 (committed as the index build it is)
        let ds = ds
            .storage()
            .commit_manifest(schema, &[covering(1, &[0, 1])])
            .await
            .unwrap()
            .dataset;
        // an append that also claims the index covers its fragment
        refused(
            d,
            &ds,
            |_| {},
            &[covering(1, &[0, 1, 3])],
            &[upsert(fragment(3))],
            Invariant::IndexCoverageIndexed,
        )
        .await;
        // fragment 1's column a rewritten in place, the index still covering it
        let mut rewritten = fragment(1);
        rewritten.files[0].path = "1b.lance".into();
        refused(
            d,
            &ds,
            |_| {},
            &[covering(1, &[0, 1])],
            &[upsert(rewritten)],
            Invariant::IndexCoverageRewritten,
        )
        .await;
        // a new column taking an id allocated before (2), and a data file naming no field
        refused(
            d,
            &ds,
            |m| m.fields.push(field(2, "w")),
            &[covering(1, &[0, 1])],
            &[],
            Invariant::FieldIdFresh,
        )
        .await;
        let mut stray = fragment(2);
        stray.files[0].path = "2b.lance".into();
        stray.files[0].fields = vec![7];
        refused(
            d,
            &ds,
            |_| {},
            &[covering(1, &[0, 1])],
            &[upsert(stray)],
            Invariant::DataFileFieldsInSchema,
        )
        .await;
    }
}

/// A storage-action commit reads the files it adds (issue 30): a data file that is not in
/// storage, one whose rows or fields differ from its record, and a deletion file that was
/// never written are refused, flat and tree, with nothing written to `_versions/`.
#[tokio::test]
async fn storage_actions_are_judged_by_the_files_they_add() {
    for l in [Layout::Flat, Layout::Tree] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ds = layout(flat_table(d, 2).await, l).await;
        let config = TreeWriterConfig::tiny();
        let attempt = |actions: Vec<(u64, Action)>, want: Invariant| {
            let ds = ds.clone();
            let config = config.clone();
            async move {
                let before = versions_dir(d);
                let err = ds
                    .storage()
                    .commit_actions(ds.storage().manifest().clone(), &[], &actions, &config)
                    .await
                    .unwrap_err();
                assert_eq!(err.invariant(), Some(want), "{l:?}: {err}");
                assert_eq!(versions_dir(d), before, "{l:?}: a refused commit wrote");
                let latest = Dataset::open(d.to_str().unwrap()).await.unwrap();
                assert_eq!(latest.version(), ds.version(), "{l:?}");
            }
        };
        // never written
        attempt(vec![upsert(fragment(2))], Invariant::DataFileOpens).await;
        // written with 50 rows, recorded with 60
        common::stage_fragment(&ds, &fragment(3)).await;
        let mut longer = fragment(3);
        longer.physical_rows = 60;
        attempt(vec![upsert(longer)], Invariant::DataFileRows).await;
        // holding field 0, recorded as holding fields 0 and 1
        let mut wider = fragment(3);
        wider.files[0].fields = vec![0, 1];
        wider.files[0].column_indices = vec![0, 1];
        attempt(vec![upsert(wider)], Invariant::DataFileFields).await;
        // a deletion file that was never written
        let deletion = DeletionFile {
            file_type: 0,
            read_version: ds.version(),
            id: 77,
            num_deleted_rows: 3,
            base_id: None,
        };
        attempt(
            vec![(0, Action::AddDeletionFile(deletion))],
            Invariant::DeletionFileExists,
        )
        .await;
        // each staged, the same commits land
        let staged = ds
            .commit_staged(
                ds.storage().manifest().clone(),
                &[],
                &[upsert(fragment(2)), (0, Action::AddDeletionFile(deletion))],
                &config,
            )
            .await
            .unwrap();
        assert_eq!(staged.version(), ds.version() + 1);
        staged.verify().await.unwrap();
    }
}
