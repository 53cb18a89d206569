//! Issue 30's write-path defects, each reproduced on pylance twins: lancet's result is
//! pylance's, or a typed refusal that publishes nothing.

use serde_json::{json, Value};

use super::{lancet, lancet_search, peer};

/// Two copies of one table pylance writes from `spec` (`peer.py twin-table`): lancet works on
/// the first, pylance on the second.
pub(super) fn twins(dir: &std::path::Path, spec: Value) -> (String, String) {
    let mine = dir.join("mine").to_str().unwrap().to_string();
    let twin = dir.join("twin").to_str().unwrap().to_string();
    peer(&["twin-table", &mine, &twin, &spec.to_string()]);
    (mine, twin)
}

fn latest(uri: &str) -> String {
    let i: Value = serde_json::from_str(&lancet(&["inspect", uri, "--json"])).unwrap();
    i["version"].to_string()
}

/// Item 1: pylance indexes fragments 0-1 on `v` and appends 2-3; a compaction must not give
/// the index the unindexed rows. Through the index, `v = 300` finds its row in both engines,
/// and a delete by that filter deletes it. Item 12: a deferred compaction nothing indexes
/// writes no Fragment Reuse Index entry.
#[test]
fn compaction_keeps_index_coverage_per_group_as_pylance() {
    for stable in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let spec = json!({"rows": 200, "files": 2, "index": "v", "append": 2, "stable": stable});
        let (mine, twin) = twins(dir.path(), spec);
        let opts = json!({"target_rows_per_fragment": 2000});
        let theirs = peer(&["compact", &twin, &opts.to_string()]);
        lancet(&["compact", &mine, "--target-rows-per-fragment", "2000"]);
        let (m, t) = (peer(&["coverage", &mine]), peer(&["coverage", &twin]));
        assert_eq!(m, t, "stable={stable}: {theirs}");
        let v = latest(&mine);
        for f in ["v = 300", "v = 100", "v >= 150 AND v < 450"] {
            let scanned = peer(&["filters", &mine, &v, &json!([f]).to_string()]);
            let indexed = peer(&["filters", &mine, &v, &json!([f]).to_string(), "true"]);
            assert_eq!(indexed, scanned, "pylance through the index: {f}");
            assert_eq!(
                lancet_search(&mine, &v, f)["row_ids"],
                scanned[0]["row_ids"],
                "lancet: {f}"
            );
        }
        let out: Value =
            serde_json::from_str(&lancet(&["delete", &mine, "--filter", "v = 300", "--json"]))
                .unwrap();
        assert_eq!(out["deleted_rows"], 1, "stable={stable}");
        lancet(&["verify", &mine, "--data"]);
    }
    // deferred, nothing indexed: a plain Rewrite, as pylance writes it
    let dir = tempfile::tempdir().unwrap();
    let (mine, twin) = twins(dir.path(), json!({"rows": 100, "files": 4}));
    let opts = json!({"target_rows_per_fragment": 2000, "defer_index_remap": true});
    peer(&["compact", &twin, &opts.to_string()]);
    lancet(&[
        "compact",
        &mine,
        "--target-rows-per-fragment",
        "2000",
        "--defer-index-remap",
    ]);
    assert_eq!(peer(&["coverage", &mine]), peer(&["coverage", &twin]));
    assert_eq!(peer(&["coverage", &mine])["indices"], json!([]));
}

/// Item 7: 3,000 rows with 20% deleted and a target of 1,000 compact into two fragments of
/// 1,200, as pylance writes them.
#[test]
fn compaction_outputs_are_target_sized_as_pylance() {
    let dir = tempfile::tempdir().unwrap();
    let spec = json!({"rows": 1000, "files": 3, "delete": "id % 5 = 0"});
    let (mine, twin) = twins(dir.path(), spec);
    let opts = json!({"target_rows_per_fragment": 1000});
    let theirs = peer(&["compact", &twin, &opts.to_string()]);
    lancet(&["compact", &mine, "--target-rows-per-fragment", "1000"]);
    assert_eq!(theirs["fragments"], json!([1200, 1200]));
    assert_eq!(peer(&["coverage", &mine]), peer(&["coverage", &twin]));
    assert_eq!(
        peer(&["scan", &mine])["rows"],
        peer(&["scan", &twin])["rows"]
    );
}

