//! merge_insert against pylance 14.0.2 on twin tables: the rows, their order, `_rowid`s and
//! version columns, the fragments and the counts equal pylance's; bad input is refused with
//! nothing published.

use serde_json::{json, Value};

use super::schema::refused;
use super::trust::twins;
use super::{lancet, peer};

fn source(dir: &std::path::Path, name: &str, keys: &Value, tag: u32) -> String {
    let path = dir.join(name).to_str().unwrap().to_string();
    peer(&["merge-source", &path, &keys.to_string(), &tag.to_string()]);
    path
}

/// Runs the same merge through both engines and compares everything a reader sees: rows in
/// order with `_rowid`s and version columns, fragments, counts.
fn both(mine: &str, twin: &str, from: &str, opts: Value, args: &[&str]) {
    merged_alike(mine, twin, from, opts, args, true)
}

/// [`both`]; `ordered`: compare the order of the rows the merge wrote too. pylance's indexed
/// path unions the index's rows and the unindexed fragments' scan as they arrive, so its
/// order of updated rows is not reproducible there: compared as a multiset.
fn merged_alike(mine: &str, twin: &str, from: &str, opts: Value, args: &[&str], ordered: bool) {
    let theirs = peer(&["merge-insert", twin, from, "id", &opts.to_string()]);
    let mut cmd = vec!["merge-insert", mine, "--from", from, "--on", "id", "--json"];
    cmd.extend_from_slice(args);
    let ours: Value = serde_json::from_str(&lancet(&cmd)).unwrap();
    assert_eq!(ours, theirs, "{opts} / {args:?}: counts");
    // compared without printing two whole tables on failure
    let (m, t) = (peer(&["lineage", mine]), peer(&["lineage", twin]));
    assert_eq!(m["columns"], t["columns"]);
    assert_eq!(
        m["fragments"], t["fragments"],
        "{opts} / {args:?}: fragments"
    );
    let (mut m, mut t) = (
        m["rows"].as_array().unwrap().clone(),
        t["rows"].as_array().unwrap().clone(),
    );
    if !ordered {
        // without stable row ids a row's `_rowid` is its address, which the order decides
        if m.first()
            .and_then(|r| r.as_array())
            .is_some_and(|r| r.len() == 3)
        {
            for r in m.iter_mut().chain(t.iter_mut()) {
                r.as_array_mut().unwrap().pop();
            }
        }
        let key = |r: &Value| r.to_string();
        m.sort_by_key(key);
        t.sort_by_key(key);
    }
    assert_eq!(m.len(), t.len(), "{opts} / {args:?}: rows");
    if let Some(i) = (0..m.len()).find(|&i| m[i] != t[i]) {
        panic!(
            "{opts} / {args:?}: row {i}: lancet {} pylance {}",
            m[i], t[i]
        );
    }
    lancet(&["verify", mine, "--data"]);
}

#[test]
fn upserts_equal_pylances_flat_stable_and_through_a_btree() {
    for stable in [false, true] {
        for index in [Value::Null, json!("id")] {
            let dir = tempfile::tempdir().unwrap();
            let spec = json!({"rows": 300, "files": 3, "index": index, "append": 1,
                              "delete": "id % 7 = 3", "stable": stable});
            let (mine, twin) = twins(dir.path(), spec);
            // updates in every fragment (some of deleted rows: those are inserts), new keys
            // repeated (both inserted) and a NULL key (never matches)
            let mut keys: Vec<Value> = (0..1200).step_by(13).map(|k| json!(k)).collect();
            keys.extend([json!(5000), json!(5001), json!(5000), json!(3)]);
            if index.is_null() {
                // pylance's indexed path drops a NULL-key row (see the test below)
                keys.push(Value::Null);
            }
            let from = source(dir.path(), "a.parquet", &Value::Array(keys), 1);
            let ordered = index.is_null();
            merged_alike(&mine, &twin, &from, json!({}), &[], ordered);
            // again, over the rows the first merge moved
            let keys: Vec<Value> = (0..1200).step_by(29).map(|k| json!(k)).collect();
            let from = source(dir.path(), "b.parquet", &Value::Array(keys), 2);
            merged_alike(&mine, &twin, &from, json!({}), &[], ordered);
            // the index still answers every key both engines wrote
            let f = "id = 5000 OR id = 13 OR id = 29";
            let v = lancet(&["inspect", &mine, "--json"]);
            let v: Value = serde_json::from_str(&v).unwrap();
            let v = v["version"].to_string();
            assert_eq!(
                peer(&["filters", &mine, &v, &json!([f]).to_string(), "true"]),
                peer(&["filters", &mine, &v, &json!([f]).to_string()]),
                "stable={stable} index={index}"
            );
        }
    }
}

