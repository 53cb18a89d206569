//! Issue 32: dropping columns as pylance's `drop_columns` does (a Project: no data rewritten,
//! a file of dropped columns only leaves its fragments, indexes on them go), on twins; a tree
//! table drops the same and flattens to what pylance reads; bad input publishes nothing.

use serde_json::{json, Value};

use super::trust::twins;
use super::{lancet, peer};

fn same_table(mine: &str, twin: &str, what: &str) {
    let (m, t) = (peer(&["scan", mine]), peer(&["scan", twin]));
    assert_eq!(m["columns"], t["columns"], "{what}");
    assert_eq!(m["rows"], t["rows"], "{what}");
    assert_eq!(m["indices"], t["indices"], "{what}");
    assert_eq!(
        peer(&["files", mine])["files"],
        peer(&["files", twin])["files"],
        "{what}"
    );
    assert_eq!(
        peer(&["coverage", mine]),
        peer(&["coverage", twin]),
        "{what}"
    );
}

fn versions(uri: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(format!("{uri}/_versions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Runs `lancet args`, expecting one line `lancet: ...` naming `says`, and no version of the
/// table at `uri` written.
pub(super) fn refused(args: &[&str], says: &str, uri: &str) {
    let before = versions(uri);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(
        err.starts_with("lancet: ") && err.contains(says),
        "{args:?}: {err}"
    );
    assert_eq!(versions(uri), before, "{args:?} wrote a version");
}

#[test]
fn dropped_columns_match_pylances_on_twins_flat_and_tree() {
    for stable in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let spec = json!({"rows": 100, "files": 3, "index": "v", "stable": stable});
        let (mine, twin) = twins(dir.path(), spec);
        // a column in files of its own, then dropped: those files leave their fragments
        lancet(&["add-column", &mine, "--name", "w", "--expr", "id * 2"]);
        peer(&["add-columns", &twin, "w", "id * 2"]);
        lancet(&["drop-columns", &mine, "--columns", "w"]);
        peer(&["drop-columns", &twin, "w"]);
        same_table(&mine, &twin, &format!("stable={stable} drop w"));
        // an indexed column in the shared file: the file stays, the index goes
        lancet(&["drop-columns", &mine, "--columns", "v"]);
        peer(&["drop-columns", &twin, "v"]);
        same_table(&mine, &twin, &format!("stable={stable} drop v"));
        // bad input: typed, one line, no version written
        refused(
            &["drop-columns", &mine, "--columns", "nope"],
            "Column nope does not exist",
            &mine,
        );
        refused(
            &["drop-columns", &mine, "--columns", "id"],
            "Cannot drop all columns",
            &mine,
        );
        lancet(&["verify", &mine, "--data"]);
    }

    // a tree table drops the same columns and flattens to what pylance reads
    let dir = tempfile::tempdir().unwrap();
    let spec = json!({"rows": 100, "files": 3, "index": "v"});
    let (mine, twin) = twins(dir.path(), spec);
    lancet(&["add-column", &mine, "--name", "w", "--expr", "id * 2"]);
    peer(&["add-columns", &twin, "w", "id * 2"]);
    lancet(&["tree", "convert", &mine]);
    lancet(&["drop-columns", &mine, "--columns", "w,v"]);
    peer(&["drop-columns", &twin, "w,v"]);
    let tree_rows = lancet(&["scan", &mine, "--format", "jsonl"]);
    lancet(&["tree", "flatten", &mine]);
    assert_eq!(lancet(&["scan", &mine, "--format", "jsonl"]), tree_rows);
    same_table(&mine, &twin, "tree, flattened");
}

/// An overwrite with rows of another schema, by lancet (`create --mode overwrite`) and by
/// pylance (`write_dataset(mode="overwrite")`) on twins: the same schema and field ids, rows
/// and `_rowid`s (ids continue past `next_row_id`), fragment ids (after `max_fragment_id`),
/// no index left; on a tree table the same rows, flattened to what pylance reads.
#[test]
fn an_overwrite_matches_pylances_on_twins() {
    for stable in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let spec = json!({"rows": 100, "files": 3, "index": "v", "append": 1, "delete": "id % 7 = 0", "stable": stable});
        let (mine, twin) = twins(dir.path(), spec);
        let parquet = dir.path().join("rows.parquet");
        let parquet = parquet.to_str().unwrap();
        peer(&["overwrite-twin", &twin, parquet, "1000", "250", "100"]);
        lancet(&[
            "create",
            &mine,
            "--from",
            parquet,
            "--mode",
            "overwrite",
            "--max-rows-per-file",
            "100",
        ]);
        let (m, t) = (peer(&["identity", &mine]), peer(&["identity", &twin]));
        assert_eq!(m, t, "stable={stable}");
        assert_eq!(m["fragments"].as_array().unwrap().len(), 3);
        lancet(&["verify", &mine, "--data"]);
    }
    // a tree table overwritten keeps its layout and flattens to pylance's rows
    let dir = tempfile::tempdir().unwrap();
    let spec = json!({"rows": 100, "files": 3});
    let (mine, twin) = twins(dir.path(), spec);
    lancet(&["tree", "convert", &mine]);
    let parquet = dir.path().join("rows.parquet");
    let parquet = parquet.to_str().unwrap();
    peer(&["overwrite-twin", &twin, parquet, "0", "120", "50"]);
    lancet(&[
        "create",
        &mine,
        "--from",
        parquet,
        "--mode",
        "overwrite",
        "--max-rows-per-file",
        "50",
    ]);
    assert!(lancet(&["tree", "show", &mine, "--json"]).contains("\"root\""));
    lancet(&["tree", "flatten", &mine]);
    assert_eq!(peer(&["identity", &mine]), peer(&["identity", &twin]));
}

/// Renaming a column and changing its nullability, by lancet (`alter-column`) and pylance
/// (`alter_columns`) on twins: the same schema (names, ids, nullability), rows and indexes
/// (the renamed column keeps its id and its index, which still answers); bad input refused
/// with nothing published.
#[test]
fn altered_columns_match_pylances_on_twins() {
    let dir = tempfile::tempdir().unwrap();
    let spec = json!({"rows": 100, "files": 3, "index": "v", "delete": "id % 9 = 0"});
    let (mine, twin) = twins(dir.path(), spec);
    lancet(&["alter-column", &mine, "--column", "v", "--rename", "w"]);
    peer(&[
        "alter",
        &twin,
        &json!([{"path": "v", "name": "w"}]).to_string(),
    ]);
    assert_eq!(peer(&["identity", &mine]), peer(&["identity", &twin]));
    // the index follows its field id: a search through it still answers, by the new name
    let found: Value = serde_json::from_str(&lancet(&[
        "index", "search", &mine, "--filter", "w = 50", "--json",
    ]))
    .unwrap();
    assert_eq!(found["row_ids"].as_array().unwrap().len(), 1, "{found}");
    lancet(&[
        "alter-column",
        &mine,
        "--column",
        "id",
        "--nullable",
        "false",
    ]);
    peer(&[
        "alter",
        &twin,
        &json!([{"path": "id", "nullable": false}]).to_string(),
    ]);
    assert_eq!(peer(&["identity", &mine]), peer(&["identity", &twin]));
    lancet(&[
        "alter-column",
        &mine,
        "--column",
        "id",
        "--nullable",
        "true",
    ]);
    peer(&[
        "alter",
        &twin,
        &json!([{"path": "id", "nullable": true}]).to_string(),
    ]);
    assert_eq!(peer(&["identity", &mine]), peer(&["identity", &twin]));
    for (args, says) in [
        (
            vec!["alter-column", &mine, "--column", "nope", "--rename", "x"],
            "Column \"nope\" does not exist",
        ),
        (
            vec!["alter-column", &mine, "--column", "w", "--rename", "id"],
            "Duplicate field name \"id\"",
        ),
        (
            vec!["alter-column", &mine, "--column", "w", "--type", "VARCHAR"],
            "Cannot cast column \"w\" from Int64 to Utf8",
        ),
        (
            vec!["alter-column", &mine, "--column", "w", "--type", "INT"],
            "it has index \"v_idx\" attached",
        ),
        (
            vec!["alter-column", &mine, "--column", "w", "--type", "NOPE"],
            "not a SQL type name",
        ),
    ] {
        refused(&args, says, &mine);
    }
    lancet(&["verify", &mine, "--data"]);
}

/// Casts (`alter_columns` with a data type) on twins: the cast column under a new field id,
/// its values rewritten in a new data file per fragment and the old id tombstoned in the
/// files that listed it, exactly as pylance leaves them (schema, ids, rows, `_rowid`s, each
/// file's field ids); a value that does not fit the new type publishes nothing.
#[test]
fn casts_match_pylances_on_twins() {
    for stable in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let spec = json!({"rows": 100, "files": 3, "delete": "id % 9 = 0", "stable": stable});
        let (mine, twin) = twins(dir.path(), spec);
        lancet(&["alter-column", &mine, "--column", "v", "--type", "INT"]);
        peer(&[
            "alter",
            &twin,
            &json!([{"path": "v", "data_type": "int32"}]).to_string(),
        ]);
        assert_eq!(
            peer(&["identity", &mine]),
            peer(&["identity", &twin]),
            "stable={stable}"
        );
        assert_eq!(
            peer(&["files", &mine])["files"],
            peer(&["files", &twin])["files"]
        );
        // renamed and cast at once
        lancet(&[
            "alter-column",
            &mine,
            "--column",
            "v",
            "--rename",
            "w",
            "--type",
            "BIGINT",
        ]);
        peer(&[
            "alter",
            &twin,
            &json!([{"path": "v", "name": "w", "data_type": "int64"}]).to_string(),
        ]);
        assert_eq!(
            peer(&["identity", &mine]),
            peer(&["identity", &twin]),
            "stable={stable}"
        );
        assert_eq!(
            peer(&["files", &mine])["files"],
            peer(&["files", &twin])["files"]
        );
        refused(
            &["alter-column", &mine, "--column", "w", "--type", "TINYINT"],
            "values for column \"w\"",
            &mine,
        );
        lancet(&["verify", &mine, "--data"]);
    }
}

