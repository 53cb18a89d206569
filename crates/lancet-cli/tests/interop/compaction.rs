//! Compaction against pylance: tables of 20 fragments of 500 rows with a BTree on `id` and 10%
//! deleted, compacted by `lancet compact` and by pylance's `compact_files` on a twin, with and
//! without stable row ids, with and without a deferred remap; by separate processes (planned,
//! executed by four, committed once); and on a tree table.

use std::process::Command;

use serde_json::{json, Value};

use super::{lancet, lancet_search, peer};

fn inspect(uri: &str) -> Value {
    serde_json::from_str(&lancet(&["inspect", uri, "--json"])).unwrap()
}

fn fragment_rows(uri: &str) -> Vec<u64> {
    inspect(uri)["fragments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["physical_rows"].as_u64().unwrap())
        .collect()
}

fn sorted_rows(uri: &str) -> Value {
    peer(&["scan", uri])["rows"].clone()
}

/// Each filter answered through the index by pylance on `uri` equals pylance's full scan, and
/// lancet's answer too.
fn answers_exactly(uri: &str, version: &str, filters: &[&str]) {
    let list = serde_json::to_string(filters).unwrap();
    let scanned = peer(&["filters", uri, version, &list]);
    let indexed = peer(&["filters", uri, version, &list, "true"]);
    for (i, f) in filters.iter().enumerate() {
        assert_eq!(
            indexed[i]["row_ids"], scanned[i]["row_ids"],
            "pylance's index: {f}"
        );
        let got = lancet_search(uri, version, f);
        assert_eq!(got["row_ids"], scanned[i]["row_ids"], "lancet: {f}");
    }
}

const FILTERS: [&str; 3] = ["id = 4321", "id >= 100 AND id < 200", "id IN (3, 4, 9999)"];

#[test]
fn compaction_leaves_what_pylance_leaves() {
    let dir = tempfile::tempdir().unwrap();
    for stable in [false, true] {
        let mine = dir.path().join(format!("mine-{stable}"));
        let twin = dir.path().join(format!("twin-{stable}"));
        let (mine, twin) = (mine.to_str().unwrap(), twin.to_str().unwrap());
        peer(&["maintenance-table", mine, twin, &stable.to_string()]);
        let before = sorted_rows(mine);
        let ids_before = peer(&[
            "table",
            mine,
            &json!({"with_row_id": true, "columns": ["id"]}).to_string(),
        ]);
        let out: Value = serde_json::from_str(&lancet(&[
            "compact",
            mine,
            "--target-rows-per-fragment",
            "5000",
            "--json",
        ]))
        .unwrap();
        let theirs = peer(&[
            "compact",
            twin,
            &json!({"target_rows_per_fragment": 5000}).to_string(),
        ]);
        assert_eq!(
            json!(fragment_rows(mine)),
            theirs["fragments"],
            "stable={stable}"
        );
        assert_eq!(out["fragments_removed"], 20);
        assert_eq!(inspect(mine)["transaction"]["operation"], "Rewrite");
        // pylance reads every live row; the index answers exactly, through pylance and lancet
        assert_eq!(sorted_rows(mine), before);
        let version = out["version"].to_string();
        answers_exactly(mine, &version, &FILTERS);
        if stable {
            // every _rowid still names the same row
            let ids_after = peer(&[
                "table",
                mine,
                &json!({"with_row_id": true, "columns": ["id"]}).to_string(),
            ]);
            let pairs = |v: &Value| {
                let mut p: Vec<(i64, u64)> = v["rows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| (r[0].as_i64().unwrap(), r[1].as_u64().unwrap()))
                    .collect();
                p.sort_unstable();
                p
            };
            assert_eq!(pairs(&ids_after), pairs(&ids_before));
            // a deferred remap is refused, as Lance 14.0.2 refuses it, and changes nothing
            let out = Command::new(env!("CARGO_BIN_EXE_lancet"))
                .args(["compact", mine, "--defer-index-remap"])
                .output()
                .unwrap();
            assert!(!out.status.success());
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("defer_index_remap"), "{err}");
            assert_eq!(inspect(mine)["version"], out_version(&version));
        }
        lancet(&["verify", mine, "--data"]);
    }
}

fn out_version(v: &str) -> Value {
    json!(v.parse::<u64>().unwrap())
}

#[test]
fn a_deferred_remap_answers_through_the_reuse_index() {
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mine");
    let twin = dir.path().join("twin");
    let (mine, twin) = (mine.to_str().unwrap(), twin.to_str().unwrap());
    peer(&["maintenance-table", mine, twin, "false"]);
    let out: Value = serde_json::from_str(&lancet(&[
        "compact",
        mine,
        "--target-rows-per-fragment",
        "5000",
        "--defer-index-remap",
        "--json",
    ]))
    .unwrap();
    let theirs = peer(&[
        "compact",
        twin,
        &json!({"target_rows_per_fragment": 5000, "defer_index_remap": true}).to_string(),
    ]);
    assert_eq!(json!(fragment_rows(mine)), theirs["fragments"]);
    assert_eq!(peer(&["scan", mine])["indices"], theirs["indices"]);
    // the history as pylance writes it on an untagged table: a legacy entry, no feature
    // flag, the BTree's entry left as it was
    let entries = |uri: &str| {
        let i = inspect(uri);
        let mut out: Vec<Value> = i["indices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| json!([e["name"], e["index_version"], e["fragment_ids"]]))
            .collect();
        out.sort_by_key(|v| v.to_string());
        out
    };
    assert_eq!(entries(mine), entries(twin));
    // (Lance recomputes the deletion flag at every commit; lancet keeps it once set)
    let flags = inspect(mine)["reader_feature_flags"].to_string();
    assert!(!flags.contains("fragment_reuse_index"), "{flags}");
    let version = out["version"].to_string();
    answers_exactly(mine, &version, &FILTERS);
    // lancet answers through the index pages and the history, scanning no fragment
    for f in FILTERS {
        let got = lancet_search(mine, &version, f);
        assert_eq!(got["scanned_fragments"], 0, "{f}: {got}");
        assert!(got["pages_read"].as_u64().unwrap() > 0, "{f}: {got}");
    }
}

#[test]
fn compaction_tasks_run_in_separate_processes() {
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mine");
    let twin = dir.path().join("twin");
    let (mine, twin) = (mine.to_str().unwrap(), twin.to_str().unwrap());
    peer(&["maintenance-table", mine, twin, "true"]);
    // four groups of about 2,250 rows
    let target = "2000";
    let plan: Vec<Value> = serde_json::from_str(&lancet(&[
        "compact",
        mine,
        "--target-rows-per-fragment",
        target,
        "--plan",
    ]))
    .unwrap();
    assert_eq!(plan.len(), 4, "{plan:?}");
    let tasks: Vec<String> = plan
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let p = dir.path().join(format!("task{i}.json"));
            std::fs::write(&p, t.to_string()).unwrap();
            p.to_str().unwrap().to_string()
        })
        .collect();
    let workers: Vec<_> = tasks
        .iter()
        .map(|t| {
            Command::new(env!("CARGO_BIN_EXE_lancet"))
                .args(["compact", mine, "--execute", t])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut results = Vec::new();
    for (i, w) in workers.into_iter().enumerate() {
        let out = w.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let p = dir.path().join(format!("result{i}.json"));
        std::fs::write(&p, out.stdout).unwrap();
        results.push(p.to_str().unwrap().to_string());
    }
    // nothing is committed before the commit
    assert_eq!(inspect(mine)["version"], 3);
    let mut commit = vec!["compact", mine, "--commit"];
    commit.extend(results.iter().map(String::as_str));
    lancet(&commit);
    // the same as compacting in one process
    lancet(&["compact", twin, "--target-rows-per-fragment", target]);
    assert_eq!(fragment_rows(mine), fragment_rows(twin));
    let all = json!({"with_row_id": true});
    assert_eq!(
        peer(&["table", mine, &all.to_string()]),
        peer(&["table", twin, &all.to_string()])
    );
    answers_exactly(mine, "4", &FILTERS);
}

#[test]
fn a_tree_table_compacts_and_flattens_like_pylance_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mine");
    let twin = dir.path().join("twin");
    let (mine, twin) = (mine.to_str().unwrap(), twin.to_str().unwrap());
    peer(&["maintenance-table", mine, twin, "true"]);
    lancet(&["tree", "convert", mine]);
    lancet(&["compact", mine, "--target-rows-per-fragment", "5000"]);
    lancet(&["verify", mine, "--data"]);
    peer(&[
        "compact",
        twin,
        &json!({"target_rows_per_fragment": 5000}).to_string(),
    ]);
    lancet(&["tree", "flatten", mine]);
    assert_eq!(fragment_rows(mine), fragment_rows(twin));
    let all = json!({"with_row_id": true});
    assert_eq!(
        peer(&["table", mine, &all.to_string()])["rows"]
            .as_array()
            .unwrap()
            .len(),
        9000
    );
    assert_eq!(sorted_rows(mine), sorted_rows(twin));
}

/// A compaction executed before pylance's append and delete of other rows is committed after
/// them (rebased); one executed before pylance deletes rows it copied fails with a typed
/// conflict and publishes nothing.
#[test]
fn a_compaction_racing_pylance_rebases_or_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mine");
    let twin = dir.path().join("twin");
    let (mine, twin) = (mine.to_str().unwrap(), twin.to_str().unwrap());
    peer(&["maintenance-table", mine, twin, "false"]);
    let execute = |uri: &str, name: &str| -> String {
        let plan: Vec<Value> = serde_json::from_str(&lancet(&[
            "compact",
            uri,
            "--target-rows-per-fragment",
            "5000",
            "--plan",
        ]))
        .unwrap();
        let task = dir.path().join(format!("{name}-task.json"));
        std::fs::write(&task, plan[0].to_string()).unwrap();
        let result = dir.path().join(format!("{name}-result.json"));
        let out = lancet(&["compact", uri, "--execute", task.to_str().unwrap()]);
        std::fs::write(&result, out).unwrap();
        result.to_str().unwrap().to_string()
    };
    let result = execute(mine, "mine");
    peer(&["append-iv", mine, "10000", "100"]);
    peer(&["delete", mine, "id >= 10050"]);
    lancet(&["compact", mine, "--commit", &result]);
    assert_eq!(inspect(mine)["transaction"]["operation"], "Rewrite");
    let ids: Vec<i64> = peer(&["scan", mine])["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[0].as_i64().unwrap())
        .collect();
    let want: Vec<i64> = (0..10050).filter(|i| i % 10 != 3 || *i >= 10000).collect();
    assert_eq!(ids, want);
    answers_exactly(mine, &inspect(mine)["version"].to_string(), &FILTERS);

    let result = execute(twin, "twin");
    let before = peer(&["delete", twin, "id = 4321"])["version"].clone();
    let out = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(["compact", twin, "--commit", &result])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("lancet: ") && err.contains("committed by another writer"),
        "{err}"
    );
    assert_eq!(inspect(twin)["version"], before);
    let rows = peer(&["scan", twin])["count"].clone();
    assert_eq!(rows, json!(9000 - 1));
}

