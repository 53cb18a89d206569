//! `lancet report`: a self-contained HTML page of one version, checked as text (every chart
//! there, nothing fetched from elsewhere, its numbers the table's) and in a real headless
//! Chromium (Debian's, installed by `tests/browser/chromium.sh` on first use): the page
//! renders without console errors and each chart draws something on screen.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const CHARTS: [&str; 6] = [
    "fragment-sizes",
    "deleted-share",
    "index-coverage",
    "tree-shape",
    "versions",
    "row-ids",
];

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

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `tests/browser/check_page.py` on `page` and returns its JSON verdict.
fn browse(page: &Path, charts: &[&str], shots: &Path) -> Value {
    let setup = Command::new(repo().join("tests/browser/chromium.sh"))
        .status()
        .unwrap();
    assert!(setup.success(), "installing Debian's chromium failed");
    let mut cmd = Command::new("python3");
    cmd.arg(repo().join("tests/browser/check_page.py"))
        .arg(page)
        .arg("--shots")
        .arg(shots);
    for c in charts {
        cmd.args(["--chart", c]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "check_page.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn csv(dir: &Path, name: &str, ids: std::ops::Range<u64>) -> String {
    let path = dir.join(name);
    let mut rows = String::from("id,name,value\n");
    for i in ids {
        rows.push_str(&format!("{i},n{i},{}\n", i / 2));
    }
    std::fs::write(&path, rows).unwrap();
    path.to_str().unwrap().to_string()
}

/// The demo's tree table (stable row ids, deletions, a BTree), appended to.
fn stable_tree(dir: &Path) -> String {
    let d = dir.join("stable").to_str().unwrap().to_string();
    ok(&["demo", &d, "--layout", "tree"]);
    ok(&[
        "append",
        &d,
        "--from",
        &csv(dir, "more.csv", 10_000..10_050),
    ]);
    d
}

/// A tree table of small fragments with a BTree, rows deleted, then compacted with the row
/// moves kept in the Fragment Reuse Index (Lance refuses that with stable row ids).
fn reused_tree(dir: &Path) -> String {
    let d = dir.join("reused").to_str().unwrap().to_string();
    let rows = csv(dir, "rows.csv", 0..2_000);
    ok(&[
        "create",
        &d,
        "--from",
        &rows,
        "--layout",
        "tree",
        "--max-rows-per-file",
        "100",
    ]);
    ok(&["index", "build", &d, "--column", "id"]);
    ok(&["delete", &d, "--filter", "id % 3 = 0 AND id < 1000"]);
    ok(&["compact", &d, "--defer-index-remap"]);
    d
}

/// Checks the page is self-contained and holds `charts`; returns its text.
fn page_of(d: &str, page: &Path, charts: &[&str]) -> String {
    let said = ok(&["report", d, "-o", page.to_str().unwrap()]);
    assert!(said.starts_with("wrote "), "{said}");
    let html = std::fs::read_to_string(page).unwrap();
    // self-contained: no script, nothing fetched, the only URL the SVG namespace
    assert!(!html.contains("<script"));
    assert!(!html.contains(" src=") && !html.contains(" href="));
    assert_eq!(
        html.matches("http").count(),
        html.matches("http://www.w3.org/2000/svg").count()
    );
    for c in charts {
        assert!(html.contains(&format!("id=\"{c}\"")), "chart {c} missing");
    }
    // its numbers are the table's
    let inspect: Value = serde_json::from_str(&ok(&["inspect", d, "--json"])).unwrap();
    let fragments = inspect["fragments"].as_array().unwrap().len();
    let rows = inspect["num_rows"].as_u64().unwrap();
    let plan: Value = serde_json::from_str(&ok(&["compact", d, "--plan"])).unwrap();
    let planned: usize = (plan.as_array().unwrap().iter())
        .map(|t| t["fragments"].as_array().unwrap().len())
        .sum();
    assert!(html.contains(&format!("would rewrite {planned} of {fragments} fragments")));
    let rows_cell = format!("<td class=\"n\">{}</td>", group(rows));
    assert!(html.contains(&rows_cell), "no {rows_cell}");
    let version = inspect["version"].as_u64().unwrap();
    assert!(html.contains(&format!("version {version}</title>")));
    html
}

/// A browser draws every chart of the page without a console error.
fn draws(page: &Path, charts: &[&str], shots: &Path) {
    let verdict = browse(page, charts, shots);
    assert_eq!(verdict["console"], Value::Array(vec![]), "{verdict}");
    for c in charts {
        let chart = &verdict["charts"][c];
        assert_eq!(chart["found"], true, "{c}: {verdict}");
        assert!(chart["width"].as_f64().unwrap() > 100.0, "{c}: {chart}");
        assert!(chart["height"].as_f64().unwrap() > 30.0, "{c}: {chart}");
        assert!(
            chart["ink"].as_f64().unwrap() > 0.02,
            "{c} drew nothing: {chart}"
        );
        assert!(shots.join(format!("{c}.png")).is_file());
    }
}

#[test]
fn the_report_is_one_page_of_the_tables_numbers_drawn_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let stable = stable_tree(dir.path());
    let page = dir.path().join("stable.html");
    let html = page_of(&stable, &page, &CHARTS);
    assert!(html.contains("id_idx (id)"));
    assert!(html.contains("Segments by encoding: range"));
    draws(&page, &CHARTS, &dir.path().join("stable-shots"));
    reads_each_object_once(&stable);

    let reused = reused_tree(dir.path());
    let page = dir.path().join("reused.html");
    let charts: Vec<&str> = CHARTS.iter().copied().filter(|c| *c != "row-ids").collect();
    let html = page_of(&reused, &page, &charts);
    assert!(html.contains("The Fragment Reuse Index records 1 transitions"));
    assert!(html.contains("FRI destinations"));
    assert!(html.contains("no stable row ids"));
    draws(&page, &charts, &dir.path().join("reused-shots"));
}

/// The checker itself can fail: a console error, a blank chart and a missing one are seen.
#[test]
fn the_browser_check_sees_console_errors_and_blank_charts() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><script>console.error('boom')</script>\
         <svg id=\"blank\" width=\"300\" height=\"100\"></svg></body></html>",
    )
    .unwrap();
    let verdict = browse(&page, &["blank", "missing"], &dir.path().join("shots"));
    let console = verdict["console"].as_array().unwrap();
    assert!(
        console.iter().any(|m| m.as_str().unwrap().contains("boom")),
        "{verdict}"
    );
    assert_eq!(verdict["charts"]["blank"]["found"], true);
    assert_eq!(verdict["charts"]["blank"]["ink"].as_f64().unwrap(), 0.0);
    assert_eq!(verdict["charts"]["missing"]["found"], false);
}