/// Issue 32, step 3: config, table, schema and field metadata updates and truncate as
/// pylance makes them: the same maps (pylance reads lancet's), the same rows left; an
/// unknown field is refused with nothing published.
#[test]
fn metadata_updates_and_truncate_equal_pylances() {
    let dir = tempfile::tempdir().unwrap();
    let (mine, twin) = twins(dir.path(), json!({"rows": 50, "files": 2, "index": "id"}));
    let m = mine.as_str();
    for args in [
        vec!["--config", "--set", "lance.test=1", "--set", "gone=x"],
        vec!["--config", "--remove", "gone"],
        vec!["--set", "owner=a", "--set", "team=b"],
        vec!["--set", "only=c", "--replace"],
        vec!["--schema", "--set", "s=1"],
        vec!["--field", "v", "--set", "unit=ms"],
    ] {
        let mut cmd = vec!["metadata", m];
        cmd.extend(args);
        lancet(&cmd);
    }
    assert_eq!(peer(&["maps", m]), peer(&["maps", &twin, "pylance"]));
    refused(
        &["metadata", m, "--field", "nope", "--set", "a=b"],
        "field \"nope\"",
        m,
    );
    let out: Value = serde_json::from_str(&lancet(&["truncate", m, "--json"])).unwrap();
    assert_eq!(out["deleted_rows"], 100);
    assert_eq!(peer(&["scan", m])["rows"], json!([]));
    lancet(&["verify", m, "--data"]);
}