/// Issue 41, item 1, against pylance: a compaction executed before pylance dropped the index
/// it remaps commits without bringing it back (pylance lists no index and answers exactly);
/// one executed before pylance rebuilt the index is a retryable conflict that publishes
/// nothing, and compacting again lands with pylance's build remapped.
#[test]
fn a_compaction_never_brings_back_an_index_pylance_dropped_or_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mine");
    let twin = dir.path().join("twin");
    let (mine, twin) = (mine.to_str().unwrap(), twin.to_str().unwrap());
    peer(&["maintenance-table", mine, twin, "false"]);
    let execute = |uri: &str, name: &str| -> String {
        let plan: Vec<Value> = serde_json::from_str(&lancet(&[
            "compact",
            uri,
            "--target-rows-per-fragment",
            "5000",
            "--plan",
        ]))
        .unwrap();
        let task = dir.path().join(format!("{name}-task.json"));
        std::fs::write(&task, plan[0].to_string()).unwrap();
        let result = dir.path().join(format!("{name}-result.json"));
        let out = lancet(&["compact", uri, "--execute", task.to_str().unwrap()]);
        std::fs::write(&result, out).unwrap();
        result.to_str().unwrap().to_string()
    };
    let result = execute(mine, "mine");
    let dropped = peer(&["drop-index", mine, "id_idx"]);
    assert_eq!(dropped["indices"], json!([]));
    lancet(&["compact", mine, "--commit", &result]);
    assert_eq!(inspect(mine)["transaction"]["operation"], "Rewrite");
    assert_eq!(
        peer(&["coverage", mine])["indices"],
        json!([]),
        "the index stays dropped"
    );
    answers_exactly(mine, &inspect(mine)["version"].to_string(), &FILTERS);

    let result = execute(twin, "twin");
    let rebuilt = peer(&["index", twin, "id", "BTREE", "id_idx"])["version"].clone();
    let out = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(["compact", twin, "--commit", &result])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("lancet: ") && err.contains("id_idx"),
        "{err}"
    );
    assert_eq!(inspect(twin)["version"], rebuilt, "nothing published");
    lancet(&["compact", twin, "--target-rows-per-fragment", "5000"]);
    answers_exactly(twin, &inspect(twin)["version"].to_string(), &FILTERS);
}

