//! S3 for real (issue 11): the tests start moto's S3 server (from PyPI, in the interop
//! virtualenv) on a free loopback port, and run against it the object-store conformance
//! check, lancet's commits through conditional put (a pylance writer and lancet on one table,
//! eight lancet writers at once), and the released CLI with the usual AWS_* variables.

#[path = "../../lancet/tests/common/mod.rs"]
mod common;
#[path = "interop/fragments.rs"]
mod fragments;
#[path = "moto/mod.rs"]
mod moto;
#[path = "race/merge.rs"]
mod race;

use std::process::Command;
use std::time::{Duration, Instant};

use lancet::paths::manifest::{write_manifest, ManifestContent};
use lancet::paths::DatasetStore;
use lancet::proto::table::{DataFile, DataFragment, Manifest};
use lancet::tree::{Action, TreeWriterConfig};
use lancet::{Caches, Dataset};
use serde_json::{json, Value};

use moto::{interop_dir, python, start_moto};

fn peer(py: &str, args: &[&str]) -> Value {
    let out = Command::new(py)
        .arg(interop_dir().join("peer.py"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "peer {args:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
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
        physical_rows: 100,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lancet_commits_to_a_real_s3_protocol_server() {
    let py = python();
    let moto = start_moto(&py);
    // the usual variables configure lancet, pylance and the CLI alike
    std::env::set_var("AWS_ENDPOINT", &moto.endpoint);
    std::env::set_var("AWS_ALLOW_HTTP", "true");
    std::env::set_var("AWS_ACCESS_KEY_ID", "testing");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "testing");
    std::env::set_var("AWS_REGION", "us-east-1");
    let made = Command::new(&py)
        .args([
            "-c",
            &format!(
                "import boto3; boto3.client('s3', endpoint_url='{}', region_name='us-east-1').create_bucket(Bucket='lancet')",
                moto.endpoint
            ),
        ])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );

    // 1. the object-store conformance check every backend passes
    lancet::paths::testing::conformance(DatasetStore::open("s3://lancet/conformance").unwrap())
        .await;

    // 2. pylance writes a table; lancet builds an index; a pylance append prepared before it
    //    rebases over lancet's transaction; lancet reads pylance's
    let uri = "s3://lancet/basic";
    let created = peer(&py, &["create", uri, "2000"]);
    assert_eq!(created["version"], json!(2));
    let read = Dataset::open(uri).await.unwrap();
    let indexed = read.build_btree("value", 64).await.unwrap().dataset;
    assert_eq!(indexed.version(), 3);
    let appended = peer(&py, &["append-at", uri, "2", "5000", "100"]);
    assert_eq!(appended["version"], json!(4));
    let seen = peer(&py, &["transactions", uri]);
    assert_eq!(
        seen["transactions"][1]["operation"],
        json!("CreateIndex"),
        "{seen}"
    );
    assert!(seen["indices"]
        .as_array()
        .unwrap()
        .contains(&json!("value_idx")));
    let latest = Dataset::open(uri).await.unwrap();
    assert_eq!(latest.version(), 4);
    assert_eq!(
        latest
            .storage()
            .transaction()
            .await
            .unwrap()
            .unwrap()
            .operation_name(),
        "Append"
    );
    latest.verify().await.unwrap();

    // 3. the released CLI reads it with the same variables
    let out = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(["inspect", uri, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["version"], json!(4));
    assert_eq!(report["transaction"]["operation"], json!("Append"));

    // 3b. a rewrite of pylance's fragments committed with its stable-partition row map and
    //     FRI entry (every object through S3), the history trimmed, then a cleanup on S3:
    //     pylance reads the latest version as before
    let before = peer(&py, &["scan", uri]);
    let sources: Vec<u32> = latest
        .fragments()
        .await
        .unwrap()
        .iter()
        .map(|f| f.id as u32)
        .take(2)
        .collect();
    let written = peer(
        &py,
        &[
            "rewrite",
            uri,
            &json!(sources).to_string(),
            "partition",
            "2",
        ],
    );
    let labels = fragments::labels_of(&written);
    let rewritten = latest
        .storage()
        .commit_rewrite(
            &sources,
            fragments::fragments_of(&written),
            lancet::RewriteMapping::StablePartition { labels: &labels },
        )
        .await
        .unwrap()
        .dataset;
    rewritten.verify().await.unwrap();
    assert!(rewritten.storage().fri_history().await.unwrap().is_some());
    let store = DatasetStore::open(uri).unwrap();
    assert_eq!(
        store.list("_fri").await.unwrap().len(),
        1,
        "the row map is on S3"
    );
    let after = peer(&py, &["scan", uri]);
    assert_eq!(after["rows"], before["rows"]);
    let cleaned = rewritten
        .cleanup(&lancet::CleanupPolicy {
            older_than: Some(Duration::ZERO),
            unverified_older_than: Duration::ZERO,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(cleaned.failed.is_empty(), "{:?}", cleaned.failed);
    assert_eq!(cleaned.kept_versions, [rewritten.version()]);
    assert!(cleaned
        .deleted
        .contains_key(&lancet::paths::cleanup::ObjectKind::Data));
    assert_eq!(peer(&py, &["scan", uri])["rows"], before["rows"]);
    Dataset::open(uri).await.unwrap().verify().await.unwrap();

    let mut covered = std::collections::BTreeSet::new();
    // 3d. misuse through the public API on S3: each refusal names its invariant, writes
    //     nothing under _versions/ (every manifest and the hint as before, byte for byte),
    //     and pylance still opens the latest version and reads the same rows
    let latest = Dataset::open(uri).await.unwrap();
    let versions = |store: DatasetStore| async move {
        let mut out = Vec::new();
        for meta in store.list("_versions").await.unwrap() {
            let bytes = store.get(&meta.location, None).await.unwrap();
            out.push((meta.location.to_string(), bytes));
        }
        out.sort();
        out
    };
    let before_misuse = versions(store.clone()).await;
    let dead = u64::from(sources[0]);
    let mut lowered = latest.storage().manifest().clone();
    lowered.max_fragment_id = lowered.max_fragment_id.map(|m| m - 1);
    let mut elsewhere = fragment(dead + 1000);
    elsewhere.files[0].base_id = Some(77);
    let next_id = latest
        .storage()
        .manifest()
        .max_fragment_id
        .map_or(0, |m| u64::from(m) + 1);
    elsewhere.id = next_id;
    // manifest edits a careless engine makes
    let edited = |edit: &dyn Fn(&mut Manifest)| {
        let mut m = latest.storage().manifest().clone();
        edit(&mut m);
        m
    };
    let with_deletions = latest
        .storage()
        .manifest()
        .fragments
        .iter()
        .position(|f| f.deletion_file.is_some())
        .expect("pylance's delete left deletion files");
    let fri = latest
        .storage()
        .fri_entry()
        .cloned()
        .expect("the rewrite's FRI entry");
    let mut indices_twice = latest.storage().indices().to_vec();
    indices_twice.push(latest.storage().indices()[0].clone());
    let mut second_fri = fri.clone();
    second_fri.uuid = Some(lancet::proto::table::Uuid {
        uuid: vec![0xab; 16],
    });
    let mut two_fris = latest.storage().indices().to_vec();
    two_fris.push(second_fri);
    let edits: Vec<(
        Manifest,
        Vec<lancet::proto::table::IndexMetadata>,
        lancet::Invariant,
    )> = vec![
        (
            edited(&|m| m.fragments.reverse()),
            latest.storage().indices().to_vec(),
            lancet::Invariant::FragmentIdsIncrease,
        ),
        (
            edited(&|m| {
                let mut f = m.fragments[0].clone();
                f.id = u64::from(m.max_fragment_id.unwrap()) + 5;
                m.fragments.push(f);
            }),
            latest.storage().indices().to_vec(),
            lancet::Invariant::FragmentIdWithinMax,
        ),
        (
            edited(&|m| {
                let f = &mut m.fragments[with_deletions];
                let rows = f.physical_rows;
                f.deletion_file.as_mut().unwrap().num_deleted_rows = rows + 1;
            }),
            latest.storage().indices().to_vec(),
            lancet::Invariant::DeletionsWithinRows,
        ),
        (
            edited(&|m| {
                m.reader_feature_flags &= !lancet::paths::flags::DELETION_FILES;
                m.writer_feature_flags &= !lancet::paths::flags::DELETION_FILES;
            }),
            latest.storage().indices().to_vec(),
            lancet::Invariant::FlagRequired,
        ),
        (
            edited(&|m| m.writer_feature_flags &= !lancet::paths::flags::FRAGMENT_REUSE_INDEX),
            latest.storage().indices().to_vec(),
            lancet::Invariant::ManifestFlags,
        ),
        (
            // the FRI entry dropped with its flag: 1024 is sticky all the same
            edited(&|m| {
                m.reader_feature_flags &= !lancet::paths::flags::FRAGMENT_REUSE_INDEX;
                m.writer_feature_flags &= !lancet::paths::flags::FRAGMENT_REUSE_INDEX;
            }),
            latest
                .storage()
                .indices()
                .iter()
                .filter(|i| i.uuid != fri.uuid)
                .cloned()
                .collect(),
            lancet::Invariant::FlagKept,
        ),
        (
            latest.storage().manifest().clone(),
            indices_twice,
            lancet::Invariant::IndexEntriesDistinct,
        ),
        (
            latest.storage().manifest().clone(),
            two_fris,
            lancet::Invariant::SingleFragmentReuseIndex,
        ),
    ];
    for (manifest, indices, want) in edits {
        let err = latest
            .storage()
            .commit_actions(manifest, &indices, &[], &TreeWriterConfig::default())
            .await
            .unwrap_err();
        assert_eq!(err.invariant(), Some(want), "{err}");
        covered.insert(want);
        assert_eq!(
            versions(store.clone()).await,
            before_misuse,
            "{want} wrote to _versions/"
        );
    }
    let misuse = [
        // an upsert of a fragment id the rewrite removed
        (
            latest.storage().manifest().clone(),
            vec![(dead, Action::Upsert(Box::new(fragment(dead))))],
            lancet::Invariant::FragmentIdFresh,
        ),
        (
            lowered,
            Vec::new(),
            lancet::Invariant::MaxFragmentIdMonotone,
        ),
        // a data file in a base the manifest does not have
        (
            latest.storage().manifest().clone(),
            vec![(next_id, Action::Upsert(Box::new(elsewhere)))],
            lancet::Invariant::BaseIdKnown,
        ),
    ];
    for (manifest, actions, want) in misuse {
        let err = latest
            .storage()
            .commit_actions(
                manifest,
                latest.storage().indices(),
                &actions,
                &TreeWriterConfig::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.invariant(), Some(want), "{err}");
        covered.insert(want);
        assert_eq!(
            versions(store.clone()).await,
            before_misuse,
            "{want} wrote to _versions/"
        );
    }
    assert_eq!(
        Dataset::open(uri).await.unwrap().version(),
        latest.version()
    );
    assert_eq!(peer(&py, &["scan", uri])["rows"], before["rows"]);

    // 3e. the write API on S3: fragments pylance wrote, appended through
    //     Dataset::commit(Operation) (numbered, their footers read); one whose physical_rows
    //     disagrees with its file is refused naming DataFileRows with _versions/ unchanged;
    //     then rows deleted with the deletion vector merged; pylance reads both versions
    use lancet::proto::table::transaction::Append;
    let written = peer(&py, &["write-fragments", uri, "900000", "50"]);
    let good = fragments::fragments_of(&written);
    let mut lying = good.clone();
    lying[0].physical_rows += 1;
    let mut missing = good.clone();
    missing[0].files[0].path = "no-such-file.lance".into();
    let mut misnamed = good.clone();
    misnamed[0].files[0].fields.push(99);
    misnamed[0].files[0].column_indices.push(9);
    let mut escaping = good.clone();
    escaping[0].files[0].path = format!("../{}", escaping[0].files[0].path);
    let mut ghost = latest.storage().manifest().fragments[with_deletions].clone();
    ghost.deletion_file.as_mut().unwrap().id ^= 0x5555;
    let refused_ops = [
        (
            lancet::Operation::Append(Append { fragments: lying }),
            lancet::Invariant::DataFileRows,
        ),
        (
            lancet::Operation::Append(Append { fragments: missing }),
            lancet::Invariant::DataFileOpens,
        ),
        (
            lancet::Operation::Append(Append {
                fragments: misnamed,
            }),
            lancet::Invariant::DataFileFields,
        ),
        // a data file named outside data/ (the object exists one level up: the path is refused)
        (
            lancet::Operation::Append(Append {
                fragments: escaping,
            }),
            lancet::Invariant::DataFilePathInside,
        ),
        (
            lancet::Operation::Delete(lancet::proto::table::transaction::Delete {
                updated_fragments: vec![ghost],
                ..Default::default()
            }),
            lancet::Invariant::DeletionFileExists,
        ),
    ];
    for (op, want) in refused_ops {
        let err = latest.commit(op).await.unwrap_err();
        assert_eq!(err.invariant(), Some(want), "{err}");
        covered.insert(want);
        assert_eq!(versions(store.clone()).await, before_misuse, "{want} wrote");
    }
    let appended = latest
        .commit(lancet::Operation::Append(Append {
            fragments: fragments::fragments_of(&written),
        }))
        .await
        .unwrap()
        .dataset;
    let new_id = appended.fragments().await.unwrap().last().unwrap().id;
    assert_eq!(
        Some(new_id),
        latest
            .storage()
            .manifest()
            .max_fragment_id
            .map(|m| u64::from(m) + 1)
    );
    let rows = |v: &Value| v["count"].as_u64().unwrap();
    let before_rows = rows(&before);
    assert_eq!(rows(&peer(&py, &["scan", uri])), before_rows + 50);
    let deleted = appended
        .storage()
        .delete_rows(&[(new_id, (0u32..10).collect())], "id < 900010")
        .await
        .unwrap()
        .dataset;
    assert_eq!(rows(&peer(&py, &["scan", uri])), before_rows + 40);
    let seen = peer(&py, &["transactions", uri]);
    assert_eq!(seen["transactions"][0]["operation"], "Delete", "{seen}");
    assert_eq!(seen["transactions"][1]["operation"], "Append", "{seen}");
    deleted.storage().verify_data().await.unwrap();

    type Misuse = (
        Manifest,
        Vec<lancet::proto::table::IndexMetadata>,
        Vec<(u64, Action)>,
        lancet::Invariant,
    );
    // 3f. the row-id rules and the manifest rules on S3: a stable-row-id table lancet wrote
    //     (fragments 0..3, 100 ids each) and a flat table holding a fragment with a field
    //     lancet does not model; every refusal names its invariant and writes nothing
    {
        use lancet::proto::table::data_fragment::RowIdSequence as PbRowIds;
        use lancet::rowid::RowIdSequence;
        let seq = |ids: &[u64]| {
            Some(PbRowIds::InlineRowIds(
                RowIdSequence::from_values(ids).encode(),
            ))
        };
        let range = |r: std::ops::Range<u64>| r.collect::<Vec<u64>>();
        let uri_s = "s3://lancet/stable";
        let store_s = DatasetStore::open(uri_s).unwrap();
        let stable_flags = lancet::paths::flags::STABLE_ROW_IDS;
        let m = Manifest {
            version: 1,
            fragments: (0..3)
                .map(|i| DataFragment {
                    row_id_sequence: seq(&range(i * 100..(i + 1) * 100)),
                    ..fragment(i)
                })
                .collect(),
            max_fragment_id: Some(2),
            next_row_id: 300,
            reader_feature_flags: stable_flags,
            writer_feature_flags: stable_flags,
            timestamp: Some(lancet::paths::manifest::now_timestamp()),
            ..Default::default()
        };
        write_manifest(&store_s, &ManifestContent::new(&m))
            .await
            .unwrap();
        let ds = Dataset::open(uri_s).await.unwrap();
        let before = versions(store_s.clone()).await;
        let with_ids = |ids: Vec<u64>| DataFragment {
            row_id_sequence: seq(&ids),
            ..fragment(3)
        };
        let advanced = |n: u64| {
            let mut m = ds.storage().manifest().clone();
            m.next_row_id = n;
            m
        };
        let mut repeated = range(300..400);
        repeated[1] = 300;
        let mut lowered = ds.storage().manifest().clone();
        lowered.next_row_id = 299;
        let mut tagged = ds.storage().manifest().clone();
        tagged.reader_feature_flags |= lancet::paths::flags::FRAGMENT_REUSE_INDEX
            | lancet::paths::flags::FRAG_REUSE_WITH_STABLE_ROW_IDS;
        tagged.writer_feature_flags = tagged.reader_feature_flags;
        let tagged_fri = lancet::proto::table::IndexMetadata {
            uuid: Some(lancet::proto::table::Uuid { uuid: vec![7; 16] }),
            name: lancet::txn::FRI_INDEX_NAME.into(),
            index_version: Some(1),
            ..Default::default()
        };
        let mut duplicate_base = ds.storage().manifest().clone();
        let base = lancet::proto::table::BasePath {
            id: 4,
            is_dataset_root: true,
            path: "s3://lancet/elsewhere".into(),
            ..Default::default()
        };
        duplicate_base.base_paths = vec![base.clone(), base];
        duplicate_base.reader_feature_flags |= lancet::paths::flags::BASE_PATHS;
        duplicate_base.writer_feature_flags |= lancet::paths::flags::BASE_PATHS;
        let upsert = |f: DataFragment| vec![(f.id, Action::Upsert(Box::new(f)))];
        let cases: Vec<Misuse> = vec![
            (
                advanced(400),
                vec![],
                upsert(fragment(3)),
                lancet::Invariant::RowIdSequencePresent,
            ),
            (
                advanced(400),
                vec![],
                upsert(with_ids(range(300..399))),
                lancet::Invariant::RowIdSequenceLength,
            ),
            (
                advanced(300),
                vec![],
                upsert(with_ids(range(300..400))),
                lancet::Invariant::RowIdBelowNext,
            ),
            (
                advanced(400),
                vec![],
                upsert(with_ids(range(0..100))),
                lancet::Invariant::RowIdFresh,
            ),
            (
                advanced(400),
                vec![],
                upsert(with_ids(repeated)),
                lancet::Invariant::RowIdLiveOnce,
            ),
            (
                lowered,
                vec![],
                vec![],
                lancet::Invariant::NextRowIdMonotone,
            ),
            (
                tagged,
                vec![tagged_fri],
                vec![],
                lancet::Invariant::TaggedFriWithoutStableRowIds,
            ),
            (
                duplicate_base,
                vec![],
                vec![],
                lancet::Invariant::ManifestDecodes,
            ),
        ];
        for (manifest, indices, actions, want) in cases {
            let err = ds
                .storage()
                .commit_actions(manifest, &indices, &actions, &TreeWriterConfig::default())
                .await
                .unwrap_err();
            assert_eq!(err.invariant(), Some(want), "{err}");
            covered.insert(want);
            assert_eq!(
                versions(store_s.clone()).await,
                before,
                "{want} wrote to _versions/"
            );
        }

        // a fragment holding a reserved ExternalFile arm (field 6) is never written again
        let uri_u = "s3://lancet/unmodelled";
        let store_u = DatasetStore::open(uri_u).unwrap();
        let mut raw = lancet::proto::prost::Message::encode_to_vec(&fragment(1));
        raw.extend_from_slice(&[0x32, 0x03, 0x0a, 0x01, b'r']);
        let mut extra = vec![0x12];
        lancet::proto::prost::encoding::encode_varint(raw.len() as u64, &mut extra);
        extra.extend(raw);
        let m = Manifest {
            version: 1,
            fragments: vec![fragment(0)],
            max_fragment_id: Some(1),
            timestamp: Some(lancet::paths::manifest::now_timestamp()),
            ..Default::default()
        };
        write_manifest(
            &store_u,
            &ManifestContent {
                unknown_fields: &extra,
                ..ManifestContent::new(&m)
            },
        )
        .await
        .unwrap();
        let ds = Dataset::open(uri_u).await.unwrap();
        let before = versions(store_u.clone()).await;
        let err = ds
            .storage()
            .commit_actions(
                ds.storage().manifest().clone(),
                &[],
                &upsert(fragment(2)),
                &TreeWriterConfig::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.invariant(),
            Some(lancet::Invariant::UnmodelledFieldsKept),
            "{err}"
        );
        covered.insert(lancet::Invariant::UnmodelledFieldsKept);
        assert_eq!(
            versions(store_u.clone()).await,
            before,
            "an unmodelled field was dropped"
        );
    }
    // 3g. issue 30's index, schema and operation rules on S3: a table with column `a` (field
    //     0, ids allocated up to 2) and an index on it over fragments 0 and 1
    {
        use lancet::proto::file::Field;
        use lancet::proto::roaring_wire::encode_roaring32;
        use lancet::proto::table::transaction::{Merge, Overwrite};
        use lancet::proto::table::{IndexMetadata, Uuid};
        use lancet::Invariant;
        let upsert = |f: DataFragment| vec![(f.id, Action::Upsert(Box::new(f)))];
        let uri_i = "s3://lancet/indexed";
        let store_i = DatasetStore::open(uri_i).unwrap();
        let field = |id: i32, name: &str| Field {
            id,
            parent_id: -1,
            name: name.into(),
            logical_type: "int64".into(),
            nullable: true,
            ..Default::default()
        };
        let covering = |uuid: u8, fragments: &[u32]| IndexMetadata {
            uuid: Some(Uuid {
                uuid: vec![uuid; 16],
            }),
            name: "a_idx".into(),
            fields: vec![0],
            fragment_bitmap: encode_roaring32(&fragments.iter().copied().collect()),
            ..Default::default()
        };
        let m = Manifest {
            version: 1,
            fields: vec![field(0, "a")],
            fragments: (0..3).map(fragment).collect(),
            max_fragment_id: Some(2),
            max_allocated_field_id: Some(2),
            writer_feature_flags: lancet::paths::flags::NON_REUSABLE_FIELD_IDS,
            timestamp: Some(lancet::paths::manifest::now_timestamp()),
            ..Default::default()
        };
        write_manifest(
            &store_i,
            &ManifestContent {
                indices: &[covering(1, &[0, 1])],
                ..ManifestContent::new(&m)
            },
        )
        .await
        .unwrap();
        let ds = Dataset::open(uri_i).await.unwrap();
        let before = versions(store_i.clone()).await;
        let mut rewritten = fragment(1);
        rewritten.files[0].path = "1b.lance".into();
        let mut stray = fragment(2);
        stray.files[0].path = "2b.lance".into();
        stray.files[0].fields = vec![7];
        let mut new_field = ds.storage().manifest().clone();
        new_field.fields.push(field(2, "w"));
        let index = vec![covering(1, &[0, 1])];
        let cases: Vec<Misuse> = vec![
            (
                ds.storage().manifest().clone(),
                vec![covering(1, &[0, 1, 3])],
                upsert(fragment(3)),
                Invariant::IndexCoverageIndexed,
            ),
            (
                ds.storage().manifest().clone(),
                index.clone(),
                upsert(rewritten),
                Invariant::IndexCoverageRewritten,
            ),
            (new_field, index.clone(), vec![], Invariant::FieldIdFresh),
            (
                ds.storage().manifest().clone(),
                index.clone(),
                upsert(stray),
                Invariant::DataFileFieldsInSchema,
            ),
        ];
        for (manifest, indices, actions, want) in cases {
            // the data files written first, as a writer does: the rule broken is the one named
            common::stage(&ds, &actions).await;
            let err = ds
                .storage()
                .commit_actions(manifest, &indices, &actions, &TreeWriterConfig::default())
                .await
                .unwrap_err();
            assert_eq!(err.invariant(), Some(want), "{err}");
            covered.insert(want);
            assert_eq!(versions(store_i.clone()).await, before, "{want} wrote");
        }
        // a Fragment Reuse Index entry naming a rewrite this commit did not make
        let ledger = lancet::reuse::Ledger {
            index_version: 1,
            transitions: vec![lancet::reuse::Transition {
                dataset_version: None,
                sources: vec![lancet::reuse::Digest {
                    id: 0,
                    physical_rows: 100,
                    num_deleted_rows: 0,
                }],
                destinations: vec![lancet::reuse::Digest {
                    id: 9,
                    physical_rows: 100,
                    num_deleted_rows: 0,
                }],
                mapping: lancet::reuse::Mapping::OrderedCompaction {
                    surviving: (0..100u64).collect(),
                },
            }],
            ..Default::default()
        };
        let (fri, external) =
            lancet::reuse::publish::tagged_entry(Uuid { uuid: vec![8; 16] }, 1, &ledger, 0);
        assert!(external.is_none());
        let mut tagged = ds.storage().manifest().clone();
        tagged.reader_feature_flags |= lancet::paths::flags::FRAGMENT_REUSE_INDEX;
        tagged.writer_feature_flags |= lancet::paths::flags::FRAGMENT_REUSE_INDEX;
        let err = ds
            .storage()
            .commit_actions(
                tagged,
                &[covering(1, &[0, 1]), fri],
                &[],
                &TreeWriterConfig::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.invariant(),
            Some(Invariant::FriTransitionCommitted),
            "{err}"
        );
        covered.insert(Invariant::FriTransitionCommitted);
        assert_eq!(
            versions(store_i.clone()).await,
            before,
            "an FRI entry wrote"
        );
        // operations: a Merge leaving a fragment out, an Overwrite carrying a deletion file
        let mut deleted = fragment(0);
        deleted.deletion_file = Some(lancet::proto::table::DeletionFile {
            id: 1,
            num_deleted_rows: 1,
            ..Default::default()
        });
        let operations = [
            (
                lancet::Operation::Merge(Merge {
                    fragments: vec![fragment(0)],
                    schema: ds.storage().manifest().fields.clone(),
                    ..Default::default()
                }),
                Invariant::MergeKeepsFragments,
            ),
            (
                lancet::Operation::Overwrite(Overwrite {
                    fragments: vec![deleted],
                    schema: ds.storage().manifest().fields.clone(),
                    ..Default::default()
                }),
                Invariant::OverwriteFresh,
            ),
        ];
        for (op, want) in operations {
            let err = ds.commit(op).await.unwrap_err();
            assert_eq!(err.invariant(), Some(want), "{err}");
            covered.insert(want);
            assert_eq!(versions(store_i.clone()).await, before, "{want} wrote");
        }
        // a stable-row-id table: two segments of one BTree in two row-id domains
        let stable = Dataset::open("s3://lancet/stable").await.unwrap();
        let store_s = DatasetStore::open("s3://lancet/stable").unwrap();
        let before = versions(store_s.clone()).await;
        let btree = |uuid: u8, version: i32| IndexMetadata {
            index_version: Some(version),
            index_details: Some(lancet::proto::prost_types::Any {
                type_url: "/lance.index.pb.BTreeIndexDetails".into(),
                value: Vec::new(),
            }),
            ..covering(uuid, &[0])
        };
        let err = stable
            .storage()
            .commit_actions(
                stable.storage().manifest().clone(),
                &[btree(2, 0), btree(3, 1)],
                &[],
                &TreeWriterConfig::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.invariant(), Some(Invariant::IndexRowIdDomain), "{err}");
        covered.insert(Invariant::IndexRowIdDomain);
        assert_eq!(versions(store_s).await, before, "IndexRowIdDomain wrote");
    }

    // every invariant of lancet-txn was broken once on S3, and refused
    let all: std::collections::BTreeSet<_> = lancet::Invariant::ALL.into_iter().collect();
    assert_eq!(covered, all, "invariants not exercised on S3");

    // 3c. overlapping deletions prepared on one version: one lands, the others are
    //     conflicts, nothing is corrupted
    let uri_o = "s3://lancet/overlap";
    let store = DatasetStore::open(uri_o).unwrap();
    let m = Manifest {
        version: 1,
        fragments: (0..4).map(fragment).collect(),
        max_fragment_id: Some(3),
        ..Default::default()
    };
    write_manifest(&store, &ManifestContent::new(&m))
        .await
        .unwrap();
    let base = Dataset::open(uri_o).await.unwrap();
    let mut racers = Vec::new();
    for w in 0..4u64 {
        let base = base.clone();
        racers.push(tokio::spawn(async move {
            let deletion = lancet::proto::table::DeletionFile {
                num_deleted_rows: 1 + w,
                id: w,
                ..Default::default()
            };
            let actions = [(0, Action::AddDeletionFile(deletion))];
            common::stage(&base, &actions).await;
            base.storage()
                .commit_actions(
                    base.storage().manifest().clone(),
                    &[],
                    &actions,
                    &TreeWriterConfig::default(),
                )
                .await
        }));
    }
    let mut landed = 0;
    for r in racers {
        match r.await.unwrap() {
            Ok(_) => landed += 1,
            Err(e) => assert_eq!(e.kind(), lancet::ErrorKind::Conflict, "{e}"),
        }
    }
    assert_eq!(landed, 1);
    let end = Dataset::open(uri_o).await.unwrap();
    assert_eq!(end.version(), 2);
    end.verify().await.unwrap();

    // 4. eight lancet writers on one tree table: conditional put arbitrates, all land
    let uri = "s3://lancet/contended";
    let store = DatasetStore::open(uri).unwrap();
    let m = Manifest {
        version: 1,
        fragments: (0..16).map(fragment).collect(),
        max_fragment_id: Some(15),
        ..Default::default()
    };
    write_manifest(&store, &ManifestContent::new(&m))
        .await
        .unwrap();
    let start = Dataset::open_with(store, None, Caches::new(Default::default()))
        .await
        .unwrap()
        .storage()
        .convert_to_tree(&TreeWriterConfig::tiny(), |_, _| {})
        .await
        .unwrap()
        .dataset;
    // 8 × 25 by default: moto answers each request in milliseconds, and a debug build on two
    // cores makes a few commits a second through it; LANCET_S3_COMMITS raises it. Each writer
    // uploads its fragment's data file first, as an append does: committing back to back with
    // nothing between measures starvation instead (the writer that just won starts again at
    // once on the version it made, while the others still have to learn of their loss), which
    // optimistic concurrency does not prevent, in Lance or here.
    let per_writer: u64 = std::env::var("LANCET_S3_COMMITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25);
    let mut tasks = Vec::new();
    for writer in 0..8 {
        let start = start.clone();
        tasks.push(tokio::spawn(async move {
            let mut ds = start;
            let mut attempts = Vec::new();
            for i in 0..per_writer {
                let id = ds
                    .storage()
                    .manifest()
                    .max_fragment_id
                    .map_or(0, |m| u64::from(m) + 1);
                let mut f = fragment(id);
                f.files[0].path = format!("{writer}-{i}.lance");
                common::stage_fragment(&ds, &f).await;
                let began = Instant::now();
                let committed = ds
                    .storage()
                    .commit_actions(
                        ds.storage().manifest().clone(),
                        &[],
                        &[(id, Action::Upsert(Box::new(f)))],
                        &TreeWriterConfig::tiny(),
                    )
                    .await
                    .unwrap();
                attempts.push((committed.attempts, began.elapsed()));
                ds = committed.dataset;
            }
            attempts
        }));
    }
    let contended = Instant::now();
    let mut attempts = Vec::new();
    for t in tasks {
        attempts.extend(t.await.unwrap());
    }
    let slowest = attempts.iter().map(|(_, t)| *t).max().unwrap_or_default();
    let mut attempts: Vec<u32> = attempts.into_iter().map(|(a, _)| a).collect();
    attempts.sort_unstable();
    let at = |q: f64| attempts[((attempts.len() - 1) as f64 * q) as usize];
    eprintln!(
        "8 writers x {per_writer} commits in {:.1} s; attempts per commit: median {}, p99 {}, \
         max {}; slowest commit {:.1} s",
        contended.elapsed().as_secs_f64(),
        at(0.5),
        at(0.99),
        at(1.0),
        slowest.as_secs_f64()
    );
    let end = Dataset::open(uri).await.unwrap();
    assert_eq!(end.version(), start.version() + 8 * per_writer);
    assert_eq!(
        end.fragments().await.unwrap().len() as u64,
        16 + 8 * per_writer
    );
    for v in start.version()..=end.version() {
        end.checkout(v).await.unwrap().verify().await.unwrap();
    }

    // 5. read once on S3 (issue 31): each command from a cold handle through a store that
    //    counts requests per object: a data file its tail and its pages, an index file at
    //    most three (tail, chunk metadata, chunks), every other object once
    for layout in [lancet::Layout::Flat, lancet::Layout::Tree] {
        read_budgets_on_s3(&format!("s3://lancet/reads-{layout:?}"), layout).await;
    }

    // 6. the merge_insert race (issue 32): eight processes upsert overlapping keys into one
    //    S3 table; every key lands once, with the last committed merge's values
    let dir = tempfile::tempdir().unwrap();
    tokio::task::spawn_blocking(move || {
        race::merge_race(
            env!("CARGO_BIN_EXE_lancet"),
            "s3://lancet/merge-race",
            dir.path(),
            &["--stable-row-ids"],
        )
    })
    .await
    .unwrap();

    // 7. issue 41: both engines' processes racing on S3 — the differential tester's racing
    //    step (lancet's CLI, lancet's package when installed, pylance, started at one
    //    instant) between sequential turns, every step checked against the model
    let racing = tokio::task::spawn_blocking(move || racing_on_s3(&py)).await;
    racing.unwrap();
    drop(moto);
}

/// The differential tester on tables under `s3://lancet/`: four racing rounds, then racing
/// steps among sequential turns.
fn racing_on_s3(py: &str) {
    let package = Command::new(py)
        .args(["-c", "import lancet"])
        .status()
        .is_ok_and(|s| s.success());
    for (only, steps) in [
        ("race3", "4"),
        ("race3,append,delete,update,merge,index", "6"),
    ] {
        let out_dir = tempfile::tempdir().unwrap();
        let mut run = Command::new(py);
        run.arg(interop_dir().join("difftest.py"))
            .args(["--lancet", env!("CARGO_BIN_EXE_lancet")])
            .args(["--uri", "s3://lancet/difftest", "--tree", "false"])
            .args(["--only", only, "--steps", steps])
            .args(["--seed", "41", "--runs", "2", "--no-shrink"])
            .args(["--out", out_dir.path().to_str().unwrap()]);
        if package {
            run.arg("--py");
        }
        let out = run.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "difftest on S3 ({only}) failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary: Value = serde_json::from_str(stdout.lines().last().unwrap_or("{}")).unwrap();
        assert_eq!(summary["failed_seed"], Value::Null, "{summary}");
        assert_eq!(summary["runs"], json!(2), "{summary}");
    }
}

async fn read_budgets_on_s3(uri: &str, layout: lancet::Layout) {
    use std::sync::Arc;

    use arrow_array::{Float64Array, Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use futures::TryStreamExt;
    use lancet::Filter;

    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
    ]));
    let ids: Vec<i64> = (0..8_000).collect();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(Float64Array::from_iter_values(
                ids.iter().map(|i| *i as f64),
            )),
        ],
    )
    .unwrap();
    let ds = Dataset::create(
        uri,
        schema,
        futures::stream::iter([Ok(batch)]),
        lancet::CreateOptions {
            layout,
            max_rows_per_file: 1_000,
            ..Default::default()
        },
    )
    .await
    .unwrap()
    .dataset;
    let ds = ds.build_btree("id", 128).await.unwrap().dataset;
    ds.delete(&Filter::parse("id % 100 = 7").unwrap())
        .await
        .unwrap();
    for name in [
        "scan",
        "search-indexed",
        "search-scan",
        "take",
        "delete-scan",
        "update",
        "compact",
    ] {
        let plain = DatasetStore::open(uri).unwrap();
        let counting = Arc::new(lancet::paths::counting::CountingStore::new(
            plain.object_store().clone(),
        ));
        let store = DatasetStore::from_store(counting.clone(), plain.path(""), uri);
        let ds = Dataset::open_with(store, None, Caches::new(Default::default()))
            .await
            .unwrap();
        match name {
            "scan" => {
                let _: Vec<RecordBatch> = ds
                    .scan(Default::default())
                    .await
                    .unwrap()
                    .try_collect()
                    .await
                    .unwrap();
            }
            "search-indexed" => {
                ds.search(&Filter::parse("id = 4200").unwrap())
                    .await
                    .unwrap();
            }
            "search-scan" => {
                ds.search(&Filter::parse("x = 4200").unwrap())
                    .await
                    .unwrap();
            }
            "take" => {
                ds.take(&[3, (2 << 32) + 10], None).await.unwrap();
            }
            "delete-scan" => {
                ds.delete(&Filter::parse("x < 30").unwrap()).await.unwrap();
            }
            "update" => {
                let v = lancet::filter::parse_assignment("x = x + 1").unwrap();
                ds.update(&Filter::parse("id < 40").unwrap(), &[v])
                    .await
                    .unwrap();
            }
            "compact" => {
                ds.optimize().compact(&Default::default()).await.unwrap();
            }
            _ => unreachable!(),
        }
        let what = format!("{layout:?} {name} on S3");
        let reads = counting.reads();
        assert!(
            reads
                .keys()
                .any(|p| p.contains("/data/") || p.contains("/_indices/")),
            "{what}: no request was counted: {reads:?}"
        );
        let over = counting.over_budget();
        assert!(over.is_empty(), "{what}: read over budget: {over:?}");
        let back = counting.read_back();
        assert!(back.is_empty(), "{what}: read back what it wrote: {back:?}");
        for (prefix, n) in counting.lists() {
            assert!(n <= 1, "{what}: {prefix} listed {n} times");
        }
    }
}
