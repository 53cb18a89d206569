//! The merge_insert race, by processes (issue 32): eight `lancet merge-insert`s upsert
//! overlapping key ranges into one table at once. Every merge lands (the losers of an
//! inserted-key race redo their merge on the newer version), every key is in the table
//! exactly once, and each row holds the values of the last committed merge that carried its
//! key (or its original values when none did).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

/// Writers, and the keys each one merges: overlapping ranges, half of each beyond the
/// table's keys (new keys several writers race to insert).
const WRITERS: i64 = 8;
const TABLE_KEYS: i64 = 20_000;

fn keys_of(w: i64) -> std::ops::Range<i64> {
    w * 4_000..w * 4_000 + 24_000
}

fn csv(dir: &Path, name: &str, keys: std::ops::Range<i64>, tag: i64) -> String {
    let mut text = String::from("id,v\n");
    for k in keys {
        text.push_str(&format!("{k},{}\n", tag * 1_000_000 + k));
    }
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn run(lancet: &str, args: &[&str]) -> String {
    let out = Command::new(lancet).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "lancet {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs the race on the table at `uri` (created here; `dir` holds the source files) with
/// the `lancet` binary at `lancet`, and checks the table it leaves.
pub fn merge_race(lancet: &str, uri: &str, dir: &Path, extra: &[&str]) {
    let first = csv(dir, "table.csv", 0..TABLE_KEYS, 0);
    let mut create = vec!["create", uri, "--from", first.as_str()];
    create.extend_from_slice(extra);
    run(lancet, &create);
    let children: Vec<_> = (0..WRITERS)
        .map(|w| {
            let from = csv(dir, &format!("w{w}.csv"), keys_of(w), w + 1);
            Command::new(lancet)
                .args(["merge-insert", uri, "--from", &from, "--on", "id", "--json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // the version each writer's merge published
    let mut landed = BTreeMap::new();
    for (w, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "writer {w}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let got = v["inserted_rows"].as_u64().unwrap() + v["updated_rows"].as_u64().unwrap();
        assert_eq!(got, keys_of(w as i64).count() as u64, "writer {w}: {v}");
        landed.insert(v["version"].as_u64().unwrap(), w as i64);
    }
    assert_eq!(landed.len(), WRITERS as usize, "each merge is a version");
    // the value each key must hold: the last merge (by version) that carried it
    let mut want: BTreeMap<i64, i64> = (0..TABLE_KEYS).map(|k| (k, k)).collect();
    for w in landed.values() {
        for k in keys_of(*w) {
            want.insert(k, (w + 1) * 1_000_000 + k);
        }
    }
    let rows = run(lancet, &["scan", uri, "--format", "jsonl"]);
    let mut got: BTreeMap<i64, i64> = BTreeMap::new();
    for line in rows.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let (k, v) = (r["id"].as_i64().unwrap(), r["v"].as_i64().unwrap());
        assert!(got.insert(k, v).is_none(), "key {k} is in the table twice");
    }
    assert_eq!(got, want);
    run(lancet, &["verify", uri]);
}
