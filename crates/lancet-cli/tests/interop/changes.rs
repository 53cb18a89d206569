//! Issue 32: what changed between versions, by `lancet changes` and by pylance's `delta`, on
//! one stable-row-id table through appends, deletes, an update and a compaction (rows only
//! moved are neither inserted nor updated); a table without stable row ids is refused typed.

use serde_json::{json, Value};

use super::{lancet, peer};

/// The columns compared, in this order.
const COLUMNS: [&str; 5] = [
    "id",
    "v",
    "_rowid",
    "_row_created_at_version",
    "_row_last_updated_at_version",
];

/// `lancet changes` as pylance's delta prints it: inserted and updated rows (sorted, as
/// `rows_of` sorts them), deleted ids sorted.
fn mine(uri: &str, begin: u64, end: u64) -> Value {
    let out = lancet(&[
        "changes",
        uri,
        "--since",
        &begin.to_string(),
        "--until",
        &end.to_string(),
        "--format",
        "jsonl",
    ]);
    let mut parts: std::collections::BTreeMap<String, Vec<Vec<Value>>> = Default::default();
    let mut deleted = Vec::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let row: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
        let change = row["_change"].as_str().unwrap().to_string();
        if change == "deleted" {
            deleted.push(row["_rowid"].as_u64().unwrap());
            continue;
        }
        parts
            .entry(change)
            .or_default()
            .push(COLUMNS.iter().map(|c| row[*c].clone()).collect());
    }
    deleted.sort_unstable();
    let sorted = |mut rows: Vec<Vec<Value>>| {
        rows.sort_by_key(|r| r.iter().map(|v| v.to_string()).collect::<Vec<_>>());
        rows
    };
    json!({
        "inserted": sorted(parts.remove("inserted").unwrap_or_default()),
        "updated": sorted(parts.remove("updated").unwrap_or_default()),
        "deleted": deleted,
    })
}

/// pylance's delta in the same shape (column order aside: rows compared by their values of
/// the same columns).
fn theirs(uri: &str, begin: u64, end: u64) -> Value {
    let d = peer(&["delta", uri, &begin.to_string(), &end.to_string()]);
    let pick = |part: &Value, columns: &[String]| -> Vec<Vec<Value>> {
        let names: Vec<String> = part["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        let mut rows: Vec<Vec<Value>> = part["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                columns
                    .iter()
                    .map(|c| r[names.iter().position(|n| n == c).unwrap()].clone())
                    .collect()
            })
            .collect();
        rows.sort_by_key(|r| r.iter().map(|v| v.to_string()).collect::<Vec<_>>());
        rows
    };
    let columns: Vec<String> = [
        "id",
        "v",
        "_rowid",
        "_row_created_at_version",
        "_row_last_updated_at_version",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    json!({
        "columns": columns,
        "inserted": pick(&d["inserted"], &columns),
        "updated": pick(&d["updated"], &columns),
        "deleted": d["deleted"],
    })
}

#[test]
fn changes_between_versions_are_pylances_delta() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("t").to_str().unwrap().to_string();
    let twin = dir.path().join("unused").to_str().unwrap().to_string();
    // 1 create, 2 append, 3 delete (pylance), then 4 an update and 5 a compaction (lancet)
    let spec = json!({"rows": 50, "files": 3, "append": 1, "delete": "id % 7 = 0", "stable": true});
    peer(&["twin-table", &uri, &twin, &spec.to_string()]);
    lancet(&[
        "update",
        &uri,
        "--filter",
        "id < 20",
        "--set",
        "v = v + 1000",
    ]);
    lancet(&["compact", &uri, "--target-rows-per-fragment", "1000"]);
    for (begin, end) in [
        (1, 2),
        (1, 3),
        (2, 4),
        (3, 5),
        (4, 5),
        (1, 5),
        (0, 5),
        (5, 5),
    ] {
        let m = mine(&uri, begin, end);
        let t = theirs(&uri, begin, end);
        assert_eq!(m["inserted"], t["inserted"], "({begin}, {end}] inserted");
        assert_eq!(m["updated"], t["updated"], "({begin}, {end}] updated");
        assert_eq!(m["deleted"], t["deleted"], "({begin}, {end}] deleted");
    }
    // only moved by the compaction: nothing inserted, updated or deleted
    let moved = mine(&uri, 4, 5);
    assert!(moved["inserted"].as_array().unwrap().is_empty(), "{moved}");
    assert!(moved["updated"].as_array().unwrap().is_empty(), "{moved}");
    assert!(moved["deleted"].as_array().unwrap().is_empty(), "{moved}");

    // without stable row ids: a typed refusal, one line
    let plain = dir.path().join("plain").to_str().unwrap().to_string();
    let twin2 = dir.path().join("plain2").to_str().unwrap().to_string();
    peer(&[
        "twin-table",
        &plain,
        &twin2,
        &json!({"rows": 10, "files": 1}).to_string(),
    ]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(["changes", &plain, "--since", "0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("stable row ids"), "{err}");
}