/// `lancet index optimize` after a deferred compaction rewrites the index with current
/// addresses and `fri trim` drops the history: answers exact, nothing scanned; after a
/// pylance append, optimize covers the new fragment.
#[test]
fn index_optimize_catches_up_with_compactions_and_appends() {
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mine");
    let twin = dir.path().join("twin");
    let (mine, twin) = (mine.to_str().unwrap(), twin.to_str().unwrap());
    peer(&["maintenance-table", mine, twin, "false"]);
    lancet(&[
        "compact",
        mine,
        "--target-rows-per-fragment",
        "5000",
        "--defer-index-remap",
    ]);
    lancet(&["index", "optimize", mine]);
    lancet(&["fri", "trim", mine]);
    let version = inspect(mine)["version"].to_string();
    answers_exactly(mine, &version, &FILTERS);
    for f in FILTERS {
        let got = lancet_search(mine, &version, f);
        assert_eq!(got["scanned_fragments"], 0, "{f}: {got}");
    }
    assert_eq!(peer(&["scan", mine])["indices"], json!(["id_idx"]));
    peer(&["append-iv", mine, "10000", "100"]);
    let appended = inspect(mine)["version"].to_string();
    assert_eq!(
        lancet_search(mine, &appended, "id = 10050")["scanned_fragments"],
        1
    );
    let out: Value = serde_json::from_str(&lancet(&["index", "optimize", mine, "--json"])).unwrap();
    assert_eq!(out["btree_segments"], 2);
    let version = out["version"].to_string();
    let filters = ["id = 10050", "id >= 9990 AND id < 10010", "id = 4321"];
    answers_exactly(mine, &version, &filters);
    for f in filters {
        assert_eq!(
            lancet_search(mine, &version, f)["scanned_fragments"],
            0,
            "{f}"
        );
    }
    let merged: Value =
        serde_json::from_str(&lancet(&["index", "optimize", mine, "--merge", "--json"])).unwrap();
    assert_eq!(merged["btree_segments"], 1);
    answers_exactly(mine, &merged["version"].to_string(), &filters);
}

