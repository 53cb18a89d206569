//! Interop with the peer, pylance 14.0.2: fixtures it writes are read by lancet, and what lancet
//! writes is read by it. The virtualenv is created by `tests/interop/venv.sh` on first use.
//! These tests never skip: without Python or PyPI they fail, loudly.
//!
//! `LANCET_FIXTURES=DIR` reuses fixtures generated earlier into DIR (for quick local runs).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use arrow_array::{Array, Int64Array, RecordBatch, UInt16Array};
use arrow_schema::{DataType, Field, Schema};
use base64::Engine;
use lancet::file::{write_file, FileVersion, LanceFile, WriteOptions};
use lancet::paths::DatasetStore;
use lancet::Dataset;
use prost::Message;
use serde_json::{json, Value};

#[path = "interop/changes.rs"]
mod changes;
#[path = "interop/compaction.rs"]
mod compaction;
#[path = "interop/data.rs"]
mod data;
#[path = "interop/filters.rs"]
mod filters;
#[path = "interop/fragments.rs"]
mod fragments;
#[path = "interop/merge.rs"]
mod merge;
#[path = "interop/schema.rs"]
mod schema;
#[path = "interop/tags.rs"]
mod tags;
use fragments::fragments_of;

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop")
}

fn python() -> &'static str {
    static PY: OnceLock<String> = OnceLock::new();
    PY.get_or_init(|| {
        let out = Command::new("bash")
            .arg(interop_dir().join("venv.sh"))
            .output()
            .expect("running tests/interop/venv.sh");
        assert!(
            out.status.success(),
            "tests/interop/venv.sh failed (interop tests need python3 and PyPI):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    })
}

fn run_python(script: &str, args: &[&str]) -> String {
    let out = Command::new(python())
        .arg(interop_dir().join(script))
        .args(args)
        .output()
        .expect("running the pylance peer");
    assert!(
        out.status.success(),
        "{script} {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn peer(args: &[&str]) -> Value {
    serde_json::from_str(&run_python("peer.py", args)).expect("peer prints JSON")
}

/// Fixture datasets written by pylance, generated once per test process.
fn fixtures() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Ok(dir) = std::env::var("LANCET_FIXTURES") {
            let dir = PathBuf::from(dir);
            if dir.join("basic.expect.json").exists() {
                return dir;
            }
        }
        let dir = tempfile::tempdir().unwrap().keep();
        run_python("gen_fixtures.py", &[dir.to_str().unwrap()]);
        dir
    })
}

const DATASETS: [&str; 5] = ["basic", "stable", "fri", "stable_history", "btree"];

fn lancet(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "lancet {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn has_flag(flags: &Value, name: &str) -> bool {
    flags.as_array().unwrap().iter().any(|f| f == name)
}

