//! `lancet create|append|delete|update|scan|take` on local tables (no pylance): what they
//! print, and bad input refused with one line `lancet: …` naming what is wrong, the table's
//! versions and hint unchanged, never a panic.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

fn lancet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = lancet(args);
    assert!(
        out.status.success(),
        "lancet {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The one line a refused command prints.
fn refused(args: &[&str]) -> String {
    let out = lancet(args);
    assert!(!out.status.success(), "lancet {args:?} succeeded");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("lancet: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// Every object under `_versions/` with its bytes, and the hint.
fn versions(table: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(table.join("_versions"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

fn manifests(table: &Path) -> usize {
    versions(table)
        .iter()
        .filter(|(name, _)| name.ends_with(".manifest"))
        .count()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn csv_rows(start: i64, n: i64) -> String {
    let mut out = String::from("id,x,s\n");
    for i in start..start + n {
        let s = if i % 4 == 0 {
            String::new()
        } else {
            format!("s{i}")
        };
        out.push_str(&format!("{i},{},{s}\n", i as f64 / 2.0));
    }
    out
}

fn jsonl(out: &str) -> Vec<Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn rows_in_and_out_through_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let uri = table.to_str().unwrap();
    let first = write(dir.path(), "a.csv", &csv_rows(0, 50));
    ok(&[
        "create",
        uri,
        "--from",
        &first,
        "--stable-row-ids",
        "--max-rows-per-file",
        "20",
    ]);
    // an empty CSV field is NULL
    let rows = jsonl(&ok(&["scan", uri, "--format", "jsonl", "--limit", "2"]));
    assert_eq!(rows[0], json!({"id": 0, "x": 0.0, "s": null}));
    assert_eq!(rows[1], json!({"id": 1, "x": 0.5, "s": "s1"}));
    let more = write(
        dir.path(),
        "b.jsonl",
        "{\"id\": 50, \"x\": 25.0, \"s\": \"j\"}\n{\"id\": 51, \"x\": 25.5}\n",
    );
    ok(&["append", uri, "--from", &more]);
    let deleted: Value =
        serde_json::from_str(&ok(&["delete", uri, "--filter", "id % 10 = 0", "--json"])).unwrap();
    assert_eq!(deleted, json!({"deleted_rows": 6, "version": 3}));
    let updated: Value = serde_json::from_str(&ok(&[
        "update",
        uri,
        "--filter",
        "id > 45",
        "--set",
        "s = upper(s)",
        "--json",
    ]))
    .unwrap();
    assert_eq!(updated, json!({"updated_rows": 5, "version": 4}));
    // a filter no row matches still commits, as Lance's delete does
    let none: Value =
        serde_json::from_str(&ok(&["delete", uri, "--filter", "id > 1000", "--json"])).unwrap();
    assert_eq!(none, json!({"deleted_rows": 0, "version": 5}));
    // moved rows come last, with their _rowid; columns in the order asked
    let rows = jsonl(&ok(&[
        "scan",
        uri,
        "--columns",
        "s,id",
        "--with-row-id",
        "--with-row-address",
        "--format",
        "jsonl",
    ]));
    assert_eq!(rows.len(), 52 - 6);
    let last = rows.last().unwrap();
    assert_eq!(last["id"], 51);
    assert_eq!(last["_rowid"], 51);
    assert_eq!(last["s"], Value::Null);
    assert_eq!(rows[rows.len() - 2]["s"], "S49");
    assert!(last["_rowaddr"].as_u64().unwrap() >> 32 > 3);
    let first_row = ok(&[
        "scan",
        uri,
        "--columns",
        "s,id",
        "--with-row-id",
        "--limit",
        "1",
        "--format",
        "jsonl",
    ]);
    let keys = l_keys(&first_row);
    assert_eq!(keys, ["s", "id", "_rowid"]);
    // take by row id, in the order asked; every output format writes
    let taken = jsonl(&ok(&[
        "take",
        uri,
        "--row-ids",
        "51",
        "3",
        "--format",
        "jsonl",
    ]));
    assert_eq!(taken[0]["id"], 51);
    assert_eq!(taken[1]["id"], 3);
    let csv = ok(&["take", uri, "--row-ids", "3", "--format", "csv"]);
    assert_eq!(csv, "id,x,s\n3,1.5,s3\n");
    let table_text = ok(&["scan", uri, "--limit", "1", "--format", "table"]);
    assert!(table_text.contains("| id | x   | s  |"), "{table_text}");
    for (format, name) in [("parquet", "out.parquet"), ("arrow", "out.arrow")] {
        let out = dir.path().join(name);
        ok(&["scan", uri, "--format", format, "-o", out.to_str().unwrap()]);
        // what lancet writes, lancet reads back
        let again = dir.path().join(format!("again-{format}"));
        ok(&[
            "create",
            again.to_str().unwrap(),
            "--from",
            out.to_str().unwrap(),
        ]);
        assert_eq!(
            ok(&["scan", again.to_str().unwrap(), "--format", "jsonl"]),
            ok(&["scan", uri, "--format", "jsonl"])
        );
    }
    ok(&["verify", uri, "--data"]);
}

/// The keys of the first JSON line, in order.
fn l_keys(out: &str) -> Vec<&str> {
    let line = out.lines().next().unwrap();
    line.split('"')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, k)| k)
        .filter(|k| ["s", "id", "_rowid", "x"].contains(k))
        .collect()
}

#[test]
fn bad_input_is_refused_and_the_table_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let uri = table.to_str().unwrap();
    let first = write(dir.path(), "a.csv", &csv_rows(0, 30));
    ok(&["create", uri, "--from", &first, "--stable-row-ids"]);
    let before = versions(&table);
    let other = write(dir.path(), "other.jsonl", "{\"id\": 1, \"y\": \"x\"}\n");
    let reordered = write(dir.path(), "reordered.csv", "x,id,s\n1.0,2,a\n");
    let bad_number = write(dir.path(), "bad.csv", "id,x,s\n1,2.0,a\nseven,3.0,b\n");
    let short = write(dir.path(), "short.csv", "id,x,s\n1,2.0\n");
    let parquet = dir.path().join("t.parquet");
    ok(&[
        "scan",
        uri,
        "--format",
        "parquet",
        "-o",
        parquet.to_str().unwrap(),
    ]);
    let bytes = std::fs::read(&parquet).unwrap();
    let truncated = dir.path().join("truncated.parquet");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["append", uri, "--from", &other], "column"),
        (vec!["append", uri, "--from", &bad_number], "seven"),
        (vec!["append", uri, "--from", &reordered], "reordered.csv"),
        (vec!["append", uri, "--from", &short], "short.csv"),
        (
            vec!["append", uri, "--from", truncated.to_str().unwrap()],
            "truncated.parquet",
        ),
        (vec!["delete", uri, "--filter", "nope = 1"], "nope"),
        (vec!["delete", uri, "--filter", "nope % 2 = 1"], "nope"),
        (vec!["delete", uri, "--filter", "s > 3"], "s > 3"),
        (vec!["delete", uri, "--filter", "id = "], "parse"),
        (
            vec!["update", uri, "--filter", "id < 3", "--set", "nope = 1"],
            "nope",
        ),
        (
            vec!["update", uri, "--filter", "id < 3", "--set", "x = s || 'a'"],
            "SET x",
        ),
        (
            vec![
                "update",
                uri,
                "--filter",
                "id < 3",
                "--set",
                "id = 1.5 * 'a'",
            ],
            "id",
        ),
        (
            vec!["update", uri, "--filter", "id < 3", "--set", "x"],
            "assignment",
        ),
        (vec!["take", uri, "--row-ids", "3", "999"], "row id 999"),
        (vec!["scan", uri, "--columns", "id,nope"], "nope"),
        (
            vec!["create", uri, "--from", &first],
            "already holds a table",
        ),
    ];
    for (args, says) in cases {
        let err = refused(&args);
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(versions(&table), before, "{args:?} changed the table");
    }
    // the truncated input files were refused: a create from them leaves no table
    let fresh = dir.path().join("fresh");
    refused(&[
        "create",
        fresh.to_str().unwrap(),
        "--from",
        truncated.to_str().unwrap(),
    ]);
    refused(&["create", fresh.to_str().unwrap(), "--from", &short]);
    assert!(!fresh.join("_versions").exists() || versions(&fresh).is_empty());
    let unknown = write(dir.path(), "rows.txt", "x");
    assert!(
        refused(&["create", fresh.to_str().unwrap(), "--from", &unknown])
            .contains("unknown file type")
    );
}

/// Lance's distributed write, by processes: four write fragments at once into one table and
/// one commit takes them all; then four append and commit at once, and every commit lands
/// (rebased over the others). Every row is present once and stable row ids are unique.
#[test]
fn many_processes_write_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    let uri = table.to_str().unwrap();
    let first = write(dir.path(), "a.csv", &csv_rows(0, 10));
    ok(&["create", uri, "--from", &first, "--stable-row-ids"]);
    let spawn = |args: Vec<String>| {
        Command::new(env!("CARGO_BIN_EXE_lancet"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let inputs: Vec<String> = (0..4)
        .map(|w| {
            write(
                dir.path(),
                &format!("w{w}.csv"),
                &csv_rows(100 + w * 100, 100),
            )
        })
        .collect();
    let writers: Vec<_> = inputs
        .iter()
        .map(|f| {
            spawn(vec![
                "write-fragments".into(),
                uri.into(),
                "--from".into(),
                f.clone(),
            ])
        })
        .collect();
    let mut lists = Vec::new();
    for (w, child) in writers.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        lists.push(write(
            dir.path(),
            &format!("f{w}.json"),
            &String::from_utf8(out.stdout).unwrap(),
        ));
    }
    // nothing is visible before the commit
    assert_eq!(manifests(&table), 1);
    let mut commit = vec!["append", uri, "--fragments"];
    commit.extend(lists.iter().map(String::as_str));
    ok(&commit);
    let appenders: Vec<_> = (0..4)
        .map(|w| {
            let f = write(
                dir.path(),
                &format!("p{w}.csv"),
                &csv_rows(1000 + w * 100, 100),
            );
            spawn(vec!["append".into(), uri.into(), "--from".into(), f])
        })
        .collect();
    for child in appenders {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let rows = jsonl(&ok(&[
        "scan",
        uri,
        "--columns",
        "id",
        "--with-row-id",
        "--format",
        "jsonl",
    ]));
    let mut ids: Vec<i64> = rows.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    let want: Vec<i64> = (0..10).chain(100..500).chain(1000..1400).collect();
    assert_eq!(ids, want);
    let mut row_ids: Vec<u64> = rows.iter().map(|r| r["_rowid"].as_u64().unwrap()).collect();
    row_ids.sort_unstable();
    row_ids.dedup();
    assert_eq!(row_ids.len(), want.len());
    assert_eq!(manifests(&table), 6);
    ok(&["verify", uri]);
}

#[path = "race/merge.rs"]
mod race;

/// Issue 32: eight processes merge-insert overlapping keys into one local table.
#[test]
fn eight_processes_merge_insert_one_table() {
    for extra in [&[][..], &["--stable-row-ids"][..]] {
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().join("t");
        race::merge_race(
            env!("CARGO_BIN_EXE_lancet"),
            uri.to_str().unwrap(),
            dir.path(),
            extra,
        );
    }
}

/// `lancet count` answers as a scan does, from the recorded counts without a filter, at any
/// version; a bad filter is one line and counts nothing.
#[test]
fn count_matches_what_a_scan_prints() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let t = t.to_str().unwrap();
    let rows = write(dir.path(), "rows.csv", &csv_rows(0, 500));
    ok(&["create", t, "--from", &rows, "--max-rows-per-file", "100"]);
    ok(&["delete", t, "--filter", "id % 4 = 0"]);
    for (filter, expected) in [(None, 375), (Some("id < 100"), 75), (Some("id < 0"), 0)] {
        let mut args = vec!["count", t, "--json"];
        if let Some(f) = filter {
            args.extend(["--filter", f]);
            let scanned = ok(&["scan", t, "--filter", f, "--format", "jsonl"]);
            assert_eq!(jsonl(&scanned).len(), expected);
        }
        let counted: Value = serde_json::from_str(&ok(&args)).unwrap();
        assert_eq!(counted, serde_json::json!({"rows": expected, "version": 2}));
    }
    assert_eq!(ok(&["count", t, "--version", "1"]).trim(), "500");
    refused(&["count", t, "--filter", "nope = 1"]);
    refused(&["count", t, "--version", "9"]);
}