#[test]
fn deletes_and_insert_only_merges_equal_pylances() {
    let dir = tempfile::tempdir().unwrap();
    let (mine, twin) = twins(dir.path(), json!({"rows": 100, "files": 3, "stable": true}));
    let keys: Vec<Value> = (0..300).step_by(7).map(|k| json!(k)).collect();
    let from = source(dir.path(), "a.parquet", &Value::Array(keys), 1);
    both(
        &mine,
        &twin,
        &from,
        json!({"matched": "delete", "not_matched": "nothing"}),
        &["--when-matched", "delete", "--when-not-matched", "nothing"],
    );
    let keys: Vec<Value> = (250..400).step_by(3).map(|k| json!(k)).collect();
    let from = source(dir.path(), "b.parquet", &Value::Array(keys), 2);
    both(
        &mine,
        &twin,
        &from,
        json!({"matched": "nothing", "by_source": "delete", "by_source_filter": "id < 50"}),
        &[
            "--when-matched",
            "nothing",
            "--when-not-matched-by-source",
            "delete",
            "--by-source-filter",
            "id < 50",
        ],
    );
    let keys: Vec<Value> = (0..120).map(|k| json!(k)).collect();
    let from = source(dir.path(), "c.parquet", &Value::Array(keys), 3);
    both(
        &mine,
        &twin,
        &from,
        json!({"by_source": "delete"}),
        &["--when-not-matched-by-source", "delete"],
    );
}