/// Issue 41, item 3: a primary key set through field metadata is the key pylance reads;
/// a key on a nullable column, and a change or removal of the key once set, are refused with
/// nothing published, as Lance 14.0.2's UpdateConfig refuses them.
#[test]
fn a_primary_key_set_through_field_metadata_is_pylances_key() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("keyed");
    let uri = uri.to_str().unwrap();
    peer(&["keyed-table", uri]);
    let key = "lance-schema:unenforced-primary-key";
    let set = format!("{key}=true");
    refused(
        &["metadata", uri, "--field", "v", "--set", &set],
        "must not be nullable",
        uri,
    );
    lancet(&["metadata", uri, "--field", "id", "--set", &set]);
    assert_eq!(peer(&["primary-key", uri])["key"], json!(["id"]));
    refused(
        &["metadata", uri, "--field", "id", "--remove", key],
        "cannot be changed once set",
        uri,
    );
    refused(
        &["metadata", uri, "--field", "v", "--set", &set],
        "cannot be changed once set",
        uri,
    );
    assert_eq!(peer(&["primary-key", uri])["key"], json!(["id"]));
}

/// Found by the differential tester: on a table recording no `max_allocated_field_id` (as
/// pylance writes them), a column added after a drop must not take the dropped column's id,
/// which the compacted file holding its values still names (Lance's `max_field_id` counts
/// data files' ids). Both engines give the new column id 3, and it reads its own values.
#[test]
fn a_column_added_after_a_drop_never_takes_the_dropped_id() {
    let dir = tempfile::tempdir().unwrap();
    let (mine, twin) = twins(dir.path(), json!({"rows": 50, "files": 2}));
    for uri in [&mine, &twin] {
        lancet(&["add-column", uri, "--name", "a", "--expr", "id * 3"]);
        lancet(&["compact", uri, "--target-rows-per-fragment", "400"]);
        lancet(&["drop-columns", uri, "--columns", "a"]);
    }
    lancet(&["add-column", &mine, "--name", "b", "--expr", "id * 5"]);
    peer(&["add-columns", &twin, "b", "id * 5"]);
    assert_eq!(peer(&["identity", &mine]), peer(&["identity", &twin]));
    let fields = peer(&["identity", &mine])["fields"].clone();
    assert_eq!(fields, json!([["id", 0], ["v", 1], ["b", 3]]));
    lancet(&["verify", &mine, "--data"]);
}