/// `lancet add-column` backfills a computed column a few fragments per commit; pylance reads
/// it for every row, on a flat table and on a tree table flattened.
#[test]
fn an_added_column_is_read_by_pylance() {
    let dir = tempfile::tempdir().unwrap();
    for tree in [false, true] {
        let mine = dir.path().join(format!("mine-{tree}"));
        let twin = dir.path().join(format!("twin-{tree}"));
        let (mine, twin) = (mine.to_str().unwrap(), twin.to_str().unwrap());
        peer(&["maintenance-table", mine, twin, "true"]);
        if tree {
            lancet(&["tree", "convert", mine]);
        }
        let before = inspect(mine)["version"].as_u64().unwrap();
        lancet(&[
            "add-column",
            mine,
            "--name",
            "w",
            "--expr",
            "id * 2 + v",
            "--fragments-per-commit",
            "5",
        ]);
        // the schema, then four backfills of five fragments
        assert_eq!(inspect(mine)["version"].as_u64().unwrap(), before + 5);
        lancet(&["verify", mine, "--data"]);
        if tree {
            lancet(&["tree", "flatten", mine]);
        }
        let rows = peer(&[
            "table",
            mine,
            &json!({"columns": ["id", "v", "w"]}).to_string(),
        ]);
        let rows = rows["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 9000);
        for r in rows {
            let (id, v, w) = (
                r[0].as_i64().unwrap(),
                r[1].as_i64().unwrap(),
                r[2].as_i64(),
            );
            assert_eq!(w, Some(id * 2 + v), "{r}");
        }
    }
}