/// `when_matched_update_all(condition)`: only the pairs where the condition over `source.*`
/// and `target.*` holds are updated, as pylance updates them; a condition that holds for two
/// source rows of one target row is ambiguous, one that holds for one of them is not.
#[test]
fn conditional_updates_equal_pylances() {
    for stable in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (mine, twin) = twins(
            dir.path(),
            json!({"rows": 100, "files": 3, "stable": stable}),
        );
        let keys: Vec<Value> = (0..400).step_by(3).map(|k| json!(k)).collect();
        let from = source(dir.path(), "a.parquet", &Value::Array(keys), 1);
        let condition = "target.v >= 50 AND source.v > target.v";
        both(
            &mine,
            &twin,
            &from,
            json!({"condition": condition}),
            &["--condition", condition],
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let (mine, _) = twins(dir.path(), json!({"rows": 50, "files": 1}));
    // key 7 twice: tag 1 rows are `v = 1000007`; only one of them is above 1000010 - 3
    let dup = source(dir.path(), "dup.parquet", &json!([7, 7, 8]), 1);
    let m = mine.as_str();
    refused(
        &[
            "merge-insert",
            m,
            "--from",
            &dup,
            "--on",
            "id",
            "--condition",
            "source.v > target.v",
        ],
        "Ambiguous merge inserts are prohibited",
        m,
    );
    refused(
        &[
            "merge-insert",
            m,
            "--from",
            &dup,
            "--on",
            "id",
            "--condition",
            "v > 1",
        ],
        "neither source.COL nor target.COL",
        m,
    );
    let out: Value = serde_json::from_str(&lancet(&[
        "merge-insert",
        m,
        "--from",
        &dup,
        "--on",
        "id",
        "--condition",
        "source.id > 7",
        "--json",
    ]))
    .unwrap();
    assert_eq!(
        (out["updated_rows"].clone(), out["inserted_rows"].clone()),
        (json!(1), json!(0))
    );
}

#[test]
fn bad_merges_are_refused_with_nothing_published() {
    let dir = tempfile::tempdir().unwrap();
    let (mine, _) = twins(dir.path(), json!({"rows": 50, "files": 2, "index": "id"}));
    let dup = source(dir.path(), "dup.parquet", &json!([1, 2, 2]), 1);
    let m = mine.as_str();
    refused(
        &["merge-insert", m, "--from", &dup, "--on", "id"],
        "Ambiguous merge inserts are prohibited",
        m,
    );
    refused(
        &[
            "merge-insert",
            m,
            "--from",
            &dup,
            "--on",
            "id",
            "--no-index",
        ],
        "(id = 2)",
        m,
    );
    let fine = source(dir.path(), "fine.parquet", &json!([1, 70]), 1);
    refused(
        &["merge-insert", m, "--from", &fine, "--on", "nope"],
        "key column \"nope\" does not exist",
        m,
    );
    refused(
        &[
            "merge-insert",
            m,
            "--from",
            &fine,
            "--on",
            "id",
            "--when-matched",
            "fail",
        ],
        "found matching row with key values: id = 1",
        m,
    );
    // a source without every column of the table (Lance 14.0.2's partial-schema merge): an
    // updated row keeps the column, an inserted row reads NULL there; pylance reads it so
    peer(&["add-columns", m, "w", "id * 2"]);
    let partial = source(dir.path(), "partial.parquet", &json!([1, 100000]), 1);
    lancet(&["merge-insert", m, "--from", &partial, "--on", "id"]);
    let read = peer(&["scan", m]);
    let at = |name: &str| {
        let columns = read["columns"].as_array().unwrap();
        columns.iter().position(|c| c == name).unwrap()
    };
    let (id, w) = (at("id"), at("w"));
    let row = |key: i64| {
        let rows = read["rows"].as_array().unwrap();
        rows.iter().find(|r| r[id] == json!(key)).unwrap()[w].clone()
    };
    assert_eq!(
        (row(1), row(100000), row(3)),
        (json!(2), Value::Null, json!(6))
    );
}

/// A tree table merges as the flat twin does (lancet writes both), and flattens to what
/// pylance reads.
#[test]
fn a_tree_table_merges_as_its_flat_twin() {
    let dir = tempfile::tempdir().unwrap();
    let (flat, tree) = twins(
        dir.path(),
        json!({"rows": 200, "files": 4, "index": "id", "stable": true}),
    );
    lancet(&["tree", "convert", &tree]);
    let keys: Vec<Value> = (0..1000).step_by(11).map(|k| json!(k)).collect();
    let from = source(dir.path(), "a.parquet", &Value::Array(keys), 1);
    for uri in [&flat, &tree] {
        lancet(&["merge-insert", uri, "--from", &from, "--on", "id"]);
    }
    let scan = |uri: &str| lancet(&["scan", uri, "--with-row-id"]);
    assert_eq!(scan(&flat), scan(&tree));
    lancet(&["verify", &tree, "--data"]);
    lancet(&["tree", "flatten", &tree]);
    // the conversion and the flattening are versions of their own: compare what they do not
    // shift (rows in order with their `_rowid`s, fragments)
    let read = |uri: &str| {
        let l = peer(&["lineage", uri]);
        let rows: Vec<Value> = l["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| json!([r[0], r[1], r[4]]))
            .collect();
        (rows, l["fragments"].clone())
    };
    assert!(
        read(&flat) == read(&tree),
        "pylance reads the flattened tree as the flat twin"
    );
}

/// Lance 14.0.2 drops a source row whose key is NULL when a BTree covers the key (its indexed
/// join path), and inserts it otherwise (its scan path). lancet inserts it either way: a
/// NULL key matches nothing, so the row is "not matched" and `insert_all` inserts it; never
/// losing a row the caller asked to insert (`docs/decisions/0034-merge-insert.md`).
#[test]
fn a_null_key_row_is_inserted_with_or_without_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let (mine, twin) = twins(dir.path(), json!({"rows": 50, "files": 2, "index": "id"}));
    let from = source(dir.path(), "n.parquet", &json!([1, null]), 1);
    let theirs = peer(&["merge-insert", &twin, &from, "id", "{}"]);
    assert_eq!(
        theirs["inserted_rows"], 0,
        "pylance's indexed path: {theirs}"
    );
    for args in [&[][..], &["--no-index"][..]] {
        let mut cmd = vec![
            "merge-insert",
            mine.as_str(),
            "--from",
            &from,
            "--on",
            "id",
            "--json",
        ];
        cmd.extend_from_slice(args);
        let ours: Value = serde_json::from_str(&lancet(&cmd)).unwrap();
        assert_eq!(ours["inserted_rows"], 1, "{args:?}: {ours}");
    }
    // twice merged, with and without the index: two NULL-key rows
    let nulls = lancet(&["scan", &mine, "--filter", "id IS NULL", "--format", "jsonl"]);
    assert_eq!(nulls.lines().count(), 2, "{nulls}");
}