/// Items 3 and 6: add-column is one Merge; an expression failing on some row publishes
/// nothing (pylance leaves version 1 too), and re-running with a good expression works.
/// On a stable-row-id table every backfilled row is last updated at the new version, as
/// pylance stamps its own twin.
#[test]
fn add_column_is_atomic_and_stamps_versions() {
    let dir = tempfile::tempdir().unwrap();
    let spec = json!({"rows": 100, "files": 3, "stable": true});
    let (mine, _twin) = twins(dir.path(), spec);
    let before = latest(&mine);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args([
            "add-column",
            &mine,
            "--name",
            "w",
            "--expr",
            "v / (id - 150)",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("lancet: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(
        latest(&mine),
        before,
        "a failed add-column publishes nothing"
    );
    lancet(&["add-column", &mine, "--name", "w", "--expr", "v * 2"]);
    let after = latest(&mine);
    assert_eq!(
        after.parse::<u64>().unwrap(),
        before.parse::<u64>().unwrap() + 1,
        "one commit"
    );
    let t = peer(&[
        "table",
        &mine,
        &json!({"columns": ["id", "w", "_row_last_updated_at_version"]}).to_string(),
    ]);
    for r in t["rows"].as_array().unwrap() {
        assert_eq!(r[1].as_i64().unwrap(), r[0].as_i64().unwrap() * 2);
        assert_eq!(r[2].to_string(), after, "{r}");
    }
    lancet(&["verify", &mine, "--data"]);
}

/// A short fixed run of the differential tester (`cargo xtask difftest` runs long ones):
/// lancet and pylance take turns on one table, flat, with and without stable row ids.
#[test]
fn differential_tester_short_fixed_run() {
    for (seed, stable) in [(11, "false"), (12, "true"), (13, "false"), (14, "true")] {
        let out = std::process::Command::new(super::python())
            .arg(super::interop_dir().join("difftest.py"))
            .args(["--lancet", env!("CARGO_BIN_EXE_lancet")])
            .args([
                "--seed",
                &seed.to_string(),
                "--steps",
                "15",
                "--stable",
                stable,
            ])
            .args(["--out", std::env::temp_dir().to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "difftest seed {seed} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Item 15: on pylance's decimal(15,2) table, `lancet delete` and `lancet update` take the
/// filters pylance answers (a decimal column against an integer) and compute decimals
/// exactly (`q = q + 1`, `p = p * 2`); pylance reads the result.
#[test]
fn decimal_columns_are_updated_and_deleted_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (mine, _) = twins(dir.path(), json!({"rows": 100, "files": 2}));
    // q = id / 100 and p = id / 4, as decimal(15,2)
    lancet(&[
        "add-column",
        &mine,
        "--name",
        "q",
        "--expr",
        "CAST(id AS DECIMAL(15,2)) / 100",
    ]);
    lancet(&[
        "add-column",
        &mine,
        "--name",
        "p",
        "--expr",
        "CAST(id AS DECIMAL(15,2)) / 4",
    ]);
    let out: Value = serde_json::from_str(&lancet(&[
        "update",
        &mine,
        "--filter",
        "q < 1",
        "--set",
        "q = q + 1",
        "--set",
        "p = p * 2",
        "--json",
    ]))
    .unwrap();
    assert_eq!(out["updated_rows"], 100);
    let out: Value = serde_json::from_str(&lancet(&[
        "delete",
        &mine,
        "--filter",
        "p > 98 AND q >= 1.5",
        "--json",
    ]))
    .unwrap();
    let t = peer(&[
        "table",
        &mine,
        &json!({"columns": ["id", "q", "p"]}).to_string(),
    ]);
    let mut deleted = 0;
    let mut seen = 0;
    for id in 0..200i64 {
        let (q, p) = match id < 100 {
            true => (id + 100, id * 25 * 2),
            false => (id, id * 25),
        };
        let gone = p > 9800 && q >= 150;
        deleted += i64::from(gone);
        let row = t["rows"].as_array().unwrap().iter().find(|r| r[0] == id);
        match (gone, row) {
            (true, None) => {}
            (false, Some(r)) => {
                seen += 1;
                // pylance prints decimals as strings of their exact value
                let cents = |v: &Value| -> i64 {
                    let s = v
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string());
                    let (whole, frac) = s.split_once('.').unwrap_or((&s, "00"));
                    let frac = format!("{frac:0<2}");
                    let sign = if whole.starts_with('-') { -1 } else { 1 };
                    whole.parse::<i64>().unwrap() * 100 + sign * frac[..2].parse::<i64>().unwrap()
                };
                assert_eq!(cents(&r[1]), q, "q of {id}: {r}");
                assert_eq!(cents(&r[2]), p, "p of {id}: {r}");
            }
            other => panic!("row {id}: {other:?}"),
        }
    }
    assert_eq!(out["deleted_rows"], deleted);
    assert_eq!(seen, 200 - deleted);
    lancet(&["verify", &mine, "--data"]);
}

/// Item 13: a Delete prepared before pylance drops a column, and committed after, rebases
/// onto the latest records and takes only its deletion file: the dropped column's data file
/// does not come back, and pylance reads the table.
#[tokio::test]
async fn a_rebased_delete_does_not_bring_back_a_dropped_column() {
    let dir = tempfile::tempdir().unwrap();
    let (mine, _) = twins(dir.path(), json!({"rows": 100, "files": 2}));
    lancet(&["add-column", &mine, "--name", "w", "--expr", "id * 2"]);
    let stale = lancet::Dataset::open(&mine).await.unwrap();
    let dropped = peer(&["drop-columns", &mine, "w"]);
    let offsets: roaring::RoaringBitmap = [1u32, 2, 3].into_iter().collect();
    let committed = stale
        .storage()
        .delete_rows(&[(0, offsets)], "id in (1, 2, 3)")
        .await
        .unwrap();
    assert!(
        committed.attempts > 1,
        "the delete lost the race and rebased"
    );
    let files: Vec<Vec<String>> = committed
        .dataset
        .fragments()
        .await
        .unwrap()
        .iter()
        .map(|f| f.files.iter().map(|d| d.path.clone()).collect())
        .collect();
    assert_eq!(json!(files), dropped["files"], "the files pylance left");
    let names: Vec<&str> = committed
        .dataset
        .storage()
        .manifest()
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(names, ["id", "v"]);
    let t = peer(&["table", &mine, &json!({"columns": ["id", "v"]}).to_string()]);
    assert_eq!(t["rows"].as_array().unwrap().len(), 197);
    lancet(&["verify", &mine, "--data"]);
}