/// A cast, a rename, field metadata, config and a truncate on a tree table: it scans as its
/// flat twin (lancet writes both), and flattens to what pylance reads of the flat one.
#[test]
fn casts_metadata_and_truncate_on_a_tree_table_match_the_flat_twin() {
    let dir = tempfile::tempdir().unwrap();
    let (flat, tree) = twins(dir.path(), json!({"rows": 50, "files": 3, "stable": true}));
    lancet(&["tree", "convert", &tree]);
    for uri in [&flat, &tree] {
        lancet(&[
            "alter-column",
            uri,
            "--column",
            "v",
            "--rename",
            "w",
            "--type",
            "INT",
        ]);
        lancet(&["metadata", uri, "--field", "w", "--set", "unit=ms"]);
        lancet(&["metadata", uri, "--config", "--set", "k=1"]);
    }
    let scan = |uri: &str| lancet(&["scan", uri, "--with-row-id", "--format", "jsonl"]);
    assert_eq!(scan(&flat), scan(&tree));
    lancet(&["verify", &tree, "--data"]);
    for uri in [&flat, &tree] {
        lancet(&["truncate", uri]);
    }
    assert_eq!(scan(&tree), "");
    lancet(&["tree", "flatten", &tree]);
    assert_eq!(peer(&["identity", &flat]), peer(&["identity", &tree]));
    let maps = |uri: &str| {
        let mut m = peer(&["maps", uri]);
        m.as_object_mut().unwrap().remove("version");
        m
    };
    assert_eq!(maps(&flat), maps(&tree));
}