#[test]
fn inspect_matches_pylance_for_every_version() {
    let mut checked = 0;
    for name in DATASETS {
        let uri = fixtures().join(name);
        let expect: Value = serde_json::from_str(
            &std::fs::read_to_string(fixtures().join(format!("{name}.expect.json"))).unwrap(),
        )
        .unwrap();
        for want in expect["versions"].as_array().unwrap() {
            let v = want["version"].as_u64().unwrap();
            let got: Value = serde_json::from_str(&lancet(&[
                "inspect",
                uri.to_str().unwrap(),
                "--version",
                &v.to_string(),
                "--json",
            ]))
            .unwrap();
            let ctx = format!("{name} v{v}");
            assert_eq!(got["version"], want["version"], "{ctx}");
            assert_eq!(got["num_rows"], want["num_rows"], "{ctx}");
            assert_eq!(got["stable_row_ids"], want["stable_row_ids"], "{ctx}");

            let frags = got["fragments"].as_array().unwrap();
            let want_frags = want["fragments"].as_array().unwrap();
            assert_eq!(frags.len(), want_frags.len(), "{ctx}");
            for (g, w) in frags.iter().zip(want_frags) {
                for key in [
                    "id",
                    "physical_rows",
                    "num_deleted_rows",
                    "files",
                    "deletion_file",
                ] {
                    assert_eq!(g[key], w[key], "{ctx} fragment {} {key}", w["id"]);
                }
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(g["proto_b64"].as_str().unwrap())
                    .unwrap();
                let frag = lancet::proto::table::DataFragment::decode(bytes.as_slice()).unwrap();
                assert_eq!(Some(frag.id), w["id"].as_u64(), "{ctx}");
            }

            let any_deletions = want_frags.iter().any(|f| !f["deletion_file"].is_null());
            let stable = want["stable_row_ids"].as_bool().unwrap();
            for word in ["reader_feature_flags", "writer_feature_flags"] {
                assert_eq!(
                    has_flag(&got[word], "deletion_files"),
                    any_deletions,
                    "{ctx} {word}"
                );
                assert_eq!(
                    has_flag(&got[word], "stable_row_ids"),
                    stable,
                    "{ctx} {word}"
                );
            }

            let mut got_idx: Vec<&Value> = got["indices"].as_array().unwrap().iter().collect();
            got_idx.sort_by_key(|i| i["name"].as_str().unwrap().to_string());
            let want_idx = want["indices"].as_array().unwrap();
            assert_eq!(got_idx.len(), want_idx.len(), "{ctx}");
            // pylance reports index coverage after remapping through a Fragment Reuse Index;
            // the manifest stores coverage before it. Compare stored coverage without an FRI.
            let has_fri = want_idx.iter().any(|i| i["name"] == "__lance_frag_reuse");
            for (g, w) in got_idx.iter().zip(want_idx) {
                for key in ["name", "uuid", "fields", "dataset_version", "type_url"] {
                    assert_eq!(g[key], w[key], "{ctx} index {} {key}", w["name"]);
                }
                if !has_fri {
                    assert_eq!(g["fragment_ids"], w["fragment_ids"], "{ctx}");
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} versions checked");
}

fn expected_versions(name: &str) -> Vec<u64> {
    let expect: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join(format!("{name}.expect.json"))).unwrap(),
    )
    .unwrap();
    expect["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect()
}

#[test]
fn rowid_mapping_equals_pylance_for_every_version() {
    let mut checked = 0;
    let mut versions_checked = 0;
    for name in DATASETS {
        let uri = fixtures().join(name);
        let uri = uri.to_str().unwrap();
        for v in expected_versions(name) {
            let v = v.to_string();
            let got: Value = serde_json::from_str(&lancet(&[
                "rowid",
                uri,
                "--version",
                &v,
                "--json",
                "--segments",
                "--versions",
            ]))
            .unwrap();
            let want = peer(&["rowids", uri, &v]);
            assert_eq!(got["row_ids"], want["row_ids"], "{name} v{v}: row ids");
            // created / last-updated versions per row, as pylance's
            // _row_created_at_version and _row_last_updated_at_version columns give them
            if want.get("created_at").is_some() {
                assert_eq!(
                    got["created_at"], want["created_at"],
                    "{name} v{v}: created"
                );
                assert_eq!(
                    got["last_updated_at"], want["last_updated_at"],
                    "{name} v{v}: last updated"
                );
                versions_checked += 1;
            }
            assert_eq!(
                got["row_addrs"], want["row_addrs"],
                "{name} v{v}: row addresses"
            );
            for f in got["fragments"].as_array().unwrap() {
                assert_eq!(
                    f["byte_identical"],
                    json!(true),
                    "{name} v{v}: fragment {}",
                    f["id"]
                );
            }
            // lookups agree with the listing, and an id that is not live maps to null
            let ids = got["row_ids"].as_array().unwrap();
            if let Some(first) = ids.first() {
                let probe = [first.to_string(), u64::MAX.to_string()];
                let looked: Value = serde_json::from_str(&lancet(&[
                    "rowid",
                    uri,
                    "--version",
                    &v,
                    "--json",
                    "--lookup",
                    &probe[0],
                    &probe[1],
                ]))
                .unwrap();
                assert_eq!(
                    looked["lookups"],
                    json!([got["row_addrs"][0], null]),
                    "{name} v{v}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 25, "only {checked} versions checked");
    // every version of the two stable-row-id tables
    assert!(
        versions_checked >= 8,
        "row versions compared on only {versions_checked} versions"
    );
}

#[tokio::test]
async fn reencoded_manifest_is_read_identically_by_pylance() {
    for name in DATASETS {
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().join(name);
        copy_dir(&fixtures().join(name), &uri);
        let uri = uri.to_str().unwrap().to_string();
        let before = peer(&["scan", &uri]);
        let ds = Dataset::open(&uri).await.unwrap();
        let next = ds
            .storage()
            .commit_manifest(ds.storage().manifest().clone(), ds.storage().indices())
            .await
            .unwrap()
            .dataset;
        assert_eq!(next.version(), ds.version() + 1);
        assert_eq!(
            next.fragments().await.unwrap(),
            ds.fragments().await.unwrap()
        );
        assert_eq!(next.storage().indices(), ds.storage().indices());
        let after = peer(&["scan", &uri]);
        assert_eq!(after["version"], json!(ds.version() + 1), "{name}");
        for key in ["count", "columns", "rows", "indices"] {
            assert_eq!(after[key], before[key], "{name}: {key}");
        }
        // committing on the same version again loses the race instead of overwriting, and
        // rebases over the other config update (Lance's table: no key in common)
        let published = versions_dir(&uri);
        let again = ds
            .storage()
            .commit_manifest(ds.storage().manifest().clone(), ds.storage().indices())
            .await
            .unwrap();
        assert_eq!(again.dataset.version(), ds.version() + 2, "{name}");
        assert_eq!(again.attempts, 2, "{name}");
        let now = versions_dir(&uri);
        for (file, bytes) in &published {
            assert_eq!(now.get(file), Some(bytes), "{name}: {file} rewritten");
        }
        assert_eq!(now.len(), published.len() + 1, "{name}");
    }
}

/// Every manifest file of the table at `uri`, by name.
fn versions_dir(uri: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(Path::new(uri).join("_versions"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".manifest"))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

#[test]
fn demo_is_opened_and_scanned_by_pylance() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("demo");
    let uri = uri.to_str().unwrap();
    lancet(&["demo", uri]);
    // version 1: three fragments with stable row ids; 2: a deletion; 3: a BTree index
    let v1 = peer(&["scan", uri, "1"]);
    assert_eq!(v1["count"], json!(3000));
    assert_eq!(v1["columns"], json!(["id", "name", "value"]));
    assert_eq!(peer(&["scan", uri, "2"])["count"], json!(2857));
    let got = peer(&["scan", uri]);
    assert_eq!(got["version"], json!(3));
    assert_eq!(got["indices"], json!(["id_idx"]));
    let live: Vec<i64> = (0..3000)
        .filter(|i| !((1000..2000).contains(i) && i % 7 == 0))
        .collect();
    assert_eq!(got["count"], json!(live.len()));
    let rows = got["rows"].as_array().unwrap();
    for (row, &i) in rows.iter().zip(&live) {
        let name = if i % 10 == 9 {
            Value::Null
        } else {
            json!(format!("name-{i}"))
        };
        assert_eq!(row, &json!([i, name, i as f64 / 2.0]));
    }
    // pylance answers through lancet's index exactly as a full scan
    let filters = serde_json::to_string(&["id = 7", "id = 1008", "id < 10", "id >= 2990"]).unwrap();
    let want = peer(&["filters", uri, "3", &filters]);
    for (f, w) in ["id = 7", "id = 1008", "id < 10", "id >= 2990"]
        .iter()
        .zip(want.as_array().unwrap())
    {
        assert_eq!(lancet_search(uri, "3", f)["row_ids"], w["row_ids"], "{f}");
    }
    // --layout tree moves the fragments into a tree (version 4), then appends (5) and deletes
    // (6) through it; Lance 14 refuses those versions
    let tree_uri = dir.path().join("tree-demo");
    let tree_uri = tree_uri.to_str().unwrap();
    lancet(&["demo", "--layout", "tree", tree_uri]);
    let shown: Value =
        serde_json::from_str(&lancet(&["tree", "show", tree_uri, "--json"])).unwrap();
    assert_eq!(shown["version"], 6);
    assert_eq!(shown["fragments"], 4);
    let scanned: Vec<i64> = lancet(&["scan", tree_uri, "--columns", "id", "--format", "jsonl"])
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_i64()
                .unwrap()
        })
        .collect();
    let want: Vec<i64> = (0..4000)
        .filter(|i| !((1000..2000).contains(i) && i % 7 == 0) && i % 10 != 5)
        .collect();
    assert_eq!(scanned, want);
    let out = Command::new(python())
        .arg("-c")
        .arg(format!(
            "import lance\nprint(lance.dataset({tree_uri:?}, version=3).count_rows())\ntry:\n    lance.dataset({tree_uri:?}).count_rows()\n    print('opened')\nexcept Exception:\n    print('refused')"
        ))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["2857", "refused"]
    );
    // a second demo into the same directory is refused
    let out = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(["demo", uri])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

fn file_schema() -> Schema {
    Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("label", DataType::UInt16, true),
    ])
}

#[tokio::test]
async fn lancet_files_are_read_by_pylance() {
    let dir = tempfile::tempdir().unwrap();
    let store = DatasetStore::open(dir.path().to_str().unwrap()).unwrap();
    let fs = lancet::file_store_for(&store).unwrap();
    let ids: Vec<i64> = (0..500).collect();
    let labels: Vec<Option<u16>> = ids
        .iter()
        .map(|i| (i % 3 != 0).then_some(*i as u16 % 9))
        .collect();
    let batch = RecordBatch::try_new(
        Arc::new(file_schema()),
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(UInt16Array::from(labels.clone())),
        ],
    )
    .unwrap();
    for version in [FileVersion::V2_0, FileVersion::V2_1, FileVersion::V2_2] {
        let options = WriteOptions {
            version,
            metadata: [(
                "lance:stable_partition:counts_buffer_index".to_string(),
                "1".to_string(),
            )]
            .into(),
            global_buffers: vec![bytes::Bytes::from_static(b"LSPC\x01\x00\x00\x00")],
            field_ids: None,
        };
        write_file(
            &fs,
            &store.path("f.lance"),
            &file_schema(),
            std::slice::from_ref(&batch),
            &options,
        )
        .await
        .unwrap();
        let got = peer(&["read-file", dir.path().join("f.lance").to_str().unwrap()]);
        assert_eq!(got["num_rows"], json!(500));
        let (major, minor) = version.data_file_version();
        let expect_version = if (major, minor) == (2, 0) {
            json!([0, 3])
        } else {
            json!([major, minor])
        };
        assert_eq!(got["version"], expect_version);
        assert_eq!(
            got["schema"],
            json!([["id", "int64", false], ["label", "uint16", true]])
        );
        assert_eq!(
            got["metadata"]["lance:stable_partition:counts_buffer_index"],
            json!("1")
        );
        assert_eq!(got["global_buffer_1"], json!("4c53504301000000"));
        assert_eq!(got["columns"]["id"], json!(ids));
        assert_eq!(got["columns"]["label"], json!(labels));
    }
}

#[tokio::test]
async fn pylance_files_are_read_by_lancet() {
    let dir = tempfile::tempdir().unwrap();
    let got = peer(&["write-file", dir.path().join("p.lance").to_str().unwrap()]);
    let store = DatasetStore::open(dir.path().to_str().unwrap()).unwrap();
    let fs = lancet::file_store_for(&store).unwrap();
    let file = LanceFile::open(&fs, &store.path("p.lance"), None)
        .await
        .unwrap();
    file.check_schema(&file_schema()).unwrap();
    assert_eq!(file.num_rows(), 300);
    assert_eq!(
        file.metadata().get("lance:test").map(String::as_str),
        Some("from-pylance")
    );
    let idx = u32::try_from(got["global_buffer"].as_u64().unwrap()).unwrap();
    assert_eq!(
        file.global_buffer(idx).await.unwrap().as_ref(),
        b"LSPC-peer"
    );
    let rows = file.read_range(10..20).await.unwrap();
    let ids = rows
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert_eq!(ids.values().to_vec(), (10..20).collect::<Vec<i64>>());
    let labels = rows
        .column(1)
        .as_any()
        .downcast_ref::<UInt16Array>()
        .unwrap();
    assert_eq!(labels.null_count(), 2); // rows 10 and 15
}

/// Filters over the `btree` fixture: every operator on int64 (duplicates, extremes), float64
/// (NaN, ±0, ±inf, NULL), utf8 (unicode, prefixes, empty) and a mostly-NULL column.
const BTREE_FILTERS: &[&str] = &[
    "i = 0",
    "i = 9223372036854775807",
    "i = -9223372036854775807",
    "i < -20",
    "i <= 3",
    "i > 25",
    "i >= 9223372036854775806",
    "i != 7",
    "i BETWEEN -5 AND 5",
    "i IN (1, 2, 29, 99)",
    "i IN (1, NULL)",
    "NOT (i IN (1, NULL))",
    "i IS NULL",
    "i IS NOT NULL",
    "NOT (i > 10)",
    "i > 5 AND i < 20 OR i = -1",
    "NOT (i = 3 AND i IS NOT NULL)",
    "i = NULL",
    "f = 0.0",
    "f = -0.0",
    "f > 0.0",
    "f >= 0",
    "f < 0",
    "f <= -1.5",
    "f > 20",
    "f != 0.0",
    "f BETWEEN -1.0 AND 1.0",
    "f IN (0.0, 1.5, -2.25)",
    "f IS NULL",
    "NOT (f < 2.5)",
    "s = ''",
    "s = 'abc'",
    "s = '日本語'",
    "s LIKE 'ab%'",
    "s LIKE '日本%'",
    "s LIKE '%'",
    "starts_with(s, 'é')",
    "NOT (s LIKE 'a%')",
    "s > 'b'",
    "s < 'a'",
    "s BETWEEN 'ab' AND 'b'",
    "s IN ('', 'z\u{ff}', 'abc3')",
    "s IS NULL",
    "m = 5",
    "m > 0",
    "m IS NULL",
    "m IS NOT NULL",
    "NOT (m = 0)",
    "m = 0 OR i = 1",
    "m IS NULL AND (f > 0.0 OR s LIKE 'é%')",
];

fn lancet_search(uri: &str, version: &str, filter: &str) -> Value {
    serde_json::from_str(&lancet(&[
        "index",
        "search",
        uri,
        "--filter",
        filter,
        "--version",
        version,
        "--json",
    ]))
    .unwrap()
}

#[test]
fn btree_search_equals_pylance_full_scan() {
    let uri = fixtures().join("btree");
    let uri = uri.to_str().unwrap();
    let filters = serde_json::to_string(BTREE_FILTERS).unwrap();
    let versions = expected_versions("btree");
    // the last version has every index and the deletions; the one before has no deletions
    for v in &versions[versions.len() - 2..] {
        let v = v.to_string();
        let want = peer(&["filters", uri, &v, &filters]);
        for (f, w) in BTREE_FILTERS.iter().zip(want.as_array().unwrap()) {
            let got = lancet_search(uri, &v, f);
            assert_eq!(got["row_ids"], w["row_ids"], "v{v} {f}: TRUE rows");
            assert_eq!(
                got["null_row_ids"], w["null_row_ids"],
                "v{v} {f}: NULL rows"
            );
        }
    }
    // an equality reads one or two of the 79 pages of i_idx, never the whole index
    let last = versions.last().unwrap().to_string();
    let eq = lancet_search(uri, &last, "i = 9223372036854775807");
    assert!(eq["pages_read"].as_u64().unwrap() <= 3, "{eq}");
}

#[test]
fn lancet_trained_indexes_serve_pylance_queries() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("btree");
    copy_dir(&fixtures().join("btree"), &copy);
    let uri = copy.to_str().unwrap();
    for column in ["i", "f", "s", "m"] {
        lancet(&[
            "index",
            "build",
            uri,
            "--column",
            column,
            "--zone-size",
            "64",
        ]);
    }
    // each build commits one version and replaces the index of the same name
    let before = *expected_versions("btree").last().unwrap();
    let latest = before + 4;
    let listed: Value = serde_json::from_str(&lancet(&["index", "list", uri, "--json"])).unwrap();
    assert_eq!(listed["indices"].as_array().unwrap().len(), 4, "{listed}");
    for (k, column) in ["i", "f", "s", "m"].iter().enumerate() {
        let entry = listed["indices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["columns"][0] == *column)
            .unwrap();
        assert_eq!(
            entry["dataset_version"],
            json!(before + k as u64),
            "{entry}"
        );
    }
    let plan = peer(&["explain", uri, "i = 7 AND s LIKE 'ab%'"]);
    assert!(
        plan["plan"].as_str().unwrap().contains("ScalarIndexQuery"),
        "{plan}"
    );
    let filters = serde_json::to_string(BTREE_FILTERS).unwrap();
    let v = latest.to_string();
    let scan = peer(&["filters", uri, &v, &filters]);
    let indexed = peer(&["filters", uri, &v, &filters, "true"]);
    for ((f, s), i) in BTREE_FILTERS
        .iter()
        .zip(scan.as_array().unwrap())
        .zip(indexed.as_array().unwrap())
    {
        assert_eq!(
            i["row_ids"], s["row_ids"],
            "pylance with lancet's index, {f}"
        );
        let got = lancet_search(uri, &v, f);
        assert_eq!(
            got["row_ids"], s["row_ids"],
            "lancet with its own index, {f}"
        );
        assert_eq!(
            got["null_row_ids"], s["null_row_ids"],
            "lancet with its own index, {f}"
        );
    }
}

#[test]
fn index_list_names_every_index_pylance_builds_with_its_type() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("btree");
    copy_dir(&fixtures().join("btree"), &copy);
    let uri = copy.to_str().unwrap();
    peer(&["index", uri, "s", "BITMAP", "s_bitmap"]);
    let pylance = peer(&["index", uri, "m", "ZONEMAP", "m_zones"]);
    let listed: Value = serde_json::from_str(&lancet(&["index", "list", uri, "--json"])).unwrap();
    let mut ours: Vec<Value> = listed["indices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| json!([i["name"], i["type"]]))
        .collect();
    ours.sort_by_key(|v| v.to_string());
    // the same names and types pylance lists (its BTrees on i, f, s, m and the two new ones)
    assert_eq!(Value::Array(ours), pylance["indices"], "{listed}");
    for i in listed["indices"].as_array().unwrap() {
        let btree = i["type"] == "BTree";
        assert_eq!(i["answered_by_lancet"], json!(btree), "{i}");
        assert!(!i["fragment_ids"].as_array().unwrap().is_empty(), "{i}");
    }
    let bitmap = listed["indices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "s_bitmap")
        .unwrap();
    assert_eq!(bitmap["columns"], json!(["s"]));
    let text = lancet(&["index", "list", uri]);
    assert!(text.contains("s_bitmap (Bitmap) on [\"s\"]"), "{text}");
    assert!(text.contains("not used by lancet"), "{text}");
}

/// `lancet index drop` removes an index pylance built, even one lancet does not read (a
/// Bitmap), as pylance's `drop_index` would: one CreateIndex pylance reads back, the other
/// indexes kept. A name no index has is one `lancet: ...` line and no new version.
#[test]
fn lancet_drops_an_index_pylance_built_as_pylance_would() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("btree");
    copy_dir(&fixtures().join("btree"), &copy);
    let uri = copy.to_str().unwrap();
    let built = peer(&["index", uri, "s", "BITMAP", "s_bitmap"]);
    let before = built["version"].as_u64().unwrap();
    let out = lancet(&["index", "drop", uri, "--name", "s_bitmap"]);
    assert!(out.contains("dropped index s_bitmap (1 segments)"), "{out}");
    let seen = peer(&["transactions", uri]);
    assert_eq!(seen["version"], json!(before + 1), "{seen}");
    assert_eq!(
        seen["transactions"][0]["operation"], "CreateIndex",
        "{seen}"
    );
    let kept: Vec<Value> = built["indices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i[0] != "s_bitmap")
        .map(|i| i[0].clone())
        .collect();
    assert_eq!(seen["indices"], Value::Array(kept), "{seen}");
    let failed = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(["index", "drop", uri, "--name", "s_bitmap"])
        .output()
        .unwrap();
    assert!(!failed.status.success());
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("lancet: ") && stderr.contains("no index named"),
        "{stderr}"
    );
    assert_eq!(peer(&["transactions", uri])["version"], json!(before + 1));
}

/// Columns whose only indexes are ones lancet does not read (an Inverted index on a string
/// column, an IVF_FLAT vector index) are listed as such and answered by scanning, exactly as
/// pylance's full scan answers.
#[tokio::test]
async fn columns_with_only_inverted_or_vector_indexes_are_scanned_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("tv");
    let uri = uri.to_str().unwrap();
    let built = peer(&["text-vector-table", uri]);
    let listed: Value = serde_json::from_str(&lancet(&["index", "list", uri, "--json"])).unwrap();
    let listed = listed["indices"].as_array().unwrap();
    assert_eq!(
        listed.len(),
        2,
        "{listed:?} vs pylance {}",
        built["indices"]
    );
    for i in listed {
        assert_eq!(i["answered_by_lancet"], json!(false), "{i}");
    }
    let types: Vec<&str> = listed.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert!(types.contains(&"Inverted"), "{types:?}");
    let filters = [
        "s = 'w3 x3'",
        "s LIKE 'w1%'",
        "s IS NULL",
        "NOT (s >= 'w4')",
        "s = 'w3 x3' OR k < 10",
        "k BETWEEN 100 AND 120 AND s IS NOT NULL",
    ];
    let version = built["version"].as_u64().unwrap();
    let want = peer(&[
        "filters",
        uri,
        &version.to_string(),
        &serde_json::to_string(&filters).unwrap(),
    ]);
    let ds = Dataset::open(uri).await.unwrap();
    for (f, w) in filters.iter().zip(want.as_array().unwrap()) {
        let got = ds.search(&lancet::Filter::parse(f).unwrap()).await.unwrap();
        assert!(got.scanned_fragments > 0, "{f}: answered without scanning");
        assert_eq!(got.pages_read, 0, "{f}: no index lancet reads covers it");
        let theirs: Vec<u64> = w["row_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(got.row_ids.iter().collect::<Vec<_>>(), theirs, "{f}");
        let nulls: Vec<u64> = w["null_row_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(
            got.null_row_ids.iter().collect::<Vec<_>>(),
            nulls,
            "{f}: NULL rows"
        );
    }
}

fn lancet_stdin(args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "lancet {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn fri_translation_equals_pylance_after_two_compactions() {
    let uri = fixtures().join("fri");
    let uri = uri.to_str().unwrap();
    let shown: Value = serde_json::from_str(&lancet(&["fri", "show", uri, "--json"])).unwrap();
    let transitions = shown["fri"]["transitions"].as_array().unwrap();
    assert!(!transitions.is_empty(), "{shown}");
    // the versions before each compaction: every fragment of them is translated
    let versions = expected_versions("fri");
    let mut checked = 0;
    for pre in &versions[..versions.len() - 1] {
        let want = peer(&["fri-expect", uri, &pre.to_string()]);
        let addrs: Vec<String> = want["addrs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.to_string())
            .collect();
        let got: Value = serde_json::from_str(&lancet_stdin(
            &["fri", "translate", uri, "--json"],
            &addrs.join("\n"),
        ))
        .unwrap();
        assert_eq!(
            got["translated"], want["expected"],
            "from version {pre}: the same rows"
        );
        if !want["pylance"].is_null() {
            assert_eq!(
                got["translated"], want["pylance"],
                "from version {pre}: remap_row_addrs"
            );
        }
        checked += addrs.len();
    }
    assert!(checked > 10_000, "{checked}");
}

/// After compactions with deferred remap, the index still names old addresses: lancet
/// translates its answers through the FRI history (index reuse), so every compacted fragment
/// is answered by the index and none is scanned, and the answers equal pylance's full scan.
#[test]
fn index_search_stays_exact_after_deferred_compaction() {
    let uri = fixtures().join("fri");
    let uri = uri.to_str().unwrap();
    let filters = [
        "id < 100",
        "id = 2501",
        "NOT (id > 3000)",
        "id IN (1, 7, 3999)",
    ];
    let v = expected_versions("fri").last().unwrap().to_string();
    let want = peer(&[
        "filters",
        uri,
        &v,
        &serde_json::to_string(&filters).unwrap(),
    ]);
    for (f, w) in filters.iter().zip(want.as_array().unwrap()) {
        let got = lancet_search(uri, &v, f);
        assert_eq!(got["row_ids"], w["row_ids"], "{f}");
        assert_eq!(got["null_row_ids"], w["null_row_ids"], "{f}");
        assert_eq!(got["scanned_fragments"], json!(0), "{f}: {got}");
    }
}

/// A v1 (tagged) history written by lancet is read by pylance: `lancet fri upgrade`
/// re-publishes the fixture's legacy history as v1 transitions with flag 1024; pylance's
/// index queries on the compacted fragments then equal its full scan, and lancet still
/// translates every old address to the same row.
#[test]
fn pylance_reads_a_v1_history_written_by_lancet() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("fri");
    copy_dir(&fixtures().join("fri"), &copy);
    let uri = copy.to_str().unwrap();
    let before = expected_versions("fri");
    let pre = before.first().unwrap().to_string();
    let want = peer(&["fri-expect", uri, &pre]);
    let out: Value = serde_json::from_str(&lancet(&["fri", "upgrade", uri])).unwrap();
    let v = out["version"].as_u64().unwrap();
    assert_eq!(v, before.last().unwrap() + 1);
    let shown: Value = serde_json::from_str(&lancet(&["fri", "show", uri])).unwrap();
    assert_eq!(shown["fri"]["index_version"], json!(1));
    let inspect: Value = serde_json::from_str(&lancet(&["inspect", uri, "--json"])).unwrap();
    for word in ["reader_feature_flags", "writer_feature_flags"] {
        assert!(
            has_flag(&inspect[word], "fragment_reuse_index"),
            "{inspect}"
        );
    }
    let filters = [
        "id < 100",
        "id = 2501",
        "id > 3900",
        "id BETWEEN 1000 AND 1100",
    ];
    let plan = peer(&["explain", uri, filters[0]]);
    assert!(
        plan["plan"].as_str().unwrap().contains("ScalarIndexQuery"),
        "{plan}"
    );
    let json_filters = serde_json::to_string(&filters).unwrap();
    let vs = v.to_string();
    let scan = peer(&["filters", uri, &vs, &json_filters]);
    let indexed = peer(&["filters", uri, &vs, &json_filters, "true"]);
    assert_eq!(scan, indexed, "pylance with lancet's v1 history");
    let addrs: Vec<String> = want["addrs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.to_string())
        .collect();
    let got: Value = serde_json::from_str(&lancet_stdin(
        &["fri", "translate", uri, "--json"],
        &addrs.join("\n"),
    ))
    .unwrap();
    assert_eq!(got["translated"], want["expected"]);
}

#[test]
fn fri_upgrade_refuses_tables_it_must_not_change() {
    for (name, needle) in [
        ("stable", "stable-row-id"),
        ("basic", "no Fragment Reuse Index"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join(name);
        copy_dir(&fixtures().join(name), &copy);
        let out = Command::new(env!("CARGO_BIN_EXE_lancet"))
            .args(["fri", "upgrade", copy.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{name}: {err}");
        // nothing was committed
        let versions = std::fs::read_dir(copy.join("_versions")).unwrap().count();
        assert_eq!(
            versions,
            std::fs::read_dir(fixtures().join(name).join("_versions"))
                .unwrap()
                .count()
        );
    }
}

/// A v1 history lancet writes from rewrites it commits: the fixture's two legacy compactions,
/// then (after deletions) a stable partition of the compacted fragment into 3 destinations by
/// `id % 3`, then an ordered compaction of two of those. pylance wrote the data files; lancet
/// recorded the mappings (row map with its counts) and committed. pylance's index queries on
/// the rewritten fragments equal its full scan, lancet's search equals it without scanning a
/// fragment, and every pre-compaction address translates to where its row is now. Then an
/// index rebuilt over the current fragments lets `fri trim` drop the whole history, and a
/// failed rewrite leaves a row map `fri unreferenced` finds and deletes.
#[tokio::test]
async fn pylance_reads_rewrites_lancet_records() {
    use lancet::RewriteMapping;
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("fri");
    copy_dir(&fixtures().join("fri"), &copy);
    let uri = copy.to_str().unwrap().to_string();
    let pre = expected_versions("fri").first().unwrap().to_string();
    peer(&["delete", &uri, "id % 11 = 0"]);
    let legacy: Value = serde_json::from_str(&lancet(&["fri", "show", &uri])).unwrap();
    let legacy = legacy["fri"]["transitions"].as_array().unwrap().len();

    // stable partition of every current fragment
    let ds = Dataset::open(&uri).await.unwrap();
    let sources: Vec<u32> = ds
        .fragments()
        .await
        .unwrap()
        .iter()
        .map(|f| f.id as u32)
        .collect();
    let written = peer(&[
        "rewrite",
        &uri,
        &json!(sources).to_string(),
        "partition",
        "3",
    ]);
    let labels = fragments::labels_of(&written);
    let ds = ds
        .storage()
        .commit_rewrite(
            &sources,
            fragments_of(&written),
            RewriteMapping::StablePartition { labels: &labels },
        )
        .await
        .unwrap()
        .dataset;
    assert_eq!(ds.fragments().await.unwrap().len(), 3);
    // ordered compaction of the first two destinations
    let pair: Vec<u32> = ds.fragments().await.unwrap()[..2]
        .iter()
        .map(|f| f.id as u32)
        .collect();
    let written = peer(&[
        "rewrite",
        &uri,
        &json!(pair).to_string(),
        "ordered",
        "100000",
    ]);
    let ds = ds
        .storage()
        .commit_rewrite(
            &pair,
            fragments_of(&written),
            RewriteMapping::OrderedCompaction,
        )
        .await
        .unwrap()
        .dataset;
    assert_eq!(ds.fragments().await.unwrap().len(), 2);
    let shown: Value = serde_json::from_str(&lancet(&["fri", "show", &uri])).unwrap();
    assert_eq!(shown["fri"]["index_version"], json!(1));
    assert_eq!(
        shown["fri"]["transitions"].as_array().unwrap().len(),
        legacy + 2
    );

    let filters = [
        "id < 100",
        "id = 2501",
        "id > 3900",
        "id BETWEEN 1000 AND 1100",
        "NOT (id > 3000)",
    ];
    let plan = peer(&["explain", &uri, filters[0]]);
    assert!(
        plan["plan"].as_str().unwrap().contains("ScalarIndexQuery"),
        "{plan}"
    );
    let json_filters = serde_json::to_string(&filters).unwrap();
    let v = ds.version().to_string();
    let scan = peer(&["filters", &uri, &v, &json_filters]);
    let indexed = peer(&["filters", &uri, &v, &json_filters, "true"]);
    assert_eq!(scan, indexed, "pylance through lancet's recorded rewrites");
    for (f, w) in filters.iter().zip(scan.as_array().unwrap()) {
        let got = lancet_search(&uri, &v, f);
        assert_eq!(got["row_ids"], w["row_ids"], "{f}");
        assert_eq!(got["scanned_fragments"], json!(0), "{f}: {got}");
    }
    let want = peer(&["fri-expect", &uri, &pre]);
    let addrs: Vec<String> = want["addrs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.to_string())
        .collect();
    let got: Value = serde_json::from_str(&lancet_stdin(
        &["fri", "translate", &uri, "--json"],
        &addrs.join("\n"),
    ))
    .unwrap();
    assert_eq!(got["translated"], want["expected"]);

    // labels that do not match the destinations: refused, nothing committed, the row map
    // written before the check is left unreferenced
    let one: Vec<u32> = vec![ds.fragments().await.unwrap()[0].id as u32];
    let written = peer(&["rewrite", &uri, &json!(one).to_string(), "partition", "2"]);
    let wrong = vec![0u16; written["labels"].as_array().unwrap().len()];
    let err = ds
        .storage()
        .commit_rewrite(
            &one,
            fragments_of(&written),
            RewriteMapping::StablePartition { labels: &wrong },
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("labels send"), "{err}");
    assert_eq!(Dataset::open(&uri).await.unwrap().version(), ds.version());
    // the map is younger than the in-progress age: kept by default
    let young: Value =
        serde_json::from_str(&lancet(&["fri", "unreferenced", &uri, "--delete"])).unwrap();
    assert_eq!(young["unreferenced"], json!([]), "{young}");
    let listed: Value = serde_json::from_str(&lancet(&[
        "fri",
        "unreferenced",
        &uri,
        "--delete",
        "--older-than",
        "0s",
    ]))
    .unwrap();
    assert_eq!(
        listed["unreferenced"].as_array().unwrap().len(),
        1,
        "{listed}"
    );
    let again: Value = serde_json::from_str(&lancet(&[
        "fri",
        "unreferenced",
        &uri,
        "--older-than",
        "0s",
    ]))
    .unwrap();
    assert_eq!(again["unreferenced"], json!([]));

    // the index has not caught up: nothing to trim; rebuilt over the current fragments, the
    // whole history goes
    let trim: Value = serde_json::from_str(&lancet(&["fri", "trim", &uri])).unwrap();
    assert_eq!(trim["version"], Value::Null, "{trim}");
    lancet(&["index", "build", &uri, "--column", "id"]);
    let trim: Value = serde_json::from_str(&lancet(&["fri", "trim", &uri])).unwrap();
    assert_eq!(trim["transitions_after"], json!(0), "{trim}");
    let v = trim["version"].as_u64().unwrap().to_string();
    let scan = peer(&["filters", &uri, &v, &json_filters]);
    let indexed = peer(&["filters", &uri, &v, &json_filters, "true"]);
    assert_eq!(scan, indexed, "pylance after trimming");
}

// ---------------------------------------------------------------------------------------------
// Fragment trees: a pylance table with its fragments moved into a tree answers every command
// exactly as the same table flat.

/// Copies fixture `name` and publishes version latest+1: the latest version's manifest with
/// its fragments moved into a fragment tree (leaves of two records, an interior level when
/// there are enough leaves, an external root; the last fragments arrive as buffered upserts,
/// one in `mutations_since_root`, and the first fragment gains and loses a file in buffers).
/// Returns the copy, the flat version and the tree version.
async fn treeify(name: &str) -> (PathBuf, u64, u64) {
    use lancet::paths::manifest::{write_manifest, ManifestContent};
    use lancet::proto::table::DataFile;
    use lancet_tree::testing::TreeBuilder;
    use lancet_tree::Action;

    let dir = tempfile::tempdir().unwrap().keep().join(name);
    copy_dir(&fixtures().join(name), &dir);
    let store = DatasetStore::open(dir.to_str().unwrap()).unwrap();
    let ds = Dataset::open_with(store.clone(), None, lancet::Caches::new(Default::default()))
        .await
        .unwrap();
    let fragments = ds.fragments().await.unwrap().to_vec();
    assert!(!fragments.is_empty(), "{name}: no fragments");
    let (records, appended) = fragments.split_at(fragments.len().saturating_sub(2));
    let first = fragments[0].id;
    let extra = DataFile {
        path: "buffered-extra.lance".into(),
        fields: vec![0],
        column_indices: vec![0],
        file_major_version: 2,
        file_minor_version: 0,
        ..Default::default()
    };
    let mut actions: Vec<(u64, Action)> = appended
        .iter()
        .map(|f| (f.id, Action::Upsert(Box::new(f.clone()))))
        .collect();
    actions.push((first, Action::AddDataFile(extra.clone())));
    actions.push((
        first,
        Action::RemoveDataFile {
            path: extra.path.clone(),
        },
    ));
    let leaves = records.len().div_ceil(2);
    let built = TreeBuilder {
        records: records.to_vec(),
        actions,
        leaf_records: 2,
        fanout: 3,
        interior_levels: u32::from(leaves >= 2),
        external_root: true,
        since_root: 1,
        seed: 7,
        ..Default::default()
    }
    .build(&store)
    .await
    .unwrap();
    let flat = ds.version();
    let mut m = ds.storage().manifest().clone();
    m.fragments.clear();
    m.fragment_tree = Some(built.metadata);
    m.reader_feature_flags |= lancet::paths::flags::FRAGMENT_TREE;
    m.writer_feature_flags |= lancet::paths::flags::FRAGMENT_TREE;
    m.version = flat + 1;
    write_manifest(
        &store,
        &ManifestContent {
            indices: ds.storage().indices(),
            unknown_fields: &ds.storage().manifest_file().decoded.unknown_fields,
            scheme: ds.storage().naming_scheme(),
            ..ManifestContent::new(&m)
        },
    )
    .await
    .unwrap();
    (dir, flat, flat + 1)
}

/// `lancet` output as JSON, without what differs between two versions of one table.
fn versionless(args: &[&str]) -> Value {
    let mut v: Value = serde_json::from_str(&lancet(args)).unwrap();
    if let Some(o) = v.as_object_mut() {
        for key in [
            "version",
            "manifest_path",
            "reader_feature_flags",
            "writer_feature_flags",
            // what the commit that made the version did
            "transaction",
            "transaction_error",
        ] {
            o.remove(key);
        }
    }
    v
}

#[tokio::test]
async fn tree_versions_answer_every_command_like_the_flat_table() {
    for name in DATASETS {
        let (dir, flat, tree) = treeify(name).await;
        let uri = dir.to_str().unwrap();
        let (f, t) = (flat.to_string(), tree.to_string());
        let same = |args: &[&str]| {
            let at = |v: &str| {
                let mut a: Vec<&str> = args.to_vec();
                a.extend(["--version", v]);
                versionless(
                    &a.iter()
                        .map(|s| s.to_string())
                        .collect::<Vec<_>>()
                        .iter()
                        .map(String::as_str)
                        .collect::<Vec<_>>(),
                )
            };
            assert_eq!(at(&t), at(&f), "{name}: {args:?}");
        };
        same(&["inspect", uri, "--json"]);
        same(&["rowid", uri, "--json"]);
        same(&["index", "list", uri, "--json"]);
        if name == "stable" || name == "stable_history" {
            same(&["rowid", uri, "--json", "--segments", "--versions"]);
            same(&[
                "rowid", uri, "--json", "--lookup", "0", "1", "3001", "999999",
            ]);
        }
        if name == "btree" {
            for filter in BTREE_FILTERS {
                same(&["index", "search", uri, "--filter", filter, "--json"]);
            }
        }
        if name == "fri" {
            same(&["fri", "show", uri, "--json"]);
            let addrs = "0\n1\n4294967296\n8589934599";
            let translate =
                |v: &str| lancet_stdin(&["fri", "translate", uri, "--version", v], addrs);
            assert_eq!(translate(&t), translate(&f), "{name}: fri translate");
        }
        // the tree version verifies, pylance's data files included (each opens, holds
        // physical_rows rows and the field ids its DataFile lists); tree show sees the shape
        // the builder wrote
        let verified: Value =
            serde_json::from_str(&lancet(&["verify", uri, "--data", "--json"])).unwrap();
        assert_eq!(verified["valid"], true, "{name}: {verified}");
        let shown: Value = serde_json::from_str(&lancet(&["tree", "show", uri, "--json"])).unwrap();
        assert_eq!(shown["root"], "external", "{name}: {shown}");
        assert_eq!(shown["mutations_since_root"], 1, "{name}: {shown}");
        // writers work on the tree version: the result is still a tree and verifies
        if name == "fri" {
            let out = Command::new(env!("CARGO_BIN_EXE_lancet"))
                .args(["fri", "trim", uri])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{name}: {err}");
            let verified: Value =
                serde_json::from_str(&lancet(&["verify", uri, "--json"])).unwrap();
            assert_eq!(verified["valid"], true, "{name} after trim: {verified}");
        }
        // pylance 14.0.2 refuses the tree version (flag 4096) and still opens the flat one
        let peer_out = Command::new(python())
            .arg("-c")
            .arg(format!(
                "import lance\nprint(lance.dataset({uri:?}, version={flat}).count_rows())\ntry:\n    lance.dataset({uri:?}, version={tree}).count_rows()\n    print('opened')\nexcept Exception as e:\n    print('refused')"
            ))
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&peer_out.stdout);
        assert!(said.trim_end().ends_with("refused"), "{name}: {said}");
    }
}

/// `lancet tree convert` then `lancet tree flatten` on every pylance fixture: the tree version
/// holds exactly the flat fragments, Lance 14 refuses it, and the flattened version lists
/// byte-identical fragments that pylance reads as the original (compared through `repr`, so
/// NaN equals NaN).
#[test]
fn convert_then_flatten_round_trips_pylance_tables() {
    for name in DATASETS {
        let dir = tempfile::tempdir().unwrap().keep().join(name);
        copy_dir(&fixtures().join(name), &dir);
        let uri = dir.to_str().unwrap();
        let flat: Value = serde_json::from_str(&lancet(&["inspect", uri, "--json"])).unwrap();
        let n = flat["version"].as_u64().unwrap();
        lancet(&["tree", "convert", uri, "--leaf-records", "2"]);
        let tree: Value = serde_json::from_str(&lancet(&["inspect", uri, "--json"])).unwrap();
        assert_eq!(tree["version"], n + 1);
        assert_eq!(tree["fragments"], flat["fragments"], "{name}: converted");
        assert_eq!(tree["indices"], flat["indices"], "{name}: indices carried");
        assert!(has_flag(&tree["reader_feature_flags"], "fragment_tree"));
        assert!(has_flag(&tree["writer_feature_flags"], "fragment_tree"));
        let verified: Value = serde_json::from_str(&lancet(&["verify", uri, "--json"])).unwrap();
        assert_eq!(verified["valid"], true, "{name}: {verified}");
        lancet(&["tree", "flatten", uri]);
        let back: Value = serde_json::from_str(&lancet(&["inspect", uri, "--json"])).unwrap();
        assert_eq!(back["version"], n + 2);
        assert_eq!(
            back["fragments"], flat["fragments"],
            "{name}: byte-identical fragments"
        );
        assert!(!has_flag(&back["reader_feature_flags"], "fragment_tree"));
        let script = format!(
            "import lance\nprint(repr(lance.dataset({uri:?}, version={n}).to_table().to_pydict()) == repr(lance.dataset({uri:?}, version={}).to_table().to_pydict()))\ntry:\n    lance.dataset({uri:?}, version={}).count_rows()\n    print('opened')\nexcept Exception:\n    print('refused')",
            n + 2,
            n + 1
        );
        let out = Command::new(python())
            .arg("-c")
            .arg(script)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            said.split_whitespace().collect::<Vec<_>>(),
            ["True", "refused"],
            "{name}: {said} {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `lancet restore` publishes an earlier version's content as the next version: pylance
/// reads the same rows as that version and the new version's transaction as a `Restore`;
/// `max_fragment_id` is not lowered, and a later pylance append still lands on top.
#[test]
fn restore_is_read_by_pylance_as_a_restore() {
    for name in DATASETS {
        let dir = tempfile::tempdir().unwrap().keep().join(name);
        copy_dir(&fixtures().join(name), &dir);
        let uri = dir.to_str().unwrap();
        let latest: Value = serde_json::from_str(&lancet(&["inspect", uri, "--json"])).unwrap();
        let n = latest["version"].as_u64().unwrap();
        let first = expected_versions(name)[0];
        let said = lancet(&["restore", uri, "--version", &first.to_string()]);
        assert!(
            said.contains(&format!("version {}", n + 1)),
            "{name}: {said}"
        );
        let restored = peer(&["scan", uri]);
        let old = peer(&["scan", uri, &first.to_string()]);
        assert_eq!(restored["version"], json!(n + 1), "{name}");
        assert_eq!(restored["rows"], old["rows"], "{name}: restored rows");
        assert_eq!(
            restored["indices"], old["indices"],
            "{name}: restored indices"
        );
        let seen = peer(&["transactions", uri]);
        assert_eq!(
            seen["transactions"][0]["operation"], "Restore",
            "{name}: {seen}"
        );
        let now: Value = serde_json::from_str(&lancet(&["inspect", uri, "--json"])).unwrap();
        assert!(
            now["max_fragment_id"].as_u64() >= latest["max_fragment_id"].as_u64(),
            "{name}: {now}"
        );
        let verified: Value = serde_json::from_str(&lancet(&["verify", uri, "--json"])).unwrap();
        assert_eq!(verified["valid"], true, "{name}: {verified}");
    }
}

/// Issue 11's scenario and its reverse: a pylance append prepared before a lancet index build
/// lands on top of it (Lance reads lancet's CreateIndex transaction and rebases), keeping the
/// index; a lancet index build prepared before a pylance delete rebases over it.
#[tokio::test]
async fn lancet_and_pylance_commits_rebase_over_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("basic");
    copy_dir(&fixtures().join("basic"), &uri);
    let uri = uri.to_str().unwrap().to_string();
    let read = Dataset::open(&uri).await.unwrap();
    let prepared_on = read.version();

    // lancet commits an index build; a pylance append prepared on the older version follows
    let indexed = read.build_btree("value", 64).await.unwrap().dataset;
    assert_eq!(indexed.version(), prepared_on + 1);
    let txn = indexed.storage().transaction().await.unwrap().unwrap();
    assert_eq!(txn.operation_name(), "CreateIndex");
    assert_eq!(txn.transaction.read_version, prepared_on);
    let appended = peer(&["append-at", &uri, &prepared_on.to_string(), "100000", "500"]);
    assert_eq!(appended["version"], json!(prepared_on + 2));
    let seen = peer(&["transactions", &uri]);
    let ops: Vec<&str> = seen["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .take(2)
        .map(|t| t["operation"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["Append", "CreateIndex"], "{seen}");
    let names: Vec<&str> = seen["indices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"value_idx"),
        "the index survives the append: {seen}"
    );

    // the reverse: lancet prepares on the latest, pylance deletes first, lancet rebases
    let before = Dataset::open(&uri).await.unwrap();
    peer(&["delete", &uri, "id >= 100000 AND id < 100010"]);
    let rebased = before.build_btree("name", 64).await.unwrap().dataset;
    assert_eq!(rebased.version(), before.version() + 2);
    rebased.verify().await.unwrap();
    let scan = peer(&["scan", &uri]);
    assert_eq!(scan["version"], json!(rebased.version()));
    let deleted = Dataset::open(&uri).await.unwrap();
    assert_eq!(deleted.num_rows(), before.num_rows().map(|n| n - 10));
    let seen = peer(&["transactions", &uri]);
    let first = &seen["transactions"][0];
    assert_eq!(first["operation"], json!("CreateIndex"), "{seen}");
    assert_eq!(first["read_version"], json!(before.version()), "{seen}");
    for name in ["value_idx", "name_idx", "id_idx"] {
        assert!(
            seen["indices"].as_array().unwrap().contains(&json!(name)),
            "{name}: {seen}"
        );
    }
    // and lancet reads pylance's transactions
    let deletion = rebased.checkout(before.version() + 1).await.unwrap();
    assert_eq!(
        deletion
            .storage()
            .transaction()
            .await
            .unwrap()
            .unwrap()
            .operation_name(),
        "Delete"
    );
}

/// What a commit path publishes, independent of fresh uuids: fragments, and each index's
/// name, fields and fragment bitmap.
async fn signature(ds: &Dataset) -> String {
    let indices: Vec<(String, Vec<i32>, Vec<u8>)> = ds
        .storage()
        .indices()
        .iter()
        .map(|i| (i.name.clone(), i.fields.clone(), i.fragment_bitmap.clone()))
        .collect();
    format!("{:?} {:?}", ds.fragments().await.unwrap(), indices)
}

/// Runs `op` on a copy of `template` opened through a store that fails the k-th request of
/// every kind, before and after performing it, for every k one clean run makes: the table
/// then holds exactly the old version or the one new version a clean run publishes (which
/// verifies), and an `Ok` always means that version.
async fn fault_matrix<F, Fut>(template: &Path, op: F)
where
    F: Fn(Dataset) -> Fut,
    Fut: std::future::Future<Output = lancet::Result<lancet::Committed>>,
{
    use lancet::paths::fault::{FaultyStore, Mode, Request};
    use std::sync::Arc;
    let open = |dir: &Path, request: Request, k: u64, mode: Mode| {
        let dir = dir.to_path_buf();
        async move {
            let clean = DatasetStore::open(dir.to_str().unwrap()).unwrap();
            let store = Arc::new(FaultyStore::new(
                clean.object_store().clone(),
                request,
                k,
                mode,
            ));
            // not file://: lance-io writes local files itself, around the object store
            let uri = format!("memory://faulty{}", dir.display());
            let ds = Dataset::open_with(
                DatasetStore::from_store(store.clone(), clean.path(""), &uri),
                None,
                lancet::Caches::new(Default::default()),
            )
            .await
            .unwrap();
            store.arm();
            (ds, store)
        }
    };
    let clean_dir = tempfile::tempdir().unwrap();
    copy_dir(template, clean_dir.path());
    let base = Dataset::open(clean_dir.path().to_str().unwrap())
        .await
        .unwrap();
    let expected = signature(&op(base.clone()).await.unwrap().dataset).await;
    let orphans_only = lancet::CleanupPolicy {
        retain_versions: Some(u64::MAX),
        unverified_older_than: std::time::Duration::ZERO,
        ..Default::default()
    };
    // what a cleanup leaves of the template (objects written for the operation but not yet
    // committed, like a rewrite's new data files, are orphans there)
    let baseline_dir = tempfile::tempdir().unwrap();
    copy_dir(template, baseline_dir.path());
    tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    for dir in [baseline_dir.path(), clean_dir.path()] {
        Dataset::open(dir.to_str().unwrap())
            .await
            .unwrap()
            .cleanup(&orphans_only)
            .await
            .unwrap();
    }
    let template_files = file_set(baseline_dir.path());
    // what a clean run adds, per top-level directory
    let added = |dir: &Path| {
        let mut out = std::collections::BTreeMap::<String, usize>::new();
        for f in file_set(dir).difference(&template_files) {
            *out.entry(f.split('/').next().unwrap().to_string())
                .or_default() += 1;
        }
        out
    };
    let clean_added = added(clean_dir.path());
    let mut cases = 0;
    for request in [
        Request::Put,
        Request::PutIfAbsent,
        Request::Get,
        Request::List,
        Request::Delete,
    ] {
        let count_dir = tempfile::tempdir().unwrap();
        copy_dir(template, count_dir.path());
        let (ds, store) = open(count_dir.path(), request, 0, Mode::Before).await;
        op(ds).await.unwrap();
        for k in 1..=store.matching() {
            for mode in [Mode::Before, Mode::After] {
                cases += 1;
                let dir = tempfile::tempdir().unwrap();
                copy_dir(template, dir.path());
                let (ds, _) = open(dir.path(), request, k, mode).await;
                let result = op(ds).await;
                let what = format!("{request:?} #{k} {mode:?}: {:?}", result.as_ref().err());
                let latest = Dataset::open(dir.path().to_str().unwrap()).await.unwrap();
                let landed = match latest.version() - base.version() {
                    0 => {
                        assert!(result.is_err(), "{what}");
                        false
                    }
                    1 => {
                        latest
                            .verify()
                            .await
                            .unwrap_or_else(|e| panic!("{what}: {e}"));
                        assert_eq!(signature(&latest).await, expected, "{what}");
                        true
                    }
                    n => panic!("{what}: {n} versions published"),
                };
                if let Ok(ds) = result {
                    assert_eq!(ds.version(), base.version() + 1, "{what}");
                }
                // cleanup removes exactly what the attempt left (issue 13): what it leaves
                // of the template stays, plus what a clean run adds when the version landed
                tokio::time::sleep(std::time::Duration::from_millis(3)).await;
                latest.cleanup(&orphans_only).await.unwrap();
                let want = if landed {
                    clean_added.clone()
                } else {
                    Default::default()
                };
                assert_eq!(added(dir.path()), want, "{what}");
                assert!(template_files.is_subset(&file_set(dir.path())), "{what}");
                lancet(&["verify", dir.path().to_str().unwrap()]);
            }
        }
    }
    assert!(cases > 0);
}

#[tokio::test]
async fn index_build_fri_publish_and_rewrite_survive_every_injected_fault() {
    // index build on a pylance table
    fault_matrix(&fixtures().join("basic"), |ds| async move {
        ds.build_btree("value", 64).await
    })
    .await;
    // FRI publish: the legacy history re-published as a tagged entry
    fault_matrix(&fixtures().join("fri"), |ds| async move {
        ds.storage().upgrade_fri().await
    })
    .await;
    // rewrite: fragments pylance wrote, committed with their stable-partition map
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("fri");
    copy_dir(&fixtures().join("fri"), &template);
    let uri = template.to_str().unwrap().to_string();
    let ds = Dataset::open(&uri).await.unwrap();
    let sources: Vec<u32> = ds
        .fragments()
        .await
        .unwrap()
        .iter()
        .map(|f| f.id as u32)
        .collect();
    let written = peer(&[
        "rewrite",
        &uri,
        &json!(sources).to_string(),
        "partition",
        "2",
    ]);
    let labels = fragments::labels_of(&written);
    let destinations = fragments_of(&written);
    fault_matrix(&template, |ds| {
        let (sources, destinations, labels) =
            (sources.clone(), destinations.clone(), labels.clone());
        async move {
            ds.storage()
                .commit_rewrite(
                    &sources,
                    destinations,
                    lancet::RewriteMapping::StablePartition { labels: &labels },
                )
                .await
        }
    })
    .await;
}

/// Queries every version of the mixed race answers in both (on indexed and plain columns).
const RACE_QUERIES: [&str; 3] = [
    "id < 50",
    "value >= 100.0 AND value < 200.0",
    "name = 'name-7' OR id > 1000",
];

/// Issue 11's mixed race: a pylance writer appends, deletes and compacts while lancet builds
/// indexes on the same table, each retrying what conflicts. Every version that lands opens in
/// both, verifies in lancet, and counts the same rows in both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pylance_and_lancet_writers_race_on_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("basic");
    copy_dir(&fixtures().join("basic"), &table);
    let uri = table.to_str().unwrap().to_string();
    let start = Dataset::open(&uri).await.unwrap().version();
    let mut churn = std::process::Command::new(python())
        .arg(interop_dir().join("peer.py"))
        .args(["churn", &uri, "12"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // wait for pylance's first commit, then build indexes for as long as it writes
    while Dataset::open(&uri).await.unwrap().version() == start {
        assert!(
            churn.try_wait().unwrap().is_none(),
            "the pylance writer stopped early"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (mut built, mut conflicts, mut rewrites) = (0u64, 0u64, 0u64);
    let mut round = 0;
    while churn.try_wait().unwrap().is_none() && round < 200 {
        round += 1;
        let column = if round % 2 == 0 { "value" } else { "name" };
        let ds = Dataset::open(&uri).await.unwrap();
        if round % 4 == 3 {
            // a rewrite of the two first fragments, prepared on this version
            let sources: Vec<u32> = ds.fragments().await.unwrap()[..2]
                .iter()
                .map(|f| f.id as u32)
                .collect();
            let version = ds.version().to_string();
            let written = peer(&[
                "rewrite",
                &uri,
                &json!(sources).to_string(),
                "ordered",
                "100000",
                &version,
            ]);
            match ds
                .storage()
                .commit_rewrite(
                    &sources,
                    fragments_of(&written),
                    lancet::RewriteMapping::OrderedCompaction,
                )
                .await
            {
                Ok(_) => rewrites += 1,
                Err(lancet::Error::CommitConflict {
                    retryable, reason, ..
                }) => {
                    assert!(retryable, "{reason}");
                    conflicts += 1;
                }
                Err(e) => panic!("{e}"),
            }
            continue;
        }
        match ds.build_btree(column, 64).await {
            Ok(_) => built += 1,
            Err(lancet::Error::CommitConflict {
                retryable, reason, ..
            }) => {
                assert!(retryable, "{reason}");
                conflicts += 1;
            }
            Err(e) => panic!("{e}"),
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let out = churn.wait_with_output().unwrap();
    // alone on the table, a build always lands
    while built < 2 {
        Dataset::open(&uri)
            .await
            .unwrap()
            .build_btree("value", 64)
            .await
            .unwrap();
        built += 1;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let churned: Value = serde_json::from_slice(&out.stdout).unwrap();
    // a compaction may lose every retry to index builds covering its fragments (Lance's
    // CreateIndex × Rewrite rule); most commits land
    let landed_n = churned["landed"].as_array().unwrap().len();
    assert!(landed_n >= 8, "{churned}");
    assert!(
        built > 0,
        "no lancet index build landed ({conflicts} conflicts)"
    );
    // the writers interleaved: a lancet index build landed between two pylance commits
    let last = Dataset::open(&uri).await.unwrap();
    let mut ops = Vec::new();
    for v in start + 1..=last.version() {
        let t = last
            .checkout(v)
            .await
            .unwrap()
            .storage()
            .transaction()
            .await
            .unwrap();
        // pylance's compaction may also republish the Fragment Reuse Index lancet's rewrites
        // created, as a CreateIndex of that system index alone
        let fri_only = t.as_ref().is_some_and(|t| {
            matches!(&t.transaction.operation,
                Some(lancet::proto::table::transaction::Operation::CreateIndex(ci))
                    if ci.new_indices.iter().all(|i| i.name == "__lance_frag_reuse"))
        });
        let name = t.map(|t| t.operation_name()).unwrap_or_default();
        ops.push(if fri_only {
            format!("{name}(FRI)")
        } else {
            name
        });
    }
    let first_lancet = ops.iter().position(|o| o == "CreateIndex");
    let last_pylance = ops
        .iter()
        .rposition(|o| o != "CreateIndex" && o != "Rewrite");
    assert!(
        first_lancet < last_pylance,
        "the writers did not interleave: {ops:?}"
    );
    // every commit that reported success is one version, and nothing else landed
    let count = |name: &str| ops.iter().filter(|o| *o == name).count() as u64;
    let landed = |kind: &str| {
        churned["landed"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| *k == kind)
            .count() as u64
    };
    // lancet's rewrites are Rewrite versions too, besides pylance's compactions; FRI
    // publication rides on them
    assert_eq!(count("CreateIndex"), built, "{ops:?}");
    assert_eq!(
        count("Rewrite"),
        landed("compact") + rewrites,
        "{ops:?} {churned} lancet rewrites {rewrites}"
    );
    assert_eq!(count("Append"), landed("append"), "{ops:?}");
    assert_eq!(count("Delete"), landed("delete"), "{ops:?}");
    let seen = peer(&["versions", &uri]);
    let queries = serde_json::to_string(&RACE_QUERIES).unwrap();
    let latest = Dataset::open(&uri).await.unwrap();
    for v in start..=latest.version() {
        let ds = latest.checkout(v).await.unwrap();
        ds.verify()
            .await
            .unwrap_or_else(|e| panic!("version {v}: {e}"));
        let theirs = &seen[v.to_string()];
        assert_eq!(ds.num_rows(), theirs["rows"].as_u64(), "version {v}");
        // and answers the same queries: lancet's search (indexes, FRI, scans) as pylance's scan
        let want = peer(&["filters", &uri, &v.to_string(), &queries]);
        for (q, w) in RACE_QUERIES.iter().zip(want.as_array().unwrap()) {
            let got = ds.search(&lancet::Filter::parse(q).unwrap()).await.unwrap();
            filters::same_rows(&got.row_ids, &w["row_ids"], &format!("version {v}: {q}"));
        }
        // pylance lists every index lancet reads, except that it may hide one whose fragments
        // were all rewritten away (whether it does depends on the reuse history)
        let frags: Vec<u64> = ds.fragments().await.unwrap().iter().map(|f| f.id).collect();
        let listed: Vec<String> = theirs["indices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect();
        for i in ds.storage().indices() {
            let covers_now = match ds.storage().index_fragments(i).unwrap() {
                Some(b) => b.iter().any(|f| frags.contains(&u64::from(f))),
                None => true,
            };
            assert!(
                listed.contains(&i.name) || !covers_now,
                "version {v}: pylance hides {} (fragments {frags:?}, pylance {listed:?})",
                i.name
            );
        }
        for name in &listed {
            assert!(
                ds.storage().indices().iter().any(|i| &i.name == name),
                "version {v}: pylance lists {name}, lancet has no such index"
            );
        }
    }
}

/// Every file under `dir`, relative.
fn file_set(dir: &Path) -> std::collections::BTreeSet<String> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                walk(root, &entry.path(), out);
            } else {
                let rel = entry.path().strip_prefix(root).unwrap().to_path_buf();
                out.insert(rel.to_str().unwrap().to_string());
            }
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn lancet_cleanup_removes_exactly_what_pylance_cleanup_removes() {
    // (pylance's arguments, lancet's): no age (pylance reads timedelta(0) as "no filter"),
    // a count, and an age nothing is old enough for; tagged versions kept by both
    let policies: [(&str, &[&str]); 4] = [
        (r#"{"older_than_s": 0}"#, &["--older-than", "0s"]),
        (r#"{"retain_versions": 3}"#, &["--retain-versions", "3"]),
        (
            r#"{"older_than_s": 0, "retain_versions": 5}"#,
            &["--older-than", "0s", "--retain-versions", "5"],
        ),
        (r#"{"older_than_s": 3600}"#, &["--older-than", "1h"]),
    ];
    for stable in ["false", "true"] {
        let dir = tempfile::tempdir().unwrap();
        let history = dir.path().join("history");
        let built = peer(&["cleanup-history", history.to_str().unwrap(), stable]);
        if stable == "false" {
            assert!(
                built["indices"].to_string().contains("__lance_frag_reuse"),
                "{built}"
            );
        }
        let before = peer(&["versions", history.to_str().unwrap()]);
        for (py_args, lancet_args) in policies {
            let what = format!("stable={stable} {py_args}");
            let (a, b) = (dir.path().join("by_pylance"), dir.path().join("by_lancet"));
            let _ = std::fs::remove_dir_all(&a);
            let _ = std::fs::remove_dir_all(&b);
            copy_dir(&history, &a);
            copy_dir(&history, &b);
            peer(&["cleanup", a.to_str().unwrap(), py_args]);
            let mut args = vec!["cleanup", b.to_str().unwrap(), "--json"];
            args.extend_from_slice(lancet_args);
            let report: Value = serde_json::from_str(&lancet(&args)).unwrap();
            assert_eq!(file_set(&a), file_set(&b), "{what}");
            // pylance opens every version lancet kept, and reads it as before the cleanup
            let after = peer(&["versions", b.to_str().unwrap()]);
            let kept: Vec<String> = report["kept_versions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.to_string())
                .collect();
            assert_eq!(
                after
                    .as_object()
                    .unwrap()
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .len(),
                kept.len(),
                "{what}: {after}"
            );
            for v in &kept {
                assert_eq!(after[v], before[v], "{what}: version {v}");
            }
            // and every kept version verifies in lancet
            for v in &kept {
                lancet(&["verify", b.to_str().unwrap(), "--version", v]);
            }
        }
    }
}

#[test]
fn pylance_reads_lancet_clones_and_lancet_reads_pylance_clones() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("btree");
    copy_dir(&fixtures().join("btree"), &src);
    let src_files = file_set(&src);
    let versions = expected_versions("btree");
    let v = versions.last().unwrap().to_string();
    let filters = serde_json::to_string(&["i < 0", "s = 'abc'", "f IS NULL"]).unwrap();
    let want_scan = peer(&["scan", src.to_str().unwrap(), &v]);
    let want_filters = peer(&["filters", src.to_str().unwrap(), &v, &filters]);

    // lancet clones, pylance opens and queries the clone (through its indexes too)
    let by_lancet = dir.path().join("lancet_clone");
    lancet(&[
        "clone",
        src.to_str().unwrap(),
        by_lancet.to_str().unwrap(),
        "--version",
        &v,
    ]);
    let c = by_lancet.to_str().unwrap();
    assert_eq!(peer(&["scan", c, &v]), want_scan);
    assert_eq!(peer(&["filters", c, &v, &filters]), want_filters);
    assert_eq!(peer(&["filters", c, &v, &filters, "true"]), want_filters);
    let names: Vec<String> = file_set(&by_lancet)
        .iter()
        .map(|p| p.split('/').next().unwrap().to_string())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(
        names,
        ["_transactions", "_versions"],
        "a shallow clone copies nothing"
    );

    // pylance clones, lancet reads the clone: verify, and index search as on the source
    let by_pylance = dir.path().join("pylance_clone");
    peer(&[
        "clone",
        src.to_str().unwrap(),
        by_pylance.to_str().unwrap(),
        &v,
    ]);
    let p = by_pylance.to_str().unwrap();
    lancet(&["verify", p]);
    for f in ["i < 0", "s = 'abc'", "f IS NULL"] {
        let got = lancet_search(p, &v, f);
        let want = lancet_search(src.to_str().unwrap(), &v, f);
        assert_eq!(got["row_ids"], want["row_ids"], "{f}");
        assert_eq!(
            got["scanned_fragments"], 0,
            "{f}: answered through the source's index"
        );
    }
    // cleaning either clone never touches the source
    for clone in [c, p] {
        lancet(&[
            "cleanup",
            clone,
            "--older-than",
            "0s",
            "--delete-unverified",
        ]);
    }
    assert_eq!(file_set(&src), src_files);
    assert_eq!(peer(&["scan", c, &v]), want_scan);
}

/// Branches (Lance 14 writes them under `tree/{name}/`, forked from a main version whose
/// files they read): a cleanup of main keeps every file a branch version names and the
/// version it forked from, and pylance still reads the branch. (pylance's own cleanup decides
/// this by timestamps and listing cutoffs that depend on sub-second timing, so the two are not
/// compared file by file here.)
#[test]
fn lancet_cleanup_keeps_what_a_branch_uses() {
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("history");
    peer(&["branch-history", history.to_str().unwrap()]);
    let b = dir.path().join("by_lancet");
    copy_dir(&history, &b);
    let report: Value = serde_json::from_str(&lancet(&[
        "cleanup",
        b.to_str().unwrap(),
        "--older-than",
        "0s",
        "--delete-unverified",
        "--json",
    ]))
    .unwrap();
    assert_eq!(report["kept_versions"], json!([2, 5]), "{report}");
    assert_eq!(report["removed_versions"], json!([1, 3, 4]), "{report}");
    let files = file_set(&b);
    assert!(
        file_set(&history)
            .iter()
            .filter(|f| f.starts_with("tree/"))
            .all(|f| files.contains(f)),
        "the branch's own files are never cleaned"
    );
    assert_eq!(
        peer(&["branch-rows", b.to_str().unwrap(), "dev"]),
        peer(&["branch-rows", history.to_str().unwrap(), "dev"])
    );
    let versions = peer(&["versions", b.to_str().unwrap()]);
    assert_eq!(versions.as_object().unwrap().len(), 2, "{versions}");
    lancet(&["verify", b.to_str().unwrap(), "--version", "2"]);
    // a branch is cleaned through its main dataset, which holds its tags
    let dev = b.join("tree/dev");
    let refused = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(["cleanup", dev.to_str().unwrap(), "--older-than", "0s"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("clean the main dataset"));
    // a clone of the branch is a main line of its own, which pylance reads
    let clone = dir.path().join("clone_of_dev");
    lancet(&["clone", dev.to_str().unwrap(), clone.to_str().unwrap()]);
    let rows = peer(&["scan", clone.to_str().unwrap()]);
    assert_eq!(
        rows["count"],
        peer(&["branch-rows", history.to_str().unwrap(), "dev"])["rows"]
    );
    lancet(&["cleanup", clone.to_str().unwrap(), "--older-than", "0s"]);
}

/// Issue 19: Lance operations committed through `Dataset::commit` on pylance tables (with and
/// without stable row ids): fragments pylance wrote are appended (numbered, given row ids and
/// version sequences), rows are deleted with the deletion vectors merged, and an update moves a
/// row keeping its `_rowid` and creation version; pylance reads each version's rows, row ids
/// and transaction as its own.
#[tokio::test]
async fn operations_committed_by_lancet_are_read_by_pylance() {
    use lancet::proto::table::data_fragment::RowIdSequence as PbRowIds;
    use lancet::proto::table::transaction::{Append, Overwrite, ReserveFragments, Update};
    use lancet::Operation;
    for name in ["basic", "stable"] {
        let dir = tempfile::tempdir().unwrap().keep().join(name);
        copy_dir(&fixtures().join(name), &dir);
        let uri = dir.to_str().unwrap().to_string();
        let ds = Dataset::open(&uri).await.unwrap();
        let rows_before = peer(&["scan", &uri])["count"].as_u64().unwrap();
        let (max_before, next_before) = (
            ds.storage().manifest().max_fragment_id,
            ds.storage().manifest().next_row_id,
        );

        // Append: 1500 rows in two fragments pylance wrote, at id 0 as Lance leaves them
        let written = peer(&["write-fragments", &uri, "500000", "1500"]);
        let fragments = fragments_of(&written);
        let appended = ds
            .commit(Operation::Append(Append { fragments }))
            .await
            .unwrap()
            .dataset;
        assert_eq!(appended.version(), ds.version() + 1);
        let new: Vec<u64> = appended
            .fragments()
            .await
            .unwrap()
            .iter()
            .map(|f| f.id)
            .filter(|id| Some(*id as u32) > max_before)
            .collect();
        let first_new = max_before.map_or(0, |m| u64::from(m) + 1);
        assert_eq!(new, vec![first_new, first_new + 1], "{name}");
        let scan = peer(&["scan", &uri]);
        assert_eq!(scan["count"], json!(rows_before + 1500), "{name}");
        let seen = peer(&["transactions", &uri]);
        assert_eq!(seen["transactions"][0]["operation"], "Append", "{name}");
        let stable = appended.storage().has_stable_row_ids();
        assert_eq!(stable, name == "stable");
        if stable {
            assert_eq!(
                appended.storage().manifest().next_row_id,
                next_before + 1500
            );
            let ids = peer(&["rowids", &uri, &appended.version().to_string()]);
            let new_ids: Vec<u64> = ids["row_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .filter(|id| *id >= next_before)
                .collect();
            assert_eq!(
                new_ids,
                (next_before..next_before + 1500).collect::<Vec<_>>()
            );
            let created_now = ids["created_at"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|v| v.as_u64() == Some(appended.version()))
                .count();
            assert_eq!(created_now, 1500, "{name}: {ids}");
        }

        // Delete: two rows of the first new fragment, then one more merged with them
        let f = first_new;
        let deleted = appended
            .storage()
            .delete_rows(&[(f, [0u32, 1].into_iter().collect())], "id < 500002")
            .await
            .unwrap()
            .dataset;
        let deleted = deleted
            .storage()
            .delete_rows(&[(f, [2u32].into_iter().collect())], "id = 500002")
            .await
            .unwrap()
            .dataset;
        let record = deleted.storage().fragment(f).await.unwrap().unwrap();
        assert_eq!(record.deletion_file.unwrap().num_deleted_rows, 3);
        assert_eq!(peer(&["scan", &uri])["count"], json!(rows_before + 1497));
        let seen = peer(&["transactions", &uri]);
        assert_eq!(seen["transactions"][0]["operation"], "Delete", "{name}");

        // Update: the row at offset 5 of fragment f moves to a new fragment pylance wrote
        let moved = peer(&["write-fragments", &uri, "900000", "1"]);
        let mut new_fragments = fragments_of(&moved);
        let old_id = deleted
            .storage()
            .row_id_sequence(&record_of(&deleted, f).await)
            .unwrap()
            .map(|s| s.get(5).unwrap());
        if let Some(id) = old_id {
            new_fragments[0].row_id_sequence = Some(PbRowIds::InlineRowIds(
                lancet::rowid::RowIdSequence::from_values(&[id]).encode(),
            ));
        }
        let tombstone = deleted
            .storage()
            .delete_operation(&[(f, [5u32].into_iter().collect())], "")
            .await
            .unwrap();
        let updated = deleted
            .commit(Operation::Update(Update {
                removed_fragment_ids: tombstone.deleted_fragment_ids,
                updated_fragments: tombstone.updated_fragments,
                new_fragments,
                ..Default::default()
            }))
            .await
            .unwrap()
            .dataset;
        assert_eq!(peer(&["scan", &uri])["count"], json!(rows_before + 1497));
        let seen = peer(&["transactions", &uri]);
        assert_eq!(seen["transactions"][0]["operation"], "Update", "{name}");
        if let Some(id) = old_id {
            let ids = peer(&["rowids", &uri, &updated.version().to_string()]);
            let at = ids["row_ids"]
                .as_array()
                .unwrap()
                .iter()
                .position(|v| v.as_u64() == Some(id))
                .expect("the moved row keeps its id");
            assert_eq!(ids["created_at"][at], json!(appended.version()), "{ids}");
            assert_eq!(
                ids["last_updated_at"][at],
                json!(updated.version()),
                "{ids}"
            );
        }
        let verified: Value =
            serde_json::from_str(&lancet(&["verify", &uri, "--data", "--json"])).unwrap();
        assert_eq!(verified["valid"], true, "{name}: {verified}");

        // ReserveFragments: the next fragment pylance appends takes an id past the reserved
        let max = updated.storage().manifest().max_fragment_id.unwrap();
        let reserved = updated
            .commit(Operation::ReserveFragments(ReserveFragments {
                num_fragments: 3,
            }))
            .await
            .unwrap()
            .dataset;
        assert_eq!(reserved.storage().manifest().max_fragment_id, Some(max + 3));
        // pylance's Python binding has no class for it: it reads the transaction as its base
        let seen = peer(&["transactions", &uri]);
        assert_eq!(
            seen["transactions"][0]["operation"], "BaseOperation",
            "{name}"
        );
        let txn = reserved.storage().transaction().await.unwrap().unwrap();
        assert_eq!(txn.operation_name(), "ReserveFragments");
        let v = reserved.version().to_string();
        peer(&["append-at", &uri, &v, "700000", "10"]);
        let after = Dataset::open(&uri).await.unwrap();
        let last = after.fragments().await.unwrap().last().unwrap().id;
        assert!(last > u64::from(max + 3), "{name}: pylance took {last}");

        // Overwrite: fragments and indices replaced, ids and row ids never reused
        let written = peer(&["write-fragments", &uri, "800000", "100"]);
        let next_row_id = after.storage().manifest().next_row_id;
        let over = after
            .commit(Operation::Overwrite(Overwrite {
                fragments: fragments_of(&written),
                ..Default::default()
            }))
            .await
            .unwrap()
            .dataset;
        let scan = peer(&["scan", &uri]);
        assert_eq!(scan["count"], json!(100), "{name}");
        assert_eq!(scan["indices"], json!([]), "{name}");
        let seen = peer(&["transactions", &uri]);
        assert_eq!(seen["transactions"][0]["operation"], "Overwrite", "{name}");
        let ids: Vec<u64> = over
            .fragments()
            .await
            .unwrap()
            .iter()
            .map(|f| f.id)
            .collect();
        assert_eq!(ids, vec![last + 1], "{name}");
        if stable {
            let ids = peer(&["rowids", &uri, &over.version().to_string()]);
            assert_eq!(ids["row_ids"][0], json!(next_row_id), "{name}: {ids}");
        }

        // UpdateBases: a new base path pylance keeps reading through; a taken id is refused
        let extra = dir.parent().unwrap().join(format!("{name}-extra"));
        std::fs::create_dir_all(&extra).unwrap();
        let base = lancet::proto::table::BasePath {
            id: 7,
            name: Some("extra".into()),
            is_dataset_root: false,
            path: extra.to_str().unwrap().to_string(),
        };
        let op = |b: &lancet::proto::table::BasePath| {
            Operation::UpdateBases(lancet::proto::table::transaction::UpdateBases {
                new_bases: vec![b.clone()],
            })
        };
        let based = over.commit(op(&base)).await.unwrap().dataset;
        assert_eq!(based.storage().manifest().base_paths, vec![base.clone()]);
        assert_eq!(peer(&["scan", &uri])["count"], json!(100), "{name}");
        let err = based.commit(op(&base)).await.unwrap_err();
        assert!(err.to_string().contains("base id 7 is taken"), "{err}");
    }
}

async fn record_of(ds: &Dataset, id: u64) -> lancet::proto::table::DataFragment {
    ds.storage().fragment(id).await.unwrap().unwrap()
}

/// Issue 19: a column added to a pylance table through `Operation::Merge` (a data file per
/// fragment holding the new field, the schema extended) and one fragment's file of it
/// replaced through `Operation::DataReplacement`: pylance reads the new column's values.
#[tokio::test]
async fn merge_and_data_replacement_committed_by_lancet_are_read_by_pylance() {
    use lancet::proto::table::transaction::{DataReplacement, DataReplacementGroup, Merge};
    use lancet::Operation;
    let dir = tempfile::tempdir().unwrap().keep().join("basic");
    copy_dir(&fixtures().join("basic"), &dir);
    let uri = dir.to_str().unwrap().to_string();
    let ds = Dataset::open(&uri).await.unwrap();
    let store = ds.storage().store().clone();
    let fs = ds.storage().file_store().clone();
    let next_field = ds
        .storage()
        .manifest()
        .fields
        .iter()
        .map(|f| f.id)
        .max()
        .unwrap()
        + 1;
    let extra = Schema::new(vec![Field::new("extra", DataType::Int64, true)]);
    let mut field = lancet::file::manifest_fields(&extra).unwrap().remove(0);
    field.id = next_field;
    // one file of `extra` for fragment `f`, holding `base + offset` on each row
    let write = |f: lancet::proto::table::DataFragment, base: i64, name: String| {
        let (store, fs, extra) = (store.clone(), fs.clone(), extra.clone());
        async move {
            let first = f.files[0].clone();
            let version = match first.file_minor_version {
                0 => FileVersion::V2_0,
                1 => FileVersion::V2_1,
                _ => FileVersion::V2_2,
            };
            let values: Vec<i64> = (0..f.physical_rows as i64).map(|o| base + o).collect();
            let batch = RecordBatch::try_new(
                Arc::new(extra.clone()),
                vec![Arc::new(Int64Array::from(values))],
            )
            .unwrap();
            let written = write_file(
                &fs,
                &store.path(&format!("data/{name}")),
                &extra,
                &[batch],
                &WriteOptions {
                    version,
                    field_ids: Some(vec![next_field]),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
            lancet::proto::table::DataFile {
                path: name,
                fields: vec![next_field],
                column_indices: vec![0],
                file_major_version: first.file_major_version,
                file_minor_version: first.file_minor_version,
                file_size_bytes: written.size_bytes,
                base_id: None,
            }
        }
    };
    let mut fragments = Vec::new();
    for f in ds.fragments().await.unwrap().iter() {
        let mut merged = f.clone();
        let file = write(
            f.clone(),
            10_000_000 * (f.id as i64 + 1),
            format!("extra-{}.lance", f.id),
        )
        .await;
        merged.files.push(file);
        fragments.push(merged);
    }
    let mut schema = ds.storage().manifest().fields.clone();
    schema.push(field);
    let merged = ds
        .commit(Operation::Merge(Merge {
            fragments,
            schema,
            schema_metadata: ds.storage().manifest().schema_metadata.clone(),
            preserves_nullability: true,
        }))
        .await
        .unwrap()
        .dataset;
    let scan = peer(&["scan", &uri]);
    let at = scan["columns"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c == "extra")
        .expect("pylance reads the merged column");
    let first_fragment = merged.fragments().await.unwrap()[0].clone();
    // some live row of the fragment holds a value of its file (which rows are live aside)
    let rows_of = first_fragment.physical_rows as i64;
    let has = |scan: &Value, base: i64| {
        scan["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r[at].as_i64())
            .any(|v| (base..base + rows_of).contains(&v))
    };
    let merged_base = 10_000_000 * (first_fragment.id as i64 + 1);
    assert!(has(&scan, merged_base), "the merged values are read");
    let seen = peer(&["transactions", &uri]);
    assert_eq!(seen["transactions"][0]["operation"], "Merge", "{seen}");

    // the fragment's `extra` file replaced by one holding other values
    let replacement = write(
        first_fragment.clone(),
        -5_000_000,
        "extra-replaced.lance".to_string(),
    )
    .await;
    let replaced = merged
        .commit(Operation::DataReplacement(DataReplacement {
            replacements: vec![DataReplacementGroup {
                fragment_id: first_fragment.id,
                new_file: Some(replacement),
            }],
        }))
        .await
        .unwrap()
        .dataset;
    let scan = peer(&["scan", &uri]);
    assert!(has(&scan, -5_000_000), "the replacement's values are read");
    assert!(
        !has(&scan, merged_base),
        "the replaced file's values are gone"
    );
    let files = &replaced
        .storage()
        .fragment(first_fragment.id)
        .await
        .unwrap()
        .unwrap()
        .files;
    assert_eq!(
        files.len(),
        first_fragment.files.len(),
        "replaced, not added"
    );
    let verified: Value =
        serde_json::from_str(&lancet(&["verify", &uri, "--data", "--json"])).unwrap();
    assert_eq!(verified["valid"], true, "{verified}");

    // Issue 41: the fragment's `value` alone replaced, one field of pylance's wide file: as
    // Lance builds it, the field is tombstoned there and the new file appended
    let value_id = (replaced.storage().manifest().fields.iter())
        .find(|f| f.name == "value")
        .unwrap()
        .id;
    let before = record_of(&replaced, first_fragment.id).await;
    let wide = (before.files.iter())
        .position(|d| d.fields.contains(&value_id))
        .unwrap();
    let (major, minor) = (
        before.files[wide].file_major_version,
        before.files[wide].file_minor_version,
    );
    let value_schema = Schema::new(vec![Field::new("value", DataType::Float64, true)]);
    let rows = before.physical_rows as usize;
    let batch = RecordBatch::try_new(
        Arc::new(value_schema.clone()),
        vec![Arc::new(arrow_array::Float64Array::from(vec![-1.5; rows]))],
    )
    .unwrap();
    let written = write_file(
        &fs,
        &store.path("data/value-replaced.lance"),
        &value_schema,
        &[batch],
        &WriteOptions {
            version: if minor == 1 {
                FileVersion::V2_1
            } else {
                FileVersion::V2_2
            },
            field_ids: Some(vec![value_id]),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let tombstoned = replaced
        .commit(Operation::DataReplacement(DataReplacement {
            replacements: vec![DataReplacementGroup {
                fragment_id: first_fragment.id,
                new_file: Some(lancet::proto::table::DataFile {
                    path: "value-replaced.lance".into(),
                    fields: vec![value_id],
                    column_indices: vec![0],
                    file_major_version: major,
                    file_minor_version: minor,
                    file_size_bytes: written.size_bytes,
                    base_id: None,
                }),
            }],
        }))
        .await
        .unwrap()
        .dataset;
    let after = record_of(&tombstoned, first_fragment.id).await;
    let expect: Vec<i32> = (before.files[wide].fields.iter())
        .map(|&x| if x == value_id { -2 } else { x })
        .collect();
    assert_eq!(after.files[wide].fields, expect);
    assert_eq!(after.files.last().unwrap().path, "value-replaced.lance");
    let live = before.physical_rows
        - before
            .deletion_file
            .as_ref()
            .map_or(0, |d| d.num_deleted_rows);
    let scan = peer(&["scan", &uri]);
    let at = (scan["columns"].as_array().unwrap().iter())
        .position(|c| c == "value")
        .unwrap();
    let replaced_rows = (scan["rows"].as_array().unwrap().iter())
        .filter(|r| r[at].as_f64() == Some(-1.5))
        .count() as u64;
    assert_eq!(
        replaced_rows, live,
        "pylance reads the fragment's new values"
    );
    let verified: Value =
        serde_json::from_str(&lancet(&["verify", &uri, "--data", "--json"])).unwrap();
    assert_eq!(verified["valid"], true, "{verified}");
}

/// Issue 19: on a stable-row-id table, an Append committed through `Dataset::commit` that
/// loses the race to a pylance append is planned again on the latest version (its row ids
/// taken afresh) and lands; and a pylance append prepared before a lancet Append rebases over
/// it. Every row id stays unique, as pylance reads them.
#[tokio::test]
async fn operation_appends_and_pylance_appends_rebase_over_each_other_with_stable_row_ids() {
    use lancet::proto::table::transaction::Append;
    use lancet::Operation;
    let dir = tempfile::tempdir().unwrap().keep().join("stable");
    copy_dir(&fixtures().join("stable"), &dir);
    let uri = dir.to_str().unwrap().to_string();
    let prepared = Dataset::open(&uri).await.unwrap();
    let v = prepared.version();
    let written = peer(&["write-fragments", &uri, "600000", "300"]);
    // pylance lands first
    peer(&["append-at", &uri, &v.to_string(), "610000", "200"]);
    let landed = prepared
        .commit(Operation::Append(Append {
            fragments: fragments_of(&written),
        }))
        .await
        .unwrap();
    assert_eq!(landed.attempts, 2, "rebased once");
    assert_eq!(landed.dataset.version(), v + 2);
    // and the other way round: pylance prepared on the version before lancet's next append
    let before = landed.dataset.version();
    let more = peer(&["write-fragments", &uri, "620000", "100"]);
    landed
        .dataset
        .commit(Operation::Append(Append {
            fragments: fragments_of(&more),
        }))
        .await
        .unwrap();
    peer(&["append-at", &uri, &before.to_string(), "630000", "50"]);
    let latest = Dataset::open(&uri).await.unwrap();
    let ids = peer(&["rowids", &uri, &latest.version().to_string()]);
    let row_ids: Vec<u64> = ids["row_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let distinct: std::collections::BTreeSet<u64> = row_ids.iter().copied().collect();
    assert_eq!(distinct.len(), row_ids.len(), "a row id is live twice");
    let scan = peer(&["scan", &uri]);
    let rows_before = prepared.num_rows().unwrap();
    assert_eq!(scan["count"], json!(rows_before + 300 + 200 + 100 + 50));
    assert!(latest.storage().manifest().next_row_id > *distinct.iter().max().unwrap());
    let verified: Value = serde_json::from_str(&lancet(&["verify", &uri, "--json"])).unwrap();
    assert_eq!(verified["valid"], true, "{verified}");
}
#[path = "interop/trust.rs"]
mod trust;
