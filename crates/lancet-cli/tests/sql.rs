//! `lancet sql`: DataFusion's SQL over lancet tables named with `--table`: joins across
//! tables, a version by `@N`, the plan with the filter pushed and the BTree answering it,
//! every output format; bad SQL or an unknown table is one line `lancet: …`, never a panic.
#![cfg(feature = "sql")]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

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

fn refused(args: &[&str]) -> String {
    let out = lancet(args);
    assert!(!out.status.success(), "lancet {args:?} succeeded");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("lancet: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn jsonl(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn sql_joins_tables_reads_versions_and_shows_what_lancet_answers() {
    let dir = tempfile::tempdir().unwrap();
    let mut items = String::from("id,g\n");
    for i in 0..300 {
        items.push_str(&format!("{i},g{}\n", i % 3));
    }
    let items_csv = write(dir.path(), "items.csv", &items);
    let labels_csv = write(
        dir.path(),
        "labels.csv",
        "g,label\ng0,zero\ng1,one\ng2,two\n",
    );
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    ok(&[
        "create",
        a,
        "--from",
        &items_csv,
        "--max-rows-per-file",
        "50",
    ]);
    ok(&["create", b, "--from", &labels_csv]);
    ok(&["index", "build", a, "--column", "id"]);
    ok(&["delete", a, "--filter", "id >= 290"]);
    let ta = format!("a={a}");
    let tb = format!("b={b}");

    let joined = jsonl(&ok(&[
        "sql",
        "SELECT b.label, count(*) AS n FROM a JOIN b ON a.g = b.g WHERE a.id < 30 GROUP BY b.label ORDER BY b.label",
        "--table", &ta, "--table", &tb, "--format", "jsonl",
    ]));
    assert_eq!(joined.len(), 3);
    assert_eq!(joined[0]["label"], "one");
    assert_eq!(joined[0]["n"], 10);

    // the version before the deletion (1: created, 2: indexed, 3: deleted)
    let before = format!("a={a}@2");
    let counts = ok(&[
        "sql",
        "SELECT count(*) AS n FROM a",
        "--table",
        &before,
        "--format",
        "csv",
    ]);
    assert_eq!(counts, "n\n300\n");
    let counts = ok(&[
        "sql",
        "SELECT count(*) AS n FROM a",
        "--table",
        &ta,
        "--format",
        "csv",
    ]);
    assert_eq!(counts, "n\n290\n");

    // the plan: the filter in lancet's scan, answered by the BTree
    let plan = ok(&[
        "sql",
        "SELECT g FROM a WHERE id = 7",
        "--table",
        &ta,
        "--explain",
    ]);
    assert!(plan.contains("LancetScanExec"), "{plan}");
    assert!(plan.contains("filter=id = Int64(7)"), "{plan}");
    assert!(plan.contains("index=[id_idx(id)]"), "{plan}");
    let analyzed = ok(&[
        "sql",
        "SELECT g FROM a WHERE id = 7",
        "--table",
        &ta,
        "--explain",
        "--analyze",
    ]);
    assert!(analyzed.contains("index_pages_read="), "{analyzed}");

    // row columns, and every output format
    let rows = jsonl(&ok(&[
        "sql",
        "SELECT id, _rowaddr FROM a WHERE id = 51",
        "--table",
        &ta,
        "--row-columns",
    ]));
    assert_eq!(rows[0]["_rowaddr"], (1u64 << 32) | 1);
    for format in ["table", "csv", "jsonl", "parquet", "arrow"] {
        let out = dir.path().join(format!("out.{format}"));
        ok(&[
            "sql",
            "SELECT * FROM a WHERE id < 5",
            "--table",
            &ta,
            "--format",
            format,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(std::fs::metadata(&out).unwrap().len() > 0, "{format}");
    }

    // refused, one line each
    let err = refused(&["sql", "SELEC 1", "--table", &ta]);
    assert!(err.contains("SQL"), "{err}");
    let err = refused(&["sql", "SELECT * FROM nope", "--table", &ta]);
    assert!(err.contains("nope"), "{err}");
    let err = refused(&["sql", "SELECT missing FROM a", "--table", &ta]);
    assert!(err.contains("missing"), "{err}");
    let missing = format!("m={}", dir.path().join("none").display());
    refused(&["sql", "SELECT 1", "--table", &missing]);
    refused(&["sql", "SELECT 1", "--table", &ta, "--table", &ta]);
    let bad = lancet(&["sql", "SELECT 1", "--table", "noequals"]);
    assert!(!bad.status.success());
}