#[test]
fn a_flat_table_an_old_version_and_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("flat");
    let d = d.to_str().unwrap();
    ok(&["demo", d]);
    // to stdout, without a tree: a note stands in the tree's place
    let html = ok(&["report", d]);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("flat manifest"));
    assert!(!html.contains("id=\"tree-shape\""));
    assert!(html.contains("id=\"row-ids\""));
    // an old version: before the index, the history ends there
    let v1 = ok(&["report", d, "--version", "1"]);
    assert!(v1.contains("version 1</title>"));
    assert!(v1.contains("No indexes."));
    assert!(v1.contains("1 versions listed"));

    let missing = dir.path().join("nothing");
    let out = dir.path().join("r.html");
    refused(&[
        "report",
        missing.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!out.exists());
    refused(&["report", d, "--version", "99"]);
    refused(&[
        "report",
        d,
        "-o",
        dir.path().join("no/such/dir.html").to_str().unwrap(),
    ]);
}

/// `lancet -vv` logs each request the store makes: none twice.
fn reads_each_object_once(d: &str) {
    let out = lancet(&["-vv", "report", d]);
    assert!(out.status.success());
    let log = String::from_utf8_lossy(&out.stderr);
    let mut seen = std::collections::HashMap::<String, usize>::new();
    for line in log.lines() {
        let plain: String = strip_ansi(line);
        if let Some((_, request)) = plain.split_once("lancet_paths::store: ") {
            let key: String = request
                .split(" bytes=")
                .next()
                .unwrap_or(request)
                .to_string();
            *seen.entry(key).or_default() += 1;
        }
    }
    assert!(seen.len() > 3, "no requests logged: {log}");
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "read more than once: {twice:?}");
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // an escape runs to its final letter
            for e in chars.by_ref() {
                if e.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A long history is read a few versions at a time: on a slow store the report's chain of
/// round trips stays short however many versions it shows.
#[test]
fn a_long_history_is_read_in_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let t = t.to_str().unwrap();
    ok(&["create", t, "--from", &csv(dir.path(), "rows.csv", 0..10)]);
    for k in 1..40 {
        let name = format!("more{k}.csv");
        ok(&[
            "append",
            t,
            "--from",
            &csv(dir.path(), &name, k * 10..k * 10 + 10),
        ]);
    }
    let out = lancet(&["--store-latency", "5ms", "--store-stats", "report", t]);
    assert!(out.status.success());
    let html = String::from_utf8(out.stdout).unwrap();
    assert!(html.contains("40 versions listed"));
    assert!(html.contains("<td>Append</td>"));
    let err = String::from_utf8(out.stderr).unwrap();
    let stats: Value = serde_json::from_str(err.lines().last().unwrap()).unwrap();
    // 39 old manifests and their transactions, 16 at a time: not 78 one after another
    let chain = stats["longest_chain"].as_u64().unwrap();
    assert!(chain <= 20, "{stats}");
}

fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
